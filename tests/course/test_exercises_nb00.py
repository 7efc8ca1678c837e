"""Checkers of notebook 00 accept the worked solutions and reject wrong answers."""

from __future__ import annotations

import pytest

from posenc_course.exercises import ExerciseFailure
from posenc_course.exercises.nb00 import ANIMALS, LOPSIDED_TASK, check_exercise_1, check_exercise_2, check_exercise_3

pytestmark = pytest.mark.usefixtures("strict_checkers")  # wrong answers raise ExerciseFailure


# exercise 1: predict the lopsided ceiling, then run
def test_the_lopsided_ceiling_is_three_quarters():
    assert abs(LOPSIDED_TASK.bag_of_words_ceiling() - 0.75) < 1e-12


@pytest.mark.parametrize("guess", [0.75, 0.745, 3 / 4])
def test_exercise_1_accepts_a_close_prediction(guess, capsys):
    check_exercise_1(guess, LOPSIDED_TASK.bag_of_words_ceiling())
    assert "[passed] Exercise 1" in capsys.readouterr().out


@pytest.mark.parametrize(("guess", "hint"), [(0.5, "the mouse is never an agent"), (2 / 3, "too low"),
                                             (1.0, "no bag of words can do better than a coin"),
                                             ("0.75", "must be a number"), (True, "must be a number")])
def test_exercise_1_rejects_a_wrong_prediction_with_its_hint(guess, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_1(guess, LOPSIDED_TASK.bag_of_words_ceiling())


# exercise 2: why the decoder's gap is large (the mask, not the readout, LayerNorm or rounding)
def test_exercise_2_accepts_the_mask(capsys):
    check_exercise_2("d")
    assert "[passed] Exercise 2" in capsys.readouterr().out


@pytest.mark.parametrize(("letter", "hint"), [("a", "before any readout"), ("b", "on its own"),
                                              ("c", "rounding differences"), ("e", "one of")])
def test_exercise_2_rejects_each_wrong_option_with_its_own_hint(letter, hint, second_try):
    with pytest.raises(ExerciseFailure, match=hint):
        second_try(check_exercise_2, letter)


# exercise 3: design a task a bag of words almost solves
@pytest.mark.parametrize(("agents", "patients"), [
    (("cat", "dog"), ("cat", "dog", "mouse", "bird", "fox")),  # 1/4 * 1/2 + 3/4 = 0.875
    (("cat", "dog"), ("cat", "dog", "mouse", "bird", "fox", "bear")),  # 1/5 * 1/2 + 4/5 = 0.9
    (("cat", "dog", "mouse"), ANIMALS),  # exactly 0.8, computed as 0.7999999999999975
])
def test_exercise_3_accepts_designs_with_the_property(agents, patients, capsys):
    check_exercise_3(agents, patients)
    assert "[passed] Exercise 3" in capsys.readouterr().out


@pytest.mark.parametrize(("agents", "patients"), [
    (("cat", "dog"), ("cat", "dog", "mouse")),  # 0.75: exercise 1's task
    (ANIMALS, ANIMALS),  # section 3's task: 0.5
    (("cat",), ("dog", "mouse")),  # 1: order no longer matters
    (("cat", "lion"), ("dog",)), ("cat", ("dog",)), ((), ("dog",)),
])
def test_exercise_3_rejects_designs_without_it(agents, patients):
    with pytest.raises(ExerciseFailure, match="Exercise 3"):
        check_exercise_3(agents, patients)

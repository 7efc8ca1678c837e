"""Checkers of notebook 00 accept the worked solutions and reject wrong answers."""

from __future__ import annotations

import pytest
import torch

from posenc_course.exercises import ExerciseFailure
from posenc_course.exercises.nb00 import LOPSIDED_TASK, check_exercise_1, check_exercise_2, check_exercise_3

pytestmark = pytest.mark.usefixtures("strict_checkers")  # wrong answers raise ExerciseFailure


def inverse_permutation(perm):
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(len(perm))
    return inv


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


# exercise 2: why a causal decoder is not equivariant
def test_exercise_2_accepts_the_mask(capsys):
    check_exercise_2("d")
    assert "[passed] Exercise 2" in capsys.readouterr().out


@pytest.mark.parametrize(("letter", "hint"), [("a", "softmax does not care"), ("b", "untrained"),
                                              ("c", "rounding differences"), ("e", "one of")])
def test_exercise_2_rejects_each_wrong_option_with_its_own_hint(letter, hint, second_try):
    with pytest.raises(ExerciseFailure, match=hint):
        second_try(check_exercise_2, letter)


# exercise 3: undo a shuffle
def test_exercise_3_accepts_correct_answers(capsys):
    check_exercise_3(inverse_permutation)
    check_exercise_3(torch.argsort)  # another correct answer
    assert capsys.readouterr().out.count("[passed] Exercise 3") == 2


@pytest.mark.parametrize(
    "wrong",
    [
        lambda perm: perm,  # the permutation itself (only right when it is an involution)
        lambda perm: torch.arange(len(perm)),  # the identity
        lambda perm: perm.flip(0),
        lambda perm: inverse_permutation(perm).float(),  # right values, wrong dtype
        lambda perm: inverse_permutation(perm).tolist(),  # not a tensor
    ],
)
def test_exercise_3_rejects_wrong_answers(wrong):
    with pytest.raises(ExerciseFailure, match="Exercise 3"):
        check_exercise_3(wrong)

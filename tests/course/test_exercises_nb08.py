"""The notebook 08 checkers accept the right answers, reject typical wrong ones with their own hint, and print [to do] on stubs (tests/course/test_exercises_common.py)."""

from __future__ import annotations

import math

import pytest

from posenc_course.exercises import ExerciseFailure
from posenc_course.exercises.nb08 import check_exercise_1, check_exercise_2, check_exercise_3
from posenc_lib.rotary.rope import rope_inv_freq

pytestmark = pytest.mark.usefixtures("strict_checkers")  # wrong answers raise ExerciseFailure

# ---------------------------------------------------------------- exercise 1: predict the pairs Llama 3.1 keeps

KEPT = int((2 * math.pi / rope_inv_freq(128, 500000.0).double() < 8192 / 4).sum())  # what the notebook computes


def test_ex1_accepts_a_prediction_within_two(capsys):
    assert KEPT == 29
    for guess in (27, 29, 31):
        check_exercise_1(guess, KEPT)
    assert capsys.readouterr().out.count("[passed] Exercise 1") == 3


@pytest.mark.parametrize(("guess", "hint"), [(10, "too low.*many pairs"), (50, "too high.*before its middle"),
                                             ("29", "must be a number")])
def test_ex1_rejects_a_wrong_count(guess, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_1(guess, KEPT)


# ---------------------------------------------------------------- exercise 2: the M-RoPE order for a 40 x 40 grid


def test_ex2_accepts_interleaved(capsys):
    check_exercise_2("b")
    assert "[passed] Exercise 2" in capsys.readouterr().out


@pytest.mark.parametrize(("letter", "hint"), [("a", "slowest"), ("c", "which axis gets which"),
                                              ("d", "hardly turn")])
def test_ex2_rejects_each_wrong_option_with_its_own_hint(letter, hint, second_try):
    with pytest.raises(ExerciseFailure, match=hint):
        second_try(check_exercise_2, letter)


# ---------------------------------------------------------------- exercise 3: SmolLM3's NoPE layers


def no_rope_layers(n_layers, interval):
    return [int((layer + 1) % interval != 0) for layer in range(n_layers)]


def test_ex3_accepts_solution(capsys):
    check_exercise_3(no_rope_layers)
    assert "[passed] Exercise 3" in capsys.readouterr().out


@pytest.mark.parametrize(("wrong", "hint"), [
    (lambda n, k: [int((layer + 1) % k == 0) for layer in range(n)], "wrong way round"),
    (lambda n, k: [int(layer % k != 0) for layer in range(n)], "off by one"),
    (lambda n, k: [1] * n, "expected"),
    (lambda n, k: no_rope_layers(n, k)[:-1], "one flag per layer"),
    (lambda n, k: None, "list of"),
])
def test_ex3_rejects_wrong(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_3(wrong)

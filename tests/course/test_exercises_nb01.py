"""The checkers of notebook 01 accept right answers and reject wrong ones with a useful hint."""

from __future__ import annotations

import math

import pytest
import torch

from posenc_course.exercises import ExerciseFailure
from posenc_course.exercises.nb01 import check_exercise_1, check_exercise_2, check_exercise_3
from posenc_lib.embeddings.sinusoidal import sinusoidal_frequencies

pytestmark = pytest.mark.usefixtures("strict_checkers")  # wrong answers raise ExerciseFailure


def count_turns(d_model, base, length):
    i = torch.arange(d_model // 2, dtype=torch.float64)
    return int((2 * math.pi * base ** (2 * i / d_model) <= length).sum())


TURNS = int((2 * math.pi / sinusoidal_frequencies(64) <= 512).sum())  # what the notebook computes


def test_right_answers_pass(capsys):
    assert TURNS == count_turns(64, 10000.0, 512) == 16
    check_exercise_1(16, TURNS)
    check_exercise_2("a")
    check_exercise_2("(A)")
    check_exercise_3(40.0 ** -(torch.arange(8) / 8))  # a geometric ladder, base 40
    check_exercise_3(torch.linspace(1.0, 0.03, 8, dtype=torch.float32))  # any design with the properties
    out = capsys.readouterr().out
    assert out.count("[passed]") == 5


@pytest.mark.parametrize(("guess", "hint"), [(8, "too low by 8.*doubling ladder"), (15, "only the exact value"),
                                             (32, "too high by 16.*half way up"), (16.5, "too high"),
                                             ("16", "must be a number")])
def test_exercise_1_rejects_a_wrong_count(guess, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_1(guess, TURNS)


@pytest.mark.parametrize(("letter", "hint"), [("b", "zero row"), ("c", "slowest ones"), ("d", "odd function"),
                                              (2, "one letter")])
def test_exercise_2_rejects_each_wrong_option_with_its_own_hint(letter, hint, second_try):
    with pytest.raises(ExerciseFailure, match=hint):
        second_try(check_exercise_2, letter)


@pytest.mark.parametrize(
    "answer, hint",
    [
        (10000.0 ** -(torch.arange(8) / 8), "less than a quarter turn"),  # the paper's base: slow pairs wasted
        (20.0 ** -(torch.arange(8) / 8), "half a turn"),  # the slowest turns too far
        (torch.full((8,), 0.03), "only 0.0"),  # all slow: neighbours nearly the same
        (torch.linspace(3.5, 0.03, 8), "strictly between 0 and pi"),  # aliasing
        (torch.ones(16), "shape"),
        ([1.0] * 8, "torch.Tensor"),
    ],
)
def test_exercise_3_rejects(answer, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_3(answer)

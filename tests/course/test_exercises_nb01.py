"""The checkers of notebook 01 accept right answers and reject wrong ones with a useful hint."""

from __future__ import annotations

import math

import pytest
import torch

from posenc_course.exercises import ExerciseFailure
from posenc_course.exercises.nb01 import check_exercise_1, check_exercise_2, check_exercise_3
from posenc_lib.embeddings.sinusoidal import shift_matrix, sinusoidal_frequencies, sinusoidal_layout_permutation

pytestmark = pytest.mark.usefixtures("strict_checkers")  # wrong answers raise ExerciseFailure


def count_turns(d_model, base, length):
    i = torch.arange(d_model // 2, dtype=torch.float64)
    return int((2 * math.pi * base ** (2 * i / d_model) <= length).sum())


def concat_shift(k, d_model):
    perm = sinusoidal_layout_permutation(d_model)
    return shift_matrix(k, d_model)[perm][:, perm]


TURNS = int((2 * math.pi / sinusoidal_frequencies(64) <= 512).sum())  # what the notebook computes


def test_right_answers_pass(capsys):
    assert TURNS == count_turns(64, 10000.0, 512) == 16
    check_exercise_1(16, TURNS)
    check_exercise_2("a")
    check_exercise_2("(A)")
    check_exercise_3(concat_shift)
    check_exercise_3(lambda k, d: shift_matrix(k, d, layout="half", dtype=torch.float32))
    out = capsys.readouterr().out
    assert out.count("[passed]") == 5


@pytest.mark.parametrize(("guess", "hint"), [(8, "too low by 8.*doubling ladder"), (15, "only the exact value"),
                                             (32, "too high by 16.*half way up"), (16.5, "too high"),
                                             ("16", "must be a number")])
def test_exercise_1_rejects_a_wrong_count(guess, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_1(guess, TURNS)


@pytest.mark.parametrize(("letter", "hint"), [("b", "bounded"), ("c", "buffer"), ("d", "share one frequency"),
                                              (2, "one letter")])
def test_exercise_2_rejects_each_wrong_option_with_its_own_hint(letter, hint, second_try):
    with pytest.raises(ExerciseFailure, match=hint):
        second_try(check_exercise_2, letter)


@pytest.mark.parametrize(
    "answer, hint",
    [
        (lambda k, d: shift_matrix(k, d), "expected < 1e-5"),  # interleaved matrix used on the concat layout
        (lambda k, d: concat_shift(k, d).T if k else concat_shift(1, d), "transpose|-k"),
        (lambda k, d: concat_shift(-k, d) if k else concat_shift(1, d), "transpose|-k"),
        (lambda k, d: torch.eye(d + 1), "shape"),
    ],
)
def test_exercise_3_rejects(answer, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_3(answer)

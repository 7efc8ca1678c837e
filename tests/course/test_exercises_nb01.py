"""The checkers of notebook 01 accept right answers and reject wrong ones with a useful hint."""

from __future__ import annotations

import math

import pytest
import torch

from posenc_course.exercises import ExerciseFailure
from posenc_course.exercises.nb01 import check_exercise_1, check_exercise_2, check_exercise_3
from posenc_lib.embeddings.sinusoidal import shift_matrix, sinusoidal_layout_permutation, sinusoidal_table

pytestmark = pytest.mark.usefixtures("strict_checkers")  # wrong answers raise ExerciseFailure


def concat_float32(max_len, d_model):
    pos = torch.arange(max_len, dtype=torch.float32)[:, None]
    w = torch.exp(-torch.arange(0, d_model, 2, dtype=torch.float32) / d_model * math.log(10000.0))
    return torch.cat([(pos * w).sin(), (pos * w).cos()], dim=1)


def count_turns(d_model, base, length):
    i = torch.arange(d_model // 2, dtype=torch.float64)
    return int((2 * math.pi * base ** (2 * i / d_model) <= length).sum())


def concat_shift(k, d_model):
    perm = sinusoidal_layout_permutation(d_model)
    return shift_matrix(k, d_model)[perm][:, perm]


def test_right_answers_pass(capsys):
    check_exercise_1(concat_float32)
    check_exercise_1(lambda n, d: sinusoidal_table(n, d, layout="concat"))
    check_exercise_2(count_turns)
    check_exercise_3(concat_shift)
    check_exercise_3(lambda k, d: shift_matrix(k, d, layout="concat", dtype=torch.float32))
    out = capsys.readouterr().out
    assert out.count("[passed]") == 5


@pytest.mark.parametrize(
    "answer, hint",
    [
        (lambda n, d: sinusoidal_table(n, d), "interleaved layout"),
        (lambda n, d: sinusoidal_table(n, d, layout="concat").roll(d // 2, dims=1), "swapped"),
        (lambda n, d: sinusoidal_table(n + 1, d, layout="concat")[1:], "shifted by one"),
        (lambda n, d: sinusoidal_table(n, d, base=1000.0, layout="concat"), "expected"),
        (lambda n, d: sinusoidal_table(n, d + 2, layout="concat"), "shape"),
        (lambda n, d: sinusoidal_table(n, d, layout="concat").numpy(), "torch.Tensor"),
        (lambda n, d: torch.zeros(n, d, dtype=torch.long), "floating-point"),
    ],
)
def test_exercise_1_rejects(answer, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_1(answer)


@pytest.mark.parametrize(
    "answer, hint",
    [
        (lambda d, b, n: d // 2 - count_turns(d, b, n), "NOT complete"),
        (lambda d, b, n: int((2 * math.pi * b ** (2 * torch.arange(d // 2) / d) < n - 1).sum()), "expected"),
        (lambda d, b, n: int((b ** (2 * torch.arange(d // 2) / d) <= n).sum()), "expected"),  # forgot 2*pi
        (lambda d, b, n: float(count_turns(d, b, n)), "Python int"),
        (lambda d, b, n: torch.tensor(count_turns(d, b, n)), "Python int"),
    ],
)
def test_exercise_2_rejects(answer, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_2(answer)


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

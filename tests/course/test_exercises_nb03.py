"""The notebook 03 checkers accept the worked solutions and reject typical wrong answers."""

from __future__ import annotations

import pytest
import torch

from posenc_course.exercises import ExerciseFailure
from posenc_course.exercises.nb03 import (
    check_exercise_1,
    check_exercise_2,
    check_exercise_3,
    check_exercise_4,
)
from posenc_lib.rotary.rope import convert_qk_weight

pytestmark = pytest.mark.usefixtures("strict_checkers")  # wrong answers raise ExerciseFailure

# ---------------------------------------------------------------- exercise 1: rotate_half


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def test_ex1_accepts_solution(capsys):
    check_exercise_1(rotate_half)
    assert "[passed] Exercise 1" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda x: torch.cat([x.chunk(2, -1)[1], -x.chunk(2, -1)[0]], -1), "signs are swapped"),
        (lambda x: torch.cat([x.chunk(2, -1)[1], x.chunk(2, -1)[0]], -1), "forgot the minus"),
        (lambda x: torch.stack([-x[..., 1::2], x[..., 0::2]], -1).flatten(-2), "neighbouring pairs"),
        (lambda x: x, "not \\[-x2 \\| x1\\]"),
        (lambda x: rotate_half(x)[..., :-1], "same shape"),
        (lambda x: x.mul_(-1).flip(-1), "in place"),
        (lambda x: 1 / 0, "ZeroDivisionError"),
    ],
)
def test_ex1_rejects_wrong(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_1(wrong)


@pytest.mark.parametrize(
    ("checker", "name"),
    [(check_exercise_1, "rotate_half"), (check_exercise_2, "interleaved_to_half"),
     (check_exercise_3, "decode_positions"), (check_exercise_4, "safe_cos_sin")],
)
def test_checkers_require_a_function(checker, name):
    with pytest.raises(ExerciseFailure, match="the answer must be a function, got Tensor"):
        checker(torch.zeros(3))


# ---------------------------------------------------------------- exercise 2: layout conversion


def interleaved_to_half(weight, n_heads):
    head_dim = weight.shape[0] // n_heads
    order = torch.cat([torch.arange(0, head_dim, 2), torch.arange(1, head_dim, 2)])
    return weight.reshape(n_heads, head_dim, -1)[:, order].reshape(weight.shape)


def global_permutation(weight, n_heads):
    rows = weight.shape[0]
    return weight[torch.cat([torch.arange(0, rows, 2), torch.arange(1, rows, 2)])]


def inverse_permutation(weight, n_heads):
    head_dim = weight.shape[0] // n_heads
    order = torch.argsort(torch.cat([torch.arange(0, head_dim, 2), torch.arange(1, head_dim, 2)]))
    return weight.reshape(n_heads, head_dim, -1)[:, order].reshape(weight.shape)


def test_ex2_accepts_solution(capsys):
    check_exercise_2(interleaved_to_half)
    assert "[passed] Exercise 2" in capsys.readouterr().out


def test_ex2_solution_is_the_library_conversion():
    weight = torch.randn(4 * 16, 32)
    assert torch.equal(interleaved_to_half(weight, 4), convert_qk_weight(weight, 4, to="half"))


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda w, n: w, "unchanged"),
        (global_permutation, "within each head"),
        (inverse_permutation, "inverse permutation"),
        (lambda w, n: w.flip(0), "scores differ"),
        (lambda w, n: w[:-1], "input's shape"),
    ],
)
def test_ex2_rejects_wrong(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_2(wrong)


# ---------------------------------------------------------------- exercise 3: decode positions


def decode_positions(cache_len, n_new):
    return torch.arange(cache_len, cache_len + n_new)[None]


def test_ex3_accepts_solution(capsys):
    check_exercise_3(decode_positions)
    assert "[passed] Exercise 3" in capsys.readouterr().out


def test_ex3_does_not_touch_the_global_random_state():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    check_exercise_3(decode_positions)
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda c, n: torch.arange(n)[None], "restart at 0"),
        (lambda c, n: torch.arange(c + 1, c + 1 + n)[None], "expected"),
        (lambda c, n: torch.arange(c, c + n), "shape \\(1,"),
        (lambda c, n: torch.arange(c, c + n, dtype=torch.float32)[None], "int64"),
        (lambda c, n: list(range(c, c + n)), "int64 tensor, got list"),
    ],
)
def test_ex3_rejects_wrong(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_3(wrong)


# ---------------------------------------------------------------- exercise 4: safe cos/sin


def safe_cos_sin(positions, inv_freq, dtype):
    angle = positions.to(torch.float32)[..., None] * inv_freq.to(torch.float32)
    return angle.cos().to(dtype), angle.sin().to(dtype)


def naive_cos_sin(positions, inv_freq, dtype):
    angle = positions.to(dtype)[..., None] * inv_freq.to(dtype)
    return angle.cos(), angle.sin()


def test_ex4_accepts_solution(capsys):
    check_exercise_4(safe_cos_sin)
    assert "[passed] Exercise 4" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (naive_cos_sin, "compute the angles in float32"),
        (lambda p, f, d: tuple(t.float() for t in safe_cos_sin(p, f, d)), "must be torch.bfloat16"),
        (lambda p, f, d: safe_cos_sin(p, f, d)[0], "tuple \\(cos, sin\\)"),
        (lambda p, f, d: safe_cos_sin(p, f, d)[::-1], "off by"),
        (lambda p, f, d: safe_cos_sin(p[0], f, d), "shape \\(batch, seq, head_dim/2\\)"),
    ],
)
def test_ex4_rejects_wrong(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_4(wrong)

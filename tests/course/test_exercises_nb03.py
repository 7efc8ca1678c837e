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

# ---------------------------------------------------------------- exercises 1-2: predict, explain
def test_ex1_accepts_a_close_prediction(capsys):
    check_exercise_1(-0.4, -0.4161)
    assert "[passed] Exercise 1" in capsys.readouterr().out


@pytest.mark.parametrize(("guess", "hint"), [(1.0, "too high.*right angle"), (-1.0, "too low.*not opposite"),
                                             ("x", "must be a number")])
def test_ex1_rejects_a_far_prediction(guess, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_1(guess, -0.4161)


def test_ex2_accepts_d(capsys):
    check_exercise_2("d")
    assert "[passed] Exercise 2" in capsys.readouterr().out


@pytest.mark.parametrize(("letter", "hint"), [("b", "more than speed"), ("c", "share one head_dim"),
                                              ("a", "keeps every norm")])
def test_ex2_rejects_each_wrong_option(letter, hint, second_try):
    with pytest.raises(ExerciseFailure, match=hint):
        second_try(check_exercise_2, letter)


@pytest.mark.parametrize(("checker", "name"), [(check_exercise_3, "interleaved_to_half"),
                                               (check_exercise_4, "decode_positions")])
def test_checkers_require_a_function(checker, name):
    with pytest.raises(ExerciseFailure, match="the answer must be a function, got Tensor"):
        checker(torch.zeros(3))


# ---------------------------------------------------------------- exercise 3: layout conversion


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


def test_ex3_accepts_solution(capsys):
    check_exercise_3(interleaved_to_half)
    assert "[passed] Exercise 3" in capsys.readouterr().out


def test_ex3_solution_is_the_library_conversion():
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
def test_ex3_rejects_wrong(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_3(wrong)


# ---------------------------------------------------------------- exercise 4: decode positions


def decode_positions(cache_len, n_new):
    return torch.arange(cache_len, cache_len + n_new)[None]


def test_ex4_accepts_solution(capsys):
    check_exercise_4(decode_positions)
    assert "[passed] Exercise 4" in capsys.readouterr().out


def test_ex4_does_not_touch_the_global_random_state():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    check_exercise_4(decode_positions)
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
def test_ex4_rejects_wrong(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_4(wrong)

"""The notebook 03 checkers accept the worked solutions and reject typical wrong answers."""

from __future__ import annotations

import math

import pytest
import torch

from posenc_course.exercises import ExerciseFailure
from posenc_course.exercises.nb03 import (
    check_exercise_1,
    check_exercise_2,
    check_exercise_3,
    check_exercise_4,
)
from posenc_course.data import lag_task
from posenc_course.training import train
from posenc_lib.models import TinyTransformer
from posenc_lib.rotary.rope import RotaryPE, convert_qk_weight

pytestmark = pytest.mark.usefixtures("strict_checkers")  # wrong answers raise ExerciseFailure

# ---------------------------------------------------------------- exercises 1-2: predict, explain
SCORE_5 = 0.5 * math.cos(2.0) + 0.5 * math.cos(0.02)


def test_ex1_accepts_a_close_prediction(capsys):
    check_exercise_1(0.3, SCORE_5)
    assert "[passed] Exercise 1" in capsys.readouterr().out


@pytest.mark.parametrize(("guess", "hint"), [(1.0, "too high.*fast pair"), (-0.416, "too low.*slow pair"),
                                             ("x", "must be a number")])
def test_ex1_rejects_a_far_prediction(guess, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_1(guess, SCORE_5)


def test_ex2_accepts_b(capsys):
    check_exercise_2("b")
    assert "[passed] Exercise 2" in capsys.readouterr().out


@pytest.mark.parametrize(("letter", "hint"), [("a", "positions 0-31 only"), ("c", "already rotated"),
                                              ("d", "not a whole number of turns")])
def test_ex2_rejects_each_wrong_option(letter, hint, second_try):
    with pytest.raises(ExerciseFailure, match=hint):
        second_try(check_exercise_2, letter)


def test_checkers_require_a_function():
    with pytest.raises(ExerciseFailure, match="the answer must be a function, got Tensor"):
        check_exercise_3(torch.zeros(3))
    with pytest.raises(ExerciseFailure, match="the answer must be a function, got Tensor"):
        check_exercise_4(torch.zeros(3), None)


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


# ---------------------------------------------------------------- exercise 4: grouped position ids


def grouped_positions(length):
    near = min(length, 28)
    far = length - near
    return torch.cat([torch.arange(far) * 4 // max(far, 1), 4 + torch.arange(near)])[None]


@pytest.fixture(scope="module")
def lag_decoder():
    """Section 5's decoder, trained as there (200 steps on the lag-3 task at length 32)."""
    gen = torch.Generator().manual_seed(0)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = TinyTransformer(16, 16, d_model=32, n_heads=2, n_layers=1, causal=True, pool="none",
                                scheme=RotaryPE(head_dim=16, layout="interleaved"))
        train(model, lag_task(4096, 32, 16, 3, gen), steps=200, lr=3e-3, batch_size=64, generator=gen, desc=None)
    return model.eval()


def test_ex4_accepts_solution(capsys, lag_decoder):
    check_exercise_4(grouped_positions, lag_decoder)
    assert "[passed] Exercise 4" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda n: torch.arange(n)[None], "decoder saw distances up to 31"),
        (lambda n: (torch.arange(n) % 32)[None], "go down somewhere"),
        (lambda n: (torch.arange(n) * 31 // max(n - 1, 1))[None], "key 3 back is at distance"),
        (lambda n: torch.cat([torch.full((n - 3,), 27), 29 + torch.arange(3)])[None], "key 3 back"),
        (lambda n: torch.cat([torch.full((n - 4,), 28), 28 + torch.arange(4)])[None], "keys sit at distance 3"),
        (lambda n: grouped_positions(n)[0], "shape \\(1,"),
        (lambda n: grouped_positions(n).float(), "int64"),
    ],
)
def test_ex4_rejects_wrong(wrong, hint, lag_decoder):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_4(wrong, lag_decoder)

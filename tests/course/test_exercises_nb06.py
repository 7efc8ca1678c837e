"""The notebook 06 checkers accept the worked solutions, reject typical wrong answers, and print [to do] on stubs (tests/course/test_exercises_common.py)."""

from __future__ import annotations

import math

import pytest
import torch

from posenc_course.exercises import ExerciseFailure
from posenc_course.exercises.nb06 import (
    check_exercise_1,
    check_exercise_2,
    check_exercise_3,
    check_exercise_4,
    check_exercise_5,
)

pytestmark = pytest.mark.usefixtures("strict_checkers")  # wrong answers raise ExerciseFailure

# ---------------------------------------------------------------- exercise 1: perplexity from per-position losses


def perplexity_curve(losses, lengths):
    return [math.exp(losses[:n].double().mean().item()) for n in lengths]


def test_ex1_accepts_solution(capsys):
    check_exercise_1(perplexity_curve)
    assert "[passed] Exercise 1" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda losses, lengths: [losses[:n].double().sum().exp().item() for n in lengths], r"\*sum\*"),
        (lambda losses, lengths: [losses[:n].mean().item() for n in lengths], "mean loss \\(nats\\)"),
        (lambda losses, lengths: [losses[:n].exp().mean().item() for n in lengths], "mean of exp"),
        (lambda losses, lengths: [math.exp(losses[n - 1].item()) for n in lengths], "position n-1 only"),
        (lambda losses, lengths: [math.exp(losses[1:n].mean().item()) for n in lengths], "expected"),
        (lambda losses, lengths: [math.exp(losses[:n].mean().item()) for n in lengths[:-1]], "one perplexity per length"),
        (lambda losses, lengths: None, "list of 4 numbers"),
        (lambda losses, lengths: 1 / 0, "ZeroDivisionError"),
    ],
)
def test_ex1_rejects_wrong(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_1(wrong)


# ---------------------------------------------------------------- exercise 2: NTK-aware frequencies


def ntk_inv_freq(head_dim, base, factor):
    new_base = base * factor ** (head_dim / (head_dim - 2))
    return 1.0 / new_base ** (torch.arange(0, head_dim, 2).float() / head_dim)


def test_ex2_accepts_solution(capsys):
    check_exercise_2(ntk_inv_freq)
    assert "[passed] Exercise 2" in capsys.readouterr().out


def _plain(head_dim, base):
    return 1.0 / base ** (torch.arange(0, head_dim, 2).float() / head_dim)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda d, base, s: _plain(d, base) / s, "linear interpolation"),
        (lambda d, base, s: _plain(d, base), "unscaled frequencies"),
        (lambda d, base, s: _plain(d, base * s), "d/\\(d-2\\)"),
        (lambda d, base, s: _plain(d, base / s ** (d / (d - 2))), "differ from NTK-aware"),
        (lambda d, base, s: _plain(d, base * s ** (d / (d - 2)))[:-1], "shape"),
        (lambda d, base, s: [1.0] * (d // 2), "tensor of shape"),
    ],
)
def test_ex2_rejects_wrong(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_2(wrong)


# ---------------------------------------------------------------- exercise 3: window + first tokens mask


def sink_window_mask(seq_len, window, sink):
    i, j = torch.arange(seq_len)[:, None], torch.arange(seq_len)[None, :]
    return (j <= i) & ((i - j < window) | (j < sink))


def test_ex3_accepts_solution(capsys):
    check_exercise_3(sink_window_mask)
    assert "[passed] Exercise 3" in capsys.readouterr().out


def _ij(n):
    return torch.arange(n)[:, None], torch.arange(n)[None, :]


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda n, w, s: (lambda i, j: (i - j < w) | (j < s))(*_ij(n)), "causal"),
        (lambda n, w, s: (lambda i, j: (j <= i) & ((i - j <= w) | (j < s)))(*_ij(n)), "entries differ"),
        (lambda n, w, s: (lambda i, j: (j <= i) & (i - j < w))(*_ij(n)), "entries differ"),
        (lambda n, w, s: (lambda i, j: (j < i) & ((i - j < w) | (j < s)))(*_ij(n)), "see itself"),
        (lambda n, w, s: sink_window_mask(n, w, s).float(), "bool tensor"),
        (lambda n, w, s: sink_window_mask(n, w, s)[None, None], "bool tensor of shape"),
    ],
)
def test_ex3_rejects_wrong(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_3(wrong)


# ---------------------------------------------------------------- non-functions


@pytest.mark.parametrize(
    ("check", "name"),
    [(check_exercise_1, "perplexity_curve"), (check_exercise_2, "ntk_inv_freq"), (check_exercise_3, "sink_window_mask")],
)
def test_checkers_require_a_function(check, name):
    with pytest.raises(ExerciseFailure, match="the answer must be a function, got Tensor"):
        check(torch.zeros(3))


# ---------------------------------------------------------------- exercise 4: predict the pairs YaRN keeps


def test_ex4_accepts_the_count(capsys):
    check_exercise_4(3, 3)
    assert "[passed] Exercise 4" in capsys.readouterr().out


@pytest.mark.parametrize(("guess", "hint"), [(1, "too low"), (5, "too high")])
def test_ex4_rejects_wrong_counts(guess, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_4(guess, 3)


# ---------------------------------------------------------------- exercise 5: why zero-shot PI is bad at L


def test_ex5_accepts_b(capsys):
    check_exercise_5("(B)")
    assert "[passed] Exercise 5" in capsys.readouterr().out


@pytest.mark.parametrize("letter", ["a", "c", "d"])
def test_ex5_rejects_the_others(letter):
    with pytest.raises(ExerciseFailure, match="is not it"):
        check_exercise_5(letter)

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
)

pytestmark = pytest.mark.usefixtures("strict_checkers")  # wrong answers raise ExerciseFailure

# ---------------------------------------------------------------- exercise 1: predict the pairs YaRN keeps


def test_ex1_accepts_the_count(capsys):
    check_exercise_1(3, 3)
    assert "[passed] Exercise 1" in capsys.readouterr().out


@pytest.mark.parametrize(("guess", "hint"), [(1, "too low"), (5, "too high")])
def test_ex1_rejects_wrong_counts(guess, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_1(guess, 3)


# ---------------------------------------------------------------- exercises 2 and 3: explain why


def test_ex2_accepts_b(capsys):
    check_exercise_2("(B)")
    assert "[passed] Exercise 2" in capsys.readouterr().out


def test_ex3_accepts_d(capsys):
    check_exercise_3("d")
    assert "[passed] Exercise 3" in capsys.readouterr().out


@pytest.mark.parametrize(("check", "letter"), [(check_exercise_2, "a"), (check_exercise_2, "c"),
                                               (check_exercise_2, "d"), (check_exercise_3, "a"),
                                               (check_exercise_3, "b"), (check_exercise_3, "c")])
def test_the_choices_reject_the_others(check, letter):
    with pytest.raises(ExerciseFailure, match="is not it"):
        check(letter)


# ---------------------------------------------------------------- exercise 4: design a rescaling


@pytest.fixture(scope="module")
def rope_runs():
    """The notebook's three trained RoPE models and its 32 evaluation windows of 8L."""
    from posenc_course.data import char_corpus, lm_eval_windows
    from posenc_course.nb06_extrapolation import load_base_model

    corpus = char_corpus()
    inputs, targets = lm_eval_windows(corpus.valid, 256, 32)
    return [load_base_model("RoPE", s, len(corpus.vocab))[0] for s in (0, 1, 2)], inputs, targets


def keep_and_divide(theta, L0, factor):
    turned = 2 * math.pi / theta <= L0
    return torch.where(turned, theta, theta / factor)


def keep_and_divide_by_half(theta, L0, factor):  # another design that passes, and costs less at L
    turned = 2 * math.pi / theta <= L0
    return torch.where(turned, theta, theta / (factor / 2))


@pytest.mark.parametrize("design", [keep_and_divide, keep_and_divide_by_half])
def test_ex4_accepts_designs_that_keep_the_fast_pairs_and_pay_off(design, rope_runs, capsys):
    check_exercise_4(design, *rope_runs)
    out = capsys.readouterr().out
    assert "[passed] Exercise 4" in out and "new/old per pair" in out and "at 8L" in out


@pytest.mark.parametrize(
    ("design", "hint"),
    [
        (lambda theta, L0, s: theta.clone(), "not ahead of NTK-aware at 8L"),  # plain RoPE
        # pairs that turn within 8 L0 kept (pairs 0-3 at L0 = 32), the rest divided
        (lambda theta, L0, s: torch.where(2 * math.pi / theta <= s * L0, theta, theta / s), "not ahead of NTK-aware"),
    ],
)
def test_ex4_measures_the_cost(design, hint, rope_runs):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_4(design, *rope_runs)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda theta, L0, s: theta / s, "pair 0 completes a full turn"),  # PI
        (lambda theta, L0, s: torch.where(torch.arange(len(theta)) < 2, theta, theta / s), "pair 2 completes"),
        (lambda theta, L0, s: torch.where(2 * math.pi / theta <= L0, theta, theta / s).flip(0), "pair 0 completes"),
        (lambda theta, L0, s: keep_and_divide(theta, L0, s)[:-1], "shape"),
        (lambda theta, L0, s: -keep_and_divide(theta, L0, s), "positive"),
        (lambda theta, L0, s: [1.0] * len(theta), "tensor of shape"),
        (lambda theta, L0, s: 1 / 0, "ZeroDivisionError"),
    ],
)
def test_ex4_rejects_designs_without_the_properties(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_4(wrong)  # the properties are checked before any model runs


def test_ex4_rejects_a_pair_faster_than_the_one_before():
    def bumpy(theta, L0, s):
        new = keep_and_divide(theta, L0, s)
        new[-2] = new[-1] / 2  # slower than the last: the last now turns faster than the one before it
        return new

    with pytest.raises(ExerciseFailure, match="turns faster than pair"):
        check_exercise_4(bumpy)


def test_ex4_asks_for_the_models():
    with pytest.raises(ExerciseFailure, match="pass the trained RoPE models"):
        check_exercise_4(keep_and_divide)


def test_ex4_requires_a_function():
    with pytest.raises(ExerciseFailure, match="the answer must be a function, got Tensor"):
        check_exercise_4(torch.zeros(3))

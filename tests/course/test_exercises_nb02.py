"""The checkers of notebook 02 accept a right answer and reject wrong ones with a helpful hint."""

from __future__ import annotations

import math

import pytest
import torch

from posenc_course.exercises import ExerciseFailure
from posenc_course.exercises.nb02 import check_exercise_1, check_exercise_2, check_exercise_3, check_exercise_4
from posenc_lib.embeddings.learnable import LearnablePE

pytestmark = pytest.mark.usefixtures("strict_checkers")  # wrong answers raise ExerciseFailure


# ----------------------------------------------------------------- exercise 1
def test_ex1_accepts_a_close_prediction(capsys):
    check_exercise_1(0.3, 0.2985)
    assert "[passed] Exercise 1" in capsys.readouterr().out


@pytest.mark.parametrize(("guess", "hint"), [(0.9, "too high.*one rank too high"), (0.0, "too low.*same token"),
                                             ("0.3", "must be a number")])
def test_ex1_rejects_a_far_prediction(guess, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_1(guess, 0.2985)


def test_ex2_accepts_c(capsys):
    check_exercise_2("c")
    check_exercise_2("(C)")
    assert capsys.readouterr().out.count("[passed] Exercise 2") == 2


@pytest.mark.parametrize(("letter", "hint"), [("a", "no row exists"), ("b", "fails there too"),
                                              ("d", "nothing overflows"), (2, "one letter")])
def test_ex2_rejects_each_wrong_option_with_its_own_hint(letter, hint, second_try):
    with pytest.raises(ExerciseFailure, match=hint):
        second_try(check_exercise_2, letter)


# ----------------------------------------------------------------- exercise 3
def extend(pe, new_max_len):
    new = LearnablePE(pe.d_model, new_max_len, init_std=pe.init_std)
    with torch.no_grad():
        new.weight.copy_(pe.weight[torch.arange(new_max_len) % pe.max_len])
    return new


def test_ex3_accepts_the_reference(capsys):
    check_exercise_3(extend)
    assert "[passed] Exercise 3" in capsys.readouterr().out


def in_place(pe, new_max_len):
    pe.weight = torch.nn.Parameter(pe.weight.detach()[torch.arange(new_max_len) % pe.max_len])
    pe.max_len = new_max_len
    return pe


def fresh_rows(pe, new_max_len):
    new = LearnablePE(pe.d_model, new_max_len, init_std=pe.init_std)
    with torch.no_grad():
        new.weight[: pe.max_len] = pe.weight
    return new


def repeat_last(pe, new_max_len):
    new = LearnablePE(pe.d_model, new_max_len)
    with torch.no_grad():
        new.weight.copy_(pe.weight[torch.arange(new_max_len).clamp(max=pe.max_len - 1)])
    return new


def shared(pe, new_max_len):
    new = LearnablePE(pe.d_model, new_max_len)
    if new_max_len == pe.max_len:
        new.weight = pe.weight
    else:
        with torch.no_grad():
            new.weight.copy_(pe.weight[torch.arange(new_max_len) % pe.max_len])
    return new


def frozen(pe, new_max_len):
    new = extend(pe, new_max_len)
    new.weight.requires_grad_(False)
    return new


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (in_place, "return a new module"),
        (fresh_rows, r"row p must be a copy of row p % 4"),
        (repeat_last, r"row p must be a copy"),
        (shared, "shares memory"),
        (frozen, "trainable"),
        (lambda pe, n: pe.weight.detach()[torch.arange(n) % pe.max_len], "return a LearnablePE"),
        (lambda pe, n: extend(pe, n + 1), "expected max_len"),
    ],
)
def test_ex3_rejects_wrong_answers(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_3(wrong)


# ----------------------------------------------------------------- exercise 4
def test_ex4_accepts_the_reference(capsys):
    check_exercise_4(lambda d: 1 / math.sqrt(2 * d))
    assert "[passed] Exercise 4" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda d: d**-0.5, "Vaswani"),
        (lambda d: 2**-0.5, "ignores the multiplication"),
        (lambda d: 0.02, "mean squared norm"),
        (lambda d: torch.tensor(1 / math.sqrt(2 * d)), "Python float"),
    ],
)
def test_ex4_rejects_wrong_answers(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_4(wrong)

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
                                             (0.138, "too low"),  # section 5's 12-23 number: not a shift by one
                                             ("0.3", "must be a number")])
def test_ex1_rejects_a_far_prediction(guess, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_1(guess, 0.2985)


def test_ex2_accepts_b(capsys):
    check_exercise_2("b")
    check_exercise_2("(B)")
    assert capsys.readouterr().out.count("[passed] Exercise 2") == 2


@pytest.mark.parametrize(("letter", "hint"), [("a", "as long as in training"), ("c", "same norm"),
                                              ("d", "never saw"), (2, "one letter")])
def test_ex2_rejects_each_wrong_option_with_its_own_hint(letter, hint, second_try):
    with pytest.raises(ExerciseFailure, match=hint):
        second_try(check_exercise_2, letter)


# ----------------------------------------------------------------- exercise 3
def extend(pe, new_max_len):
    new = LearnablePE(pe.d_model, new_max_len, init_std=pe.init_std)
    with torch.no_grad():
        new.weight.copy_(pe.weight[torch.arange(new_max_len) % pe.max_len])
    return new


def mirror(pe, new_max_len):  # another design: walk back through the trained rows
    new = LearnablePE(pe.d_model, new_max_len)
    period = torch.cat([torch.arange(pe.max_len), torch.arange(pe.max_len - 2, 0, -1)])  # 0..L-1, L-2..1
    with torch.no_grad():
        new.weight.copy_(pe.weight[period[torch.arange(new_max_len) % len(period)]])
    return new


def random_rows(pe, new_max_len):
    new = extend(pe, new_max_len)
    size = pe.weight.detach().norm(dim=1).mean()
    with torch.no_grad():
        rows = torch.randn(new_max_len - pe.max_len, pe.d_model)
        new.weight[pe.max_len:] = size * rows / rows.norm(dim=1, keepdim=True)
    return new


def zeros(pe, new_max_len):
    new = extend(pe, new_max_len)
    with torch.no_grad():
        new.weight[pe.max_len:] = 0
    return new


def test_ex3_accepts_designs_with_the_properties(capsys):
    check_exercise_3(mirror)
    assert capsys.readouterr().out.count("[passed] Exercise 3") == 1


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
        new = mirror(pe, new_max_len)
    return new


def frozen(pe, new_max_len):
    new = extend(pe, new_max_len)
    new.weight.requires_grad_(False)
    return new


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (in_place, "return a new module"),
        (fresh_rows, r"new rows have norms"),
        (random_rows, "mean cosine"),  # random rows at the trained rows' scale
        (zeros, "new rows have norms"),
        (repeat_last, r"neighbouring new rows are only 0 apart"),
        (shared, "shares memory"),
        (frozen, "trainable"),
        (lambda pe, n: pe.weight.detach()[torch.arange(n) % pe.max_len], "return a LearnablePE"),
        (lambda pe, n: extend(pe, n + 1), "expected max_len"),
        (extend, "at the join"),  # Longformer's cyclic copy: row 0 follows the last trained row
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

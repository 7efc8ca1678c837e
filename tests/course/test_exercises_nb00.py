"""Checkers of notebook 00 accept the worked solutions and reject wrong answers."""

from __future__ import annotations

import pytest
import torch

from posenc_course.exercises import ExerciseFailure
from posenc_course.exercises.nb00 import EXERCISE_3_TASK, check_exercise_1, check_exercise_2, check_exercise_3

pytestmark = pytest.mark.usefixtures("strict_checkers")  # wrong answers raise ExerciseFailure


def inverse_permutation(perm):
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(len(perm))
    return inv


def equivariance_gap(model, tokens, perm):
    with torch.no_grad():
        return (model.features(tokens[:, perm]) - model.features(tokens)[:, perm]).abs().max().item()


def test_exercise_1_accepts_correct_answers(capsys):
    check_exercise_1(inverse_permutation)
    check_exercise_1(torch.argsort)  # another correct answer
    assert capsys.readouterr().out.count("[passed] Exercise 1") == 2


@pytest.mark.parametrize(
    "wrong",
    [
        lambda perm: perm,  # the permutation itself (only right when it is an involution)
        lambda perm: torch.arange(len(perm)),  # the identity
        lambda perm: perm.flip(0),
        lambda perm: inverse_permutation(perm).float(),  # right values, wrong dtype
        lambda perm: inverse_permutation(perm).tolist(),  # not a tensor
    ],
)
def test_exercise_1_rejects_wrong_answers(wrong):
    with pytest.raises(ExerciseFailure, match="Exercise 1"):
        check_exercise_1(wrong)


def test_exercise_2_accepts_correct_answer(capsys):
    check_exercise_2(equivariance_gap)
    assert "[passed] Exercise 2" in capsys.readouterr().out


@pytest.mark.parametrize(
    "wrong",
    [
        lambda model, tokens, perm: 0.0,  # "attention is always equivariant"
        lambda model, tokens, perm: equivariance_gap(model, tokens, torch.arange(len(perm))),  # forgot to shuffle
        lambda model, tokens, perm: (  # compares against the unshuffled output
            (model.features(tokens[:, perm]) - model.features(tokens)).abs().max().item()
        ),
        lambda model, tokens, perm: torch.tensor(equivariance_gap(model, tokens, perm)),  # a tensor, not a float
    ],
)
def test_exercise_2_rejects_wrong_answers(wrong):
    with pytest.raises(ExerciseFailure, match="Exercise 2"):
        check_exercise_2(wrong)


def test_exercise_3_accepts_exact_ceiling(capsys):
    check_exercise_3(0.75)
    check_exercise_3(EXERCISE_3_TASK.bag_of_words_ceiling())
    assert capsys.readouterr().out.count("[passed] Exercise 3") == 2


@pytest.mark.parametrize("wrong", [0.5, 2 / 3, 1.0, 0.7, True, "0.75"])
def test_exercise_3_rejects_wrong_answers(wrong):
    with pytest.raises(ExerciseFailure, match="Exercise 3"):
        check_exercise_3(wrong)


def test_exercise_3_hint_for_the_symmetric_answer():
    with pytest.raises(ExerciseFailure, match="the mouse is never an agent"):
        check_exercise_3(0.5)

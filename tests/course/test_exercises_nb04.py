"""The checkers of notebook 04 accept a right answer, reject wrong ones with a helpful hint, and see stubs (tests/course/test_exercises_common.py)."""

from __future__ import annotations

import pytest
import torch

from posenc_course.exercises import ExerciseFailure
from posenc_course.exercises.nb04 import (
    check_exercise_1,
    check_exercise_2,
    check_exercise_3,
    check_exercise_4,
    check_exercise_5,
)

pytestmark = pytest.mark.usefixtures("strict_checkers")  # wrong answers raise ExerciseFailure


# ----------------------------------------------------------------- exercise 1: design a 4-wide 2-D code
def arcs(grid_h, grid_w, step=torch.pi / 6):
    r = torch.arange(grid_h).repeat_interleave(grid_w) * step
    c = torch.arange(grid_w).repeat(grid_h) * step
    return torch.stack([r.cos(), r.sin(), c.cos(), c.sin()], dim=1)


def test_ex1_accepts_designs_with_the_properties(capsys):
    check_exercise_1(arcs)
    check_exercise_1(lambda h, w: arcs(h, w, 0.4).double())  # another step, another dtype
    assert capsys.readouterr().out.count("[passed] Exercise 1") == 2


def one_d(grid_h, grid_w):
    i = torch.arange(grid_h * grid_w) * 0.3
    return torch.stack([i.cos(), i.sin(), (i / 4).cos(), (i / 4).sin()], dim=1)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda h, w: arcs(h, w)[:, :3], "expected shape"),
        (lambda h, w: torch.ones(h * w, 4), "same vector"),
        (lambda h, w: torch.randn(h * w, 4, generator=torch.Generator().manual_seed(0)), "more similar than patches 3"),
        (one_d, "blind spot"),
        (lambda h, w: torch.zeros(h * w, 4), "non-zero"),
        (lambda h, w: [0.0] * 4, "torch.Tensor"),
    ],
)
def test_ex1_rejects_designs_without_them(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_1(wrong)


# ----------------------------------------------------------------- exercise 2: predict the sinusoid's neighbours
def test_ex2_accepts_a_close_prediction(capsys):
    check_exercise_2(10, 10)
    check_exercise_2(9, 10)
    assert capsys.readouterr().out.count("[passed] Exercise 2") == 2


@pytest.mark.parametrize(("guess", "hint"), [(2, "too low"), (14, "too high")])
def test_ex2_rejects_a_far_prediction(guess, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_2(guess, 10)


# ----------------------------------------------------------------- exercise 3
def test_ex3_accepts_the_count(capsys):
    from posenc_course.data import RelativeDirection

    labels = RelativeDirection(3, 6).pairs()[1]
    check_exercise_3(torch.bincount(labels).max().item() / len(labels))
    assert "[passed] Exercise 3" in capsys.readouterr().out


@pytest.mark.parametrize(("wrong", "hint"), [(0.25, "square grid"), (0.5, "two horizontal"), (0.4, "count the allowed"),
                                             ("0.388", "give a number"), (True, "give a number"),
                                             (75, "not a percentage: 75 % as a fraction: 0.75$"),
                                             (38.8, r"as a fraction: 0.388 \(that is the right value\)")])
def test_ex3_rejects_wrong_answers(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_3(wrong)


# ----------------------------------------------------------------- exercises 4 and 5
def test_ex4_and_ex5_accept_the_right_answers(capsys):
    check_exercise_4("a")
    check_exercise_5(3.9, 39 * 100 ** -0.5)
    assert capsys.readouterr().out.count("[passed]") == 2


@pytest.mark.parametrize(("letter", "hint"), [("b", "already holds"), ("c", "rotated queries and keys"),
                                              ("d", "slowest pair")])
def test_ex4_rejects_each_wrong_option_with_its_hint(letter, hint, second_try):
    with pytest.raises(ExerciseFailure, match=hint):
        second_try(check_exercise_4, letter)


@pytest.mark.parametrize(("guess", "hint"), [(0.39, "too low"), (39.0, "too high")])
def test_ex5_rejects_a_wrong_turn(guess, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_5(guess, 39 * 100 ** -0.5)

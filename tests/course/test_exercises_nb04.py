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
)

pytestmark = pytest.mark.usefixtures("strict_checkers")  # wrong answers raise ExerciseFailure


# ----------------------------------------------------------------- exercise 1
def test_ex1_accepts_divmod(capsys):
    check_exercise_1(lambda index, grid_w: (index // grid_w, index % grid_w))
    check_exercise_1(lambda index, grid_w: (torch.div(index, grid_w, rounding_mode="floor"), torch.remainder(index, grid_w)))
    assert capsys.readouterr().out.count("[passed] Exercise 1") == 2


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda index, grid_w: (index % grid_w, index // grid_w), "swapped"),
        (lambda index, grid_w: (index // grid_w, index // grid_w), "patch index 1 is at"),
        (lambda index, grid_w: index // grid_w, "pair of tensors"),
        (lambda index, grid_w: (index // (grid_w + 1), index % (grid_w + 1)), "is at"),
    ],
)
def test_ex1_rejects_wrong_answers(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_1(wrong)


# ----------------------------------------------------------------- exercise 2
def heo_order(rows, cols, inv_freq):
    return torch.cat([cols[:, None] * inv_freq, rows[:, None] * inv_freq], dim=1)


def test_ex2_accepts_the_reference_order(capsys):
    check_exercise_2(heo_order)
    check_exercise_2(lambda r, c, f: heo_order(r, c, f) + 2 * torch.pi)  # the same rotation
    assert capsys.readouterr().out.count("[passed] Exercise 2") == 2


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda r, c, f: torch.cat([r[:, None] * f, c[:, None] * f], dim=1), "other order"),
        (lambda r, c, f: heo_order(r, c, f)[:, : len(f)], "expected shape"),
        (lambda r, c, f: heo_order(r, c, f).tolist(), "torch.Tensor"),
        (lambda r, c, f: torch.cat([c[:, None] * f, c[:, None] * f], dim=1), "should turn by"),
        (lambda r, c, f: heo_order(r + 1, c, f), "should turn by"),
    ],
)
def test_ex2_rejects_wrong_answers(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_2(wrong)


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


# ----------------------------------------------------------------- exercise 4
def mae_sincos(grid_h, grid_w, d):
    w = 10000.0 ** (-torch.arange(d // 4, dtype=torch.float64) / (d // 4))
    r = torch.arange(grid_h).repeat_interleave(grid_w)[:, None] * w
    c = torch.arange(grid_w).repeat(grid_h)[:, None] * w
    return torch.cat([c.sin(), c.cos(), r.sin(), r.cos()], dim=1)


def test_ex4_accepts_the_formula(capsys):
    check_exercise_4(mae_sincos)
    check_exercise_4(lambda h, w, d: mae_sincos(h, w, d).float())
    assert capsys.readouterr().out.count("[passed] Exercise 4") == 2


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda h, w, d: torch.cat([mae_sincos(h, w, d)[:, d // 2 :], mae_sincos(h, w, d)[:, : d // 2]], dim=1), "row-first"),
        (lambda h, w, d: mae_sincos(h, w, d).reshape(h, w, d).transpose(0, 1).reshape(-1, d), "row-first|column-major"),  # the same on a square grid
        (lambda h, w, d: mae_sincos(h, w, d)[:, :-1], "expected shape"),
        (lambda h, w, d: mae_sincos(h, w, d) * 2, "differs"),
    ],
)
def test_ex4_rejects_wrong_answers(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_4(wrong)


# ----------------------------------------------------------------- exercises 5 and 6
def test_ex5_and_ex6_accept_the_right_answers(capsys):
    from posenc_course.exercises.nb04 import check_exercise_5, check_exercise_6
    check_exercise_5("a")
    check_exercise_6(3.9, 39 * 100 ** -0.5)
    assert capsys.readouterr().out.count("[passed]") == 2


@pytest.mark.parametrize(("letter", "hint"), [("b", "values are not rotated"), ("c", "slowest pair"),
                                              ("d", "angle 0")])
def test_ex5_rejects_each_wrong_option_with_its_hint(letter, hint, second_try):
    from posenc_course.exercises.nb04 import check_exercise_5
    with pytest.raises(ExerciseFailure, match=hint):
        second_try(check_exercise_5, letter)


@pytest.mark.parametrize(("guess", "hint"), [(0.39, "too low"), (39.0, "too high")])
def test_ex6_rejects_a_wrong_turn(guess, hint):
    from posenc_course.exercises.nb04 import check_exercise_6
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_6(guess, 39 * 100 ** -0.5)

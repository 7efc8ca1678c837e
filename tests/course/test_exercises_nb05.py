"""The notebook 05 checkers accept the worked solutions, reject typical wrong answers, and print [to do] on stubs (tests/course/test_exercises_common.py)."""

from __future__ import annotations

import math

import pytest
import torch

from posenc_course.exercises import ExerciseFailure
from posenc_course.exercises.nb05 import check_exercise_1, check_exercise_2, check_exercise_3

pytestmark = pytest.mark.usefixtures("strict_checkers")  # wrong answers raise ExerciseFailure

# ---------------------------------------------------------------- exercise 1: ALiBi slopes


def my_alibi_slopes(n_heads):
    def power_of_two(n):
        return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]

    p = 2 ** math.floor(math.log2(n_heads))
    return torch.tensor(power_of_two(p) + power_of_two(2 * p)[0::2][: n_heads - p])


def test_ex1_accepts_solution(capsys):
    check_exercise_1(my_alibi_slopes)
    assert "[passed] Exercise 1" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda n: torch.tensor([2.0 ** (-8 * h / n) for h in range(1, n + 1)]), "not a power of two"),
        (lambda n: torch.tensor([2.0 ** (-8 * h / n) for h in range(n)]), "power of two"),
        (lambda n: torch.tensor([2.0 ** (-h) for h in range(1, n + 1)]), "power of two"),
        (lambda n: my_alibi_slopes(n)[:-1] if n > 1 else my_alibi_slopes(n), "shape"),
        (  # the next power of two's slopes, first n of them: a common slip
            lambda n: torch.tensor([2.0 ** (-8 * h / 2 ** math.ceil(math.log2(n))) for h in range(1, n + 1)]),
            "expected",
        ),
        (lambda n: 1 / 0, "ZeroDivisionError"),
        (lambda n: "slopes", "return a tensor"),
    ],
)
def test_ex1_rejects_wrong(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_1(wrong)


# ---------------------------------------------------------------- exercise 2: Swin index


def my_swin_index(h, w):
    rows, cols = torch.arange(h).repeat_interleave(w), torch.arange(w).repeat(h)
    return (rows[:, None] - rows[None, :] + h - 1) * (2 * w - 1) + (cols[:, None] - cols[None, :] + w - 1)


def test_ex2_accepts_solution(capsys):
    check_exercise_2(my_swin_index)
    assert "[passed] Exercise 2" in capsys.readouterr().out


def _unshifted(h, w):
    rows, cols = torch.arange(h).repeat_interleave(w), torch.arange(w).repeat(h)
    return (rows[:, None] - rows[None, :]) * (2 * w - 1) + (cols[:, None] - cols[None, :])


def _wrong_multiplier(h, w):
    rows, cols = torch.arange(h).repeat_interleave(w), torch.arange(w).repeat(h)
    return (rows[:, None] - rows[None, :] + h - 1) * (2 * h - 1) + (cols[:, None] - cols[None, :] + w - 1)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda h, w: my_swin_index(h, w).t(), "transpose"),
        (_unshifted, "negative"),
        (_wrong_multiplier, "2\\*window_w - 1"),
        (lambda h, w: my_swin_index(h, w).float(), "integer"),
        (lambda h, w: my_swin_index(h, w)[:-1], "return a"),
        (lambda h, w: my_swin_index(h, w).flip(0), "differs in"),
    ],
)
def test_ex2_rejects_wrong(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_2(wrong)


# ---------------------------------------------------------------- exercise 3: first shared distance


def test_ex3_accepts_solution(capsys):
    check_exercise_3(8)
    assert "[passed] Exercise 3" in capsys.readouterr().out


@pytest.mark.parametrize(("wrong", "hint"), [(16, "buckets per direction"), (128, "max_distance"), (7, "buckets 7 and 8"),
                                             (9, "d = 9"), (8.0, "int"), (True, "int"), (-1, "distances 0-199")])
def test_ex3_rejects_wrong(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_3(wrong)


# ----------------------------------------------------------------- exercises 4 and 5
def test_ex4_and_ex5_accept_the_right_answers(capsys):
    import math

    from posenc_course.exercises.nb05 import check_exercise_4, check_exercise_5
    check_exercise_4("(C)")
    check_exercise_5(0.22, math.exp(-1.5))
    assert capsys.readouterr().out.count("[passed]") == 2


@pytest.mark.parametrize(("letter", "hint"), [("a", "float32"), ("b", "silently"), ("d", "which keys count")])
def test_ex4_rejects_each_wrong_option_with_its_hint(letter, hint, second_try):
    from posenc_course.exercises.nb05 import check_exercise_4
    with pytest.raises(ExerciseFailure, match=hint):
        second_try(check_exercise_4, letter)


@pytest.mark.parametrize(("guess", "hint"), [(0.47, "too high"), (0.125, "too low")])
def test_ex5_rejects_a_wrong_weight(guess, hint):
    import math

    from posenc_course.exercises.nb05 import check_exercise_5
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_5(guess, math.exp(-1.5))

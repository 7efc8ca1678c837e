"""The notebook 05 checkers accept the worked solutions, reject typical wrong answers, and print [to do] on stubs (tests/course/test_exercises_common.py)."""

from __future__ import annotations

import math

import pytest
import torch

from posenc_course.exercises import ExerciseFailure
from posenc_course.exercises.nb05 import check_exercise_1, check_exercise_2, check_exercise_3
from posenc_lib.score_bias.swin import swin_relative_position_index
from posenc_lib.score_bias.t5 import t5_relative_bucket

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


# ---------------------------------------------------------------- exercise 2: pairs per Swin table row


def _pairs_per_row(m: int, dr: int, dc: int) -> int:
    """The run of exercise 2: pairs of an m x m window whose table row is that of (dr, dc)."""
    index = swin_relative_position_index(m, m)
    return int((index == (dr + m - 1) * (2 * m - 1) + (dc + m - 1)).sum())


def test_ex2_the_run_counts_what_the_solution_predicts(capsys):
    assert _pairs_per_row(7, 2, -3) == (7 - 2) * (7 - 3) == 20
    assert _pairs_per_row(7, 0, 0) == 49 and _pairs_per_row(7, 6, -6) == 1
    check_exercise_2(20, _pairs_per_row(7, 2, -3))
    assert "[passed] Exercise 2" in capsys.readouterr().out


@pytest.mark.parametrize(("guess", "hint"), [(49, "too high.*no key 2 rows up"), (6, "too low.*multiply"),
                                             (21, "only the exact value passes"), ("20", "must be a number")])
def test_ex2_rejects_a_wrong_count(guess, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_2(guess, 20)


# ---------------------------------------------------------------- exercise 3: T5 rows that training reaches


def test_ex3_the_buckets_of_24_tokens_are_the_solution(capsys):
    reached = t5_relative_bucket(-torch.arange(24), bidirectional=False)
    assert reached.unique().tolist() == list(range(19))
    check_exercise_3(19, 19)
    assert "[passed] Exercise 3" in capsys.readouterr().out


@pytest.mark.parametrize(("guess", "hint"), [(32, "too high.*distances 0-23"), (16, "too low.*log-spaced"),
                                             (24, "too high"), (19.5, "only the exact value")])
def test_ex3_rejects_a_wrong_count(guess, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_3(guess, 19)


# ----------------------------------------------------------------- exercises 4 and 5 (explain why)
def test_ex4_and_ex5_accept_the_right_answers(capsys):
    from posenc_course.exercises.nb05 import check_exercise_4, check_exercise_5
    check_exercise_4("(B)")
    check_exercise_5("a")
    assert capsys.readouterr().out.count("[passed]") == 2


@pytest.mark.parametrize(("letter", "hint"), [("a", "float32"), ("c", "any constant"), ("d", "silently")])
def test_ex4_rejects_each_wrong_option_with_its_hint(letter, hint, second_try):
    from posenc_course.exercises.nb05 import check_exercise_4
    with pytest.raises(ExerciseFailure, match=hint):
        second_try(check_exercise_4, letter)


@pytest.mark.parametrize(("letter", "hint"), [("b", "token only"), ("c", "keys after the query"),
                                              ("d", "every slope")])
def test_ex5_rejects_each_wrong_option_with_its_hint(letter, hint, second_try):
    from posenc_course.exercises.nb05 import check_exercise_5
    with pytest.raises(ExerciseFailure, match=hint):
        second_try(check_exercise_5, letter)


def test_ex5_the_first_wrong_answer_gets_the_nudge_not_the_answer():
    from posenc_course.exercises.nb05 import check_exercise_5
    with pytest.raises(ExerciseFailure, match="Then try another letter") as raised:
        check_exercise_5("d")
    assert "The answer is" not in str(raised.value)


# ----------------------------------------------------------------- exercise 6: design buckets
def _log_buckets(distance):
    far = 8 + torch.floor(7 * torch.log2(distance.clamp(min=8) / 8) / 3).long()
    return torch.where(distance < 8, distance, far.clamp(max=15))


def _linear_buckets(distance):  # another design with the same properties
    far = 8 + (distance - 8) // 8
    return torch.where(distance < 8, distance, far.clamp(max=15))


@pytest.mark.parametrize("design", [_log_buckets, _linear_buckets])
def test_ex6_accepts_designs_with_the_properties(design, capsys):
    from posenc_course.exercises.nb05 import check_exercise_6
    check_exercise_6(design)
    assert "[passed] Exercise 6" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda d: t5_relative_bucket(-d, bidirectional=False, num_buckets=16, max_distance=64), "T5's rounding"),
        (lambda d: (d // 4).clamp(max=15), "own bucket"),
        (lambda d: torch.where(d < 8, d, torch.full_like(d, 15)), "never used"),
        (lambda d: torch.where(d < 8, d, (8 + (d - 8) // 8).clamp(max=14)), "never used"),
        (lambda d: torch.where(d < 8, d, (8 + (d - 8) // 9).clamp(max=15)), "starts at distance 71"),
        (lambda d: _log_buckets(d).float(), "integer tensor"),
        (lambda d: torch.where(d == 100, torch.tensor(9), _log_buckets(d)), "never decrease"),
        (lambda d: _log_buckets(d) + (d > 200), "0..15"),
    ],
)
def test_ex6_rejects_designs_without_them(wrong, hint):
    from posenc_course.exercises.nb05 import check_exercise_6
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_6(wrong)

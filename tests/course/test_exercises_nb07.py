"""The checkers of notebook 07 accept right answers and reject realistic wrong ones with a helpful hint."""

from __future__ import annotations

import pytest
import torch

from posenc_course.exercises import ExerciseFailure
from posenc_course.exercises.nb07 import (check_exercise_1, check_exercise_2, check_exercise_3, check_exercise_4,
                                           check_exercise_5)

pytestmark = pytest.mark.usefixtures("single_thread", "strict_checkers")  # wrong answers raise ExerciseFailure


# ----------------------------------------------------------------- exercise 1
def packed(doc_ids):
    out = torch.zeros_like(doc_ids)
    for r, row in enumerate(doc_ids.tolist()):
        for t in range(1, len(row)):
            out[r, t] = out[r, t - 1] + 1 if row[t] == row[t - 1] else 0
    return out


def packed_vectorised(doc_ids):
    slot = torch.arange(doc_ids.shape[1]).expand_as(doc_ids)
    new = torch.cat([torch.ones_like(doc_ids[:, :1], dtype=torch.bool), doc_ids[:, 1:] != doc_ids[:, :-1]], -1)
    return slot - (slot * new).cummax(-1).values


def test_ex1_accepts_right_answers(capsys):
    check_exercise_1(packed)
    check_exercise_1(packed_vectorised)
    assert capsys.readouterr().out.count("[passed] Exercise 1") == 2


def counts_by_id(doc_ids):  # assumes the ids are 0, 1, 2, ...: wrong for ids that are labels
    onehot = torch.nn.functional.one_hot(doc_ids.clamp_max(2), 3)
    return (onehot.cumsum(1) * onehot).sum(-1) - 1


@pytest.mark.parametrize(("wrong", "hint"), [
    (lambda d: torch.arange(d.shape[1]).expand(d.shape[0], -1), "run on across documents"),
    (lambda d: packed(d) + 1, "off by one"),
    (counts_by_id, "restarting where the id changes"),
    (lambda d: packed(d).float(), "must be integers"),
    (lambda d: packed(d)[:, 1:], "expected shape"),
    (lambda d: packed(d).tolist(), "return a torch.Tensor"),
])
def test_ex1_rejects_wrong_answers(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_1(wrong)


# ----------------------------------------------------------------- exercise 2
def decode(mask, n_new):
    return mask.long().sum(-1, keepdim=True) + torch.arange(n_new)


def test_ex2_accepts_right_answers(capsys):
    check_exercise_2(decode)
    check_exercise_2(lambda m, n: (m.long().cumsum(-1)[:, -1:] - 1) + torch.arange(1, n + 1))
    assert capsys.readouterr().out.count("[passed] Exercise 2") == 2


@pytest.mark.parametrize(("wrong", "hint"), [
    (lambda m, n: torch.arange(m.shape[1], m.shape[1] + n).expand(m.shape[0], -1), "counted the pad slots"),
    (lambda m, n: decode(m, n) - 1, "off by one"),
    (lambda m, n: decode(m, n) + 1, "differs from its unpadded recomputation"),
    (lambda m, n: torch.zeros(m.shape[0], n, dtype=torch.long), "differs from its unpadded"),
    (lambda m, n: decode(m, n)[:, 0], "expected shape"),
])
def test_ex2_rejects_wrong_answers(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_2(wrong)


# ----------------------------------------------------------------- exercise 3
def rows(positions, mask, max_len):
    used = torch.zeros(max_len, dtype=torch.bool)
    used[positions[mask.bool()]] = True
    return used


def test_ex3_accepts_the_right_answer(capsys):
    check_exercise_3(rows)
    check_exercise_3(lambda p, m, n: torch.bincount(p[m], minlength=n) > 0)
    assert capsys.readouterr().out.count("[passed] Exercise 3") == 2


def all_slots(positions, mask, max_len):
    used = torch.zeros(max_len, dtype=torch.bool)
    used[positions.flatten()] = True
    return used


@pytest.mark.parametrize(("wrong", "hint"), [
    (all_slots, "padded slots train nothing"),
    (lambda p, m, n: torch.arange(n) < m.sum(-1).max(), "the gradient reached rows"),
    (lambda p, m, n: rows(p, m, n).long(), "bool tensor"),
    (lambda p, m, n: rows(p, m, n)[:-1], r"return a \(12,\) bool tensor"),
])
def test_ex3_rejects_wrong_answers(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_3(wrong)


# ----------------------------------------------------------------- exercise 4: predict where bf16 angles break
def test_ex4_accepts_the_break_within_half_a_step(capsys):
    for guess in (240, 256, 272):
        check_exercise_4(guess, 256)
    assert capsys.readouterr().out.count("[passed] Exercise 4") == 3


@pytest.mark.parametrize(("guess", "hint"), [(64, "too low.*every whole number up to 256"),
                                             (512, "too high.*every second whole number")])
def test_ex4_rejects_a_wrong_shift_with_its_reason(guess, hint):
    with pytest.raises(ExerciseFailure, match="Which positions does the model see") as first:
        check_exercise_4(guess, 256)  # the first miss: a nudge, not the worked answer
    assert "every whole number" not in str(first.value) and "every second" not in str(first.value)
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_4(guess, 256)


# ----------------------------------------------------------------- exercise 5: the article's test and the start token
def test_ex5_accepts_identical_values(capsys):
    check_exercise_5("c")
    assert "[passed] Exercise 5" in capsys.readouterr().out


@pytest.mark.parametrize(("letter", "hint"), [("a", "when the values differ"), ("b", "frozen table is not"),
                                              ("d", "applied to the scores")])
def test_ex5_rejects_each_wrong_option_with_its_own_hint(letter, hint, second_try):
    with pytest.raises(ExerciseFailure, match=hint):
        second_try(check_exercise_5, letter)

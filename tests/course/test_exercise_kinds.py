"""The two exercise kinds built from data: *predict, then run* (`prediction`) and *explain why* (`choice`).

Each prints "[to do]" for an answer left as `...` (naming what to fill in), "[passed]" with the
explanation for a right one, and "[not yet]" for a wrong one (raised as ExerciseFailure under strict()):
a prediction's gap; a choice's nudge on the first wrong letter, and on a second, different one its own
hint and the worked answer."""

from __future__ import annotations

import pytest

from posenc_course.exercises import (NOT_YET_MARK, PASSED_MARK, TODO_MARK, ExerciseFailure, choice, prediction,
                                     reset_tries, strict)

ceiling = prediction("Exercise 1 (predict a ceiling)", variable="predicted_ceiling", tolerance=0.02,
                     why="Bags with a mouse name their agent.", too_high="Not every bag names it.",
                     too_low="Some bags name the agent.")
turns = prediction("Exercise 2 (predict a count)", variable="predicted_turns", tolerance=0)
ratio = prediction("Exercise 3 (predict a ratio)", variable="predicted_ratio", tolerance=0.1, relative=True)

OPTIONS = {"a": "the softmax", "b": "the mask", "c": "rounding"}
NUDGE = "The encoder has the same softmax: what does only the decoder have?"
why = choice("Exercise 4 (explain)", options=OPTIONS, answer="b", why="the mask is fixed in index space.",
             hints={"a": "a row-wise softmax ignores order (section 1).", "c": "rounding is 1e-16, the gap 0.5."},
             nudge=NUDGE)


# ----------------------------------------------------------------- prediction
def test_an_untouched_prediction_says_which_variable_to_fill(capsys):
    ceiling(..., 0.75)
    out = capsys.readouterr().out
    assert out.startswith(f"{TODO_MARK} Exercise 1 (predict a ceiling): write your prediction into "
                          "`predicted_ceiling`") and "`...`" in out


@pytest.mark.parametrize("guess", [0.75, 0.74, 0.76, 3 / 4])
def test_a_prediction_within_the_tolerance_passes_and_explains(guess, capsys):
    ceiling(guess, 0.75)
    out = capsys.readouterr().out
    assert out.startswith(f"{PASSED_MARK} Exercise 1 (predict a ceiling): you predicted ")
    assert "the run gives 0.75 (within ±0.02). Bags with a mouse name their agent." in out


def test_a_prediction_too_low_names_the_gap_and_its_reason(capsys):
    ceiling(0.5, 0.75)
    assert capsys.readouterr().out == (
        f"{NOT_YET_MARK} Exercise 1 (predict a ceiling): you predicted 0.5, the run gives 0.75: too low by 0.25 "
        "(a prediction within ±0.02 passes). Some bags name the agent. Bags with a mouse name their agent.\n")


def test_a_prediction_too_high_gets_the_other_reason():
    with strict(), pytest.raises(ExerciseFailure, match="too high by 0.25.*Not every bag names it"):
        ceiling(1.0, 0.75)


def test_an_exact_count_and_a_relative_tolerance(capsys):
    turns(16, 16)
    ratio(4.3, 4.0)  # 7.5% off, within 10%
    out = capsys.readouterr().out
    assert out.count(PASSED_MARK) == 2 and "the run gives 16 (exact)." in out
    with strict():
        with pytest.raises(ExerciseFailure, match="too high by 1 "):
            turns(17, 16)
        with pytest.raises(ExerciseFailure, match=r"only the exact value passes"):
            turns(15, 16)
        with pytest.raises(ExerciseFailure, match=r"too low by 0.5 \(a prediction within 10% of the true value"):
            ratio(3.5, 4.0)


@pytest.mark.parametrize("bad", ["0.75", True, None, [0.75], float("nan")])
def test_a_prediction_that_is_not_a_number_is_rejected(bad):
    with strict(), pytest.raises(ExerciseFailure, match="`predicted_ceiling` must be a"):
        ceiling(bad, 0.75)


def test_the_actual_value_may_be_a_tensor_or_numpy_scalar(capsys):
    import numpy as np
    import torch

    ceiling(np.float64(0.75), torch.tensor(0.75))
    turns(16, np.int64(16))
    assert capsys.readouterr().out.count(PASSED_MARK) == 2


def test_a_negative_tolerance_is_a_bug_of_the_exercise():
    with pytest.raises(ValueError, match="tolerance"):
        prediction("x", variable="v", tolerance=-1)


# ----------------------------------------------------------------- choice
def test_an_untouched_choice_lists_the_letters(capsys):
    why(...)
    assert capsys.readouterr().out == (f'{TODO_MARK} Exercise 4 (explain): set the answer to one letter ("a", "b", '
                                       '"c") in place of the `...`, then run the cell again.\n')


@pytest.mark.parametrize("letter", ["b", "B", " (b) ", "(B)"])
def test_the_right_option_passes_and_says_why(letter, capsys):
    why(letter)
    assert capsys.readouterr().out == f"{PASSED_MARK} Exercise 4 (explain): (b) the mask is fixed in index space.\n"


def test_the_first_wrong_answer_gets_the_nudge_and_a_second_try(capsys):
    why("a")
    assert capsys.readouterr().out == (f"{NOT_YET_MARK} Exercise 4 (explain): (a) is not it. {NUDGE} Then try "
                                       "another letter.\n")


@pytest.mark.parametrize(("first", "second", "hint"), [("a", "c", "rounding is 1e-16"),
                                                       ("c", "a", "a row-wise softmax ignores order")])
def test_a_second_different_wrong_answer_gets_its_own_hint_and_the_worked_answer(first, second, hint, capsys):
    why(first)
    capsys.readouterr()
    why(second)
    out = capsys.readouterr().out
    assert out == (f"{NOT_YET_MARK} Exercise 4 (explain): ({second}) is not it either: {hint}"
                   f"{', the gap 0.5.' if second == 'c' else ' (section 1).'} The answer is (b): the mask is fixed in "
                   "index space.\n")
    assert hints_of(first) not in out


def test_running_the_same_wrong_answer_again_repeats_the_nudge(capsys):
    """A "Run All" re-runs the cell with the letter unchanged: that is not a second try."""
    why("a")
    why(" (A) ")
    out = capsys.readouterr().out
    assert out.count(NUDGE) == 2 and "The answer is" not in out


def test_the_right_answer_clears_the_tries_and_an_invalid_one_counts_none(capsys):
    why("a")
    why("b")  # passed: the record is cleared
    why("c")  # a first try again
    why("z")  # not an option: no try
    out = capsys.readouterr().out.splitlines()
    assert out[2] == f"{NOT_YET_MARK} Exercise 4 (explain): (c) is not it. {NUDGE} Then try another letter."
    assert "The answer is" not in "".join(out)
    why("a")
    assert "The answer is (b)" in capsys.readouterr().out


def test_reset_tries_forgets_every_question(capsys):
    why("a")
    reset_tries()
    why("c")
    assert NUDGE in capsys.readouterr().out


def test_each_question_counts_its_own_tries(capsys):
    other = choice("Exercise 5 (other)", options=OPTIONS, answer="a", why="w.", hints={"b": "hb.", "c": "hc."},
                   nudge="Look again.")
    why("a")
    other("b")
    assert capsys.readouterr().out.count("Then try another letter.") == 2


def test_under_strict_each_try_raises(capsys):
    with strict():
        with pytest.raises(ExerciseFailure, match="Then try another letter"):
            why("a")
        with pytest.raises(ExerciseFailure, match="The answer is \\(b\\)"):
            why("c")


def hints_of(letter: str) -> str:
    return {"a": "a row-wise softmax ignores order", "c": "rounding is 1e-16"}[letter]


def test_the_checker_carries_its_question():
    q = why.question
    assert (q.title, q.answer, q.nudge, sorted(q.options), sorted(q.hints)) == (
        "Exercise 4 (explain)", "b", NUDGE, ["a", "b", "c"], ["a", "c"])


@pytest.mark.parametrize("bad", ["d", "ab", 2, None, ["b"]])
def test_an_answer_that_is_no_option_is_rejected(bad):
    with strict(), pytest.raises(ExerciseFailure, match="one (letter|of)"):
        why(bad)


def test_a_choice_needs_a_hint_for_every_wrong_option_and_a_nudge():
    with pytest.raises(ValueError, match="hint for each wrong option"):
        choice("x", options=OPTIONS, answer="b", why="", hints={"a": "no"}, nudge="n.")
    with pytest.raises(ValueError, match="not one of the options"):
        choice("x", options=OPTIONS, answer="d", why="", hints={"a": "", "b": "", "c": ""}, nudge="n.")
    with pytest.raises(ValueError, match="nudge must be one sentence"):
        choice("x", options=OPTIONS, answer="b", why="", hints={"a": "", "c": ""}, nudge=" ")


def test_the_checkers_show_the_learners_parameters():
    import inspect

    assert list(inspect.signature(ceiling).parameters) == ["predicted", "actual"]
    assert list(inspect.signature(why).parameters) == ["chosen"]

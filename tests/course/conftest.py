"""Set-up for the course's tests: the exercise checkers in strict mode, and every multiple-choice
question's tries forgotten before each test (a wrong answer in one test is no first try in the next)."""

from __future__ import annotations

import pytest

import contextlib

from posenc_course.exercises import ExerciseFailure, reset_tries, strict


@pytest.fixture
def strict_checkers():
    """Make the exercise checkers raise ExerciseFailure on a wrong answer instead of printing the hint.

    In a notebook a wrong answer prints "[not yet] ..." and the notebook runs on; a test wants to
    assert on the rejection and its hint. Opt in per module with
    ``pytestmark = pytest.mark.usefixtures("strict_checkers")``.
    """
    with strict():
        yield


@pytest.fixture(autouse=True)
def fresh_tries():
    """Each test starts as a fresh kernel does: no question has been answered wrong yet."""
    reset_tries()
    yield
    reset_tries()


@pytest.fixture
def second_try():
    """``second_try(check, letter)``: answer a multiple-choice question with ``letter`` as a learner's second
    try, after another wrong letter (which gets the nudge), so that a wrong ``letter`` gets its own hint."""
    def answer(check, letter):
        question = check.question
        other = next(x for x in question.options if x not in (question.answer, letter))
        with contextlib.suppress(ExerciseFailure):  # the first try: the nudge (raised in strict mode)
            check(other)
        return check(letter)

    return answer

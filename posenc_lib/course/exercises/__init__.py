"""Checkers for the notebooks' exercises: one module per notebook (``nb00``, ``nb01``, ...).

A checker takes the learner's answer (a function, tensor or number), tests it against the
library or a property, and either prints a short "[passed]" line or raises
:class:`ExerciseFailure` with a message that says what was expected and what came out.

Every exercise starts as a *stub* in the notebook: a function whose body is
``raise NotImplementedError`` (or a value left as ``...``), followed by the checker call.
Checkers are wrapped in :func:`checker`, which recognises an untouched stub and prints a
"[to do]" line instead of a traceback, so "Run All" goes through a fresh notebook and the
learner sees what to write. The worked solutions sit in a "Solutions" section at the end of
each notebook (cells tagged ``solution``: source hidden in JupyterLab, folded on the site,
removed in the student edition).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["ExerciseFailure", "passed", "expect", "checker", "call_answer", "TODO_MARK", "PASSED_MARK"]

F = TypeVar("F", bound=Callable[..., None])

PASSED_MARK = "[passed]"
TODO_MARK = "[to do]"


class ExerciseFailure(AssertionError):
    """Raised by a checker when an answer is wrong; the message explains how."""


def passed(exercise: str, detail: str = "") -> None:
    """Print the success line of a checker."""
    print(f"{PASSED_MARK} {exercise}" + (f": {detail}" if detail else ""))


def expect(condition: bool, exercise: str, hint: str) -> None:
    """Raise :class:`ExerciseFailure` with ``hint`` unless ``condition`` holds."""
    if not condition:
        raise ExerciseFailure(f"{exercise} - not yet: {hint}")


def call_answer(exercise: str, fn: object, *args: Any) -> Any:
    """Call the learner's function ``fn(*args)`` for a checker.

    A stub's ``NotImplementedError`` passes through (:func:`checker` turns it into "[to do]");
    any other exception the learner's code raises becomes an :class:`ExerciseFailure` that
    names it, so a checker reports a crash as a hint instead of crashing itself; so does an
    answer that is not a function.
    """
    expect(callable(fn), exercise, f"the answer must be a function, got {type(fn).__name__}")
    try:
        return fn(*args)
    except NotImplementedError:
        raise
    except Exception as error:  # the learner's code may raise anything; report it, do not crash the checker
        raise ExerciseFailure(f"{exercise} - not yet: calling it raised {type(error).__name__}: {error}") from error


def checker(exercise: str) -> Callable[[F], F]:
    """Decorate a checker so that an untouched stub gives a "[to do]" line, not a traceback.

    A stub is an answer that is ``...`` (Ellipsis), or a function that raises
    ``NotImplementedError`` when the checker calls it. A wrong answer still raises
    :class:`ExerciseFailure`, as before.
    """

    def wrap(check: F) -> F:
        @functools.wraps(check)
        def run(*answers: object) -> None:
            if any(a is Ellipsis for a in answers):
                print(f"{TODO_MARK} {exercise}: replace the `...` in the cell above with your answer, then run it again.")
                return
            try:
                check(*answers)
            except NotImplementedError:
                print(f"{TODO_MARK} {exercise}: the stub above still raises NotImplementedError; "
                      "write your code in its place, then run the cell again.")

        return run  # type: ignore[return-value]

    return wrap

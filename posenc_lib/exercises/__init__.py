"""Checkers for the notebooks' exercises: one module per notebook (``nb00``, ``nb01``, ...).

A checker takes the learner's answer (a function, tensor or number), tests it against the
library or a property, and either prints a short "passed" line or raises
:class:`ExerciseFailure` with a message that says what was expected and what came out.
"""

from __future__ import annotations

__all__ = ["ExerciseFailure", "passed", "expect"]


class ExerciseFailure(AssertionError):
    """Raised by a checker when an answer is wrong; the message explains how."""


def passed(exercise: str, detail: str = "") -> None:
    """Print the success line of a checker."""
    print(f"[passed] {exercise}" + (f": {detail}" if detail else ""))


def expect(condition: bool, exercise: str, hint: str) -> None:
    """Raise :class:`ExerciseFailure` with ``hint`` unless ``condition`` holds."""
    if not condition:
        raise ExerciseFailure(f"{exercise} - not yet: {hint}")

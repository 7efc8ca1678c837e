"""Checkers for the notebooks' exercises: one module per notebook (``nb00``, ``nb01``, ...).

A checker takes the learner's answer (a function, tensor or number), tests it against the
library or a property, and prints one line:

- ``[passed] Exercise k (title): ...`` when the answer is right;
- ``[not yet] Exercise k (title): hint`` when it is wrong: what was expected and what came out,
  with no traceback, and the notebook goes on running ("Run All" is not stopped);
- ``[to do] Exercise k (title): ...`` for an untouched stub: a function whose body is
  ``raise NotImplementedError``, or a value left as ``...``.

Each checker is a function decorated with :func:`checker`, which writes the title once and hands
the function an :class:`Exercise` carrying it: ``ex.expect(condition, hint)``, ``ex.fail(hint)``,
``ex.call(fn, *args)`` (call the learner's function), ``ex.passed(detail)``. A wrong answer raises
:class:`ExerciseFailure` inside the checker; the decorator prints its hint. Inside
:func:`strict` (the tests use it) the failure propagates instead, so a test can assert on it.

The worked solutions sit in a "Solutions" section at the end of each notebook (cells tagged
``solution``: hidden in JupyterLab, folded on the site, removed in the student edition).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Concatenate, NoReturn, ParamSpec

__all__ = ["Exercise", "ExerciseFailure", "checker", "strict", "TODO_MARK", "PASSED_MARK", "NOT_YET_MARK"]

P = ParamSpec("P")

PASSED_MARK = "[passed]"
TODO_MARK = "[to do]"
NOT_YET_MARK = "[not yet]"

_STRICT = contextvars.ContextVar("posenc_exercises_strict", default=False)


class ExerciseFailure(AssertionError):
    """A wrong answer: ``title`` names the exercise, ``hint`` says what was expected and what came out."""

    def __init__(self, title: str, hint: str) -> None:
        super().__init__(f"{title}: {hint}")
        self.title = title
        self.hint = hint


@dataclass(frozen=True)
class Exercise:
    """One exercise, as its checker sees it: the title, and the ways to report on an answer."""

    title: str

    def expect(self, condition: bool, hint: str) -> None:
        """Reject the answer with ``hint`` unless ``condition`` holds."""
        if not condition:
            self.fail(hint)

    def fail(self, hint: str) -> NoReturn:
        """Reject the answer with ``hint``."""
        raise ExerciseFailure(self.title, hint)

    def call(self, fn: object, *args: Any) -> Any:
        """Call the learner's function ``fn(*args)``.

        A stub's ``NotImplementedError`` passes through (:func:`checker` turns it into "[to do]");
        any other exception the learner's code raises rejects the answer with a hint that names
        it, and so does an answer that is not a function.
        """
        self.expect(callable(fn), f"the answer must be a function, got {type(fn).__name__}")
        try:
            return fn(*args)  # type: ignore[operator]
        except NotImplementedError:
            raise
        except Exception as error:  # the learner's code may raise anything: report it as a hint
            self.fail(f"calling it raised {type(error).__name__}: {error} "
                      "(call your function in a cell of its own to see where)")

    def passed(self, detail: str = "") -> None:
        """Print the success line."""
        print(f"{PASSED_MARK} {self.title}" + (f": {detail}" if detail else ""))


@contextlib.contextmanager
def strict() -> Iterator[None]:
    """Within this block a wrong answer raises :class:`ExerciseFailure` instead of printing its hint."""
    token = _STRICT.set(True)
    try:
        yield
    finally:
        _STRICT.reset(token)


def checker(title: str) -> Callable[[Callable[Concatenate[Exercise, P], None]], Callable[P, None]]:
    """Make ``check(ex, *answers)`` the notebook's ``check(*answers)`` for the exercise ``title``.

    The returned function prints "[to do]" for an untouched stub (an answer that is ``...``, or a
    function that raises ``NotImplementedError`` when called), "[not yet] title: hint" for a
    wrong answer (:class:`ExerciseFailure`, or any other exception an unforeseen answer causes
    in the checker; both propagate inside :func:`strict`), and what ``check`` prints on success.
    It returns None, so a notebook cell ending in a checker call shows only that line.
    """

    def wrap(check: Callable[Concatenate[Exercise, P], None]) -> Callable[P, None]:
        exercise = Exercise(title)

        @functools.wraps(check)
        def run(*answers: P.args, **kwargs: P.kwargs) -> None:
            if any(a is Ellipsis for a in (*answers, *kwargs.values())):
                print(f"{TODO_MARK} {title}: replace the `...` in the cell above with your answer, then run it again.")
                return
            try:
                check(exercise, *answers, **kwargs)
            except NotImplementedError:
                print(f"{TODO_MARK} {title}: the stub above still raises NotImplementedError; "
                      "write your code in its place, then run the cell again.")
            except ExerciseFailure as failure:
                if _STRICT.get():
                    raise
                print(f"{NOT_YET_MARK} {title}: {failure.hint}")
            except Exception as error:  # an answer of an unforeseen kind tripped the checker itself
                if _STRICT.get():
                    raise
                print(f"{NOT_YET_MARK} {title}: checking your answer raised {type(error).__name__}: {error}")

        # what help() and inspect.signature show: the learner's parameters, without the Exercise
        signature = inspect.signature(check)
        learner_parameters = list(signature.parameters.values())[1:]
        run.__signature__ = signature.replace(parameters=learner_parameters)  # type: ignore[attr-defined]
        return run

    return wrap

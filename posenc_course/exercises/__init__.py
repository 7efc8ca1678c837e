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

Besides checkers written by hand, two kinds are built from data alone:

- :func:`prediction` (*predict, then run*): the learner writes a number into a variable *before*
  the cell that computes it; that cell calls ``check(predicted, actual)``, which compares the two
  within a tolerance and explains the gap (too high, too low, and why);
- :func:`choice` (*explain why*): multiple choice; the learner sets ``answer = "c"``. The first wrong
  answer gets a one-sentence nudge and a second try; a second, different wrong answer gets that
  option's own hint and the worked answer; the right one prints why it is right (see
  :func:`choice` for how the checker counts tries).

The worked solutions sit in a "Solutions" section at the end of each notebook (cells tagged
``solution``: hidden in JupyterLab, folded on the site, removed in the student edition).

Every line a learner reads goes through :mod:`posenc_course.i18n` when it is printed: a text built
in a checker is ``_("... {name} ...").format(name=...)``; a text stored at import time (a title, a
prediction's explanation, a choice's options and hints) is marked ``N_("...")`` and translated when
printed. The marks ``[passed]``, ``[to do]`` and ``[not yet]`` are the same in every language.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import math
import numbers
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Concatenate, NoReturn, ParamSpec

from posenc_course.i18n import _, join_sentences

__all__ = ["Exercise", "ExerciseFailure", "Question", "checker", "choice", "prediction", "reset_tries", "strict",
           "TODO_MARK", "PASSED_MARK", "NOT_YET_MARK"]

P = ParamSpec("P")

PASSED_MARK = "[passed]"
TODO_MARK = "[to do]"
NOT_YET_MARK = "[not yet]"

_STRICT = contextvars.ContextVar("posenc_exercises_strict", default=False)


def _titled(title: str, text: str) -> str:
    """``title: text`` in the current language (a Chinese colon is full-width)."""
    # Translators: every checker line after its mark: the exercise's title, then what the checker says.
    return _("{title}: {text}").format(title=title, text=text)


class ExerciseFailure(AssertionError):
    """A wrong answer: ``title`` names the exercise, ``hint`` says what was expected and what came out
    (both in the current language)."""

    def __init__(self, title: str, hint: str) -> None:
        super().__init__(_titled(title, hint))
        self.title = title
        self.hint = hint


@dataclass(frozen=True)
class Exercise:
    """One exercise, as its checker sees it: the title, and the ways to report on an answer.

    ``title`` is the English title as marked in the code; :attr:`heading` is it in the current language.
    """

    title: str

    @property
    def heading(self) -> str:
        """The title in the current language."""
        return _(self.title)

    def expect(self, condition: bool, hint: str) -> None:
        """Reject the answer with ``hint`` unless ``condition`` holds."""
        if not condition:
            self.fail(hint)

    def fail(self, hint: str) -> NoReturn:
        """Reject the answer with ``hint``."""
        raise ExerciseFailure(self.heading, hint)

    def call(self, fn: object, *args: Any) -> Any:
        """Call the learner's function ``fn(*args)``.

        A stub's ``NotImplementedError`` passes through (:func:`checker` turns it into "[to do]");
        any other exception the learner's code raises rejects the answer with a hint that names
        it, and so does an answer that is not a function.
        """
        self.expect(callable(fn), _("the answer must be a function, got {type}").format(type=type(fn).__name__))
        try:
            return fn(*args)  # type: ignore[operator]
        except NotImplementedError:
            raise
        except Exception as error:  # the learner's code may raise anything: report it as a hint
            self.fail(_("calling it raised {error_type}: {error} (call your function in a cell of its own to "
                        "see where)").format(error_type=type(error).__name__, error=error))

    def passed(self, detail: str = "") -> None:
        """Print the success line."""
        print(f"{PASSED_MARK} " + (_titled(self.heading, detail) if detail else self.heading))


@contextlib.contextmanager
def strict() -> Iterator[None]:
    """Within this block a wrong answer raises :class:`ExerciseFailure` instead of printing its hint."""
    token = _STRICT.set(True)
    try:
        yield
    finally:
        _STRICT.reset(token)


def checker(title: str, todo: str | Callable[[], str] | None = None) -> Callable[[Callable[Concatenate[Exercise, P], None]], Callable[P, None]]:
    """Make ``check(ex, *answers)`` the notebook's ``check(*answers)`` for the exercise ``title``.

    The returned function prints "[to do]" for an untouched stub (an answer that is ``...``, or a
    function that raises ``NotImplementedError`` when called), "[not yet] title: hint" for a
    wrong answer (:class:`ExerciseFailure`, or any other exception an unforeseen answer causes
    in the checker; both propagate inside :func:`strict`), and what ``check`` prints on success.
    It returns None, so a notebook cell ending in a checker call shows only that line. ``todo``
    replaces the default "[to do]" text for an answer left as ``...``.

    ``title`` and ``todo`` are English texts marked with ``N_`` (the decorator runs at import); they
    are translated each time a line is printed. ``todo`` may be a callable returning the text, for a
    text built from values (it is then called at print time).
    """

    def wrap(check: Callable[Concatenate[Exercise, P], None]) -> Callable[P, None]:
        exercise = Exercise(title)

        @functools.wraps(check)
        def run(*answers: P.args, **kwargs: P.kwargs) -> None:
            heading = exercise.heading
            if any(a is Ellipsis for a in (*answers, *kwargs.values())):
                text = (todo() if callable(todo) else _(todo)) if todo else \
                    _("replace the `...` in the cell above with your answer, then run it again.")
                print(f"{TODO_MARK} " + _titled(heading, text))
                return
            try:
                check(exercise, *answers, **kwargs)
            except NotImplementedError:
                print(f"{TODO_MARK} " + _titled(heading, _("the stub above still raises NotImplementedError; "
                                                           "write your code in its place, then run the cell again.")))
            except ExerciseFailure as failure:
                if _STRICT.get():
                    raise
                print(f"{NOT_YET_MARK} " + _titled(heading, failure.hint))
            except Exception as error:  # an answer of an unforeseen kind tripped the checker itself
                if _STRICT.get():
                    raise
                print(f"{NOT_YET_MARK} " + _titled(heading, _("checking your answer raised {error_type}: {error}").format(
                    error_type=type(error).__name__, error=error)))

        # what help() and inspect.signature show: the learner's parameters, without the Exercise
        signature = inspect.signature(check)
        learner_parameters = list(signature.parameters.values())[1:]
        run.__signature__ = signature.replace(parameters=learner_parameters)  # type: ignore[attr-defined]
        return run

    return wrap


# ----------------------------------------------------------------- predict, then run
def _show(x: float) -> str:
    """A number as a learner would write it: integers plainly, others to 4 significant digits."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:.4g}"


def prediction(title: str, *, variable: str, tolerance: float, relative: bool = False, why: str = "",
               too_high: str = "", too_low: str = "", nudge: str = "") -> Callable[[object, object], None]:
    """A *predict, then run* checker: ``check(predicted, actual)``.

    The learner assigns ``variable`` (a number) in a cell of its own, before the cell that computes
    ``actual`` and calls the checker. The prediction passes when ``|predicted - actual|`` is at most
    ``tolerance`` (a fraction of ``|actual|`` when ``relative``). Either way the checker says what
    was predicted and what came out; on a miss it names the gap and adds ``too_high`` or ``too_low``
    (why a prediction errs that way), and ``why`` (what explains the true value) after both. A
    ``variable`` still ``...`` prints "[to do]" naming the variable. ``title``, ``why``, ``too_high``
    and ``too_low`` are English texts marked with ``N_``, translated when printed. With ``nudge`` (one
    sentence), the first miss gets the gap and the nudge only, and a second try; later misses get the rest
    (the record is per ``title``, cleared by a pass or :func:`reset_tries`). Without it, every miss gets all.
    """
    if tolerance < 0 or not math.isfinite(tolerance):
        raise ValueError(f"tolerance must be a finite number >= 0, got {tolerance}")

    def allowed_text() -> str:
        return (_("{tolerance:.0%} of the true value").format(tolerance=tolerance) if relative
                else f"±{_show(tolerance)}")

    def todo() -> str:
        return _("write your prediction into `{variable}` in the cell above (replace the `...`) and run it, then run "
                 "this cell again.").format(variable=variable)

    @checker(title, todo=todo)
    def check(ex: Exercise, predicted: object, actual: object) -> None:
        ex.expect(isinstance(predicted, numbers.Real) and not isinstance(predicted, bool),
                  _("`{variable}` must be a number, got {type} {value!r}").format(
                      variable=variable, type=type(predicted).__name__, value=predicted))
        guess, truth = float(predicted), float(actual)  # type: ignore[arg-type]
        ex.expect(math.isfinite(guess), _("`{variable}` must be a finite number, got {value}").format(
            variable=variable, value=guess))
        said = _("you predicted {guess}, the run gives {truth}").format(guess=_show(guess), truth=_show(truth))
        allowed = tolerance * abs(truth) if relative else tolerance
        gap = guess - truth
        if abs(gap) <= allowed * (1 + 1e-12):
            _wrong_tries.pop(title, None)
            within = _("within {allowed}").format(allowed=allowed_text()) if tolerance else _("exact")
            # Translators: "you predicted 0.22, the run gives 0.2231" and "within ±0.03" (or "exact").
            ex.passed(join_sentences(_("{said} ({within}).").format(said=said, within=within), _(why) if why else ""))
            return
        passes = (_("a prediction within {allowed} passes").format(allowed=allowed_text()) if tolerance
                  else _("only the exact value passes"))
        template = (_("{said}: too high by {gap} ({passes}).") if gap > 0 else
                    _("{said}: too low by {gap} ({passes})."))
        if nudge:
            tried = _wrong_tries.setdefault(title, set())
            first = not tried
            tried.add(str(guess))
            if first:
                ex.fail(join_sentences(template.format(said=said, gap=_show(abs(gap)), passes=passes), _(nudge),
                                       _("Then predict again.")))
        reason = too_high if gap > 0 else too_low
        ex.fail(join_sentences(template.format(said=said, gap=_show(abs(gap)), passes=passes),
                               _(reason) if reason else "", _(why) if why else ""))

    return check


# ----------------------------------------------------------------- explain why (multiple choice)
@dataclass(frozen=True)
class Question:
    """A multiple-choice question as :func:`choice` holds it (English texts, marked with ``N_``)."""

    title: str
    options: Mapping[str, str]
    answer: str
    why: str
    hints: Mapping[str, str]
    nudge: str


#: The wrong letters each question has been answered with since it was last answered right, by title.
_wrong_tries: dict[str, set[str]] = {}


def reset_tries() -> None:
    """Forget every question's wrong tries (a fresh kernel starts so; the tests call it before each test)."""
    _wrong_tries.clear()


def choice(title: str, *, options: Mapping[str, str], answer: str, why: str, hints: Mapping[str, str],
           nudge: str) -> Callable[[object], None]:
    """An *explain why* checker: ``check(letter)`` for a multiple-choice question.

    ``options`` maps each letter to its text (the notebook lists the same options); ``answer`` is
    the right letter and ``why`` the worked answer, printed when it is chosen; ``hints`` gives every
    wrong letter its own hint: why that option is wrong, and where the notebook shows it; ``nudge``
    is one sentence that sends the learner back to the evidence without naming the answer. The
    learner's letter may be upper or lower case, with or without parentheses. The texts are English
    marked with ``N_``, translated when printed.

    **Tries.** The checker remembers, for this question, the wrong letters given since the question
    was last answered right (in this process: a kernel restart forgets them, and so does
    :func:`reset_tries`). The first wrong letter gets "(x) is not it.", the nudge, and a second try;
    a second, *different* wrong letter gets its own hint and the worked answer (the right letter and
    ``why``). Running the cell again with the same wrong letter (a "Run All") counts as the same try
    and repeats the nudge. The right letter passes and clears the record. The committed notebooks
    run the untouched stub (``answer = ...``), which prints "[to do]" and counts no try, so their
    outputs do not depend on what ran before.

    The returned checker carries its :class:`Question` as ``check.question`` (the tests read every
    question of the course through it).
    """
    letters = list(options)
    if answer not in options:
        raise ValueError(f"the answer {answer!r} is not one of the options {letters}")
    if set(hints) != set(letters) - {answer}:
        raise ValueError(f"give a hint for each wrong option exactly: {sorted(set(letters) - {answer})}, "
                         f"got {sorted(hints)}")
    if not isinstance(nudge, str) or not nudge.strip():
        raise ValueError(f"nudge must be one sentence that points the learner back to the evidence, got {nudge!r}")
    listed = ", ".join(f'"{letter}"' for letter in letters)
    question = Question(title, dict(options), answer, why, dict(hints), nudge)

    def todo() -> str:
        return _("set the answer to one letter ({letters}) in place of the `...`, then run the cell again.").format(
            letters=listed)

    @checker(title, todo=todo)
    def check(ex: Exercise, chosen: object) -> None:
        ex.expect(isinstance(chosen, str), _("answer with one letter as a string ({letters}), got {type} {value!r}")
                  .format(letters=listed, type=type(chosen).__name__, value=chosen))
        letter = chosen.strip().strip("()").strip().lower()  # type: ignore[union-attr]
        ex.expect(letter in options, _("answer with one of {letters}, got {value!r}").format(letters=listed,
                                                                                             value=chosen))
        tried = _wrong_tries.setdefault(title, set())
        if letter == answer:
            tried.clear()
            ex.passed(f"({letter}) {_(why)}")
            return
        tried.add(letter)
        if len(tried) == 1:
            # Translators: the first wrong answer: the letter, then the question's one-sentence nudge.
            ex.fail(_("({letter}) is not it. {nudge} Then try another letter.").format(letter=letter, nudge=_(nudge)))
        # Translators: a second wrong answer: why this option is wrong, then the right letter and the worked answer.
        ex.fail(_("({letter}) is not it either: {hint} The answer is ({answer}): {why}").format(
            letter=letter, hint=_(hints[letter]), answer=answer, why=_(why)))

    check.question = question  # type: ignore[attr-defined]
    return check

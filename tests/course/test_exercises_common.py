"""The shared checker machinery: "[to do]" for an untouched stub, "[not yet]" and the hint alone for a
wrong answer (raised as ExerciseFailure under strict()), "[passed]" for a right one."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import posenc_course.exercises as exercises_package
from posenc_course.exercises import (
    NOT_YET_MARK,
    PASSED_MARK,
    TODO_MARK,
    Exercise,
    ExerciseFailure,
    checker,
    strict,
)


@checker("Exercise 9 (demo)")
def check_demo(ex: Exercise, fn) -> None:
    """fn(2) must be 4."""
    got = ex.call(fn, 2)
    ex.expect(got == 4, f"double(2) should be 4, got {got!r}")
    ex.passed("doubles")


def stub(x):
    raise NotImplementedError


def test_stub_prints_to_do(capsys):
    check_demo(stub)
    check_demo(...)
    out = capsys.readouterr().out
    assert out.count(TODO_MARK + " Exercise 9 (demo)") == 2 and PASSED_MARK not in out


def test_right_answer_passes(capsys):
    assert check_demo(lambda x: 2 * x) is None  # a cell ending in the call shows only the printed line
    assert capsys.readouterr().out == f"{PASSED_MARK} Exercise 9 (demo): doubles\n"


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda x: x + 1, "double(2) should be 4, got 3"),
        (lambda x: 1 / 0, "calling it raised ZeroDivisionError: division by zero (call your function in a cell of its "
                           "own to see where)"),
        (4, "the answer must be a function, got int"),
    ],
)
def test_wrong_answer_prints_the_hint_alone_and_returns(wrong, hint, capsys):
    check_demo(wrong)  # no exception: "Run All" goes on past a wrong answer
    captured = capsys.readouterr()
    assert captured.out == f"{NOT_YET_MARK} Exercise 9 (demo): {hint}\n" and captured.err == ""


def test_strict_mode_raises_the_failure_with_title_and_hint(capsys):
    with strict(), pytest.raises(ExerciseFailure) as caught:
        check_demo(lambda x: x + 1)
    assert (caught.value.title, caught.value.hint) == ("Exercise 9 (demo)", "double(2) should be 4, got 3")
    assert str(caught.value) == "Exercise 9 (demo): double(2) should be 4, got 3"
    assert capsys.readouterr().out == ""
    check_demo(lambda x: x + 1)  # strict() ends with its block
    assert capsys.readouterr().out.startswith(NOT_YET_MARK)


@checker("Exercise 8 (tripped checker)")
def check_tripped(ex: Exercise, value) -> None:
    """A checker that does not guard against a non-number (as a real one might not)."""
    ex.expect(value + 1 == 3, "value + 1 should be 3")
    ex.passed()


def test_an_answer_that_trips_the_checker_gives_a_hint_not_a_traceback(capsys):
    check_tripped("two")
    assert capsys.readouterr().out == (f"{NOT_YET_MARK} Exercise 8 (tripped checker): checking your answer raised "
                                       'TypeError: can only concatenate str (not "int") to str\n')
    with strict(), pytest.raises(TypeError):  # a test still sees the checker's own error
        check_tripped("two")


def test_the_signature_is_the_learners(capsys):
    assert list(inspect.signature(check_demo).parameters) == ["fn"]
    assert check_demo.__doc__ == "fn(2) must be 4."


def test_setup_notebook_fixes_threads_and_seeds():
    import torch

    from posenc_course.training import NOTEBOOK_THREADS, setup_notebook

    before = torch.get_num_threads()
    try:
        gen = setup_notebook(3)
        assert torch.get_num_threads() == NOTEBOOK_THREADS
        assert torch.equal(torch.rand(2, generator=gen), torch.rand(2, generator=torch.Generator().manual_seed(3)))
    finally:
        torch.set_num_threads(before)


# ----------------------------------------------------------------- every checker of every notebook
def _checkers() -> list:
    """Every check_exercise_* of every notebook's checker module (posenc_course.exercises.nbNN)."""
    found = []
    for info in sorted(pkgutil.iter_modules(exercises_package.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{exercises_package.__name__}.{info.name}")
        found += [pytest.param(getattr(module, n), id=f"{info.name}.{n}") for n in sorted(dir(module))
                  if n.startswith("check_exercise_")]
    return found


def _raising_stub(*args):
    raise NotImplementedError  # your code here


@pytest.mark.parametrize("check", _checkers())
def test_every_checker_sees_the_untouched_stub(check, capsys):
    # a notebook's stub is a function that raises NotImplementedError, or a value left as `...`
    annotation = str(next(iter(inspect.signature(check).parameters.values())).annotation)
    for stub in ([_raising_stub] if "Callable" in annotation else []) + [...]:
        check(stub)  # no exception: a fresh notebook runs from top to bottom
        out = capsys.readouterr().out
        assert out.startswith(f"{TODO_MARK} Exercise ") and PASSED_MARK not in out, out

"""The shared checker machinery: an untouched stub gives a "[to do]" line, a wrong answer still raises."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import posenc_lib.course.exercises as exercises_package
from posenc_lib.course.exercises import PASSED_MARK, TODO_MARK, ExerciseFailure, checker, expect, passed


@checker("Exercise 9 (demo)")
def check_demo(fn) -> None:
    expect(fn(2) == 4, "Exercise 9 (demo)", f"double(2) should be 4, got {fn(2)!r}")
    passed("Exercise 9 (demo)")


def stub(x):
    raise NotImplementedError


def test_stub_prints_to_do(capsys):
    check_demo(stub)
    check_demo(...)
    out = capsys.readouterr().out
    assert out.count(TODO_MARK + " Exercise 9 (demo)") == 2 and PASSED_MARK not in out


def test_right_answer_passes_and_wrong_answer_raises(capsys):
    check_demo(lambda x: 2 * x)
    assert capsys.readouterr().out.startswith(PASSED_MARK)
    with pytest.raises(ExerciseFailure, match="should be 4, got 3"):
        check_demo(lambda x: x + 1)


def test_setup_notebook_fixes_threads_and_seeds():
    import torch

    from posenc_lib.course.training import NOTEBOOK_THREADS, setup_notebook

    before = torch.get_num_threads()
    try:
        gen = setup_notebook(3)
        assert torch.get_num_threads() == NOTEBOOK_THREADS
        assert torch.equal(torch.rand(2, generator=gen), torch.rand(2, generator=torch.Generator().manual_seed(3)))
    finally:
        torch.set_num_threads(before)


# ----------------------------------------------------------------- every checker of every notebook
def _checkers() -> list:
    """Every check_exercise_* of every notebook's checker module (posenc_lib.course.exercises.nbNN)."""
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
    annotation = str(next(iter(inspect.signature(inspect.unwrap(check)).parameters.values())).annotation)
    for stub in ([_raising_stub] if "Callable" in annotation else []) + [...]:
        check(stub)  # no exception: a fresh notebook runs from top to bottom
        out = capsys.readouterr().out
        assert out.startswith(f"{TODO_MARK} Exercise ") and PASSED_MARK not in out, out

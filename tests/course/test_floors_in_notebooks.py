"""Every notebook that trains shows its trained results beside their floors (issue #50).

A notebook *trains* when a code cell calls one of the course's training entry points
(:data:`TRAINING_CALLS`: the training loop, the parallel runner, the LM trainers, or 06's loader of
trained checkpoints): found in the parsed code, so a commented-out call in a solution does not count.
It *shows its floors* when a code cell calls :func:`posenc_course.floors.with_floors` and the
committed output of that cell holds a row labelled ``floor`` (``with_floors`` refuses a table
without floors, so an executed call prints at least one).

The notebooks in :data:`PENDING` are rewritten with floors by their own issues; each is listed
until then, and the test fails when a listed notebook has its floors (take it off the list) as
well as when a notebook off the list lacks them. The test prints which notebooks still lack floors.
"""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat
import pytest

from posenc_course.floors import FLOOR_ROW

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

#: The calls that make a notebook's results trained ones.
TRAINING_CALLS = {"train", "run_each", "train_char_lm", "train_base_model", "load_base_models", "load_base_model"}

#: Notebooks that train and do not show floors yet, each with the issue that gives them floors.
PENDING = {
    "00_permutation_blindness": "#50 (00-02 rewritten with floors)",
    "02_learnable": "#50 (00-02 rewritten with floors)",
    "03_rope": "#53",
    "04_vision": "#53",
    "05_relative_biases": "#54",
    "06_length_extrapolation": "#54",
    "07_debugging": "#55",
    "08_todays_models": "#55",
}


def _called(source: str) -> set[str]:
    """Names of the functions a cell's code calls (``f(...)`` and ``x.f(...)``); nothing for a cell that
    does not parse as Python (a magic), whose training calls would be in other cells anyway."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {getattr(node.func, "id", getattr(node.func, "attr", None))
            for node in ast.walk(tree) if isinstance(node, ast.Call)}


def _printed(cell) -> str:
    return "".join(out.get("text", "") if out.output_type == "stream"
                   else str(out.get("data", {}).get("text/plain", "")) for out in cell.get("outputs", []))


def trains(nb) -> bool:
    return any(cell.cell_type == "code" and _called(cell.source) & TRAINING_CALLS for cell in nb.cells)


def shows_floors(nb) -> bool:
    return any(cell.cell_type == "code" and "with_floors" in _called(cell.source)
               and any(line.startswith(f"{FLOOR_ROW} ") for line in _printed(cell).splitlines())
               for cell in nb.cells)


def lacking_floors(paths: list[Path]) -> list[str]:
    """The stems of the notebooks among ``paths`` that train and show no table with floor rows."""
    lacking = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        if trains(nb) and not shows_floors(nb):
            lacking.append(path.stem)
    return lacking


def test_every_notebook_that_trains_shows_its_floors():
    lacking = lacking_floors(NOTEBOOKS)
    print("notebooks that train and still lack floors: " + (", ".join(
        f"{stem} ({PENDING.get(stem, 'not pending')})" for stem in lacking) or "none"))
    unexpected = [stem for stem in lacking if stem not in PENDING]
    assert not unexpected, (f"{unexpected} train but print no trained-results table with floor rows "
                            "(posenc_course.floors.with_floors; docs/comparison.md)")
    done = sorted(set(PENDING) - set(lacking))
    assert not done, f"{done} now show their floors (or no longer train): take them off PENDING"


def test_the_pending_list_names_real_notebooks():
    assert set(PENDING) <= {p.stem for p in NOTEBOOKS}


# ----------------------------------------------------------------- the test of the test
def _notebook(tmp_path: Path, name: str, cells: list[tuple[str, str]]) -> Path:
    """A fake executed notebook: (source, printed output) per code cell."""
    nb = nbformat.v4.new_notebook()
    for source, printed in cells:
        cell = nbformat.v4.new_code_cell(source)
        if printed:
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)]
        nb.cells.append(cell)
    path = tmp_path / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


TABLE = "                 test accuracy\nmodel RoPE       0.91 ± 0.01\nfloor chance     0.062\n"


@pytest.mark.parametrize(
    ("cells", "lacking"),
    [
        ([("losses = train(model, data, 100)", "")], True),                       # trains, no table
        ([("acc = run_each(fn, seeds)", ""), ("print(acc)", "[0.9, 0.8]")], True),  # a table without floors
        ([("acc = run_each(fn, seeds)", ""), ("t = with_floors(r, [chance(16)], metric='a')", "")], True),  # not run
        ([("# train(model, data, 100)", ""), ("x = 1", "")], False),             # a commented call trains nothing
        ([("%%time\nx = 1", "")], False),                                         # no Python, no training
        ([("m = nb06.load_base_models(64)", ""), ("t = with_floors(r, f, metric='a')", TABLE)], False),
    ],
)
def test_the_rule_reads_fake_notebooks(tmp_path, cells, lacking):
    path = _notebook(tmp_path, "99_fake", cells)
    assert lacking_floors([path]) == (["99_fake"] if lacking else [])

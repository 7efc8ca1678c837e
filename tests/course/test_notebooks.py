"""Every numbered notebook is paired, executed top to bottom without errors, and follows the course layout.

Static checks on the committed files only (no execution: `make nbval` re-runs the notebooks).
With no notebook at all, test_there_are_notebooks fails rather than everything being skipped.
"""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path

import jupytext
import nbformat
import pytest
from jupyter_server.services.contents.filemanager import FileContentsManager
from jupytext.sync_contentsmanager import build_sync_jupytext_contents_manager_class

from tools import build_site
from tools.execute import lab_metadata

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SECTIONS = ["Summary", "Exercises", "Further reading", "Solutions"]  # level-2 headings, in this order
CATALOG = ROOT / "notebooks" / "catalog.toml"
RUN_TIME = re.compile(r"\*\*Run time:\*\* about (\d+) s on a laptop CPU "
                      r"\(measured with `make execute`, one thread\)[.,]")  # a clause may follow


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks/[0-9][0-9]_*.ipynb found"


@pytest.fixture(params=NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def path(request) -> Path:
    return request.param


@pytest.fixture
def nb(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def tags(cell) -> list[str]:
    return list(cell.metadata.get("tags", []))


def test_paired_script_has_the_same_cells(path, nb):
    script = path.with_suffix(".py")
    assert script.exists(), f"{path.name} has no paired {script.name} (run `make sync`)"
    paired = jupytext.read(script)
    ours = [(c.cell_type, c.source, tags(c)) for c in nb.cells]
    theirs = [(c.cell_type, c.source, tags(c)) for c in paired.cells]
    assert len(ours) == len(theirs), f"{path.name}: {len(ours)} cells, {script.name}: {len(theirs)} cells"
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a == b, f"cell {i} differs between {path.name} and {script.name} (run `make sync`, then `make execute`)"


def test_executed_in_order_without_errors(path, nb):
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, f"{path.name} has no code cell"
    assert all(c.source.strip() for c in code), f"{path.name} has an empty code cell"
    counts = [c.execution_count for c in code]
    assert counts == list(range(1, len(code) + 1)), (
        f"{path.name} was not executed once from top to bottom (execution counts {counts}); run `make execute`"
    )
    for i, cell in enumerate(code):
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if "raises-exception" in tags(cell):
            assert errors, f"{path.name}: code cell {i} is tagged raises-exception but raised nothing"
        else:
            assert not errors, f"{path.name}: code cell {i} raised {errors[0].ename}: {errors[0].evalue}"


def test_no_warnings_in_the_outputs(path, nb):
    for i, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        for out in cell.outputs:
            if out.output_type == "stream" and out.name == "stderr":
                assert not re.search(r"\w+Warning\b", out.text), f"{path.name}: code cell {i} printed a warning:\n{out.text}"


def test_opening_cell(path, nb):
    first = next(c for c in nb.cells if c.cell_type == "markdown")
    number = path.name[:2]
    assert re.match(rf"# {number} · \S", first.source), f"{path.name}: the first line must be '# {number} · Title'"
    for part in ["What you will learn", "Prerequisites", "Run time"]:
        assert part in first.source, f"{path.name}: the first markdown cell lacks '{part}'"


def test_closing_sections_in_order(path, nb):
    headings = [
        m.group(1).strip()
        for c in nb.cells
        if c.cell_type == "markdown"
        for m in re.finditer(r"^##\s+(.+)$", c.source, flags=re.MULTILINE)
    ]
    found = [s for s in headings if s in SECTIONS]
    assert found == SECTIONS, f"{path.name}: expected '## ' sections {SECTIONS} in this order, found {found}"


def test_run_time_is_the_catalog_value(path, nb):
    """The catalog's run_time_s is the one record of a notebook's run time; the header states it."""
    entries = {e["stem"]: e for e in tomllib.loads(CATALOG.read_text(encoding="utf-8"))["notebook"]}
    assert path.stem in entries, f"{path.name} has no [[notebook]] entry in notebooks/catalog.toml"
    seconds = entries[path.stem].get("run_time_s")
    assert isinstance(seconds, int) and seconds > 0, f"catalog entry {path.stem}: run_time_s must be a positive int"
    first = next(c for c in nb.cells if c.cell_type == "markdown")
    found = RUN_TIME.findall(first.source)
    assert found == [str(seconds)], (
        f"{path.name}: the first cell must say '**Run time:** about {seconds} s on a laptop CPU (measured with "
        f"`make execute`, one thread).' (catalog run_time_s = {seconds}), found {found}"
    )


def test_setup_cell_calls_setup_notebook(nb):
    """The first code cell fixes threads, style and seeds inside the notebook (JupyterLab runs it too)."""
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert re.search(r"^gen = setup_notebook\(\d+\)", first.source, flags=re.MULTILINE), (
        "the setup cell must call `gen = setup_notebook(0)` (posenc_course.training)"
    )


def test_exercise_stubs_print_to_do_and_solutions_are_hidden(path, nb):
    """Stubs (tag exercise) print a checker's [to do] line; solutions (tag solution) are hidden in JupyterLab."""
    stubs = [c for c in nb.cells if c.cell_type == "code" and "exercise" in tags(c)]
    assert stubs, f"{path.name} has no code cell tagged 'exercise'"
    for cell in stubs:
        printed = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
        assert "[to do]" in printed and "[passed]" not in printed, f"{path.name}: stub cell printed {printed!r}"
    for cell in nb.cells:
        if "solution" in tags(cell):
            assert cell.metadata.get("jupyter", {}).get("source_hidden") is True, (
                f"{path.name}: a solution cell lacks jupyter={{\"source_hidden\": true}}"
            )


def test_exercises_have_solutions_that_pass_their_checker(path, nb):
    solutions = [c for c in nb.cells if c.cell_type == "code" and "solution" in tags(c)]
    assert solutions, f"{path.name} has no code cell tagged 'solution'"
    printed = "".join(o.get("text", "") for c in solutions for o in c.outputs if o.output_type == "stream")
    assert "[passed]" in printed, f"{path.name}: no solution cell printed a checker's '[passed]' line"


def test_metadata_is_what_jupyterlab_writes(path, nb):
    """Opening and saving in JupyterLab leaves it as committed: the kernelspec `make setup` installs, the
    kernel's language_info, and the jupytext filters of notebooks/jupytext.toml (one filter everywhere)."""
    assert nb.metadata == lab_metadata(path.parent, nb.metadata.get("language_info", {})), (
        f"{path.name}: notebook metadata {dict(nb.metadata)} is not what JupyterLab writes; run `make execute`")


def test_saving_from_a_server_rooted_at_notebooks_writes_the_paired_script(tmp_path):
    """`make lab` roots the server at notebooks/: jupytext must find its pairing there, and a save must
    write a .py that keeps the solution cells' `jupyter` metadata (tests/tools/test_lab.py does it in a browser)."""
    stem = NOTEBOOKS[0].stem
    for name in (f"{stem}.ipynb", "jupytext.toml"):  # no .py: the save must write it
        shutil.copy2(ROOT / "notebooks" / name, tmp_path / name)
    manager = build_sync_jupytext_contents_manager_class(FileContentsManager)(root_dir=str(tmp_path))
    manager.save(manager.get(f"{stem}.ipynb"), f"{stem}.ipynb")
    written = (tmp_path / f"{stem}.py").read_text(encoding="utf-8")
    assert written == (ROOT / "notebooks" / f"{stem}.py").read_text(encoding="utf-8")
    solutions = [c for c in jupytext.reads(written, "py:percent").cells if "solution" in tags(c)]
    assert solutions and all(c.metadata.get("jupyter") == {"source_hidden": True} for c in solutions)
    saved = json.loads((tmp_path / f"{stem}.ipynb").read_text(encoding="utf-8"))
    assert saved["metadata"] == json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8"))["metadata"]


def test_solutions_are_folded_under_their_heading(path, nb):
    """Running a cell unfolds its output in JupyterLab, so the Solutions section itself is folded
    (jp-MarkdownHeadingCollapsed); a heading after it keeps "Run All", which ends on the last cell,
    from unfolding it."""
    cells = nb.cells
    heading = next(i for i, c in enumerate(cells) if c.cell_type == "markdown" and c.source.startswith("## Solutions"))
    assert cells[heading].metadata.get("jp-MarkdownHeadingCollapsed") is True, f"{path.name}: Solutions is not folded"
    solutions = [i for i, c in enumerate(cells) if "solution" in tags(c)]
    assert solutions and min(solutions) > heading, f"{path.name}: a solution cell sits outside the Solutions section"
    assert cells[-1].cell_type == "markdown" and re.match(r"## \S", cells[-1].source), (
        f"{path.name}: the last cell must be a level-2 heading after the solutions")


def test_every_further_reading_entry_links_to_what_it_names(path, nb):
    """Each entry of "Further reading" links its paper (arXiv, DOI, publisher), code or page, or names
    a notebook of the series, a file of this library (which the site links to its reference page) or
    a page of docs/ that the site renders (``docs/replication.md``, linked to the page)."""
    text = next((c.source for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("## Further reading")), None)
    assert text is not None, f"{path.name} has no '## Further reading' section"
    entries = re.split(r"\n- ", "\n" + text.split("\n", 1)[1].strip())[1:]
    assert entries, f"{path.name}: 'Further reading' lists nothing"
    site_pages = [f"`docs/{name}.md`" for name in build_site.DOC_PAGES]
    unlinked = [e[:70] for e in entries
                if not re.search(r"\]\(https?://|\]\(\d\d_\w+\.ipynb|`posenc_lib/[\w/]+\.py`", e)
                and not any(page in e for page in site_pages)]
    assert not unlinked, f"{path.name}: entries of 'Further reading' without a link: {unlinked}"

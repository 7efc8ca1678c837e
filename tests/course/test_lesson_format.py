"""The harness out of sight: check cells and headings in the lessons (issue #36).

- A check cell (``# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]``)
  holds a lesson's bookkeeping assertions, its source hidden in JupyterLab and removed on the site.
  What a reader sees of it is one line, ``checked: <what>`` (``posenc_course.report.checked``), so
  its committed output must be exactly that: one or more lines that each start with "checked:",
  or nothing at all in a notebook that calls ``show_checks(False)`` (every check held, silently).
  Its source is hidden in JupyterLab, and it ends with the call to ``checked``.
- A heading belongs in a markdown cell: a ``# ## Title`` line inside a code cell of the paired
  script is a heading that lost its ``# %% [markdown]`` marker (it renders as a code comment).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
HEADING_IN_COMMENT = re.compile(r"^# #{1,6} \S")


@pytest.fixture(params=NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def path(request) -> Path:
    return request.param


def _text(outputs) -> str:
    parts = []
    for out in outputs:
        if out.output_type == "stream":
            parts.append(out.text)
        else:
            parts.append(str(out.get("data", {}).get("text/plain", "<non-text output>")))
    return "".join(parts)


def _silences_checks(nb) -> bool:
    """Whether a code cell of the notebook calls ``show_checks(False)``."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        if any(isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "show_checks"
               and [ast.literal_eval(a) for a in node.args if isinstance(a, ast.Constant)] == [False]
               for node in ast.walk(tree)):
            return True
    return False


def test_check_cells_print_only_what_they_checked(path):
    nb = nbformat.read(path, as_version=4)
    silent = _silences_checks(nb)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or "remove-input" not in cell.metadata.get("tags", []):
            continue
        where = f"{path.name}, cell {index}"
        assert cell.metadata.get("jupyter", {}).get("source_hidden") is True, f"{where}: a check cell's source is hidden"
        assert "nbval-check-output" in cell.metadata["tags"], f"{where}: a check cell's line is compared by nbval"
        last = ast.parse(cell.source).body[-1]
        assert (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)
                and getattr(last.value.func, "id", getattr(last.value.func, "attr", None)) == "checked"), (
            f"{where}: a check cell ends with checked(...)")
        lines = _text(cell.outputs).splitlines()
        assert (lines or silent) and all(line.startswith("checked: ") for line in lines), (
            f"{where}: a check cell prints only 'checked: ...' lines (none after show_checks(False)), "
            f"printed {lines!r}")


def test_no_heading_inside_a_code_cell(path):
    script = path.with_suffix(".py").read_text(encoding="utf-8").splitlines()
    in_code, misplaced = False, []
    for number, line in enumerate(script, 1):
        if line.startswith("# %%"):
            in_code = "[markdown]" not in line and "[md]" not in line
        elif in_code and HEADING_IN_COMMENT.match(line):
            misplaced.append(f"line {number}: {line}")
    assert not misplaced, f"{path.with_suffix('.py').name}: headings in code cells (add `# %% [markdown]` above): {misplaced}"


def test_the_check_rule_catches_a_misplaced_heading():
    """The heading test reads a code cell's comment heading as misplaced, and a markdown cell's as fine."""
    assert HEADING_IN_COMMENT.match("# ### M-RoPE (Qwen2-VL)") and HEADING_IN_COMMENT.match("# ## 7 · Title")
    assert not HEADING_IN_COMMENT.match("# #: a comment") and not HEADING_IN_COMMENT.match("## not a comment")


TEXT_TABLE = re.compile(r"print\((?:[^()]|\([^()]*\))*\.to_string\(\)")


def test_result_tables_are_displayed_not_printed(path):
    """A DataFrame printed as text wraps on the site and on a phone; ``display(df)`` gives an HTML table."""
    source = path.with_suffix(".py").read_text(encoding="utf-8")
    printed = [m.group(0) for m in TEXT_TABLE.finditer(source)] + [
        line.strip() for line in source.splitlines() if line.strip().startswith(").T.to_string()")]
    assert not printed, f"{path.with_suffix('.py').name}: tables printed as text (use display(df)): {printed}"


def test_the_table_rule_catches_a_printed_table():
    assert TEXT_TABLE.search('print(pd.DataFrame(rows).T.to_string())')
    assert TEXT_TABLE.search('print(table.round(2).to_string())')
    assert not TEXT_TABLE.search('display(table.round(2))')

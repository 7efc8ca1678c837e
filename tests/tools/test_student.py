"""The student edition (tools/student.py, ``make student``): solutions out, stubs and checkers in.

A synthetic notebook written to the series' convention (exercise stubs tagged ``exercise``, a final
``## Solutions`` section of cells tagged ``solution``) is turned into its student edition and
executed: every checker prints ``[to do]`` on its untouched stub and the rest runs. The real
notebooks are checked the same way, without executing all of them: every one's edition is
inspected, and the cheapest one (by ``run_time_s`` in the catalog) is executed. A notebook that
has no ``exercise`` cell yet (the older layout) is checked for what applies to it.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from tools import catalog, execute, student

ROOT = Path(__file__).resolve().parents[2]


TODO = "[to do]"
SOLUTION_META = {"tags": ["solution"], "jupyter": {"source_hidden": True}}


def synthetic_notebook() -> nbformat.NotebookNode:
    """Teacher's notebook as executed: two exercises (a function and a value), their solutions at the end."""
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    setup = (
        "from posenc_course.exercises import checker\n\n"
        "@checker('Exercise 1 (double)')\n"
        "def check_exercise_1(ex, double):\n"
        "    ex.expect(ex.call(double, 2) == 4, 'double(2) should be 4')\n"
        "    ex.passed()\n\n"
        "@checker('Exercise 2 (a value)')\n"
        "def check_exercise_2(ex, value):\n"
        "    ex.expect(value == 3, 'the value is 1 + 2')\n"
        "    ex.passed()\n"
    )
    nb.cells = [
        new_markdown_cell("# 98 · Demo\n\nA notebook to the series' convention."),
        new_code_cell(setup, execution_count=1),
        new_code_cell("print('ordinary cell')", execution_count=2,
                      outputs=[new_output("stream", name="stdout", text="ordinary cell\n")]),
        new_markdown_cell("## Exercises\n\n**Exercise 1.** Write `double`."),
        new_code_cell("def double(x):\n    raise NotImplementedError  # your code here\n\n\ncheck_exercise_1(double)",
                      execution_count=3, metadata={"tags": ["exercise"]},
                      outputs=[new_output("stream", name="stdout", text="[to do] Exercise 1 (double): ...\n")]),
        new_markdown_cell("**Exercise 2.** What is 1 + 2?"),
        new_code_cell("value = ...\ncheck_exercise_2(value)", execution_count=4, metadata={"tags": ["exercise"]},
                      outputs=[new_output("stream", name="stdout", text="[to do] Exercise 2 (a value): ...\n")]),
        new_markdown_cell("## Further reading\n\n- A book."),
        new_code_cell("print('after the exercises')", execution_count=5,
                      outputs=[new_output("stream", name="stdout", text="after the exercises\n")]),
        new_markdown_cell("## Solutions"),
        new_code_cell("def double(x):\n    return 2 * x\n\n\ncheck_exercise_1(double)", execution_count=6,
                      metadata=SOLUTION_META,
                      outputs=[new_output("stream", name="stdout", text="[passed] Exercise 1 (double)\n")]),
        new_code_cell("value = 3\ncheck_exercise_2(value)", execution_count=7, metadata=SOLUTION_META,
                      outputs=[new_output("stream", name="stdout", text="[passed] Exercise 2 (a value)\n")]),
    ]
    return nb


def tags(cell) -> list[str]:
    return cell.metadata.get("tags", [])


def stdout(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")


def errors(nb) -> list[str]:
    return [f"{o['ename']}: {o['evalue']}" for c in nb.cells if c.cell_type == "code"
            for o in c.outputs if o.output_type == "error"]


def test_solutions_are_removed_stubs_cleared_and_the_rest_kept():
    teacher = synthetic_notebook()
    edition = student.student_notebook(teacher)
    assert not [c for c in edition.cells if "solution" in tags(c)]
    assert not [c for c in edition.cells if c.cell_type == "markdown" and "## Solutions" in c.source]
    stubs = [c for c in edition.cells if "exercise" in tags(c)]
    assert len(stubs) == 2 and all(c.outputs == [] and c.execution_count is None for c in stubs)
    assert "raise NotImplementedError" in stubs[0].source and "check_exercise_1(double)" in stubs[0].source
    kept = [c for c in edition.cells if "exercise" not in tags(c)]
    assert kept == [c for c in teacher.cells if not set(tags(c)) & {"exercise", "solution"}
                    and c.source != "## Solutions"]  # everything else as executed
    assert len(teacher.cells) == 12 and stdout(teacher.cells[10]).startswith("[passed]")  # the input is untouched


def test_a_solutions_heading_with_something_else_in_its_section_stays():
    nb = synthetic_notebook()
    nb.cells.append(new_code_cell("print('not a solution')"))
    edition = student.student_notebook(nb)
    assert any(c.source == "## Solutions" for c in edition.cells)


def test_the_student_edition_runs_and_every_checker_says_to_do(tmp_path):
    teacher = tmp_path / "98_demo.ipynb"
    nbformat.write(synthetic_notebook(), teacher)
    [path] = student.write_edition([teacher], tmp_path / "student")
    assert (tmp_path / "student" / "README.md").is_file()
    execute.execute(path, tmp_path / "ran")
    ran = nbformat.read(tmp_path / "ran" / path.name, as_version=4)
    assert errors(ran) == []
    stubs = [c for c in ran.cells if "exercise" in tags(c)]
    assert [stdout(c).split(":")[0] for c in stubs] == ["[to do] Exercise 1 (double)", "[to do] Exercise 2 (a value)"]
    assert stdout(ran.cells[-1]) == "after the exercises\n"  # the cells after the stubs ran too


REAL = [e.stem for e in catalog.existing(catalog.load_catalog())]


@pytest.mark.parametrize("stem", REAL)
def test_real_notebook_edition(stem, tmp_path):
    teacher = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
    [path] = student.write_edition([ROOT / "notebooks" / f"{stem}.ipynb"], tmp_path)
    edition = nbformat.read(path, as_version=4)
    assert not [c for c in edition.cells if "solution" in tags(c)]
    assert all(not c.outputs for c in edition.cells if "exercise" in tags(c))
    expected = [c for c in teacher.cells if not set(tags(c)) & {"solution", "exercise"}]
    got = [c for c in edition.cells if "exercise" not in tags(c)]
    dropped = [c for c in expected if c not in got]
    # only the markdown of the emptied Solutions section goes: its heading and any notes between solutions
    start = next((i for i, c in enumerate(teacher.cells)
                  if c.cell_type == "markdown" and student.SOLUTIONS_HEADING.match(c.source)), len(teacher.cells))
    assert all(c.cell_type == "markdown" and teacher.cells.index(c) >= start for c in dropped)
    assert got == [c for c in expected if c not in dropped]  # everything else exactly as executed
    assert [c.source for c in edition.cells if "exercise" in tags(c)] == [
        c.source for c in teacher.cells if "exercise" in tags(c)]

def test_cheapest_real_notebook_student_edition_executes(tmp_path):
    """Executes the Chinese student edition of the notebook with the smallest measured run time (its code
    is the English edition's, cell for cell): every stub's checker says "[to do]", in Chinese, because the
    kernel runs in the edition's folder (its .posenc-language)."""
    entries = catalog.existing(catalog.load_catalog())
    assert entries, "no notebooks to test"
    cheapest = min(entries, key=lambda e: e.run_time_s or 10**6)
    source = ROOT / "notebooks" / f"{cheapest.stem}.ipynb"
    [english] = student.write_edition([source], tmp_path / "en")
    [path] = student.write_edition([source], tmp_path / "zh", language="zh_CN")
    zh = nbformat.read(path, as_version=4)
    assert [c.source for c in zh.cells if c.cell_type == "code"] == [
        c.source for c in nbformat.read(english, as_version=4).cells if c.cell_type == "code"]
    execute.execute(path)  # in place: the kernel's working directory is the edition's folder
    ran = nbformat.read(path, as_version=4)
    assert errors(ran) == [], f"{cheapest.stem}: the student edition stopped with an error"
    stubs = [c for c in ran.cells if "exercise" in tags(c)]
    assert stubs, f"{cheapest.stem}: no exercise stub"
    for cell in stubs:
        assert stdout(cell).startswith(TODO), f"{cheapest.stem}: stub did not print {TODO!r}:\n{cell.source}"
        assert re.search(r"[\u4e00-\u9fff]", stdout(cell)), f"{cheapest.stem}: the checker did not speak Chinese: {stdout(cell)!r}"

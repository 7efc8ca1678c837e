"""Write the student edition of the series, for handing out in class: ``make student``.

    python tools/student.py                      # notebooks/*.ipynb -> build/student/ and build/student/zh/
    python tools/student.py --out DIR NB.ipynb   # chosen notebooks, another folder

Each notebook is copied with
- every cell tagged ``solution`` removed, and the ``## Solutions`` heading with it once its
  section holds nothing else;
- every cell tagged ``exercise`` kept (the stub and its ``check_exercise_k`` call) with its
  outputs cleared, so a student starts from an empty cell; the checkers stay in ``posenc_lib``;
- everything else exactly as executed (outputs, figures, tables).

Run in the course environment, an untouched stub makes its checker print a ``[to do]`` line and
the rest of the notebook runs as before (``tests/tools/test_student.py`` executes a student edition to
show it). The solutions stay in the repository's own notebooks, for the teacher.

The Chinese student edition (``zh/`` in the output folder) is the same edition with its text translated
from the catalogs, as the Chinese notebooks of ``make lab`` are (``tools/i18n_notebooks.py``): the code
and the outputs are the English edition's, and its ``.posenc-language`` makes the checkers speak Chinese.
"""

from __future__ import annotations

import argparse
import copy
import re
import shutil
import sys
from pathlib import Path

import nbformat
from nbconvert.preprocessors import TagRemovePreprocessor

from tools.catalog import NOTEBOOKS, existing, load_catalog

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "student"
SOLUTIONS_HEADING = re.compile(r"^\s*##\s+Solutions\b", re.IGNORECASE)
SECTION = re.compile(r"^\s*#{1,2}\s", re.MULTILINE)

README = """# posenc · student edition

These notebooks are the course's notebooks without the worked solutions of the exercises.

1. Open them in JupyterLab in the course environment (`make setup`, then `make lab` in the
   repository, or any Jupyter with `posenc_lib` installed).
2. Run the notebook from the top. Each exercise is a code cell with a stub: a function that
   raises `NotImplementedError`, or a value left as `...`, followed by a `check_exercise_k(...)`
   call. Untouched, the checker prints a `[to do]` line.
3. Replace the stub with your answer and run the cell again: the checker prints `[passed]`, or
   explains what is still wrong.
"""

README_ZH = """# posenc · 学生版

这些笔记本是课程笔记本去掉练习参考答案后的版本。

1. 在课程环境中用 JupyterLab 打开它们（在仓库中运行 `make setup`，然后 `make lab`；或任何安装了
   `posenc_lib` 的 Jupyter）。请在这个目录中打开，检查函数才会用中文说明结果。
2. 从头运行笔记本。每道练习是一个带代码框架的代码单元：一个抛出 `NotImplementedError` 的函数，或一个
   写作 `...` 的值，后面跟着一个 `check_exercise_k(...)` 调用。不改动时，检查函数打印一行 `[to do]`。
3. 用你的答案替换代码框架，再运行这个单元：检查函数打印 `[passed]`，或说明哪里还不对。
"""


def tags(cell: nbformat.NotebookNode) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def student_notebook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The student edition of one notebook (a new object; ``nb`` is left as it is).

    nbconvert's ``TagRemovePreprocessor`` removes the ``solution`` cells and clears the outputs
    and execution counts of the ``exercise`` cells (their metadata kept as it is); then the
    emptied "## Solutions" section goes.
    """
    strip = TagRemovePreprocessor(
        remove_cell_tags={"solution"}, remove_all_outputs_tags={"exercise"}, remove_metadata_fields=set()
    )
    nb, _ = strip.preprocess(copy.deepcopy(nb), {})
    nb.cells = _drop_empty_solutions_section(nb.cells)
    return nb


def _drop_empty_solutions_section(cells: list) -> list:
    """Remove the "## Solutions" section when only markdown is left in it (its solutions are gone)."""
    out = []
    i = 0
    while i < len(cells):
        cell = cells[i]
        if cell.cell_type == "markdown" and SOLUTIONS_HEADING.match(cell.source):
            end = i + 1
            while end < len(cells) and not (cells[end].cell_type == "markdown" and SECTION.match(cells[end].source)):
                end += 1
            section = cells[i:end]
            if all(c.cell_type == "markdown" for c in section):
                i = end
                continue
        out.append(cell)
        i += 1
    return out


def write_edition(paths: list[Path], out: Path = OUT, language: str = "en") -> list[Path]:
    """Write the student edition of ``paths`` into ``out`` (replaced); returns the files written.
    ``language="zh_CN"``: the Chinese edition (text from the catalogs, see ``tools/i18n_notebooks.py``)."""
    from tools import i18n_notebooks

    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    written = []
    for path in paths:
        nb = student_notebook(nbformat.read(path, as_version=4))
        if language != "en":
            nb, _ = i18n_notebooks.translate_notebook(nb, i18n_notebooks.catalog_lookup(path.stem))
        target = out / path.name
        nbformat.write(nb, target)
        written.append(target)
    (out / "README.md").write_text(README if language == "en" else README_ZH, encoding="utf-8")
    if language != "en":
        (out / i18n_notebooks.LANGUAGE_FILE).write_text(language + "\n", encoding="utf-8")
    return written


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every catalogued notebooks/NN_*.ipynb")
    parser.add_argument("--out", type=Path, default=OUT,
                        help="output folder (replaced; default build/student); the Chinese edition goes into its zh/")
    args = parser.parse_args(argv)
    paths = args.notebooks or [NOTEBOOKS / f"{e.stem}.ipynb" for e in existing(load_catalog())]
    written = write_edition(paths, args.out)
    written += write_edition(paths, args.out / "zh", language="zh_CN")
    for path in written:
        nb = nbformat.read(path, as_version=4)
        stubs = sum("exercise" in tags(c) for c in nb.cells)
        print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {stubs} exercise stub(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

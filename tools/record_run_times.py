"""Record measured notebook run times in their one place, and everything generated from it.

    make execute                                      # executes every notebook, writes build/timings.json
    python tools/record_run_times.py --from-timings   # catalog run_time_s <- those timings; headers, README follow
    python tools/record_run_times.py                  # headers and README <- the catalog (no timing is read)

``notebooks/catalog.toml`` (``run_time_s``) is the one record of a notebook's run time. With
``--from-timings`` this script writes the wall times ``make execute`` measured (rounded up to whole
seconds) there: only after a run on a quiet machine, since a loaded machine's times would become the
record. Then, with or without it, it makes the two copies agree with the catalog: the "**Run time:** about N s" sentence in each notebook's ``.py`` and
``.ipynb`` header (text only: outputs are not touched), and the notebook table of README.md
(between ``<!-- notebook-table:start -->`` and ``<!-- notebook-table:end -->``) with the series' total
in the sentence after it ("the whole series runs in N min NN s").
``tests/course/test_notebooks.py`` and ``tests/tools/test_site.py`` fail when a copy disagrees with the catalog.
With ``--check`` nothing is written and the exit status says whether everything agrees. A header is
written to the ``.ipynb`` first and the ``.py`` last, so that the ``.py`` stays the newer of the pair and
a later ``jupytext --sync`` takes it as the source (it would otherwise drop ``.py`` edits not yet synced).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys

import nbformat

from tools.build_site import markdown_table
from tools.catalog import CATALOG, NOTEBOOKS, ROOT, existing, format_seconds, load_catalog
from tools.execute import TIMINGS

README = ROOT / "README.md"
HEADER = re.compile(r"(\*\*Run time:\*\* about )(\d+)( s)")
TABLE = re.compile(r"(<!-- notebook-table:start -->\n)(.*?)(\n<!-- notebook-table:end -->)", re.S)
TOTAL = re.compile(r"(the whole series runs in )(\d+ min \d\d s|\d+ s)")


def set_catalog_time(text: str, stem: str, seconds: int) -> str:
    """``catalog.toml`` text with the ``run_time_s`` of ``stem`` set (the line follows ``outcome``)."""
    start = text.index(f'stem = "{stem}"')
    end = text.find("[[notebook]]", start)
    end = len(text) if end < 0 else end
    block = text[start:end]
    if "run_time_s" in block:
        block = re.sub(r"run_time_s = \d+", f"run_time_s = {seconds}", block)
    else:
        block = re.sub(r"(outcome = .*\n)", rf"\g<1>run_time_s = {seconds}\n", block, count=1)
    return text[:start] + block + text[end:]


def sync_header(stem: str, seconds: int) -> None:
    """Write ``seconds`` into the run-time sentence of the notebook's .ipynb (first markdown cell), then .py."""
    path = NOTEBOOKS / f"{stem}.ipynb"
    nb = nbformat.read(path, as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "markdown")
    first.source = HEADER.sub(rf"\g<1>{seconds}\g<3>", first.source, count=1)
    nbformat.write(nb, path)
    script = NOTEBOOKS / f"{stem}.py"  # last: the .py stays the newer file of the pair
    script.write_text(HEADER.sub(rf"\g<1>{seconds}\g<3>", script.read_text(encoding="utf-8"), count=1), encoding="utf-8")


def readme_with_table(readme: str, table: str, total_s: int) -> str:
    """README text with the notebook table and the series' total run time written in."""
    if not TABLE.search(readme):
        raise ValueError(f"{README.name} has no <!-- notebook-table:start/end --> markers")
    if not TOTAL.search(readme):
        raise ValueError(f"{README.name} has no sentence 'the whole series runs in N min NN s'")
    readme = TABLE.sub(lambda m: m.group(1) + table + m.group(3), readme, count=1)
    return TOTAL.sub(lambda m: m.group(1) + format_seconds(total_s), readme, count=1)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="write nothing; fail if a copy disagrees")
    parser.add_argument("--from-timings", action="store_true",
                        help=f"write the times in {TIMINGS.name} (make execute's, on a quiet machine) into the catalog")
    args = parser.parse_args(argv)
    if args.check and args.from_timings:
        parser.error("--check writes nothing: it cannot take --from-timings")
    if args.from_timings:
        if not TIMINGS.exists():
            print(f"{TIMINGS} does not exist: run make execute first (on a quiet machine)", file=sys.stderr)
            return 1
        timings = json.loads(TIMINGS.read_text())
        text = CATALOG.read_text(encoding="utf-8")
        for stem, seconds in sorted(timings.items()):
            if (NOTEBOOKS / f"{stem}.ipynb").exists():
                text = set_catalog_time(text, stem, math.ceil(seconds))
        CATALOG.write_text(text, encoding="utf-8")
    entries = existing(load_catalog())
    problems = []
    for e in entries:
        if e.run_time_s is None:
            problems.append(f"{e.stem}: no run_time_s in {CATALOG.name} (run make execute, then this script)")
            continue
        found = HEADER.search((NOTEBOOKS / f"{e.stem}.py").read_text(encoding="utf-8"))
        if found is None or int(found.group(2)) != e.run_time_s:
            if args.check:
                problems.append(f"{e.stem}: header says {found and found.group(2)} s, catalog {e.run_time_s} s")
            else:
                sync_header(e.stem, e.run_time_s)
    readme = README.read_text(encoding="utf-8")
    wanted = readme_with_table(readme, markdown_table(entries), sum(e.run_time_s or 0 for e in entries))
    if wanted != readme:
        if args.check:
            problems.append(f"{README.name}: notebook table differs from the catalog")
        else:
            README.write_text(wanted, encoding="utf-8")
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

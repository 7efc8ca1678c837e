"""The course's table of contents, ``notebooks/catalog.toml``: read, validate, match to the notebooks.

Used by the site build (``tools/build_site.py``), the student edition (``tools/student.py``) and
the browser check (``tools/check_site.py``). ``run_time_s`` is the one record of a notebook's
measured run time; the site shows it on each page and in the index.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
CATALOG = NOTEBOOKS / "catalog.toml"
STEM = re.compile(r"^(\d\d)_[a-z0-9_]+$")


@dataclass(frozen=True)
class Entry:
    """One notebook of the catalog: ``stem`` is its file name without extension (e.g. "01_sinusoidal")."""

    stem: str
    title: str
    topic: str
    outcome: str
    run_time_s: int | None = None  # measured `make execute` wall time; absent until the notebook exists

    @property
    def number(self) -> str:
        return self.stem[:2]

    @property
    def label(self) -> str:
        return f"{self.number} · {self.title}"


def load_catalog(path: Path = CATALOG) -> list[Entry]:
    """Read ``catalog.toml``: ``[[notebook]]`` tables with keys stem, title, topic, outcome (and run_time_s)."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    tables = data.get("notebook")
    if not isinstance(tables, list) or not tables:
        raise ValueError(f"{path}: expected one or more [[notebook]] tables, got {sorted(data)}")
    fields = {"stem", "title", "topic", "outcome"}
    entries = []
    for i, table in enumerate(tables):
        table = dict(table)
        run_time = table.pop("run_time_s", None)
        if set(table) != fields or not all(isinstance(v, str) and v.strip() for v in table.values()):
            raise ValueError(f"{path}: notebook #{i} must have exactly the non-empty strings {sorted(fields)}"
                             f" (and optionally run_time_s), got {table}")
        if run_time is not None and (isinstance(run_time, bool) or not isinstance(run_time, int) or run_time <= 0):
            raise ValueError(f"{path}: notebook #{i} run_time_s must be a positive int (seconds), got {run_time!r}")
        if not STEM.match(table["stem"]):
            raise ValueError(f"{path}: notebook #{i} stem must look like '01_sinusoidal', got {table['stem']!r}")
        entries.append(Entry(**table, run_time_s=run_time))
    stems = [e.stem for e in entries]
    if stems != sorted(set(stems)):
        raise ValueError(f"{path}: stems must be unique and in order, got {stems}")
    return entries


def existing(entries: list[Entry], folder: Path = NOTEBOOKS) -> list[Entry]:
    """The catalog entries whose notebook exists in ``folder``; every numbered notebook must be catalogued."""
    found = {p.stem for p in folder.glob("[0-9][0-9]_*.ipynb")}
    missing = sorted(found - {e.stem for e in entries})
    if missing:
        raise ValueError(f"notebooks without an entry in {CATALOG.name}: {missing}")
    return [e for e in entries if e.stem in found]


def format_seconds(seconds: float | None) -> str:
    """Run time as shown on the site: "34 s", "1 min 05 s", or "not measured yet"."""
    if seconds is None:
        return "not measured yet"
    s = round(seconds)
    return f"{s} s" if s < 60 else f"{s // 60} min {s % 60:02d} s"


def longest_first(paths: list[Path]) -> list[Path]:
    """``paths`` (notebooks) with the longest recorded run time first, so that a run spreading them
    over two workers does not start its longest notebook last; unmeasured ones go first, in order."""
    run_time = {e.stem: e.run_time_s for e in load_catalog()}
    return sorted(paths, key=lambda p: -(run_time.get(p.stem) or float("inf")))


if __name__ == "__main__":  # python -m tools.catalog --longest-first NOTEBOOK...: print them in that order
    import sys

    if sys.argv[1:2] != ["--longest-first"]:
        sys.exit("usage: python -m tools.catalog --longest-first NOTEBOOK...")
    print(" ".join(str(p) for p in longest_first([Path(a) for a in sys.argv[2:]])))

"""Build the course's static website, readable offline: ``make html``.

    python tools/build_html.py               # execute every notebook fresh, then render the site
    python tools/build_html.py --no-execute  # render the notebooks as committed (a quick look)

1. Execute each ``notebooks/NN_*.ipynb`` into ``build/notebooks/`` with ``tools/execute.py``
   (which records the wall times in ``build/timings.json``).
2. Render each to ``build/html/NN_name.html`` with the template in ``tools/html_template/posenc``:
   the JupyterLab look, figures embedded as base64 PNG, exercise solutions folded in a closed
   ``<details>``, an index / previous / next bar, and no network resource at all: MathJax 3.2.2
   is served from ``build/html/mathjax/`` (copied from ``tools/vendor/mathjax/``).
3. Write ``build/html/index.html`` from ``notebooks/catalog.toml`` (only the notebooks that
   exist) with the measured run times, and print the same table as markdown for README.md.

Offline check after a build: ``grep -rlE "(src|href)=[\\"']https?://" build/html`` may only find
links in prose (``<a href>``) and MathJax's "about" link; ``tests/test_site.py`` checks the
rendering rules on every run. The site was also checked once in headless Chromium (pages served
from build/html, every other request sent to a logging proxy): the pages fetched only their own
files (page, mathjax/tex-chtml-full.js, its fonts), formulas were typeset and solutions folded.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import jinja2
import nbformat
from nbconvert import HTMLExporter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from execute import TIMINGS, execute_all  # noqa: E402  (tools/ is a folder of scripts, not a package)

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
CATALOG = NOTEBOOKS / "catalog.toml"
BUILD = ROOT / "build"
TEMPLATES = ROOT / "tools" / "html_template"
MATHJAX = ROOT / "tools" / "vendor" / "mathjax"
MATHJAX_URL = "mathjax/tex-chtml-full.js"  # relative to every page, all of which sit in build/html/
STEM = re.compile(r"^(\d\d)_[a-z0-9_]+$")
NOTEBOOK_LINK = re.compile(r'href="(?:\./)?(\d\d_[A-Za-z0-9_]+)\.ipynb(#[^"]*)?"')  # a link to a sibling notebook

SITE_TITLE = "Positional encoding in Transformers: a runnable course"
SITE_INTRO = (
    "Why a Transformer needs to be told where each token is, and the main ways it is done in practice: "
    "sinusoidal and learnable tables, RoPE, two-dimensional encodings for images, relative biases "
    "(T5, ALiBi), and what happens beyond the training length. Each notebook builds the idea step by "
    "step, checks every claim with a computation or a figure, trains tiny models on a CPU, and ends "
    "with exercises whose worked solutions are folded away until you open them."
)
SITE_FOOTER = (
    "Built with make html from the notebooks in notebooks/; the site loads nothing from the network. "
    "To run and change the notebooks yourself: make setup, then make lab (see README.md)."
)


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
    def href(self) -> str:
        return f"{self.stem}.html"

    @property
    def label(self) -> str:
        return f"{self.number} · {self.title}"


def load_catalog(path: Path = CATALOG) -> list[Entry]:
    """Read ``catalog.toml``: a list of ``[[notebook]]`` tables with keys stem, title, topic, outcome."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    tables = data.get("notebook")
    if not isinstance(tables, list) or not tables:
        raise ValueError(f"{path}: expected one or more [[notebook]] tables, got {sorted(data)}")
    fields = {"stem", "title", "topic", "outcome"}
    entries = []
    for i, table in enumerate(tables):
        run_time = table.pop("run_time_s", None)
        if set(table) != fields or not all(isinstance(v, str) and v.strip() for v in table.values()):
            raise ValueError(f"{path}: notebook #{i} must have exactly the non-empty strings {sorted(fields)}, got {table}")
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


def make_exporter() -> HTMLExporter:
    """nbconvert's HTML exporter with the site's template and the local MathJax."""
    return HTMLExporter(
        extra_template_basedirs=[str(TEMPLATES)],
        template_name="posenc",
        mathjax_url=MATHJAX_URL,
        embed_images=True,
        theme="light",
    )


def render_page(exporter: HTMLExporter, nb: nbformat.NotebookNode, entry: Entry, entries: list[Entry]) -> str:
    """One notebook as a site page, with its navigation bar (``entries`` gives previous and next).

    Links to sibling notebooks (``00_name.ipynb#section``) are pointed at their pages (``00_name.html#section``).
    """
    i = entries.index(entry)
    nav = {
        "index": "index.html",
        "prev": {"href": entries[i - 1].href, "label": entries[i - 1].label} if i > 0 else None,
        "next": {"href": entries[i + 1].href, "label": entries[i + 1].label} if i + 1 < len(entries) else None,
    }
    nb = nbformat.from_dict(nb)  # a copy: the title below must not leak into the caller's notebook
    nb.metadata["title"] = f"{entry.label} | posenc"
    html, _ = exporter.from_notebook_node(nb, resources={"posenc_nav": nav})
    return NOTEBOOK_LINK.sub(lambda m: f'href="{m[1]}.html{m[2] or ""}"', html)  # on the site, notebooks are pages


def format_seconds(seconds: float | None) -> str:
    """Run time as shown in the tables: "34 s", "1 min 05 s", or "not measured"."""
    if seconds is None:
        return "not measured"
    s = round(seconds)
    return f"{s} s" if s < 60 else f"{s // 60} min {s % 60:02d} s"


def table_rows(entries: list[Entry], timings: dict[str, float]) -> list[dict[str, str]]:
    """The index table's rows: number, title, topic, outcome, page link and measured run time."""
    return [
        {"number": e.number, "title": e.title, "topic": e.topic, "outcome": e.outcome, "href": e.href,
         "run_time": format_seconds(timings.get(e.stem))}
        for e in entries
    ]


def index_html(entries: list[Entry], timings: dict[str, float]) -> str:
    """The site's front page listing ``entries``, with run times from ``timings`` (seconds by stem)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=False, keep_trailing_newline=True)
    return env.get_template("site_index.html.j2").render(
        title=SITE_TITLE,
        intro=SITE_INTRO,
        rows=table_rows(entries, timings),
        timing_note="Run time: wall time of a fresh execution of the notebook, training included, "
        "measured when this site was built (CPU, 2 threads).",
        footer=SITE_FOOTER,
    )


def markdown_table(entries: list[Entry], timings: dict[str, float]) -> str:
    """The same table in markdown, linking the notebooks themselves (for README.md)."""
    lines = ["| # | Notebook | You will be able to | Run time |", "|---|---|---|---:|"]
    for row in table_rows(entries, timings):
        link = f"[{row['title']}](notebooks/{row['href'].removesuffix('.html')}.ipynb)"
        lines.append(f"| {row['number']} | {link}: {row['topic']} | {row['outcome']} | {row['run_time']} |")
    return "\n".join(lines)


def build(fresh: bool = True, out: Path = BUILD / "html") -> str:
    """Build the site into ``out``; return the markdown table. ``fresh=False`` renders the committed outputs."""
    entries = existing(load_catalog())
    if not entries:
        raise SystemExit(f"no notebooks matching {NOTEBOOKS}/[0-9][0-9]_*.ipynb: nothing to build")
    paths = [NOTEBOOKS / f"{e.stem}.ipynb" for e in entries]
    if fresh:
        source = BUILD / "notebooks"
        execute_all(paths, source)
    else:
        source = NOTEBOOKS
    timings = json.loads(TIMINGS.read_text()) if TIMINGS.exists() else {}

    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(MATHJAX, out / "mathjax", ignore=shutil.ignore_patterns("README.md"))
    exporter = make_exporter()
    for entry in entries:
        nb = nbformat.read(source / f"{entry.stem}.ipynb", as_version=4)
        (out / entry.href).write_text(render_page(exporter, nb, entry, entries), encoding="utf-8")
    (out / "index.html").write_text(index_html(entries, timings), encoding="utf-8")
    print(f"wrote {out / 'index.html'} and {len(entries)} notebook page(s)")
    return markdown_table(entries, timings)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-execute", action="store_true",
                        help="render notebooks/*.ipynb as committed instead of executing them into build/notebooks/")
    args = parser.parse_args(argv)
    table = build(fresh=not args.no_execute)
    print("\nNotebook table (markdown, for README.md):\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Build the course site with Sphinx + myst-nb + sphinx-book-theme: ``make html``.

    python tools/build_site.py               # execute every notebook into build/notebooks/, then render
    python tools/build_site.py --no-execute  # render the notebooks as committed (what the tests do)
    python tools/build_site.py --readme-table  # also print the notebook table for README.md
    python tools/build_site.py --language en # the English site alone (zh_CN: the Chinese one, in OUT/zh_CN)

1. Execute each ``notebooks/NN_*.ipynb`` into ``build/notebooks/`` with ``tools/execute.py``
   (deterministic; skipped with ``--no-execute``).
2. Stage the sources in ``build/site-src/``: the executed notebooks, an index page written from
   ``notebooks/catalog.toml`` (only the notebooks that exist; planned ones get a short placeholder
   page, so a link to them resolves), the glossary page, the pages of ``docs/`` (the errata of
   the source article, the replication table, the instructor guide; see ``DOC_PAGES``), the
   ``.py`` sources for download (the ``.ipynb`` is published by Sphinx itself, under ``_sources/``).
3. Render with Sphinx, twice from the same staged sources: the English site into ``build/html/`` and
   the Chinese one into ``build/html/zh_CN/`` (``-D language=zh_CN``: Sphinx translates each page from
   its catalog, ``locale/zh_CN/LC_MESSAGES/PAGE.po``, staged with the sources; an entry not translated
   yet shows in English). Every page of each links to the same page of the other (the language
   switch). Configuration in ``tools/site/``, notebook execution off, warnings as errors: a broken link
   between notebooks or to a missing anchor fails the build. MathJax 3.2.2 is served from the site
   (``tools/vendor/mathjax``); nothing is loaded from the network. Source maps of the theme's scripts
   are dropped (they are only for debugging). ``--language en`` (or ``zh_CN``) renders one site alone,
   with no switch.

``tools/check_site.py`` then opens every page in headless Chromium (``make test`` does both).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

from tools.catalog import CATALOG, NOTEBOOKS, Entry, existing, format_seconds, load_catalog
from tools.execute import execute_all

from tools.site.posenc_site import anchor_map, glossary_markdown, load_glossary

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"
CONF = ROOT / "tools" / "site"

SITE_TITLE = "Positional encoding in Transformers: a runnable course"

# The site's languages and where each one's pages go under the output folder: English at its root, Chinese
# in zh_CN/ (the translation catalogs: locale/zh_CN/, docs/i18n.md).
LANGUAGES = {"en": "", "zh_CN": "zh_CN"}
LOCALE = ROOT / "locale"

# The markdown pages of docs/ that become site pages, in sidebar order (after the notebooks). In the
# repository they link notebooks as ../notebooks/NN_name.ipynb#JupyterLab-anchor; staged, the links
# are rewritten to the notebook pages and their MyST anchors (see doc_markdown).
DOC_PAGES = ("errata", "replication", "instructor-guide", "comparison")
DOC_NOTEBOOK_LINK = re.compile(r"\]\(\.\./notebooks/(?P<stem>\d\d_[A-Za-z0-9_]+)\.ipynb(?:#(?P<anchor>[^)\s]+))?\)")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# Study time on one's own: reading the prose at READING_WPM words a minute, and MINUTES_PER_CELL for each
# code cell (read it, run it, look at its output). In class, the instructor guide's plan of each notebook
# ("### NN · Plan (90 minutes)") is the time.
READING_WPM = 150
MINUTES_PER_CELL = 1.5
# A notebook taught in several sessions has one plan per session ("### 06 · Session 1 · Plan (90 minutes): ...").
GUIDE_PLAN = re.compile(r"^#{2,4}\s+(\d\d)\s+·\s+(?:Session\s+\d+\s+·\s+)?Plan\s+\((\d+)\s+minutes\)", re.MULTILINE)


@dataclass
class StudyTime:
    """What a reader is told about the time the course takes, every number counted from the sources."""
    words: int  # in the notebooks' markdown cells
    code_cells: int
    class_minutes: dict[str, list[int]]  # notebook number -> minutes of each of its lessons in the instructor guide

    @property
    def self_minutes(self) -> float:
        return self.words / READING_WPM + self.code_cells * MINUTES_PER_CELL

    def sentence(self) -> str:
        hours = self.self_minutes / 60
        # the words rounded to a thousand: a sentence that changes with every edited word would send
        # its translation back to review each time (docs/i18n.md)
        text = (f"about {round(hours)} hours on your own (some {round(self.words, -3):,} words of text at {READING_WPM} words a "
                f"minute, and {self.code_cells} code cells at {MINUTES_PER_CELL:g} minutes each to read, run and "
                "look at)")
        if self.class_minutes:
            lessons = [m for minutes in self.class_minutes.values() for m in minutes]
            lo, hi = min(lessons), max(lessons)
            each = f"{lo} minutes" if lo == hi else f"{lo}-{hi} minutes"
            more = [f"{len(m)} for {n}" for n, m in sorted(self.class_minutes.items()) if len(m) > 1]
            per = f"one per notebook, {', '.join(more)}" if more else "one per notebook"
            text += (f"; in class, {len(lessons)} lessons of {each} ({per}), {sum(lessons) / 60:g} hours "
                     "for the series (the instructor guide's lesson plans)")
        return text


def study_time(notebooks: list[Path], guide: Path | None = None) -> StudyTime:
    """Words and code cells of ``notebooks`` (markdown cells' words; HTML comments and cells tagged
    ``remove-cell`` left out) and the lesson plans of the instructor guide ``guide``, when given."""
    words = cells = 0
    for path in notebooks:
        for cell in nbformat.read(path, as_version=4).cells:
            if "remove-cell" in cell.metadata.get("tags", []):
                continue
            if cell.cell_type == "markdown":
                words += len(re.sub(r"<!--.*?-->", " ", cell.source, flags=re.S).split())
            elif cell.cell_type == "code":
                cells += 1
    plans: dict[str, list[int]] = {}
    if guide is not None and guide.is_file():
        for m in GUIDE_PLAN.finditer(guide.read_text(encoding="utf-8")):
            plans.setdefault(m[1], []).append(int(m[2]))
    numbers = {path.name[:2] for path in notebooks}
    return StudyTime(words, cells, {n: m for n, m in plans.items() if n in numbers})


def index_markdown(entries: list[Entry], planned: list[Entry], docs: tuple[str, ...] = (), api: bool = False,
                   archive: str | None = None, repository: str | None = None, study: StudyTime | None = None,
                   readme: bool = False) -> str:
    """The front page. At its top, within a phone's first screen: where to start, the study time
    (``study``, counted from the notebooks) and how to get the code (the repository and its clone
    command when ``repository`` is known, the site's zip ``archive``); then what the series teaches,
    for whom, the notebook table and how to run it.

    ``docs``: the pages of ``docs/`` staged beside it (``DOC_PAGES``), linked from "For teachers";
    ``readme``: the README is staged as a page (``readme.md``) and linked.
    """
    readme_ref = "[the README](readme.md)" if readme else "the README"
    ways = []
    if repository:
        ways.append(f"clone [the repository]({repository}) (`git clone {repository} posenc`)")
    if archive:  # raw HTML: a file published beside the pages (html_extra_path), not a page MyST resolves
        ways.append(f'<a href="{archive}" download>download the sources</a> (a zip of every file of the course as '
                    "this site was built)")
    if not ways:  # built from a copy that is not a git checkout, with no address given: no link to offer
        ways.append("the folder of the course this site was built from (this build had no repository address "
                    "and no git checkout to zip)")
    get_code = (f"**Get the code:** {' or '.join(ways)}; then `make setup` and `make lab` "
                f"([how to run it](#how-to-run-it); {readme_ref} has the details).\n")
    rows = "\n".join(
        f"| {e.number} | [{_cell(e.title)}]({e.stem}.ipynb) | {_cell(e.topic)} | {_cell(e.outcome)} | "
        f"{format_seconds(e.run_time_s)} |"
        for e in entries
    )
    later = ""
    if planned:
        later = ("\nPlanned, not yet part of this build: " + "; ".join(_cell(e.label) for e in planned) + ".\n")
    toctree = "\n".join([e.stem for e in entries] + list(docs) + (["api/index"] if api else []) + ["glossary"])
    first = entries[0]
    errata = " (the [errata](errata.md) list them, in the article's own words)" if "errata" in docs else ""
    library = ("- The [library reference](api/index.md) documents every function and class of `posenc_lib` "
               "the notebooks use, from its docstring, with its source; in code cells, its names link there.\n") if api else ""
    clone = (f"```bash\ngit clone {repository} posenc\ncd posenc\n```\n\n" if repository else
             "Unpack the sources (the zip above) and `cd posenc`.\n\n" if archive else "")
    study_line = f" **Study time:** {study.sentence()}." if study else ""
    teachers = ""
    if docs:
        pages = {"errata": "the [errata of the source article](errata.md): each of its errors, the correction, "
                           "the notebook section that shows it and the numbers it measured",
                 "replication": "the [replication table](replication.md): each headline result of the papers the "
                                "course teaches beside the number a notebook printed at toy scale, whether they agree, "
                                "and why not where they do not",
                 "instructor-guide": "the [instructor guide](instructor-guide.md): per notebook, learning goals, a "
                                     "lesson plan, the cells to run live, the expected results with their spread "
                                     "across seeds, common mistakes and discussion questions",
                 "comparison": "the [comparison rule](comparison.md): when the course calls one trained setting "
                               "ahead of another, and what \"not separated\" means"}
        items = "\n".join(f"- {pages[d]};" if d in pages else f"- [{d}]({d}.md);" for d in docs)
        teachers = (f"\n## For teachers\n\nBeside the notebooks:\n\n{items.removesuffix(';')}.\n\n"
                    "The student edition of the notebooks (exercises without their solutions) is built with "
                    f"`make student` (see {readme_ref}, \"In the classroom\").\n")
    return f"""# {SITE_TITLE}

How does a Transformer know the order of the words it reads? Nine runnable notebooks build, test
and train the ways position is put back in, on a laptop CPU.

**Start here:** [{first.label}]({first.stem}.ipynb), then the notebooks in order.{study_line}

{get_code}
Attention on its own does not see order: it treats its input as a bag of tokens. This course
shows why, and then builds, tests and trains the main ways position is put back in: the
sinusoidal table of the original Transformer, learnable tables (BERT, GPT-2), rotary embeddings
(RoPE, used by LLaMA and most current models), two-dimensional encodings for images, relative
biases (T5, ALiBi) and what happens beyond the training length. Every claim is shown by a
computation that ran in the notebook; every implementation in the library `posenc_lib` is tested
against the reference code used in production (Hugging Face `transformers`); every experiment
trains a tiny model for real, in seconds. Each notebook says at its top what it expects you to
know from the earlier ones.

**Where it comes from.** The course grew out of a Chinese tutorial, 《Transformer位置编码原理与实现：从正弦编码到RoPE》
("Transformer positional encoding: principles and implementation, from sinusoidal encoding to
RoPE"), which the notebooks call "the source article". It covers the right topics, and most of it
holds; the notebooks measure where it does not, or holds only under conditions it does not
give{errata}.

**For whom.** Students and engineers who know PyTorch tensors, `nn.Module` and the scaled
dot-product attention formula, and want to understand position encodings well enough to
implement, compare and debug them. Teachers can hand out a student edition (exercises without
solutions): see {readme_ref}.

## The notebooks

```{{table}}
:class: posenc-notebooks

| # | Notebook | Topic | You will be able to | Run time |
|---|---|---|---|---:|
{rows}
```
{later}
Run time: measured with `make execute` on the project's reference machine (2 CPU cores, one
thread), training included. Each notebook states its own at the top, under links to download
it (`.ipynb`) and to read its source (`.py`, jupytext percent format).

## How to use this site

- Read the notebooks in order: the sidebar (☰ on a phone) lists them, each page has its contents
  on the right (the list button on a phone) and previous/next links at the bottom; search works offline.
- Each notebook ends with exercises: a stub cell to fill in and a checker that says `[passed]`
  or what is wrong. Each exercise links to its worked solution, folded at the end of the notebook:
  click "Show the solution to exercise N" to open one.
- A code cell has a copy button at its top right.
- Terms link to the [glossary](glossary.md), in English and Chinese (术语表).
- **中文版 (Chinese edition).** Every page has a Chinese translation: follow the language switch at
  the top of the page. `make lab` opens the notebooks in Chinese too (`notebooks/zh/`). Figures,
  tables and explorers keep their English labels in both editions: they are the outputs of the
  same code.
{library}{teachers}
## How to run it

{clone}Then, on a machine with Python 3.11 (everything runs on a CPU, offline):

```bash
make setup   # the pinned environment in .venv (about a minute)
make lab     # JupyterLab on notebooks/
make html    # execute every notebook and build this site into build/html/
make test    # unit tests, nbval over every notebook, and this site checked in a headless browser
```

```{{toctree}}
:hidden:
:maxdepth: 1

{toctree}
```
"""


def placeholder(entry: Entry) -> nbformat.NotebookNode:
    """A page for a catalogued notebook that does not exist yet, so links to it resolve."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["orphan"] = True  # not in the sidebar
    nb.cells = [nbformat.v4.new_markdown_cell(
        f"# {entry.label}\n\n*Planned: this notebook is listed in `notebooks/catalog.toml` and is not "
        f"yet part of this build.*\n\n**Topic.** {entry.topic}.\n\n**You will be able to:** {entry.outcome}.")]
    return nb


def doc_markdown(text: str, anchors: dict[str, dict[str, str]]) -> str:
    """A page of ``docs/`` as the site renders it: ``../notebooks/NN_name.ipynb#anchor`` becomes
    ``NN_name.ipynb#slug``, the notebook's page and the MyST anchor of the heading (a JupyterLab anchor,
    "4-·-Wavelengths", is translated; an anchor written as MyST writes it is kept). Sphinx then checks
    every such link: a notebook or heading that does not exist fails the build."""

    def fix(m: re.Match) -> str:
        stem, anchor = m["stem"], m["anchor"]
        if anchor is None:
            return f"]({stem}.ipynb)"
        return f"]({stem}.ipynb#{anchors.get(stem, {}).get(anchor, anchor)})"

    return DOC_NOTEBOOK_LINK.sub(fix, text)


def library_modules() -> list[str]:
    """The public modules of ``posenc_lib`` (dotted names, sorted), each of which gets an API page."""
    import pkgutil

    import posenc_lib

    names = [m.name for m in pkgutil.walk_packages(posenc_lib.__path__, "posenc_lib.")]
    return ["posenc_lib"] + sorted(n for n in names if not any(part.startswith("_") for part in n.split(".")))


def own_members(module: str) -> list[str]:
    """The public functions and classes that ``module`` defines itself (not those it imports), in source order."""
    import importlib
    import inspect

    mod = importlib.import_module(module)
    found = [(name, obj) for name, obj in vars(mod).items()
             if not name.startswith("_") and (inspect.isfunction(obj) or inspect.isclass(obj))
             and obj.__module__ == module]
    data = [name for name in getattr(mod, "__all__", []) if name not in dict(found)
            and not inspect.ismodule(getattr(mod, name, None))
            and not (inspect.isfunction(getattr(mod, name, None)) or inspect.isclass(getattr(mod, name, None)))]
    return [name for name, _ in found] + data


def _summary(module: str) -> str:
    import importlib

    doc = (importlib.import_module(module).__doc__ or "").strip()
    first = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", doc.split("\n\n")[0].replace("\n", " "))  # roles: plain code
    return _cell(first) if doc else ""


def api_pages(src: Path) -> list[str]:
    """Write ``api/index.md`` and one page per library module (Sphinx autodoc, Google-style sections
    through napoleon) into ``src``, each page linking its module's source file as a download (plain
    text, so that the build does not highlight and theme 40 more pages); returns the modules documented."""
    import importlib

    api = src / "api"
    api.mkdir()
    modules = library_modules()
    rows = "\n".join(f"| [`{m}`]({m}.md) | {_summary(m)} |" for m in modules)
    (api / "index.md").write_text(
        "# Library reference: posenc_lib\n\n"
        "Every function and class the notebooks import, from its docstring (formula, tensor shapes, "
        "errors), with a link to its source. The design: encodings grouped by where position enters "
        "(`embeddings`, `rotary`, `score_bias`, `qk_bias`, `conditional`), the tools to measure and to connect "
        "apart (`analysis`, `interop`).\n\n"
        f"| Module | What it holds |\n|---|---|\n{rows}\n", encoding="utf-8")
    for m in modules:
        # eval-rst: autodoc emits reST, and the docstrings are reST (Google sections via napoleon).
        # Each object is documented where it is defined: a package page lists only its own members,
        # not what it re-exports, so that every name has one target.
        own = ", ".join(own_members(m))
        options = f"   :members: {own}\n   :undoc-members:\n   :show-inheritance:\n" if own else ""
        # orphan: reached from the reference's table, not listed in every page's sidebar (which
        # the theme renders anew for each page: 45 more entries cost it seconds per build).
        path = Path(importlib.import_module(m).__file__)
        source = path.relative_to(ROOT).as_posix()
        (api / "_source" / source).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, api / "_source" / source)
        (api / f"{m}.md").write_text(f"---\norphan: true\n---\n\n# `{m}`\n\nSource: [`{source}`](_source/{source}) · "
                                     f"[all modules](index.md)\n\n```{{eval-rst}}\n.. automodule:: {m}\n{options}```\n",
                                     encoding="utf-8")
    return modules


def text_page(target: Path, path: Path, title: str, language: str, intro: str) -> None:
    """A page (MyST, orphan) that shows the text file ``path`` highlighted as ``language``, with a link
    to download it: a browser opening a ``.py`` or ``.md`` file from the site would download it or show
    it unstyled. The file is copied beside the page."""
    copy = target.parent / "_files" / path.name  # _files: not a source folder (conf.py exclude_patterns)
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, copy)
    fence = "`" * max(4, 1 + max((len(m) for m in re.findall(r"`+", path.read_text(encoding="utf-8"))), default=0))
    target.write_text(f"---\norphan: true\n---\n\n# {title}\n\n{intro} "
                      f"{{download}}`Download {path.name} <_files/{path.name}>`\n\n"
                      f"{fence}{{literalinclude}} _files/{path.name}\n:language: {language}\n{fence}\n", encoding="utf-8")


def source_page(src: Path, path: Path, label: str) -> None:
    """``source/NN_name.md``: the notebook's jupytext source ``path`` as a page (see :func:`text_page`)."""
    text_page(src / "source" / f"{path.stem}.md", path, f"{label}: source", "python",
              "The notebook as a Python script in jupytext's percent format (`# %%` starts a cell): what "
              "`make sync` pairs with the `.ipynb`, and what a diff of the course shows.")


ARCHIVE = "posenc-course.zip"
# A file of the repository named in a notebook's prose (`data/README.md`, `tests/lib/test_rope.py`): the
# site publishes a copy under files/, and the mention links to it (tools/site/posenc_site.py).
REPOSITORY_FILE = re.compile(r"`((?:bench|data|docs|notebooks|tests|tools)/[\w./-]+)`")


def repository_url(root: Path = ROOT) -> str | None:
    """The web address of the repository the site is built from (its ``origin`` remote), or None when
    it has none or it is not one a reader can open (a local path)."""
    import subprocess

    result = subprocess.run(["git", "-C", str(root), "config", "--get", "remote.origin.url"],
                            capture_output=True, text=True)
    url = result.stdout.strip()
    if m := re.fullmatch(r"git@([\w.-]+):(.+?)(\.git)?", url):  # git@github.com:owner/name.git
        url = f"https://{m[1]}/{m[2]}"
    return url.removesuffix(".git") if url.startswith("https://") else None


def write_archive(target: Path, root: Path = ROOT) -> bool:
    """The course's sources (every committed file: notebooks, library, data, tests) as one zip, for
    readers of the site who want the code; False when ``root`` is not a git checkout."""
    import subprocess

    result = subprocess.run(["git", "-C", str(root), "archive", "--format=zip", "--prefix=posenc/", "-o",
                             str(target), "HEAD"], capture_output=True, text=True)
    return result.returncode == 0


def mentioned_files(src: Path, root: Path) -> list[str]:
    """The repository files (relative to ``root``) that the staged notebooks' prose names."""
    names = set()
    for path in src.glob("[0-9][0-9]_*.ipynb"):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                names.update(REPOSITORY_FILE.findall(cell.source))
    return sorted(name for name in names if (root / name).is_file())


def stage(src: Path, executed: Path, sources: Path = NOTEBOOKS, catalog: Path = CATALOG,
          docs: Path | None = None, api: bool = True, repository: str | None = None,
          locale: Path | None = None) -> list[Entry]:
    """Write the site's sources into ``src``; ``executed`` holds the notebooks to render, ``sources``
    their ``.py`` files (offered for download when present), ``docs`` the markdown pages of
    ``DOC_PAGES`` (default: the ``docs/`` folder beside ``sources``; pages that are not there are
    left out). ``api``: also the library reference (``api/``, see :func:`api_pages`). ``repository``:
    the repository's web address for the front page (default: ``repository_url()``; ``""``: none).
    ``locale``: the translation catalogs (default: the ``locale/`` folder beside ``sources``), copied
    to ``src/_locale`` for the translated renders (Sphinx compiles its ``.mo`` files there).
    Returns the notebook entries rendered."""
    catalogued = load_catalog(catalog)
    entries = existing(catalogued, executed)
    if not entries:
        raise SystemExit(f"no notebooks matching {executed}/[0-9][0-9]_*.ipynb: nothing to build")
    planned = [e for e in catalogued if e not in entries]
    if src.exists():
        shutil.rmtree(src)
    downloads = src / "_extra" / "downloads"
    downloads.mkdir(parents=True)
    pages = {}
    for entry in entries:
        shutil.copyfile(executed / f"{entry.stem}.ipynb", src / f"{entry.stem}.ipynb")
        # Sphinx publishes each source, byte for byte, under _sources/ (html_copy_source).
        page = {"label": entry.label, "ipynb": f"_sources/{entry.stem}.ipynb"}
        if (sources / f"{entry.stem}.py").exists():
            shutil.copyfile(sources / f"{entry.stem}.py", downloads / f"{entry.stem}.py")
            source_page(src, sources / f"{entry.stem}.py", entry.label)
            page["py"] = f"source/{entry.stem}.html"
        pages[entry.stem] = page
    for entry in planned:
        nbformat.write(placeholder(entry), src / f"{entry.stem}.ipynb")
    for name in mentioned_files(src, sources.parent):
        (src / "_extra" / "files" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(sources.parent / name, src / "_extra" / "files" / name)
    docs = sources.parent / "docs" if docs is None else docs
    staged_docs = tuple(name for name in DOC_PAGES if (docs / f"{name}.md").is_file())
    if staged_docs:
        anchors = {p.stem: anchor_map(nbformat.read(p, as_version=4)) for p in sorted(src.glob("[0-9][0-9]_*.ipynb"))}
        for name in staged_docs:
            text = (docs / f"{name}.md").read_text(encoding="utf-8")
            (src / f"{name}.md").write_text(doc_markdown(text, anchors), encoding="utf-8")
    if api:
        api_pages(src)
    archive = f"downloads/{ARCHIVE}" if write_archive(downloads / ARCHIVE) else None
    readme = sources.parent / "README.md"
    if readme.is_file():
        text_page(src / "readme.md", readme, "README", "markdown",
                  "The repository's README, as in the repository (its links are relative to the repository).")
    study = study_time([executed / f"{e.stem}.ipynb" for e in entries], docs / "instructor-guide.md")
    repository = repository_url() if repository is None else repository or None
    (src / "index.md").write_text(index_markdown(entries, planned, staged_docs, api, archive, repository, study,
                                                 readme.is_file()), encoding="utf-8")
    (src / "glossary.md").write_text(glossary_markdown(load_glossary()), encoding="utf-8")
    (src / "_site.json").write_text(json.dumps({"pages": pages}, indent=1, ensure_ascii=False), encoding="utf-8")
    locale = sources.parent / "locale" if locale is None else locale
    if locale.is_dir():
        stage_catalogs(locale, src / "_locale")
    return entries


# A translation that starts as a Markdown list item ("1. 注意力知道……", the heading "## 1. Does attention ..."
# of 00 translated) is read by MyST as a list, not as the text of the heading or paragraph it translates,
# and Sphinx then leaves the English in place. The staged copy escapes the marker (1\. , \- ), which MyST
# shows as written.
LIST_MARKER = re.compile(r"\A(\s*)(\d{1,9})([.)])(?=\s)|\A(\s*)([-+*])(?=\s)")


def stage_catalogs(locale: Path, target: Path) -> int:
    """Copy the translation catalogs ``locale`` to ``target`` for the translated renders (Sphinx compiles
    its ``.mo`` files there, not in the repository), with each translation that starts with a list marker
    escaped (``LIST_MARKER``). Returns how many translations were escaped."""
    from babel.messages.pofile import read_po, write_po

    shutil.copytree(locale, target, ignore=shutil.ignore_patterns("*.mo"))
    escaped = 0
    for path in sorted(target.rglob("*.po")):
        if not re.search(r'^msgstr ""\n"\s*(\d{1,9}[.)]|[-+*])\s|^msgstr "\s*(\d{1,9}[.)]|[-+*])\s',
                         path.read_text(encoding="utf-8"), re.M):
            continue
        with open(path, "rb") as f:
            catalog = read_po(f)
        for message in catalog:
            if message.id and isinstance(message.string, str) and LIST_MARKER.match(message.string):
                message.string = LIST_MARKER.sub(lambda m: (f"{m[1]}{m[2]}\\{m[3]}" if m[2] else f"{m[4]}\\{m[5]}"),
                                                 message.string, count=1)
                escaped += 1
        with open(path, "wb") as f:
            write_po(f, catalog, width=0)
    return escaped


def render(src: Path, out: Path, doctrees: Path | None = None, language: str = "en", other: str = "") -> float:
    """Render the staged ``src`` into ``out`` with Sphinx in ``language`` (``en``, or ``zh_CN``: the pages
    translated from the catalogs staged in ``src/_locale``); warnings are errors. ``other``: the root of
    the other language's site relative to ``out`` (``zh_CN/``, ``../``), where each page's language switch
    points; empty, no switch. Returns seconds taken.

    Raises RuntimeError with Sphinx's warnings when the build fails (a broken link, a missing anchor).
    """
    from sphinx.cmd.build import build_main

    src, out = src.resolve(), out.resolve()  # Sphinx reads a relative -D path from the configuration's folder
    doctrees = (doctrees or out.parent / (out.name + "-doctrees")).resolve()
    for folder in (out, doctrees):
        if folder.exists():
            shutil.rmtree(folder)
    # the catalogs staged beside the sources (stage_catalogs), never the repository's locale/ (Sphinx writes
    # its compiled .mo files beside the .po files it reads); none staged, every page renders in English
    args = ["-b", "html", "-c", str(CONF), "-d", str(doctrees), "-E", "-W", "--keep-going", "-n", "-q",
            "-D", f"html_extra_path={src / '_extra'}", "-D", f"language={language}",
            "-D", f"posenc_other_language={other}", "-D", f"locale_dirs={src / '_locale'}", str(src), str(out)]
    forget_translations()
    start = time.perf_counter()
    errors = io.StringIO()
    with contextlib.redirect_stderr(errors):
        status = build_main(args)
    elapsed = time.perf_counter() - start
    if status != 0:
        raise RuntimeError(f"the site build failed (Sphinx exit status {status}):\n{errors.getvalue()}")
    for source_map in out.glob("_static/**/*.map"):
        source_map.unlink()
    trim_icons(out)
    return elapsed


def forget_translations() -> None:
    """Forget the translations loaded by an earlier build in this process. Sphinx keeps each message
    catalog it loads (its own, the themes', each page's) in ``sphinx.locale.translators``, keyed by the
    catalog's name and not by the language, and Python's gettext keeps every ``.mo`` file it read: a
    Chinese build followed by an English one in the same process (the tests) would show the Chinese."""
    import gettext

    from sphinx.locale import translators

    translators.clear()
    getattr(gettext, "_translations", {}).clear()


def render_languages(src: Path, out: Path, languages: tuple[str, ...] = tuple(LANGUAGES),
                     doctrees: Path | None = None) -> dict[str, float]:
    """Render the staged ``src`` once per language of ``languages``: English into ``out``, Chinese into
    ``out/zh_CN`` (``LANGUAGES``), each page with a switch to the other language when both are rendered.
    English goes first (its render empties ``out``). ``doctrees``: the folder of Sphinx's doctrees (one
    subfolder per language; default: ``out``'s name with ``-doctrees``, beside it). Returns each
    language's render time in seconds."""
    unknown = [lang for lang in languages if lang not in LANGUAGES]
    if unknown or not languages:
        raise ValueError(f"languages must be among {list(LANGUAGES)}; got {list(languages)}")
    doctrees = doctrees or out.parent / (out.name + "-doctrees")
    both = set(LANGUAGES) <= set(languages)
    seconds = {}
    for language in sorted(languages, key=list(LANGUAGES).index):
        folder = LANGUAGES[language]
        other = ("../" if folder else f"{LANGUAGES['zh_CN']}/") if both else ""  # the other site's root
        if not folder:
            seconds[language] = render(src, out, doctrees / language, language, other)
            continue
        # rendered beside its doctrees, then moved into place: MyST-NB writes its output files into the
        # folder above the output folder (jupyter_execute/), which would be the English site's
        work = doctrees / language
        seconds[language] = render(src, work / "html", work / "doctrees", language, other)
        if (out / folder).exists():
            shutil.rmtree(out / folder)
        out.mkdir(parents=True, exist_ok=True)
        shutil.move(work / "html", out / folder)
    return seconds


# The theme draws its icons with Font Awesome's script (``_static/scripts/fontawesome.js``, 1.56 MB, every
# icon of every style), loaded by every page. The pages use a dozen solid icons: the script is replaced
# by one that draws those, as inline SVG with the classes Font Awesome's own would give them.
ICON_CLASS = re.compile(r'<i\b[^>]*\bclass="([^"]*\bfa-(?:solid|regular|brands)\b[^"]*|[^"]*\bfa[srb]\b[^"]*)"')
ICON_MODIFIERS = {"fa-solid", "fas", "fa-regular", "far", "fa-brands", "fab", "fa-lg", "fa-fw", "fa-xl", "fa-sm",
                  "fa-xs", "fa-2x", "fa-spin"}
ICON_SCRIPT = r"""// Font Awesome's solid icons that these pages use, drawn as inline SVG (tools/build_site.py trim_icons
// writes this file in place of the theme's 1.56 MB fontawesome.js, taking the icons' outlines from it).
"use strict";
(() => {
  const ICONS = __ICONS__;
  const draw = () => {
    for (const i of document.querySelectorAll("i.fa-solid, i.fas")) {
      const name = [...i.classList].find((c) => c.startsWith("fa-") && ICONS[c.slice(3)]);
      if (!name) continue;
      const [width, height, path] = ICONS[name.slice(3)];
      const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
      for (const attr of i.attributes) if (attr.name !== "class") svg.setAttribute(attr.name, attr.value);
      svg.setAttribute("class", `svg-inline--fa ${[...i.classList].filter((c) => c !== "fa-solid" && c !== "fas").join(" ")}`);
      svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
      svg.setAttribute("aria-hidden", "true");
      svg.setAttribute("focusable", "false");
      svg.setAttribute("role", "img");
      const shape = document.createElementNS("http://www.w3.org/2000/svg", "path");
      shape.setAttribute("fill", "currentColor");
      shape.setAttribute("d", path);
      svg.appendChild(shape);
      i.replaceWith(svg);
    }
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", draw);
  else draw();
})();
"""


def trim_icons(out: Path) -> None:
    """Replace the theme's Font Awesome script in ``out`` by one that draws only the solid icons the
    pages use (see ICON_SCRIPT). Raises RuntimeError when an icon a page uses is not found in the
    theme's script (a theme upgrade that changed its format)."""
    script = out / "_static" / "scripts" / "fontawesome.js"
    if not script.is_file():
        return
    names = set()
    for page in out.rglob("*.html"):
        for classes in ICON_CLASS.findall(page.read_text(encoding="utf-8")):
            names.update(c[3:] for c in classes.split() if c.startswith("fa-") and c not in ICON_MODIFIERS)
    text = script.read_text(encoding="utf-8")
    # the solid pack: the icon table registered last, as "fas" (after the regular and brands packs)
    end = text.find('p("fas",b)')
    start = text.rfind('p("far",b)', 0, end)
    if end < 0 or start < 0:
        raise RuntimeError(f"{script}: the solid icon pack was not found; the theme's Font Awesome changed")
    pack = text[start:end]
    icons = {}
    for name in sorted(names):
        m = re.search(r'(?:"' + re.escape(name) + r'"|[{,]' + re.escape(name) + r')\s*:\s*\[(\d+),(\d+),\[[^\]]*\],"[0-9a-f]*","([^"]+)"\]', pack)
        if m is None:
            raise RuntimeError(f"{script}: no solid icon {name!r}; the theme's Font Awesome changed")
        icons[name] = [int(m[1]), int(m[2]), m[3]]
    script.write_text(ICON_SCRIPT.replace("__ICONS__", json.dumps(icons, separators=(",", ":"))), encoding="utf-8")
    for extra in script.parent.glob("fontawesome.js.LICENSE.txt"):
        extra.write_text(extra.read_text(encoding="utf-8") + "\n(Subset: the solid icons these pages use.)\n",
                         encoding="utf-8")


def size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def markdown_table(entries: list[Entry]) -> str:
    """The notebook table in markdown, linking the notebooks themselves (for README.md)."""
    lines = ["| # | Notebook | You will be able to | Run time |", "|---|---|---|---:|"]
    for e in entries:
        lines.append(f"| {e.number} | [{e.title}](notebooks/{e.stem}.ipynb): {e.topic[0].lower() + e.topic[1:]} | "
                     f"{e.outcome} | {format_seconds(e.run_time_s)} |")
    return "\n".join(lines)


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def build(execute: bool = True, out: Path = BUILD / "html", repository: str | None = None,
          languages: tuple[str, ...] = tuple(LANGUAGES)) -> list[Entry]:
    paths = [NOTEBOOKS / f"{e.stem}.ipynb" for e in existing(load_catalog())]
    if execute:
        executed = BUILD / "notebooks"
        execute_all(paths, executed)
    else:
        executed = NOTEBOOKS
    entries = stage(BUILD / "site-src", executed, repository=repository)
    seconds = render_languages(BUILD / "site-src", out, languages)
    for language, took in seconds.items():
        site = out / LANGUAGES[language]
        size = size_mb(site) - sum(size_mb(out / f) for f in LANGUAGES.values() if f and site == out)
        print(f"rendered {len(entries)} notebook page(s) in {language} into {_shown(site)} in {took:.1f} s "
              f"({size:.1f} MB); open {_shown(site / 'index.html')}")
    return entries


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-execute", action="store_true",
                        help="render notebooks/*.ipynb as committed instead of executing them into build/notebooks/")
    parser.add_argument("--out", type=Path, default=BUILD / "html", help="output folder (default build/html)")
    parser.add_argument("--repository", default=os.environ.get("POSENC_REPOSITORY"),
                        help="the repository's web address for the front page's link and clone command "
                             "(default: $POSENC_REPOSITORY, else the checkout's origin remote when it is a web address)")
    parser.add_argument("--language", choices=["all", *LANGUAGES], default="all",
                        help="the site(s) to render: all (default: English in OUT, Chinese in OUT/zh_CN, each page "
                             "linking to the other language), or one language alone, with no language switch")
    parser.add_argument("--readme-table", action="store_true", help="print the notebook table for README.md")
    args = parser.parse_args(argv)
    languages = tuple(LANGUAGES) if args.language == "all" else (args.language,)
    try:
        entries = build(execute=not args.no_execute, out=args.out.resolve(), repository=args.repository,
                        languages=languages)
    except RuntimeError as err:
        print(err, file=sys.stderr)
        return 1
    if args.readme_table:
        print("\nNotebook table (markdown, for README.md):\n")
        print(markdown_table(entries))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The course site's project-specific glue, as a Sphinx extension (loaded by ``tools/site/conf.py``).

Everything else (sidebar, in-page contents, previous/next, search, phone layout, download
button) is sphinx-book-theme's. What this module adds, at build time, without changing a
notebook:

- ``read_notebook``: myst-nb's notebook reader (``nb_custom_formats``). It folds the cells
  tagged ``solution`` (myst-nb's ``hide-cell`` tag, with "Show the solution to exercise N" as the prompt), gives
  every figure an alt text taken from the cell that drew it (see ``figure_alt``), and rewrites
  links written with JupyterLab's heading anchors (``01_sinusoidal.ipynb#1-·-The-table``) to
  the anchors the site uses, so both spellings work and Sphinx can check them. A deep-dive
  block (consecutive cells tagged ``deep-dive``, headed ``### Deep dive (optional) · title``) is
  folded into one ``<details class="deep-dive">`` whose summary is that heading (see ``fold_deep_dives``).
- A line under each notebook's title: links to download the ``.ipynb`` and the ``.py`` source.
- In a translated build, each paragraph, heading, list item or table cell whose translation is missing
  or out of date (its entry empty, fuzzy, or not in the page's catalog yet), which Sphinx shows in
  English, gets the class ``posenc-english``: the stylesheet puts a small label before it,
  "英文原文，翻译待更新" (see ``mark_english``).
- Tables as a reader expects them (see ``tidy_table``): pandas' separate row of index names is
  folded into the column header, and a default 0, 1, 2, ... row index is left out.
- Glossary links: the first occurrence of each glossary term (``glossary.toml``) in a page's
  prose links to its entry on the glossary page, with its definition as the tooltip; the glossary
  page lists its terms at the top and, under each, the notebook sections that use it.
- Library links: inline code in a notebook's prose that names a documented module or object of
  ``posenc_lib`` (``apply_rope``, ``posenc_lib/rotary/rope.py``) links to the library
  reference, and each reference page ends with the notebook sections that mention its objects;
  a mention of a page of ``docs/`` that the site renders (``docs/replication.md``) links to that page,
  and a mention of another file of the repository (``data/README.md``) to the copy the build
  publishes under ``files/``.
- Search: every page's prose, by section, in one script the search page loads, so that results
  show the text around the word and a glossary or section hit is labelled with its term or title.
- Explorers (``posenc_course.explorers``): after the static figure of a cell that calls one
  (``sinusoidal_explorer()``), an empty ``<div class="posenc-explorer">`` that ``posenc_explorer.js``
  fills with controls and an SVG drawing; the page loads that script and
  ``_static/posenc_explorer_NAME.js``, the library's values on the explorer's whole control grid,
  written by this extension when the build ends (see ``explorer_calls``, ``write_explorer_data``).

The build stages its sources with ``_site.json`` beside them (written by ``tools/build_site.py``):
for every notebook page, its label and download paths.
"""

from __future__ import annotations

import ast
import html
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import nbformat
from docutils import nodes
from myst_parser.mdit_to_docutils.base import default_slugify
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.nodes import extract_messages

from tools.i18n_common import nothing_to_translate

HERE = Path(__file__).resolve().parent
GLOSSARY = HERE / "glossary.toml"
SOLUTION_TAG = "solution"
DEEP_DIVE_TAG = "deep-dive"
# The site folds each deep dive under its heading (fold_deep_dives); the translation catalogs' extraction
# (tools/i18n.py) turns this off, so that a deep dive's heading is extracted as a heading to translate.
FOLD_DEEP_DIVES = True
DEEP_DIVE_HEADING = re.compile(r"\A\s*#{1,6}\s+(Deep dive \(optional\).*?)\s*$", re.MULTILINE)
NOTEBOOK_LINK = re.compile(r"\]\((?P<stem>\d\d_[A-Za-z0-9_]+\.ipynb)?#(?P<anchor>[^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)

logger = logging.getLogger(__name__)

# Filled when the build starts: for each staged notebook, its headings' anchors (see jupyter_anchor).
_HEADINGS: dict[str, dict[str, str]] = {}


# --- the site's language ---------------------------------------------------------------------------
#
# The same staged sources render in English and in Chinese (tools/build_site.py: ``-D language=zh_CN``);
# Sphinx translates the pages' own text from the catalogs (locale/zh_CN/LC_MESSAGES/PAGE.po). What this
# extension writes itself (page facts, solution folds and links, the glossary's back-links, tooltips) is
# not in the catalogs: it comes from UI, by the build's language. A deep dive's heading becomes raw HTML
# (a fold's summary) before Sphinx translates, so it is looked up in the catalogs here (translate).

UI: dict[str, dict[str, str]] = {
    "en": {
        "download": "Download: ",
        "notebook": "notebook (.ipynb)",
        "source": "source (.py, jupytext)",
        "show_solution": "Show the solution to exercise {n}",
        "hide_solution": "Hide the solution to exercise {n}",
        "solution_link": "Solution to exercise {n}",
        "solution_note": " (folded, with the others at the end of the notebook: try the exercise first)",
        "term_uses": "Where the course uses it: ",
        "term_place": "{number} ({title})",
        "api_uses": "Where the notebooks use it",
        "introduction": "introduction",
        "in_reference": "{name} in the library reference",
        "in_repository": "{name}, as in the repository",
        "on_site": "{name}: a page of this site",
        "term_tooltip": "{en} ({zh}): {definition}",
        # the language switch: on this language's pages, the link to the other language
        "switch": "中文",
        "switch_title": "本页的中文版",
        "switch_lang": "zh-CN",
    },
    "zh_CN": {
        "download": "下载：",
        "notebook": "笔记本（.ipynb）",
        "source": "源代码（.py，jupytext 格式）",
        "show_solution": "显示练习 {n} 的答案",
        "hide_solution": "隐藏练习 {n} 的答案",
        "solution_link": "练习 {n} 的答案",
        "solution_note": "（折叠在笔记本末尾，与其他答案放在一起：请先自己做练习）",
        "term_uses": "课程中用到它的地方：",
        "term_place": "{number}（{title}）",
        "api_uses": "笔记本中用到它的地方",
        "introduction": "引言",
        "in_reference": "库参考中的 {name}",
        "in_repository": "{name}（仓库中的文件）",
        "on_site": "{name}：本站的一页",
        "term_tooltip": "{zh} / {en}：{definition}",
        "switch": "English",
        "switch_title": "This page in English",
        "switch_lang": "en",
    },
}
LANGUAGE = "en"  # the language of the build in progress (set when the builder starts; prepare() reads it)
# The translations of the build's language: page (docname) -> English message -> translation, from the
# catalogs (translated entries only: fuzzy and empty ones are left out, as Sphinx leaves them out).
_CATALOGS: dict[str, dict[str, str]] = {}
_ENV: Any = None  # the build's environment, for the page being read (prepare is called without the app)


def ui(key: str, language: str | None = None, **values: Any) -> str:
    """The site's own text ``key`` in ``language`` (default: the build's), English where it has none."""
    table = UI.get(language or LANGUAGE, UI["en"])
    return table.get(key, UI["en"][key]).format(**values)


def _normal(text: str) -> str:
    return " ".join(text.split())


def load_catalogs(folder: Path) -> dict[str, dict[str, str]]:
    """The translated entries of the catalogs under ``folder`` (``.../LC_MESSAGES``): for each page (the
    catalog's path without ``.po``: ``03_rope``, ``source/03_rope``), English message -> translation, both
    with their whitespace collapsed. Fuzzy and untranslated entries are left out."""
    from babel.messages.pofile import read_po

    found: dict[str, dict[str, str]] = {}
    for path in sorted(folder.rglob("*.po")):
        with open(path, "rb") as f:
            catalog = read_po(f)
        found[path.relative_to(folder).with_suffix("").as_posix()] = {
            _normal(m.id): m.string for m in catalog
            if m.id and isinstance(m.id, str) and isinstance(m.string, str) and m.string.strip() and not m.fuzzy}
    return found


def translate(text: str, page: str | None = None) -> str:
    """``text`` in the build's language: its translation in the catalog of ``page`` (default: the page
    being read), else in any catalog; ``text`` itself when no catalog translates it (or in English)."""
    if not _CATALOGS:
        return text
    key = _normal(text)
    if page is None and _ENV is not None:
        page = getattr(getattr(_ENV, "current_document", None), "docname", None)
    if page and key in _CATALOGS.get(page, {}):
        return _CATALOGS[page][key]
    return next((table[key] for table in _CATALOGS.values() if key in table), text)


def _locale_folder(app: Sphinx) -> Path | None:
    """The folder of the build language's catalogs (``locale_dirs``/LANGUAGE), or None."""
    for folder in app.config.locale_dirs:
        path = Path(app.confdir, folder) / app.config.language
        if path.is_dir():
            return path
    return None


def set_language(app: Sphinx) -> None:
    """builder-inited: the build's language and, for a translated build, its catalogs."""
    global LANGUAGE, _ENV
    LANGUAGE = app.config.language if app.config.language in UI else "en"
    _ENV = app.env
    _CATALOGS.clear()
    _TERM_FORMS.clear()
    _SEARCH_WORDS.clear()
    folder = _locale_folder(app) if LANGUAGE != "en" else None
    if folder is not None:
        _CATALOGS.update(load_catalogs(folder / "LC_MESSAGES"))
        terminology = folder / "terminology.toml"
        if terminology.is_file():
            _TERM_FORMS.update(terminology_forms(terminology))
            _SEARCH_WORDS[:] = search_words(terminology)


def reset_language(app: Sphinx, exception: Exception | None) -> None:
    """build-finished: back to English, for whatever runs next in this process (tests, a second build)."""
    global LANGUAGE, _ENV
    LANGUAGE, _ENV = "en", None
    _CATALOGS.clear()
    _TERM_FORMS.clear()
    _SEARCH_WORDS.clear()


# A text element whose translation is missing or out of date, shown in English: the class the stylesheet
# (_static/posenc.css) labels "英文原文，翻译待更新" (tools/i18n_common.ENGLISH_LABEL).
ENGLISH_CLASS = "posenc-english"
_NOT_PROSE = (nodes.literal_block, nodes.math_block, nodes.raw, nodes.comment, nodes.FixedTextElement)


def mark_english(app: Sphinx, doctree: nodes.document) -> None:
    """doctree-read, in a translated build (after Sphinx has translated the page): every text element
    Sphinx extracts for translation (paragraph, heading, a list item's or table cell's paragraph) whose
    message has no current translation in the page's catalog, and so is shown in English, gets
    ``ENGLISH_CLASS``. A message with no words to translate (a number, a formula, a code name) is not
    marked, nor is one whose translation is the English itself on purpose (a display formula), nor a
    page with no catalog (the library reference, English by design)."""
    docname = app.env.current_document.docname
    if LANGUAGE == "en" or docname not in _CATALOGS:
        return
    table = _CATALOGS[docname]
    for node, message in extract_messages(doctree):
        if (isinstance(node, nodes.TextElement) and not isinstance(node, _NOT_PROSE)
                and _normal(message) not in table and not nothing_to_translate(message)):
            node["classes"].append(ENGLISH_CLASS)


def switch_href(pagename: str, other_root: str) -> str:
    """The relative link from page ``pagename`` of one language's site to the same page of the other
    language's site, whose root is ``other_root`` relative to this site's root (``zh_CN/`` from the
    English site, ``../`` from the Chinese one)."""
    return "../" * pagename.count("/") + other_root + pagename + ".html"


def language_switch(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    """html-page-context: the link to this page in the other language (``posenc-language.html`` in the
    article's header), when the build has one (``posenc_other_language``, set by tools/build_site.py);
    and the page's alternate in the head."""
    other = app.config.posenc_other_language
    if not other:
        return
    href = switch_href(pagename, other)
    lang = ui("switch_lang")
    context["posenc_switch"] = {"href": href, "label": ui("switch"), "title": ui("switch_title"), "lang": lang}
    context["metatags"] = context.get("metatags", "") + f'\n<link rel="alternate" hreflang="{lang}" href="{html.escape(href)}" />'


# --- reading a notebook ----------------------------------------------------------------------------


def jupyter_anchor(heading: str) -> str:
    """The anchor JupyterLab gives a heading: its text with spaces replaced by '-' ("1-·-The-table")."""
    return heading.strip().replace(" ", "-")


def headings(nb: nbformat.NotebookNode) -> list[str]:
    return [m[1] for c in nb.cells if c.cell_type == "markdown" for m in HEADING.finditer(c.source)]


def anchor_map(nb: nbformat.NotebookNode) -> dict[str, str]:
    """JupyterLab anchor -> the MyST slug that Sphinx resolves (``myst_heading_anchors``)."""
    return {jupyter_anchor(h): default_slugify(h) for h in headings(nb)}


def _plain(text: str) -> str:
    """Alt text without TeX markup: "$\\theta$ = 0.4" -> "theta = 0.4"."""
    return re.sub(r"\s+", " ", re.sub(r"\\([A-Za-z]+)", r"\1", text.replace("$", ""))).strip()


def _title_text(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):  # f-string: keep the literal parts, an ellipsis for each value
        return "".join(v.value if isinstance(v, ast.Constant) else "…" for v in node.values)
    return None


def figure_titles(source: str) -> list[str]:
    """The titles a cell gives its figures, as written in its code.

    Looks at ``title=...`` keywords and at the first argument of ``set_title``, ``suptitle`` and
    ``title`` calls; titles computed at run time (a variable) are not found.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for kw in node.keywords:
            if kw.arg == "title" and (text := _title_text(kw.value)):
                found.append(text)
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name in {"set_title", "suptitle", "title"} and node.args and (text := _title_text(node.args[0])):
            found.append(text)
    # ast.walk is breadth-first; order the titles as they appear in the source.
    return sorted(dict.fromkeys(found), key=lambda t: source.find(t.split("…")[0]))


def figure_alt(source: str, heading: str | None) -> str:
    """Alt text for the figures of a code cell: the figure titles written in the cell, else the
    cell's first comment line and the section it sits in. (A figure's text/plain output is only
    "<Figure size 600x400 with 1 Axes>", so the title cannot come from the output.)"""
    titles = [_plain(t) for t in figure_titles(source)]
    if titles:
        return "Figure: " + "; ".join(titles)
    comment = next((line.lstrip("# ").strip() for line in source.splitlines() if line.startswith("#")
                    and not line.startswith("# NBVAL")), "")
    where = f"in section “{_plain(heading)}”" if heading else "in this notebook"
    return f"Figure {where}" + (f": {_plain(comment)}" if comment else "")


def _rewrite_anchors(markdown: str, own: dict[str, str]) -> str:
    def fix(m: re.Match) -> str:
        stem = m["stem"]
        table = _HEADINGS.get(stem.removesuffix(".ipynb"), {}) if stem else own
        anchor = table.get(m["anchor"], m["anchor"])
        return f"]({stem or ''}#{anchor})"

    return NOTEBOOK_LINK.sub(fix, markdown)


EXERCISE_NUMBER = re.compile(r"\A\s*#\s*Exercise\s+(\d+)\b|\bcheck_exercise_(\d+)\(")


def solution_label(source: str) -> str:
    """"solution to exercise N" for a solution cell: N from its first line ``# Exercise N`` or
    else from the checker it calls (``check_exercise_N(...)``).

    Raises ValueError for a solution cell that says neither (its fold would be an unlabelled
    "Show solution").
    """
    m = EXERCISE_NUMBER.search(source)
    if m is None:
        raise ValueError("a solution cell must start with the comment '# Exercise N' or call check_exercise_N(...); "
                         f"it starts with: {source[:60]!r}")
    return f"solution to exercise {m[1] or m[2]}"


def summary_html(title: str) -> str:
    """A heading's text as the HTML of a fold's summary: escaped, with ``$...$`` as inline math that
    MathJax typesets (the summary is raw HTML, which MyST does not parse)."""
    parts = re.split(r"\$([^$]+)\$", title)
    return "".join(html.escape(p) if i % 2 == 0 else
                   f'<span class="math notranslate nohighlight">\\({html.escape(p)}\\)</span>'
                   for i, p in enumerate(parts))


def fold_deep_dives(cells: list[nbformat.NotebookNode]) -> list[nbformat.NotebookNode]:
    """Each run of consecutive ``deep-dive`` cells, folded into one ``<details class="deep-dive">``.

    The run's first cell must be a markdown cell starting with a "Deep dive (optional) · ..." heading
    (JupyterLab collapses the block under that heading); on the site the heading becomes the fold's
    summary, so the block adds no section to the page's contents. Raises ValueError for a run that
    does not start with such a heading.
    """
    out: list[nbformat.NotebookNode] = []
    i = 0
    while i < len(cells):
        if DEEP_DIVE_TAG not in cells[i].metadata.get("tags", []):
            out.append(cells[i])
            i += 1
            continue
        j = i
        while j < len(cells) and DEEP_DIVE_TAG in cells[j].metadata.get("tags", []):
            j += 1
        first = cells[i]
        m = DEEP_DIVE_HEADING.match(first.source) if first.cell_type == "markdown" else None
        if m is None:
            raise ValueError(f"a deep-dive block must start with a markdown cell headed 'Deep dive (optional) · ...'; "
                             f"it starts with: {first.source[:80]!r}")
        # the summary is raw HTML, which Sphinx does not translate: in a translated build, the heading's
        # translation is looked up in the catalogs (where the extraction keeps it as a heading)
        title = translate(m[1])
        summary = summary_html(title)
        if LANGUAGE != "en" and title == m[1]:  # no translation yet: shown in English, marked (mark_english)
            summary = f'<span class="{ENGLISH_CLASS}">{summary}</span>'
        first.source = (f'<details class="deep-dive">\n<summary>{summary}</summary>\n\n'
                        + first.source[m.end():].lstrip("\n"))
        out += cells[i:j] + [nbformat.v4.new_markdown_cell("</details>")]
        i = j
    return out


# A table cell that holds a number, or a mean ± std, a ratio, a percentage, a bound ("< 1e-12"):
# kept on one line and right-aligned on the site; any other cell is text, which may wrap.
NUMBER_CELL = re.compile(r"[<>≈~]?\s*[-+−]?[\d.,]+(e[-+]?\d+)?\s*(±\s*[\d.,]+(e[-+]?\d+)?)?\s*(%|x|×)?")


def _texts(row: Any) -> list[str]:
    return [th.get_text(strip=True) for th in row.find_all(["th", "td"], recursive=False)]


def tidy_table(html_text: str) -> str:
    """A pandas table (``text/html`` of a DataFrame) as the site shows it.

    - pandas writes the index names on a header row of their own, empty everywhere else; they
      move into the empty corner cells of the column header above, and that row goes.
    - A default row index (0, 1, 2, ... with no name) carries nothing: its column goes.
    - A cell that holds a number (``NUMBER_CELL``) gets the class ``posenc-number``: the stylesheet
      keeps it on one line; text cells may wrap, so a table of words fits the column.

    Anything else (an HTML output that is not a DataFrame, a header with a named column level in
    the corner) is returned unchanged.
    """
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html_text, "html.parser")
    changed = False
    for table in soup.select("table.dataframe"):
        thead, tbody = table.find("thead"), table.find("tbody")
        if thead is None or tbody is None:
            continue
        rows = thead.find_all("tr", recursive=False)
        if len(rows) >= 2:
            names, above = _texts(rows[-1]), _texts(rows[-2])
            k = next((i for i, t in enumerate(names) if not t), len(names))
            if 0 < k < len(names) and not any(names[k:]) and not any(above[:k]):
                for cell, name in zip(rows[-2].find_all("th", recursive=False)[:k], names[:k]):
                    cell.string = name
                rows[-1].decompose()
                changed = True
        body = tbody.find_all("tr", recursive=False)
        heads = [row.find_all("th", recursive=False) for row in body]
        corner = [next(iter(_texts(row)), "") for row in thead.find_all("tr", recursive=False)]
        if body and all(len(h) == 1 for h in heads) and [h[0].get_text(strip=True) for h in heads] == [
                str(i) for i in range(len(body))] and not any(corner):
            for row in [*thead.find_all("tr", recursive=False), *body]:
                row.find(["th", "td"], recursive=False).decompose()
            changed = True
        for cell in tbody.find_all("td"):
            if NUMBER_CELL.fullmatch(cell.get_text(strip=True)):
                cell["class"] = [*cell.get("class", []), "posenc-number"]
                changed = True
    return str(soup) if changed else html_text


# A progress bar's final state, as tools/execute.py records it (POSENC_DETERMINISTIC: no rate, no time):
# "scheme x seed: 100%|####################| 21/21" (tqdm's ascii bar, or its unicode blocks), with an
# optional postfix (", loss=0.0144"). A bar that stopped early (12/21) is not matched: it says something.
FINISHED_BAR = re.compile(r"^[^\n]*\b100%\|[#█▉▊▋▌▍▎▏ ]*\|\s*(\d+)/\1\b(?:,[^\n|]*)?$")


def _numerics_lines() -> tuple[re.Pattern, str]:
    """What ``setup_notebook`` prints about the numerics of the machine that executed the notebook
    (``posenc_course.numerics.describe`` and ``notice``): a fact of the build machine, not of the
    reader's, so the site leaves it out."""
    from posenc_course import numerics

    return re.compile(r"^Numerics: .*$"), numerics.DIFFERS


def is_noise(line: str) -> bool:
    """A line of a text output the site does not show: a finished progress bar's final state, or the
    numerics line of ``setup_notebook`` (see ``_numerics_lines``). Decided by what the line says, not
    by where the cell is."""
    pattern, sentence = _numerics_lines()
    return bool(FINISHED_BAR.match(line) or pattern.match(line) or line.strip() == sentence)


def drop_noise(outputs: list[nbformat.NotebookNode]) -> list[nbformat.NotebookNode]:
    """``outputs`` without the lines of ``is_noise``: a stream (or a plain-text result) loses those lines,
    and an output left empty goes. Other outputs are kept as they are."""
    kept = []
    for output in outputs:
        if output.get("output_type") == "stream":
            lines = output.text.splitlines(keepends=True)
            rest = [line for line in lines if not is_noise(line.rstrip("\r\n"))]
            if len(rest) != len(lines):
                if not "".join(rest).strip():
                    continue
                output.text = "".join(rest)
        elif output.get("output_type") == "display_data" and set(output.get("data", {})) <= {
                "text/plain", "application/vnd.jupyter.widget-view+json"}:
            # a progress widget saved with its text form ("scheme x seed: 100%|...| 21/21")
            text = output.data.get("text/plain", "")
            if text.strip() and all(is_noise(line) for line in text.strip().splitlines()):
                continue
        kept.append(output)
    return kept


EXERCISE_HEADING = re.compile(r"^#{2,6}\s+Exercise\s+(\d+)\b", re.MULTILINE)


def link_solutions(cells: list[nbformat.NotebookNode]) -> list[nbformat.NotebookNode]:
    """Each exercise (a markdown cell headed ``### Exercise N ...``) links to its solution, which the
    notebook gathers, folded, at its end: an anchor ``#solution-N`` goes before the solution cell
    (posenc.js opens the fold when the link is followed), and a link under the exercise's text.
    An exercise without a solution cell gets no link."""
    solved = {}
    for cell in cells:
        if cell.cell_type == "code" and SOLUTION_TAG in cell.metadata.get("tags", []):
            solved.setdefault(solution_label(cell.source).rsplit(" ", 1)[1], cell)
    out = []
    for cell in cells:
        if cell.cell_type == "code" and any(solved.get(n) is cell for n in solved):
            n = next(n for n in solved if solved[n] is cell)
            out.append(nbformat.v4.new_markdown_cell(
                f'<div class="posenc-solution-anchor" id="solution-{n}"></div>'))
        out.append(cell)
        if cell.cell_type == "markdown" and (m := EXERCISE_HEADING.search(cell.source)) and m[1] in solved:
            cell.source = (cell.source.rstrip() + f'\n\n<p class="posenc-solution-link"><a href="#solution-{m[1]}">'
                           f"{html.escape(ui('solution_link', n=m[1]))}</a>{html.escape(ui('solution_note'))}</p>\n")
    return out


def prepare(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The changes the site makes to a notebook as it reads it (the file itself is not changed)."""
    own = anchor_map(nb)
    nb.cells = link_solutions(fold_deep_dives(nb.cells) if FOLD_DEEP_DIVES else nb.cells)
    heading = None
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = _rewrite_anchors(cell.source, own)
            found = [m[1] for m in HEADING.finditer(cell.source)]
            heading = found[-1] if found else heading
            continue
        if cell.cell_type != "code":
            continue
        tags = cell.metadata.setdefault("tags", [])
        mystnb = cell.metadata.setdefault("mystnb", {})
        if SOLUTION_TAG in tags and "hide-cell" not in tags:
            tags.append("hide-cell")
            n = solution_label(cell.source).rsplit(" ", 1)[1]
            mystnb.setdefault("code_prompt_show", ui("show_solution", n=n))
            mystnb.setdefault("code_prompt_hide", ui("hide_solution", n=n))
        cell.outputs = drop_noise(cell.get("outputs", []))
        for output in cell.outputs:
            if "text/html" in output.get("data", {}):
                output.data["text/html"] = tidy_table(output.data["text/html"])
        figures = any(o.get("data", {}).keys() & {"image/png", "image/jpeg", "image/svg+xml"} for o in cell.get("outputs", []))
        for name in explorer_calls(cell.source) if figures else []:
            cell.outputs.append(nbformat.v4.new_output("display_data", data={"text/html": explorer_container(name)}))
            mystnb.setdefault("image", {}).setdefault("alt", explorer_alt(name))
        if figures:
            mystnb.setdefault("image", {}).setdefault("alt", figure_alt(cell.source, heading))
    return nb


# --- explorers -------------------------------------------------------------------------------------

EXPLORER_CONTAINER = re.compile(r'<div class="posenc-explorer" data-explorer="(\w+)"')
EXPLORER_SCRIPT = "posenc_explorer.js"


def explorer_calls(source: str) -> list[str]:
    """The explorers a code cell shows: the names (``"rope"``) of the ``posenc_course.explorers``
    functions it calls (``rope_explorer()``), in source order."""
    if "_explorer(" not in source:  # most cells: no need to import the library (and torch) to say so
        return []
    from posenc_course.explorers import EXPLORERS

    by_call = {explorer.call: name for name, explorer in EXPLORERS.items()}
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    calls = [(node.lineno, node.col_offset, by_call[node.func.id]) for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in by_call]
    return [name for *_, name in sorted(calls)]


def explorer_container(name: str) -> str:
    """Where the explorer ``name`` is drawn on the page: hidden until posenc_explorer.js fills it, so
    that without scripts (and in print) the notebook's static figure is what shows."""
    return f'<div class="posenc-explorer" data-explorer="{name}" hidden></div>'


def explorer_alt(name: str) -> str:
    """Alt text of an explorer's static figure: its title at the default setting."""
    from posenc_course.explorers import EXPLORERS

    explorer = EXPLORERS[name]
    return "Figure: " + _plain(explorer.caption(explorer.default_state))


def explorer_data_file(name: str) -> str:
    """The data script of explorer ``name``, under ``_static/``."""
    return f"posenc_explorer_{name}.js"


def explorer_data_script(name: str, data: dict[str, Any]) -> str:
    """The script that hands an explorer's exported data to posenc_explorer.js (a page opened from
    ``file://`` may load scripts but not fetch JSON)."""
    return ("window.POSENC_EXPLORERS = window.POSENC_EXPLORERS || {};\n"
            f"window.POSENC_EXPLORERS[{json.dumps(name)}] = "
            f"{json.dumps(data, ensure_ascii=False, separators=(',', ':'))};\n")


def collect_explorers(app: Sphinx, doctree: nodes.document) -> None:
    """The explorers each page shows (from the containers ``prepare`` added to its outputs)."""
    found = [m[1] for raw in doctree.findall(nodes.raw) for m in EXPLORER_CONTAINER.finditer(raw.astext())]
    store = app.env.posenc_explorers = getattr(app.env, "posenc_explorers", {})  # type: ignore[attr-defined]
    store[app.env.current_document.docname] = list(dict.fromkeys(found))


def explorer_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    """A page with explorers loads their data and the script that draws them (that page only)."""
    names = getattr(app.env, "posenc_explorers", {}).get(pagename, [])
    for name in names:
        app.add_js_file(explorer_data_file(name), priority=400)
    if names:
        app.add_js_file(EXPLORER_SCRIPT, priority=410)


def write_explorer_data(app: Sphinx, exception: Exception | None) -> None:
    """``_static/posenc_explorer_NAME.js`` for every explorer a page shows: ``export_explorer(NAME)``, the
    library's values at every setting of its controls, as ``window.POSENC_EXPLORERS[NAME]``.

    Computed with one intra-op thread, as the notebooks run: the values are thousands of tiny tensor
    operations, which a second thread only slows down (and the numbers are the same)."""
    import torch

    from posenc_course.explorers import EXPLORERS, export_explorer

    names = sorted({name for found in getattr(app.env, "posenc_explorers", {}).values() for name in found})
    if exception is not None or app.builder.format != "html" or not names:
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for name in names:
            (Path(app.outdir) / "_static" / explorer_data_file(name)).write_text(
                explorer_data_script(name, export_explorer(EXPLORERS[name])), encoding="utf-8")
    finally:
        torch.set_num_threads(threads)


def read_notebook(text: str) -> nbformat.NotebookNode:
    """myst-nb reader for ``.ipynb`` files (``nb_custom_formats`` in conf.py)."""
    return prepare(nbformat.reads(text, as_version=4))


# --- the site's data --------------------------------------------------------------------------------


def load_glossary(path: Path = GLOSSARY) -> list[dict[str, Any]]:
    terms = tomllib.loads(path.read_text(encoding="utf-8"))["term"]
    for i, term in enumerate(terms):
        if set(term) != {"en", "zh", "match", "definition"} or not term["match"]:
            raise ValueError(f"{path}: term #{i} needs exactly en, zh, match (non-empty), definition; got {sorted(term)}")
    return terms


def glossary_markdown(terms: list[dict[str, Any]]) -> str:
    """The glossary page (MyST): one Sphinx glossary entry per term, English and Chinese both as terms."""
    lines = [
        "# Glossary · 术语表",
        "",
        "The terms of the series in English and Chinese (the source material of the course is Chinese).",
        "On each notebook page, the first occurrence of a term links here (hover over it for the",
        "definition); under each definition, the notebook sections that use the term link back.",
        "",
        "**Terms:** " + " · ".join(f"{{term}}`{t['en']}`" for t in sorted(terms, key=lambda t: t["en"].lower())),
        "",
        "```{glossary}",
        ":sorted:",
        "",
    ]
    for term in terms:
        lines += [term["en"], term["zh"], f"  {term['definition']}", ""]
    lines.append("```")
    return "\n".join(lines) + "\n"


def _site_data(app: Sphinx) -> dict[str, Any]:
    path = Path(app.srcdir) / "_site.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"pages": {}}


def _collect_headings(app: Sphinx) -> None:
    _HEADINGS.clear()
    _PAGE_TEXT.clear()  # one build's pages only, when several builds run in one process (the tests)
    for path in Path(app.srcdir).glob("[0-9][0-9]_*.ipynb"):
        _HEADINGS[path.stem] = anchor_map(nbformat.read(path, as_version=4))
    app.env.posenc_site = _site_data(app)  # type: ignore[attr-defined]


# --- downloads under the title ---------------------------------------------------------------------


def add_page_facts(app: Sphinx, doctree: nodes.document) -> None:
    """Insert "Download: notebook · source" after the first title of a notebook page (the run time
    is the notebook's own "Run time" line, which tests/course/test_notebooks.py checks against the catalog)."""
    docname = app.env.current_document.docname
    page = app.env.posenc_site["pages"].get(docname)  # type: ignore[attr-defined]
    if not page:
        return
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is None or not isinstance(section[0], nodes.title):
        return
    para = nodes.paragraph(classes=["posenc-page-facts"])
    para += nodes.strong(text=ui("download"))
    links = [(ui("notebook"), page.get("ipynb")), (ui("source"), page.get("py"))]
    links = [(text, uri) for text, uri in links if uri]
    for i, (text, uri) in enumerate(links):
        if i:
            para += nodes.Text(" · ")
        para += nodes.reference(text, text, refuri=uri, classes=["posenc-download"])
    section.insert(1, para)


# --- glossary links ---------------------------------------------------------------------------------

SKIP = (nodes.literal, nodes.literal_block, nodes.math, nodes.math_block, nodes.reference, nodes.title,
        nodes.raw, nodes.image, nodes.term, nodes.FixedTextElement, nodes.rubric)


def _pattern(phrases: list[str]) -> re.Pattern:
    sensitive = [re.escape(p) for p in phrases if p != p.lower()]
    insensitive = [re.escape(p) for p in phrases if p == p.lower()]
    parts = ([rf"(?:{'|'.join(sensitive)})"] if sensitive else []) + (
        [rf"(?i:{'|'.join(insensitive)})"] if insensitive else [])
    return re.compile(rf"(?<![\w-])(?:{'|'.join(parts)})(?![\w-])")


# Chinese: the terminology table's forms of each glossary term (locale/zh_CN/terminology.toml, loaded with
# the catalogs when a translated build starts), and the glossary's own 中文 column.
_TERM_FORMS: dict[str, list[str]] = {}
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
# A form of the terminology table that is a common word in other senses, not linked to its term: 权重
# (weights) translates "checkpoint" in places, but "注意力权重" (attention weights) is not a checkpoint.
ZH_NOT_LINKED = {"权重"}


def terminology_forms(path: Path, terms: list[dict[str, Any]] | None = None) -> dict[str, list[str]]:
    """Glossary term (its English name) -> the Chinese forms that the terminology table ``path`` gives for
    it: those of each rule that names the term and covers a phrase the glossary links (its ``match``)."""
    glossary = {t["en"]: t for t in (terms or load_glossary())}
    forms: dict[str, list[str]] = {}
    for rule in tomllib.loads(path.read_text(encoding="utf-8"))["rule"]:
        term = glossary.get(rule.get("term", ""))
        if term and {p.lower() for p in term["match"]} & {p.lower() for p in rule["en"]}:
            forms.setdefault(term["en"], []).extend(f for f in rule["zh"] if f not in forms.get(term["en"], []))
    return forms


def term_phrases(term: dict[str, Any], language: str | None = None,
                 forms: dict[str, list[str]] | None = None) -> list[str]:
    """The phrases that count as an occurrence of glossary ``term`` in a page's prose: its English
    ``match``; in Chinese also its Chinese forms, from the terminology table (``forms``, default: the
    build's) and the glossary's 中文 column (split at its brackets and enumeration commas: 词元（token）
    gives 词元), each with two CJK characters or more (键 or 值 alone would match everywhere)."""
    phrases = list(term["match"])
    if (language or LANGUAGE) == "en":
        return phrases
    column = [f.strip() for f in re.split(r"[（）()、，,；;]", term["zh"]) if f.strip()]
    for form in [*(_TERM_FORMS if forms is None else forms).get(term["en"], []), *column]:
        if len(CJK.findall(form)) >= 2 and form not in ZH_NOT_LINKED and form not in phrases:
            phrases.append(form)
    return phrases


def zh_pattern(phrases: list[str]) -> re.Pattern:
    """The pattern of ``phrases`` in Chinese text. Chinese puts no spaces between words, and ``\\w``
    counts CJK characters as letters, so English's ``(?<![\\w-])`` bounds would never match "用RoPE的" or
    any Chinese form inside a sentence: a phrase is bounded only where it begins or ends with a Latin
    letter or digit, and there only by another Latin letter, digit, ``_`` or ``-``. A space next to a
    CJK character matches any space or none ("KV 缓存", "KV缓存"). Longest phrases first (旋转位置编码
    before 旋转). A phrase with a capital letter matches case-sensitively, the others in any case."""
    latin = r"[A-Za-z0-9]"
    parts = []
    for phrase in sorted(dict.fromkeys(phrases), key=len, reverse=True):
        body = ""
        for i, char in enumerate(phrase):
            if char == " ":
                beside = phrase[i - 1] + phrase[i + 1:i + 2]
                body += r"\s*" if CJK.search(beside) else r"\s+"
            else:
                body += re.escape(char)
        if re.match(latin, phrase):
            body = r"(?<![A-Za-z0-9_-])" + body
        if re.match(latin, phrase[-1]):
            body += r"(?![A-Za-z0-9_-])"
        parts.append(f"(?i:{body})" if phrase == phrase.lower() else body)
    return re.compile("|".join(parts))


def term_pattern(term: dict[str, Any], language: str | None = None) -> re.Pattern:
    """What counts as an occurrence of glossary ``term`` in a page of the build's language (or ``language``)."""
    if (language or LANGUAGE) == "en":
        return _pattern(term["match"])
    return zh_pattern(term_phrases(term, language))


def _in_skipped(node: nodes.Node) -> bool:
    parent = node.parent
    while parent is not None:
        if isinstance(parent, SKIP):
            return True
        classes = parent.get("classes", []) if isinstance(parent, nodes.Element) else []
        if "cell_output" in classes or "cell_input" in classes or "posenc-page-facts" in classes:
            return True
        parent = parent.parent
    return False


def term_tooltip(term: dict[str, Any]) -> str:
    """What a glossary link shows on hover: the term in both languages and its one-line definition (in a
    translated build, the glossary catalog's translation of it, where there is one)."""
    return ui("term_tooltip", en=term["en"], zh=term["zh"], definition=translate(term["definition"], "glossary"))


def _section_of(node: nodes.Node) -> nodes.section | None:
    """The innermost section around ``node`` (the page's title section for its introduction)."""
    return next((a for a in _ancestors(node) if isinstance(a, nodes.section)), None)


def _place(node: nodes.Node) -> tuple[str, str] | None:
    """Where ``node`` stands in a notebook, for a link back to it: (section anchor, section title,
    "introduction" before the first section), or None in "Further reading" (a pointer, not a use)."""
    section = _section_of(node)
    if section is None or section[0].astext() in {"Further reading", translate("Further reading")}:
        return None
    return section["ids"][0], ui("introduction") if isinstance(section.parent, nodes.document) else section[0].astext()


def collect_term_sections(app: Sphinx, doctree: nodes.document) -> None:
    """For each notebook page, the section where each glossary term first occurs in its prose: the
    glossary page lists them under the term ("Where the course uses it")."""
    docname = app.env.current_document.docname
    if not NOTEBOOK_DOC.match(docname):
        return
    store = app.env.posenc_terms = getattr(app.env, "posenc_terms", {})  # type: ignore[attr-defined]
    remaining = {term["en"]: term_pattern(term) for term in load_glossary()}
    found: dict[str, tuple[str, str]] = {}
    for text_node in doctree.findall(nodes.Text):
        if not remaining:
            break
        if _in_skipped(text_node):
            continue
        if (place := _place(text_node)) is None:
            continue
        for en, pattern in list(remaining.items()):
            if pattern.search(str(text_node)):
                found[en] = place
                del remaining[en]
    store[docname] = found


def add_term_sections(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """On the glossary page, under each definition: links to the notebook sections that use the term."""
    if docname != "glossary":
        return
    uses = getattr(app.env, "posenc_terms", {})
    labels = app.env.posenc_site["pages"]  # type: ignore[attr-defined]
    for item in doctree.findall(nodes.definition_list_item):
        en = item[0].astext()
        places = [(notebook, *found[en]) for notebook, found in sorted(uses.items()) if en in found]
        if not places:
            continue
        para = nodes.paragraph(classes=["posenc-term-uses"])
        para += nodes.emphasis(text=ui("term_uses"))
        for i, (notebook, anchor, title) in enumerate(places):
            if i:
                para += nodes.Text(" · ")
            number = labels.get(notebook, {}).get("label", notebook).split(" · ")[0]
            para += nodes.reference("", ui("term_place", number=number, title=title), internal=True,
                                    refuri=app.builder.get_relative_uri(docname, notebook) + "#" + anchor)
        item[-1] += para


def link_glossary_terms(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Link the first occurrence of each glossary term in a notebook page's prose to its entry."""
    if docname not in app.env.posenc_site["pages"] or "glossary" not in app.env.all_docs:  # type: ignore[attr-defined]
        return
    std = app.env.domains.standard_domain
    glossary_uri = app.builder.get_relative_uri(docname, "glossary")
    remaining = []
    for term in load_glossary():
        target = std.objects.get(("term", term["en"]))
        if target is None:
            logger.warning(f"glossary term {term['en']!r} has no entry on the glossary page")
            continue
        remaining.append((term_pattern(term), f"{glossary_uri}#{target[1]}", term))
    for text_node in list(doctree.findall(nodes.Text)):
        if not remaining or _in_skipped(text_node):
            continue
        text = str(text_node)
        hits = []
        for entry in remaining:
            m = entry[0].search(text)
            if m:
                hits.append((m.start(), m.end(), entry))
        if not hits:
            continue
        hits.sort(key=lambda h: (h[0], -h[1]))
        chosen, end = [], -1
        for start, stop, entry in hits:
            if start >= end:
                chosen.append((start, stop, entry))
                end = stop
        pieces: list[nodes.Node] = []
        pos = 0
        for start, stop, (pattern, uri, term) in chosen:
            pieces.append(nodes.Text(text[pos:start]))
            ref = nodes.reference(text[start:stop], text[start:stop], refuri=uri, internal=True,
                                  classes=["posenc-term"], reftitle=term_tooltip(term))
            pieces.append(ref)
            pos = stop
            remaining = [r for r in remaining if r[2] is not term]
        pieces.append(nodes.Text(text[pos:]))
        text_node.parent.replace(text_node, [p for p in pieces if not (isinstance(p, nodes.Text) and not str(p))])


# --- the library reference: short names in docstrings --------------------------------------------


def resolve_short_name(app: Sphinx, env: Any, node: nodes.Element, contnode: nodes.Node) -> nodes.Node | None:
    """Resolve a Python reference written as a short name (``:class:`NoPosition``` in a module that
    imports it) to the one documented ``posenc_lib`` object of that name, when exactly one exists.

    Docstrings name objects as the code around them does; Sphinx only searches the current module
    and class. An ambiguous or unknown name stays unresolved (and fails the build, nitpicky)."""
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip("~.")
    if not target or " " in target:
        return None
    domain = env.get_domain("py")
    kinds = set(domain.objtypes_for_role(node["reftype"]) or ())
    matches = [name for name, entry in domain.objects.items()
               if name.startswith("posenc_lib.") and entry.objtype in kinds
               and (name == target or name.endswith("." + target))]
    if len(matches) > 1:  # the same short name in several modules: the referring module's own wins
        module = node.get("py:module") or ""
        matches = [name for name in matches if module and name.startswith(module + ".")]
    if len(matches) != 1:
        return None
    node = node.deepcopy()
    node["reftarget"] = matches[0]
    node["refspecific"] = False
    return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], matches[0], node, contnode)


# --- the library reference: links from the notebooks' prose, and back ------------------------------

# A mention of the library in prose: `apply_rope`, `apply_rope(x, cos, sin)`, `RotaryPE.forward`,
# `posenc_course.report` or the file `posenc_lib/rotary/rope.py`.
LIBRARY_MENTION = re.compile(r"(?P<name>posenc_lib(?:[./]\w+)*|[A-Za-z_]\w*(?:\.\w+)*)(?:\(.*\))?")
NOTEBOOK_DOC = re.compile(r"\A\d\d_")
#: A notebook's mention of a page of docs/ that the site renders (`docs/replication.md`) links to that page.
DOC_PAGE_FILE = re.compile(r"docs/([\w-]+)\.md")


def library_target(domain: Any, text: str) -> tuple[str, str, str] | None:
    """The documented ``posenc_lib`` module or object an inline-code mention names:
    ``(full name, docname, anchor)``, or None when it names none or a short name names several."""
    m = LIBRARY_MENTION.fullmatch(text.strip())
    if m is None:
        return None
    name = m["name"].removesuffix(".py").replace("/", ".").removesuffix(".__init__")
    if name.startswith("posenc_lib"):
        found = [name] if name in domain.modules or name in domain.objects else []
    else:  # a bare name is a function or class (`head_dim` in prose is a variable, not Sizes.head_dim)
        kinds = ("function", "class", "exception") if "." not in name else ("function", "class", "exception",
                                                                            "method", "attribute", "property")
        found = [full for full, objtype in _short_names(domain).get(name, []) if objtype in kinds]
    if len(found) != 1:
        return None
    entry = domain.modules.get(found[0]) or domain.objects[found[0]]
    return found[0], entry.docname, entry.node_id


def _short_names(domain: Any) -> dict[str, list[tuple[str, str]]]:
    """Every dotted tail of a documented ``posenc_lib`` object's name ("apply_rope", "RotaryPE.forward")
    -> the (full name, object type) of the objects it ends. Built once per build: library_target is
    asked about every mention of every page, and a scan of all the objects each time grows with
    both (it cost more than a second of the render)."""
    cached = getattr(domain, "_posenc_short_names", None)
    if cached is None or cached[0] != len(domain.objects):
        table: dict[str, list[tuple[str, str]]] = {}
        for full, entry in domain.objects.items():
            if full.startswith("posenc_lib."):
                parts = full.split(".")
                for i in range(1, len(parts)):
                    table.setdefault(".".join(parts[i:]), []).append((full, entry.objtype))
        cached = domain._posenc_short_names = (len(domain.objects), table)
    return cached[1]


def _prose_literals(doctree: nodes.document) -> list[nodes.literal]:
    return [n for n in doctree.findall(nodes.literal)
            if not any(isinstance(a, (nodes.reference, nodes.title, nodes.literal_block, nodes.raw))
                       for a in _ancestors(n))]


def _ancestors(node: nodes.Node) -> list[nodes.Node]:
    found = []
    while node.parent is not None:
        node = node.parent
        found.append(node)
    return found


def collect_mentions(app: Sphinx, doctree: nodes.document) -> None:
    """Record each notebook page's inline-code mentions with the section they stand in (for the
    back-links of the library reference, which are written once every page has been read)."""
    docname = app.env.current_document.docname
    if not NOTEBOOK_DOC.match(docname):
        return
    mentions = app.env.posenc_mentions = getattr(app.env, "posenc_mentions", {})  # type: ignore[attr-defined]
    mentions[docname] = [(literal.astext(), *place) for literal in _prose_literals(doctree)
                         if (place := _place(literal)) is not None]


def link_library_mentions(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Notebook pages: each inline-code mention of a library module or object links to its entry in
    the library reference. Reference pages: a closing section lists, per object, the notebook
    sections that mention it."""
    domain = app.env.get_domain("py")
    if NOTEBOOK_DOC.match(docname):
        files = Path(app.srcdir) / "_extra" / "files"  # repository files the build publishes (build_site.py)
        for literal in _prose_literals(doctree):
            text = literal.astext()
            if (target := library_target(domain, text)) is not None:
                full, page, anchor = target
                uri, title, kind = app.builder.get_relative_uri(docname, page) + "#" + anchor, \
                    ui("in_reference", name=full), "posenc-api"
            elif (doc := DOC_PAGE_FILE.fullmatch(text)) and doc[1] in app.env.all_docs:
                uri, title, kind = app.builder.get_relative_uri(docname, doc[1]), ui("on_site", name=text), \
                    "posenc-page"
            elif "/" in text and (files / text).is_file():
                uri, title, kind = "../" * docname.count("/") + f"files/{text}", ui("in_repository", name=text), \
                    "posenc-file"
            else:
                continue
            ref = nodes.reference("", "", literal.deepcopy(), internal=True, refuri=uri, classes=[kind],
                                  reftitle=title)
            literal.parent.replace(literal, ref)
        return
    if not docname.startswith("api/"):
        return
    used: dict[str, dict[tuple[str, str], str]] = {}
    for notebook, found in sorted(getattr(app.env, "posenc_mentions", {}).items()):
        for text, anchor, title in found:
            target = library_target(domain, text)
            if target is not None and target[1] == docname:
                used.setdefault(target[0], {})[notebook, anchor] = title
    if not used:
        return
    section = nodes.section(ids=["where-the-notebooks-use-it"])
    section += nodes.title(text=ui("api_uses"))
    items = nodes.bullet_list()
    labels = app.env.posenc_site["pages"]  # type: ignore[attr-defined]
    for full in sorted(used, key=lambda f: (f.count("."), f)):
        para = nodes.paragraph()
        para += nodes.literal(text=full.removeprefix(docname.removeprefix("api/") + ".") or full)
        para += nodes.Text(": ")
        for i, ((notebook, anchor), title) in enumerate(used[full].items()):
            if i:
                para += nodes.Text("; ")
            label = labels.get(notebook, {}).get("label", notebook)
            para += nodes.reference("", f"{label.split(' · ')[0]} · {title}", internal=True,
                                    refuri=app.builder.get_relative_uri(docname, notebook) + "#" + anchor)
        items += nodes.list_item("", para)
    section += items
    doctree.children[0] += section


# --- the library reference: links from the notebooks' code cells ----------------------------------


def code_imports(sources: list[str]) -> dict[str, str]:
    """The names that code cells bind by importing from ``posenc_lib`` -> the dotted name they stand for
    (``from posenc_lib.rotary import rope`` -> ``{"rope": "posenc_lib.rotary.rope"}``; ``import
    posenc_lib.scheme as s`` -> ``{"s": "posenc_lib.scheme"}``). Cells that do not parse (IPython magics)
    are skipped."""
    found: dict[str, str] = {}
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "posenc_lib" and not node.level:
                for alias in node.names:
                    if alias.name != "*":
                        found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "posenc_lib" and alias.asname:
                        found[alias.asname] = alias.name
    return found


# Pygments' HTML for a name ("n"), a module path in an import ("nn"), optionally followed by attributes.
CODE_NAME = re.compile(r'<span class="(?P<kind>nn?)">(?P<name>[\w.]+)</span>'
                       r'(?P<attrs>(?:<span class="o">\.</span><span class="n">\w+</span>)*)')
CODE_ATTR = re.compile(r'<span class="o">\.</span><span class="n">(\w+)</span>')


def link_code_names(html_body: str, names: dict[str, str], target: Any) -> str:
    """``html_body`` with each name of ``names`` in highlighted code (Pygments' spans) linked to the
    library reference, and each attribute of it that is documented (``rope.apply_rope``) to its own
    entry; the module paths of ``from posenc_lib... import`` lines link to their module pages.
    ``target(full_name)`` is the URL of a documented module or object, or None."""
    def link(text: str, url: str | None, kind: str) -> str:
        span = f'<span class="{kind}">{text}</span>'
        return span if url is None else (f'<a class="posenc-code-api" href="{html.escape(url)}" '
                                         f'title="{html.escape(ui("in_reference", name=text))}">{span}</a>')

    def replace(m: re.Match) -> str:
        name, kind = m["name"], m["kind"]
        if kind == "nn":
            full = name if name.split(".")[0] == "posenc_lib" else None
        else:
            full = names.get(name)
        if full is None:
            return m[0]
        out = link(name, target(full), kind)
        for attr in CODE_ATTR.findall(m["attrs"]):
            full = f"{full}.{attr}"
            out += '<span class="o">.</span>' + link(attr, target(full), "n")
        return out

    return CODE_NAME.sub(replace, html_body)


def code_links(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    """html-page-context: a notebook page's code cells link the names they import from posenc_lib."""
    if doctree is None or not NOTEBOOK_DOC.match(pagename) or "body" not in context:
        return
    sources = [block.astext() for block in doctree.findall(nodes.literal_block)
               if any("cell_input" in a.get("classes", []) for a in _ancestors(block) if isinstance(a, nodes.Element))]
    names = code_imports(sources)
    if not names:
        return
    domain = app.env.get_domain("py")

    def target(full: str) -> str | None:
        entry = domain.modules.get(full) or domain.objects.get(full)
        if entry is None:
            return None
        return app.builder.get_relative_uri(pagename, entry.docname) + "#" + entry.node_id

    context["body"] = link_code_names(context["body"], names, target)


# --- search: snippets and distinct labels, offline ------------------------------------------------

SEARCH_TEXT = "posenc_search_text.js"
_PAGE_TEXT: dict[str, dict[str, Any]] = {}  # filled while pages are written (serial writes)


def collect_page_text(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """The prose of each page by section (no code, no outputs) and the label of every anchor a
    search result can point to (section titles, glossary terms): the search page's summaries."""
    def prose(node: nodes.Node) -> str:
        texts = [str(t) for t in node.findall(nodes.Text) if not _in_code(t)
                 and (not isinstance(node, nodes.section) or _section_of(t) is node)]
        return " ".join(" ".join(texts).split())

    sections = {section["ids"][0]: prose(section) for section in doctree.findall(nodes.section)}
    for item in doctree.findall(nodes.definition_list_item):  # a glossary entry: its terms and definition
        for term in item.findall(nodes.term):
            if term.get("ids"):
                sections[term["ids"][0]] = prose(item)
    labels = {term["ids"][0]: term.astext() for term in doctree.findall(nodes.term) if term.get("ids")}
    labels.update({section["ids"][0]: section[0].astext() for section in doctree.findall(nodes.section)})
    _PAGE_TEXT[docname] = {"sections": sections, "labels": labels}


def _in_code(node: nodes.Node) -> bool:
    """Inside a code cell, an output, a code block or raw HTML: not prose to quote in a search summary."""
    return any(isinstance(a, (nodes.literal_block, nodes.raw)) or
               {"cell_input", "cell_output"} & set(a.get("classes", []) if isinstance(a, nodes.Element) else [])
               for a in _ancestors(node))


# Chinese search: Sphinx's Chinese index splits the text into words with jieba (requirements.txt); a
# word of one character is not indexed. jieba's dictionary does not know the course's terms (外推, 位置编码
# are cut into 外/推 and 位置/编码): they are added as words. The query is split against the index itself
# (ZH_SPLITTER_JS): a run of Chinese characters becomes the longest words the index holds, so that
# 旋转位置编码 finds the pages that hold that word, and 长度外推的例子 asks for 长度外推 and 例子.
ZH_SPLITTER_JS = r"""
// The Chinese site's query splitter (tools/site/posenc_site.py, ZH_SPLITTER_JS): Chinese has no spaces, so
// a run of Chinese characters is cut into the longest words the search index holds; characters no word
// of the index starts with are kept together (one alone is dropped: single characters are not indexed).
var splitQuery = (query) => {
  const index = (typeof Search !== "undefined" && Search._index) || {};
  const known = (word) => Object.hasOwn(index.terms || {}, word) || Object.hasOwn(index.titleterms || {}, word);
  const words = [];
  for (const part of query.split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu)) {
    for (const run of part.match(/\p{Script=Han}+|[^\p{Script=Han}]+/gu) || []) {
      if (!/\p{Script=Han}/u.test(run)) { words.push(run); continue; }
      let unknown = "";
      for (let i = 0; i < run.length;) {
        let j = run.length;
        while (j > i + 1 && !known(run.slice(i, j))) j -= 1;
        if (known(run.slice(i, j))) {
          if (unknown.length > 1) words.push(unknown);
          unknown = "";
          words.push(run.slice(i, j));
        } else {
          unknown += run.slice(i, j);
        }
        i = j;
      }
      if (unknown.length > 1) words.push(unknown);
    }
  }
  return words;
};
"""
_SEARCH_WORDS: list[str] = []  # the course's Chinese terms, as words for jieba (set with the catalogs)


def search_words(terminology: Path, terms: list[dict[str, Any]] | None = None) -> list[str]:
    """The Chinese words of the terminology table ``terminology`` and of the glossary's 中文 column that
    are all CJK characters, two or more (jieba's words hold no spaces), longest first."""
    forms = [f for rule in tomllib.loads(terminology.read_text(encoding="utf-8"))["rule"] for f in rule["zh"]]
    forms += [f.strip() for t in (terms or load_glossary()) for f in re.split(r"[（）()、，,；;与]", t["zh"])]
    return sorted({f for f in forms if len(f) >= 2 and all(CJK.match(c) for c in f)}, key=lambda f: (-len(f), f))


try:
    from sphinx.search.zh import SearchChinese
except ImportError:  # pragma: no cover - Sphinx always ships it
    SearchChinese = None  # type: ignore[assignment,misc]


class CourseChinese(SearchChinese):  # type: ignore[misc,valid-type]
    """Sphinx's Chinese search with the course's terms as words (``search_words``) and the query split
    against the index (``ZH_SPLITTER_JS``). It does not load jieba's whole dictionary a second time as a
    user dictionary, as Sphinx's does when no ``dict`` option is set (2 s of every build)."""

    js_splitter_code = ZH_SPLITTER_JS
    # Sphinx 9.0.4 names the JS stemmer after language_name ("window.Stemmer = ChineseStemmer;"), but the
    # Chinese search loads the English stemmer (Latin words are stemmed as English): every page of a Chinese
    # site then throws "ChineseStemmer is not defined" and search does not run (sphinx-doc/sphinx#14229,
    # fixed by #14416 after 9.0.4). The name of the stemmer it loads is English.
    language_name = "English"

    def __init__(self, options: dict[str, str]) -> None:
        import logging as std_logging

        import jieba

        super().__init__({**options, "dict": options.get("dict", "")})  # no dict: jieba's own, loaded once
        jieba.setLogLevel(std_logging.WARNING)  # not "Building prefix dict..." on every build
        for word in _SEARCH_WORDS:
            jieba.add_word(word)

    def split(self, input: str) -> list[str]:
        """jieba's words (its search mode adds the dictionary's words of 2 and 3 characters inside a longer
        one), and the course's terms inside a longer word: 旋转位置编码 is also indexed as 位置编码, so
        that a search for 位置编码 finds a page that only writes 旋转位置编码 or 正弦位置编码."""
        words = super().split(input)
        return words + [term for word in words if len(word) > 2 and CJK.match(word) for term in _SEARCH_WORDS
                        if len(term) < len(word) and term in word]


def search_page_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    """The search page alone loads the page texts (written at the end of the build), before posenc.js."""
    if pagename == "search":
        app.add_js_file(SEARCH_TEXT, priority=400)


def write_page_text(app: Sphinx, exception: Exception | None) -> None:
    """``_static/posenc_search_text.js``: ``POSENC_SEARCH[docname] = {sections, labels}``. posenc.js
    serves it to Sphinx's search in place of the pages themselves, which a page opened from
    ``file://`` may not fetch; so results show a summary of the text around the word."""
    if exception is None and app.builder.format == "html":
        path = Path(app.outdir) / "_static" / SEARCH_TEXT
        path.write_text("window.POSENC_SEARCH = " + json.dumps(_PAGE_TEXT, ensure_ascii=False, separators=(",", ":"))
                        + ";\n", encoding="utf-8")


def setup(app: Sphinx) -> dict[str, Any]:
    # tools/build_site.py: the other language's site root, relative to this one's ("zh_CN/" from the English
    # site, "../" from the Chinese one); empty: a site in one language, with no switch
    app.add_config_value("posenc_other_language", "", "html", str)
    app.add_search_language(CourseChinese)
    app.connect("missing-reference", resolve_short_name)
    app.connect("builder-inited", set_language, priority=100)
    app.connect("builder-inited", _collect_headings)
    app.connect("doctree-read", mark_english, priority=100)  # before this extension adds nodes of its own
    app.connect("doctree-read", add_page_facts)
    app.connect("doctree-read", collect_mentions)
    app.connect("doctree-read", collect_term_sections)
    app.connect("doctree-resolved", add_term_sections)
    app.connect("doctree-resolved", link_glossary_terms)
    app.connect("doctree-resolved", link_library_mentions)
    app.connect("doctree-resolved", collect_page_text)
    app.connect("doctree-read", collect_explorers)
    app.connect("html-page-context", search_page_scripts)
    app.connect("html-page-context", explorer_scripts)
    app.connect("html-page-context", code_links)
    app.connect("build-finished", write_page_text)
    app.connect("build-finished", write_explorer_data)
    app.connect("html-page-context", language_switch)
    app.connect("build-finished", reset_language, priority=900)
    return {"version": "1", "parallel_read_safe": False, "parallel_write_safe": False}

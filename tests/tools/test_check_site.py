"""The browser check (tools/check_site.py) itself: it passes a clean page and catches each fault.

Each test opens small hand-written pages in headless Chromium (about 2 s per browser start; the file
takes about 2 minutes on a slow day). Marked ``checksite``: `make check-site` runs these tests before it checks
every page of both sites, and so does CI (`.ci/run`); `make test` leaves them out (its 10 minutes: see
docs/performance.md) but opens pages of the real site with the same checker (tests/tools/test_site.py).
"""

from __future__ import annotations

import copy
import itertools
from pathlib import Path

import numpy as np
import pytest

from posenc_course.explorers import EXPLORERS, export_explorer
from tools import check_site as check
from tools.site import posenc_site as glue

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.checksite


PNG_1PX = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9Q"
           "DwADhgGAWjR9awAAAABJRU5ErkJggg==")
# The site's own stylesheet and script (copied beside the pages): code wraps, folds open in print,
# a figure opens full size, an outside link prints its URL. Its language is given, as axe-core requires.
CLEAN = f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>clean</title>
<link rel="stylesheet" href="posenc.css"><script src="posenc.js"></script>
<style>@media print {{ nav {{ display: none; }} }}</style></head>
<body><nav class="bd-sidebar-primary"><a href="other.html">other</a></nav><main>
<h1 id="top">A clean page</h1>
<p>Prose with a price of $5 and $6, a <a href="#top">link to an anchor</a>,
<a href="other.html#there">a link to another page</a> and <a class="reference external" href="https://example.org">one to the world</a>.</p>
<div class="cell_output"><img src="{PNG_1PX}" alt="Figure: a single pixel"></div>
<div class="cell_output"><div class="highlight" style="width: 200px"><pre>a very long line of output that wraps inside its own box instead of being cut off .......</pre></div></div>
<table class="dataframe"><thead><tr><th>scheme</th><th>loss</th></tr></thead>
<tbody><tr><th>RoPE</th><td class="posenc-number">12.48 ± 0.03</td></tr></tbody></table>
<div class="cell tag_solution"><details class="hide"><summary><p class="collapsed">Show the solution to exercise 1</p>
<p class="expanded">Hide the solution to exercise 1</p></summary>
<div class="cell_input"><div class="highlight"><pre>answer = 40 + 2  # the solution's code</pre></div></div></details></div>
<p>Inline math: <span class="math">x + y</span>.</p>
<button class="primary-toggle" onclick="document.getElementById('pst-primary-sidebar-modal').showModal()">menu</button>
<dialog id="pst-primary-sidebar-modal"><a href="other.html">other</a></dialog>
</main></body></html>
"""
INDEX = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>index</title></head><body><main>
<p>Start here: <a href="00_first.html">00 · First</a>.</p></main></body></html>"""
SVG_400PX = "data:image/svg+xml," + '<svg xmlns="http://www.w3.org/2000/svg" width="400" height="10"></svg>'.replace("<", "%3C").replace(">", "%3E").replace('"', "%22")
OTHER = '<!doctype html><html lang="en"><head><title>other</title></head><body><main><p id="there">here</p></main></body></html>'
# The theme's article header with its ☰ button hidden at every width: a phone reader has no way to the navigation.
NO_BUTTON = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>no button</title></head><body>
<div class="bd-header-article"><button class="primary-toggle" style="display: none">☰</button></div>
<main><p>A page whose navigation drawer no button opens.</p></main>
<dialog id="pst-primary-sidebar-modal"><a href="other.html">other</a></dialog></body></html>"""

BROKEN = """<!doctype html><html><head><meta charset="utf-8"><title>broken</title>
<script src="https://cdn.example.org/mathjax/tex-chtml.js"></script></head>
<body><nav class="bd-sidebar-primary"><a href="other.html">other</a></nav><main>
<p>A formula left as raw TeX: $x$ and a display $$y = x^2$$.</p>
<p><a href="missing.html">a broken link</a> and <a href="other.html#nowhere">a missing anchor</a>.</p>
<img src="no-such-figure.png" alt="no-such-figure.png">
<pre style="overflow: hidden; width: 200px">a very long line of code that is cut off at the edge of its box ...................</pre>
<div class="cell tag_solution"><details class="hide" open><summary>Show solution</summary>
<div class="cell_input"><pre>answer = 40 + 2  # the solution's code</pre></div></details></div>
<p>A formula in a scroll box: <span class="math" style="display: inline-flex; overflow-x: auto; max-width: 60px;
white-space: nowrap">x + y + z + w + v + u</span>.</p>
<div class="highlight"><pre style="white-space: pre-wrap; width: 300px">code = "that wraps at the edge of a box too narrow for eighty columns of code"</pre></div>
<div class="cell_output"><pre>scheme x seed: 100%|####################| 21/21</pre></div>
<button class="primary-toggle">menu</button><dialog id="pst-primary-sidebar-modal"><a href="other.html">other</a></dialog>
<div style="break-before: page"></div>
<details><p>a fold with no label</p></details>
<details><summary>Deep dive (optional) · closed on paper</summary><p>hidden</p></details>
<p><a class="reference external" href="https://example.org/paper">a paper</a></p>
<img src="SVG_400PX" alt="Figure: drawn at a quarter of its width" style="width: 100px">
<pre style="overflow-x: auto; width: 200px">a very long line of code that scrolls inside its own box instead of wrapping .......</pre>
<table class="dataframe"><thead><tr><th></th><th>loss</th><th>accuracy</th></tr>
<tr><th>scheme</th><th></th><th></th></tr></thead>
<tbody><tr><th>RoPE</th><td class="posenc-number" style="width: 30px">12.48 ± 0.03</td><td>1.0</td></tr></tbody></table>
<div class="search-button-field">Search</div><div class="search-button-field">Search</div>
<p style="color: #bbb; background: #fff">Pale grey text on white, which few can read.</p>
<p><a href="other.html"><span class="icon"></span></a> a link with nothing to read out</p>
<script>console.error("something went wrong")</script>
</main></body></html>
""".replace("SVG_400PX", SVG_400PX)


# An explorer's page: the static figure and the empty container as the site writes them, its data and the
# site's script. "explorer_bad.html" draws corrupted data: one array off, a control that changes nothing,
# and no static figure under it.
EXPLORER = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>explorer</title>
<link rel="stylesheet" href="posenc.css"><script src="posenc.js"></script>
<script src="DATA"></script><script src="posenc_explorer.js"></script></head>
<body><main><h1>An explorer</h1><div class="cell_output">FIGURE
<div class="posenc-explorer" data-explorer="context" hidden></div></div></main></body></html>
"""
STATIC = f'<img src="{PNG_1PX}" alt="Figure: Context extension at its default setting">'


def corrupted(data: dict) -> dict:
    """The export with every ratio 1.5 times too large, and the factor control frozen at its first option."""
    bad = copy.deepcopy(data)
    bad["values"]["ratio"]["arrays"] = [[1.5 * r for r in rows] for rows in bad["values"]["ratio"]["arrays"]]
    sizes = {c["name"]: len(c["options"]) for c in bad["controls"]}
    for entry in bad["values"].values():
        if "factor" in entry["controls"]:
            shape = [sizes[name] for name in entry["controls"]]
            frozen = []
            for index in itertools.product(*map(range, shape)):
                first = [0 if name == "factor" else i for name, i in zip(entry["controls"], index)]
                frozen.append(entry["arrays"][int(np.ravel_multi_index(first, shape))])
            entry["arrays"] = frozen
    return bad


STUCK = CLEAN.replace('<div class="cell tag_solution"><details class="hide">',
                      '<div class="cell tag_solution"><details class="hide" ontoggle="this.open = false">')
assert STUCK != CLEAN
# A page break after the last paragraph: paper gets an empty last page (the issue found 01 ending on one).
TRAILING = CLEAN.replace("</main>", '<div style="break-before: page; height: 1px"></div></main>')
assert TRAILING != CLEAN

# Phones: a figure spans the page's width (posenc.js, posenc.css), in a deep dive's indent too.
WIDE_FIGURE = f'<div class="cell_output"><img src="{SVG_400PX}" alt="Figure: 400 px wide"></div>'
DEEP = CLEAN.replace("</main>", '<details class="deep-dive"><summary>Deep dive (optional) · a figure</summary>'
                                f"{WIDE_FIGURE}</details></main>")
assert DEEP != CLEAN
# The rule the site had first: 100vw centred on the column. In a fold's indent (here a plain fold, which
# only the phone check opens) the figure sticks out at the right and the page scrolls sideways.
CENTRED = ("<style>@media (max-width: 600px) { div.cell_output a.posenc-enlarge "
           "{ width: 100vw !important; margin-left: calc(50% - 50vw) !important; } }</style></head>")
OFF_CENTRE = CLEAN.replace("</head>", CENTRED).replace(
    "</main>", f'<details><summary>More</summary><div style="padding-left: 2em">{WIDE_FIGURE}</div></details></main>')
assert OFF_CENTRE.count("100vw") == 1 and OFF_CENTRE.count("padding-left: 2em") == 1
# A figure left at its column's width on a phone (the site before issue #41).
IN_COLUMN = CLEAN.replace("</head>", "<style>@media (max-width: 600px) { div.cell_output a.posenc-enlarge "
                                     "{ width: 60% !important; } }</style></head>").replace("</main>", f"{WIDE_FIGURE}</main>")
assert IN_COLUMN.count("60%") == 1


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """One browser run over a clean page, a broken one and one whose solution does not open."""
    site = tmp_path_factory.mktemp("site")
    for name, text in [("clean.html", CLEAN), ("broken.html", BROKEN), ("stuck.html", STUCK), ("other.html", OTHER),
                       ("index.html", INDEX), ("00_first.html", OTHER), ("no_button.html", NO_BUTTON),
                       ("trailing.html", TRAILING), ("deep.html", DEEP), ("off_centre.html", OFF_CENTRE),
                       ("in_column.html", IN_COLUMN)]:
        (site / name).write_text(text, encoding="utf-8")
    for asset in ("posenc.css", "posenc.js", "posenc_explorer.js"):
        (site / asset).write_bytes((ROOT / "tools" / "site" / "_static" / asset).read_bytes())
    data = export_explorer(EXPLORERS["context"])
    for name, figure, values in (("explorer_ok", STATIC, data), ("explorer_bad", "", corrupted(data))):
        (site / f"{name}.js").write_text(glue.explorer_data_script("context", values), encoding="utf-8")
        (site / f"{name}.html").write_text(EXPLORER.replace("DATA", f"{name}.js").replace("FIGURE", figure), encoding="utf-8")
    result = check.check_site(site, site / "shots", searches=[("anything", "clean.html")])
    result.site = site
    return result


def problems_of(report, page: str) -> list[str]:
    return [p.removeprefix(f"{page}: ") for p in report.problems if p.startswith(f"{page}: ")]


def test_a_clean_page_passes(report):
    assert problems_of(report, "clean.html") == [] and problems_of(report, "other.html") == []
    assert report.pages["clean.html"]["solutions"] == 1 and report.pages["clean.html"]["images"] == 1
    assert (report.site / "shots" / "clean.png").stat().st_size > 0
    assert (report.site / "shots" / "clean.phone.png").stat().st_size > 0


def test_a_broken_page_fails_on_every_fault(report):
    text = "\n".join(problems_of(report, "broken.html"))
    expected = [
        "request leaves the site: https://cdn.example.org/mathjax/tex-chtml.js",  # a CDN script
        "raw TeX ($...$)",  # $x$
        "raw TeX ($$)",
        "broken link: missing.html does not exist",
        "broken link: no #nowhere in other.html",
        "image not decoded: no-such-figure.png",
        "request failed: file://",  # the missing image
        "image without a meaningful alt text",
        "clipped at 1280 px: pre",
        "clipped at 1024 px: pre",
        "solution 1: open before any click",
        'solution 1: its fold does not name the exercise ("Show solution")',
        "navigation printed: bd-sidebar-primary",
        "code not wrapped in print: a very long line",
        "console error: something went wrong",
        "scrolls sideways at 1280 px (reachable only by scrolling): pre",
        "scrolls sideways at 1024 px (reachable only by scrolling): pre",
        "figure shown too small to read at 1280 px: data:image/svg+xml,",
        "at 25% of its width",
        "table at 1280 px: a header row of index names alone: scheme",
        "table at 1280 px: a cell wrapped over 3 lines: 12.48 ± 0.03",
        "a fold without a label: a fold with no label",
        "2 search boxes visible at 1280 px",
        "a fold prints closed: Deep dive (optional) · closed on paper",
        "a link prints without its URL: https://example.org/paper",
        "inline formula at 1280 px with a 15 px scrollbar",  # scrollbars are shown, as on Windows
        "at 1280 px: code wraps:",
        "the code column holds",
        "an output line the site must not show: scheme x seed: 100%",
        "at 768 px: a tap on the visible navigation (☰) button opens no drawer",
        "on a 390 px phone: a tap on the visible navigation (☰) button opens no drawer",
        "a solution prints labelled '', not 'Solution to exercise N'",  # no paper label (posenc.js absent)
        # axe-core (WCAG 2.1 A and AA): no <html lang>, pale text, a link with no name
        "accessibility (html-has-lang): <html> element must have a lang attribute",
        "accessibility (color-contrast): Elements must meet minimum color contrast ratio thresholds",
        "accessibility (link-name): Links must have discernible text",
    ]
    missing = [e for e in expected if e not in text]
    assert not missing, f"the check missed {missing}; it reported:\n{text}"


def test_a_blank_printed_page_is_caught(report):
    assert problems_of(report, "trailing.html") == ["printed: page 2 of 2 is blank"]
    assert report.pages["clean.html"]["printed pages"] == 1


def test_phone_figures_span_the_page_without_widening_it(report):
    """The site's rules draw a figure across a phone's page, in a deep dive too (deep.html passes); a
    figure centred on an indented column widens the page once its fold is open; one left in its column
    is reported as narrow."""
    assert problems_of(report, "deep.html") == []
    # 100vw counts the scrollbar shown beside the page: the closed page already scrolls by its half
    closed, opened = problems_of(report, "off_centre.html")
    assert closed.startswith("page scrolls sideways on a 390 px phone by "), closed
    assert opened.startswith("page scrolls sideways on a 390 px phone by ") and opened.endswith(
        " px with every fold open"), opened
    [narrow] = problems_of(report, "in_column.html")
    assert narrow.startswith("figure narrower than a 390 px phone's screen: data:image/svg+xml,") and " px page" in narrow
    assert report.pages["clean.html"]["phone: scrolling in their box"] == "none"


def test_the_navigation_button_is_required_where_the_theme_header_is(report):
    """clean.html has no theme header (its ☰ button lies below a phone's first screen, and is tapped
    there); no_button.html has the theme's header with its button hidden: no way to the navigation."""
    assert problems_of(report, "no_button.html") == ["at 768 px: no visible navigation (☰) button",
                                                     "on a 390 px phone: no visible navigation (☰) button"]


def test_a_solution_that_prints_as_an_empty_box_is_caught(tmp_path):
    """myst-nb fades an opened fold in from opacity 0: printed at once (as a reader's Print does), its
    code is in the PDF but not visible. Without the site's print rules (posenc.css) the check sees it."""
    fade = ("<style>@keyframes fade { 0% { opacity: 0; } 100% { opacity: 1; } }\n"
            "div.cell details.hide[open] > summary ~ * { animation: fade 0.3s ease-in-out; }</style>")
    (tmp_path / "faded.html").write_text(CLEAN.replace('<link rel="stylesheet" href="posenc.css">', fade), encoding="utf-8")
    (tmp_path / "posenc.js").write_bytes((ROOT / "tools" / "site" / "_static" / "posenc.js").read_bytes())
    (tmp_path / "other.html").write_text(OTHER, encoding="utf-8")
    problems = [p for p in check.check_site(tmp_path, check_search=False).problems if p.startswith("faded.html")]
    # at opacity 0 Chromium leaves the text out of the PDF too; partly faded, it is there but too pale
    printed = [p for p in problems if p.startswith("faded.html: printed: a solution's code is ")]
    assert len(printed) == 1 and ("is not in the PDF: answer = 40 + 2" in printed[0]
                                  or "not visible (blank pixels): answer = 40 + 2" in printed[0]), problems


def test_an_explorer_that_draws_the_library_values_passes(report):
    assert problems_of(report, "explorer_ok.html") == []
    assert report.pages["explorer_ok.html"]["explorers"] == 1


def test_an_explorer_that_draws_other_values_or_ignores_a_control_fails(report):
    text = "\n".join(problems_of(report, "explorer_bad.html"))
    expected = [
        "explorer context: moving 'factor' to option 10 changes nothing drawn",
        "explorer context at its default {'method': 'yarn', 'factor': 8}: 'ratio' drawn",
        "but posenc_lib gives",
        "explorer context at its last options {'method': 'llama3', 'factor': 32}: 'scaled_wavelength' drawn",
        "explorer context: the static figure is missing under the drawing on screen",
        "explorer context without scripts: its static figure does not show",
        "explorer context: its static figure does not print",
    ]
    missing = [e for e in expected if e not in text]
    assert not missing, f"the check missed {missing}; it reported:\n{text}"


def test_the_front_page_must_start_the_reader_at_00(report, tmp_path):
    assert problems_of(report, "index.html") == []
    (tmp_path / "index.html").write_text(INDEX.replace("Start here", "Welcome"), encoding="utf-8")
    (tmp_path / "00_first.html").write_text(OTHER, encoding="utf-8")
    problems = check.check_site(tmp_path, check_search=False).problems
    assert problems == ['index.html: the front page has no "Start here" link to the first notebook (00_*.html)']
    # "Start here" below a phone's first screen (844 px)
    low = tmp_path / "low"
    low.mkdir()
    (low / "index.html").write_text(INDEX.replace("<main>", '<main><div style="height: 1000px"></div>'), encoding="utf-8")
    (low / "00_first.html").write_text(OTHER, encoding="utf-8")
    problems = check.check_site(low, check_search=False).problems
    assert len(problems) == 1 and problems[0].startswith(
        'index.html: "Start here" is not within the first screen of a 390 px phone (its top at 10'), problems


def test_axe_core_runs_on_the_pages_it_is_given_and_names_one_that_is_gone(tmp_path):
    """make check-site runs axe-core on a few pages (AXE_PAGES): only there is a page without its language
    faulted, and a listed page missing from the site is reported rather than silently unchecked."""
    (tmp_path / "index.html").write_text(INDEX.replace(' lang="en"', ""), encoding="utf-8")
    (tmp_path / "00_first.html").write_text(OTHER.replace(' lang="en"', ""), encoding="utf-8")
    problems = check.check_site(tmp_path, check_search=False,
                                axe_pages={"en": {"00_first.html", "03_gone.html"}}).problems
    assert sorted(problems) == [
        "00_first.html: accessibility (html-has-lang): <html> element must have a lang attribute: html",
        "03_gone.html: a page axe-core is to check (AXE_PAGES) is not in the site"], problems


def test_a_figure_that_does_not_enlarge_is_caught(tmp_path):
    """Without the site's script, a click on a figure opens nothing."""
    page = CLEAN.replace('<script src="posenc.js"></script>', "")
    assert page != CLEAN
    (tmp_path / "page.html").write_text(page, encoding="utf-8")
    for asset in ("posenc.css",):
        (tmp_path / asset).write_bytes((ROOT / "tools" / "site" / "_static" / asset).read_bytes())
    (tmp_path / "other.html").write_text(OTHER, encoding="utf-8")
    problems = [p for p in check.check_site(tmp_path, check_search=False).problems if p.startswith("page.html")]
    assert "page.html: a figure is not a link that opens it full size" in problems


def test_a_solution_that_does_not_open_is_caught(report):
    assert "solution 1: does not open on click" in problems_of(report, "stuck.html")


def test_the_search_check_fails_without_a_search_page(report):
    assert problems_of(report, "search.html") == ["the site has no search page"]


# A search page as Sphinx's script leaves it once it has answered: the results, each with its summary.
SEARCH_RESULTS = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>search</title></head><body><main>
<div id="search-results"><ul>
<li><a href="api/rope.html">posenc_lib.rotary.rope</a><p class="context">the module</p></li>
<li><a href="03_rope.html">03 · RoPE</a><p class="context">the notebook</p></li>
</ul></div></main></body></html>"""


def test_a_search_that_ranks_its_page_below_another_fails(tmp_path):
    (tmp_path / "search.html").write_text(SEARCH_RESULTS, encoding="utf-8")
    for name in ("03_rope.html", "api/rope.html"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(OTHER, encoding="utf-8")
    report = check.check_site(tmp_path, searches=[("RoPE", "03_rope.html", "first"), ("rotary", "03_rope.html")])
    problems = [p for p in report.problems if p.startswith("search.html: search for")]
    assert problems == ["search.html: search for 'RoPE' lists api/rope.html before 03_rope.html"], report.problems


def test_search_term_is_a_word_of_exactly_one_notebook_page(tmp_path):
    (tmp_path / "00_a.html").write_text("<p>common words everywhere; unusualword</p>")
    (tmp_path / "01_b.html").write_text("<p>common words everywhere</p>")
    (tmp_path / "index.html").write_text("<p>common words everywhere</p>")
    assert check.search_term(tmp_path) == ("unusualword", "00_a.html")


@pytest.mark.parametrize("text, found", [
    ("a price of $5 and $6", False),
    ("raw $x$ here", True),
    ("display $$x$$", True),
    (r"a \(x\) bracket", True),
    (r"\begin{align} x \end{align}", True),
    ("US$ 5", False),
])
def test_raw_tex_patterns(text, found):
    assert any(p.search(text) for p, _ in check.RAW_TEX) == found


# --- the two languages --------------------------------------------------------------------------------

PAGE = """<!doctype html><html lang="LANG"><head><meta charset="utf-8"><title>page</title></head><body>
<a class="btn posenc-language" href="SWITCH">OTHER</a><main><section id="one"><h1>Title</h1></section>SECTIONS</main></body></html>"""


def bilingual(root: Path, pages: dict[str, tuple[str, str, str]]) -> Path:
    """Pages under ``root``: path -> (lang, switch href, extra sections)."""
    for name, (lang, switch, sections) in pages.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(PAGE.replace("LANG", lang).replace("SWITCH", switch).replace("SECTIONS", sections)
                                 .replace("OTHER", "中文" if lang == "en" else "English"), encoding="utf-8")
    return root


def test_the_language_checks_pass_two_sites_that_link_each_page_to_its_twin(tmp_path):
    root = bilingual(tmp_path, {
        "index.html": ("en", "zh_CN/index.html", '<section id="two"></section>'),
        "api/mod.html": ("en", "../zh_CN/api/mod.html", ""),
        "zh_CN/index.html": ("zh-CN", "../index.html", '<section id="two"></section><section id="extra"></section>'),
        "zh_CN/api/mod.html": ("zh-CN", "../../api/mod.html", ""),
    })
    report = check.Report()
    assert check.check_languages(root, report) == {"en": 2, "zh": 2}
    assert report.problems == []


def test_the_language_checks_catch_a_missing_switch_a_wrong_target_a_lost_anchor_and_a_wrong_lang(tmp_path):
    root = bilingual(tmp_path, {
        "index.html": ("en", "zh_CN/index.html", '<section id="two"></section><dt id="term-RoPE">RoPE</dt>'),
        "glossary.html": ("en", "zh_CN/index.html", ""),  # points to another page
        "search.html": ("en", "zh_CN/search.html", ""),  # whose twin does not exist
        "zh_CN/index.html": ("en", "../index.html", ""),  # lang, and the anchors #two, #term-RoPE lost
        "zh_CN/glossary.html": ("zh-CN", "../glossary.html", ""),
    })
    (root / "zh_CN" / "glossary.html").write_text(
        (root / "zh_CN" / "glossary.html").read_text(encoding="utf-8").replace('<a class="btn posenc-language"', "<a"),
        encoding="utf-8")  # no switch
    report = check.Report()
    check.check_languages(root, report)
    assert sorted(report.problems) == sorted([
        "glossary.html: the language switch points to 'zh_CN/index.html', not to zh_CN/glossary.html",
        "search.html: the language switch points to zh_CN/search.html, which does not exist",
        "index.html: anchors missing from zh_CN/index.html: term-RoPE, two",
        "zh_CN/index.html: <html lang='en'> on a page of the zh site",
        "zh_CN/glossary.html: 0 language switches (one expected)",
    ])


NO_CJK_FONTS = """<?xml version="1.0"?><!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig><dir>/usr/share/fonts/truetype/dejavu</dir><cachedir>CACHE</cachedir></fontconfig>"""
CHINESE = """<!doctype html><html lang="zh-CN"><head><meta charset="utf-8"><link rel="stylesheet" href="posenc.css">
</head><body><article><p>旋转位置编码把查询和键旋转一个角度。</p></article></body></html>"""


@pytest.mark.skipif(not Path("/usr/share/fonts/truetype/dejavu").is_dir(), reason="needs Debian's DejaVu fonts")
def test_the_cjk_font_check_fails_where_no_font_has_chinese_characters(tmp_path):
    """Chromium with a font configuration that holds only DejaVu (no CJK font): Chinese text is drawn as
    missing-glyph boxes and the check says so; with the system's fonts (fonts-wqy-microhei) it passes."""
    from playwright.sync_api import sync_playwright

    (tmp_path / "page.html").write_text(CHINESE, encoding="utf-8")
    (tmp_path / "posenc.css").write_bytes((ROOT / "tools" / "site" / "_static" / "posenc.css").read_bytes())
    config = tmp_path / "fonts.conf"
    config.write_text(NO_CJK_FONTS.replace("CACHE", str(tmp_path / "cache")), encoding="utf-8")
    found = {}
    with sync_playwright() as pw:
        for label, env in (("none", {"FONTCONFIG_FILE": str(config)}), ("system", {})):
            import os

            browser = pw.chromium.launch(executable_path=str(check.CHROMIUM), args=check.CHROMIUM_FLAGS,
                                         headless=True, env={**os.environ, **env})
            try:
                page = browser.new_page()
                page.goto((tmp_path / "page.html").as_uri(), wait_until="load")
                report = check.Report()
                found[label] = (check.check_cjk_font(page, "page.html", report), report.problems)
            finally:
                browser.close()
    assert found["none"][1] and "Chinese text is not drawn with a CJK font" in found["none"][1][0], found
    assert found["system"][1] == [] and "WenQuanYi" in found["system"][0]["CJK font"], found

"""The browser check (tools/check_site.py) itself: it passes a clean page and catches each fault.

Each test opens small hand-written pages in headless Chromium (about 2 s per browser start).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import check_site as check

ROOT = Path(__file__).resolve().parent.parent


PNG_1PX = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9Q"
           "DwADhgGAWjR9awAAAABJRU5ErkJggg==")
CLEAN = f"""<!doctype html><html><head><meta charset="utf-8"><title>clean</title>
<style>@media print {{ pre {{ white-space: pre-wrap; overflow-wrap: anywhere; }} nav {{ display: none; }} }}</style></head>
<body><nav class="bd-sidebar-primary"><a href="other.html">other</a></nav><main>
<h1 id="top">A clean page</h1>
<p>Prose with a price of $5 and $6, a <a href="#top">link to an anchor</a>,
<a href="other.html#there">a link to another page</a> and <a href="https://example.org">one to the world</a>.</p>
<img src="{PNG_1PX}" alt="Figure: a single pixel">
<pre style="overflow-x: auto; width: 200px">a very long line of code that scrolls inside its own box instead of being cut off .......</pre>
<div class="cell tag_solution"><details><summary>Show the solution to exercise 1</summary>
<div class="cell_input"><pre>answer = 42</pre></div></details></div>
</main></body></html>
"""
OTHER = '<!doctype html><html><head><title>other</title></head><body><main><p id="there">here</p></main></body></html>'

BROKEN = """<!doctype html><html><head><meta charset="utf-8"><title>broken</title>
<script src="https://cdn.example.org/mathjax/tex-chtml.js"></script></head>
<body><nav class="bd-sidebar-primary"><a href="other.html">other</a></nav><main>
<p>A formula left as raw TeX: $x$ and a display $$y = x^2$$.</p>
<p><a href="missing.html">a broken link</a> and <a href="other.html#nowhere">a missing anchor</a>.</p>
<img src="no-such-figure.png" alt="no-such-figure.png">
<pre style="overflow: hidden; width: 200px">a very long line of code that is cut off at the edge of its box ...................</pre>
<div class="cell tag_solution"><details open><summary>Show solution</summary>
<div class="cell_input"><pre>answer = 42</pre></div></details></div>
<script>console.error("something went wrong")</script>
</main></body></html>
"""


STUCK = CLEAN.replace('<div class="cell tag_solution"><details>',
                      '<div class="cell tag_solution"><details ontoggle="this.open = false">')


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """One browser run over a clean page, a broken one and one whose solution does not open."""
    site = tmp_path_factory.mktemp("site")
    for name, text in [("clean.html", CLEAN), ("broken.html", BROKEN), ("stuck.html", STUCK), ("other.html", OTHER)]:
        (site / name).write_text(text, encoding="utf-8")
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
        "clipped at 1024 px: pre",
        "solution 1: open before any click",
        'solution 1: its fold does not name the exercise ("Show solution")',
        "navigation printed: bd-sidebar-primary",
        "code not wrapped in print: a very long line",
        "console error: something went wrong",
    ]
    missing = [e for e in expected if e not in text]
    assert not missing, f"the check missed {missing}; it reported:\n{text}"


def test_a_solution_that_does_not_open_is_caught(report):
    assert problems_of(report, "stuck.html") == ["solution 1: does not open on click"]


def test_the_search_check_fails_without_a_search_page(report):
    assert problems_of(report, "search.html") == ["the site has no search page"]


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

"""The static site (tools/build_html.py): offline pages, local MathJax, folded solutions, index and catalog.

Fast: notebooks are converted in memory, never executed. A synthetic notebook covers every rule;
the first real notebook, when there is one, is checked for network resources as well.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import nbformat
import pytest
from bs4 import BeautifulSoup
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

ROOT = Path(__file__).resolve().parent.parent
PLANNED = [
    "00_permutation_blindness", "01_sinusoidal", "02_learnable", "03_rope",
    "04_vision", "05_relative_biases", "06_length_extrapolation", "07_debugging",
]
PNG_1PX = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
NETWORK = re.compile(r"^\s*(https?:)?//", re.IGNORECASE)


def load_builder():
    spec = importlib.util.spec_from_file_location("build_html", ROOT / "tools" / "build_html.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


site = load_builder()


def external_resources(html: str) -> list[str]:
    """Everything in a page that a browser would fetch from the network (links in prose are not fetched)."""
    soup = BeautifulSoup(html, "html.parser")
    found = [tag["src"] for tag in soup.find_all(src=True) if NETWORK.match(tag["src"])]
    found += [tag["href"] for tag in soup.find_all("link", href=True) if NETWORK.match(tag["href"])]
    found += [tag["data"] for tag in soup.find_all("object", data=True) if NETWORK.match(tag["data"])]
    for style in [s.get_text() for s in soup.find_all("style")] + [t["style"] for t in soup.find_all(style=True)]:
        found += re.findall(r"@import[^;]*|url\(\s*['\"]?(?:https?:)?//[^)]*\)", style)
    for script in soup.find_all("script", src=False):
        found += re.findall(r"\bimport\s*\(\s*['\"](?:https?:)?//[^'\"]+", script.get_text())
    return found


def synthetic_notebook() -> nbformat.NotebookNode:
    nb = new_notebook()
    nb.cells = [
        new_markdown_cell("# 00 · Demo\n\nThe angle $\\theta_i = 10000^{-2i/d}$ and\n\n$$R_m q \\cdot R_n k$$\n\n"
                          "See [the paper](https://arxiv.org/abs/2104.09864), [notebook 01](01_next.ipynb#Formula) "
                          "and [its source](01_next.py)."),
        new_code_cell("print('ordinary')", execution_count=1,
                      outputs=[new_output("stream", name="stdout", text="ordinary output\n")]),
        new_code_cell("plot()", execution_count=2,
                      outputs=[new_output("display_data", data={"image/png": PNG_1PX, "text/plain": "<Figure>"})]),
        new_code_cell("table()", execution_count=3,
                      outputs=[new_output("execute_result", execution_count=3,
                                          data={"text/html": "<table><tr><td>1</td></tr></table>", "text/plain": "1"})]),
        new_markdown_cell("### Exercise 1\nCompute $\\theta_0$."),
        new_code_cell("answer = compute_theta(0)\ncheck_exercise_1(answer)", execution_count=4,
                      metadata={"tags": ["solution"]},
                      outputs=[new_output("stream", name="stdout", text="[passed] Exercise 1: SOLUTION OUTPUT\n")]),
    ]
    return nb


ENTRIES = [
    site.Entry("00_demo", "Demo", "A demo topic", "Do demo things"),
    site.Entry("01_next", "Next <one>", "Next topic", "Do next things"),
]


@pytest.fixture(scope="module")
def exporter():
    return site.make_exporter()


@pytest.fixture(scope="module")
def page(exporter) -> BeautifulSoup:
    return BeautifulSoup(site.render_page(exporter, synthetic_notebook(), ENTRIES[0], ENTRIES), "html.parser")


# --- offline ---------------------------------------------------------------------------------------


def test_page_loads_nothing_from_the_network(exporter):
    html = site.render_page(exporter, synthetic_notebook(), ENTRIES[0], ENTRIES)
    assert external_resources(html) == []
    assert 'href="https://arxiv.org/abs/2104.09864"' in html  # a link in prose is kept (it is not fetched)


def test_the_check_itself_catches_network_resources():
    html = ('<script src="https://cdn.example/x.js"></script><link rel="stylesheet" href="//cdn.example/a.css">'
            '<img src="http://example.org/a.png"><style>@import "x.css"; b {background: url(https://e.x/i.png)}</style>')
    assert len(external_resources(html)) == 5


def test_mathjax_is_local_and_its_menu_is_off(page):
    scripts = [s["src"] for s in page.find_all("script", src=True)]
    assert scripts == [site.MATHJAX_URL]
    assert not NETWORK.match(site.MATHJAX_URL) and not site.MATHJAX_URL.startswith("/")
    vendored = site.MATHJAX / Path(site.MATHJAX_URL).relative_to("mathjax")
    assert vendored.is_file()
    config = " ".join(s.get_text() for s in page.find_all("script", src=False))
    assert "window.MathJax" in config and "enableMenu: false" in config
    assert "require.js" not in str(page) and "requirejs" not in str(page)


def test_vendored_mathjax_is_3_2_2_with_its_fonts_and_license():
    js = (site.MATHJAX / "tex-chtml-full.js").read_text(encoding="utf-8")
    assert 'e.VERSION="3.2.2"' in js
    fonts = sorted(p.name for p in (site.MATHJAX / "output/chtml/fonts/woff-v2").glob("*.woff"))
    assert "MathJax_Main-Regular.woff" in fonts and "MathJax_Math-Italic.woff" in fonts and len(fonts) == 23
    assert "Apache License" in (site.MATHJAX / "LICENSE").read_text(encoding="utf-8")


def test_links_to_sibling_notebooks_point_at_their_pages(page):
    hrefs = [a["href"] for a in page.find_all("a")]
    assert "01_next.html#Formula" in hrefs and "01_next.py" in hrefs
    assert not [h for h in hrefs if h.endswith(".ipynb") or ".ipynb#" in h]


def test_math_is_left_for_mathjax_and_figures_are_embedded(page):
    text = str(page)
    assert "$\\theta_i = 10000^{-2i/d}$" in text and "$$R_m q \\cdot R_n k$$" in text
    images = [img["src"] for img in page.find_all("img")]
    assert images and all(src.startswith("data:image/png;base64,") for src in images)


# --- folded solutions -------------------------------------------------------------------------------


def test_solution_cell_is_folded_in_a_closed_details(page):
    details = page.find_all("details")
    assert len(details) == 1
    fold = details[0]
    assert not fold.has_attr("open")
    assert fold.find("summary").get_text(strip=True) == "Solution"
    folded_text = fold.get_text()
    assert "check_exercise_1" in folded_text  # the input ...
    assert "SOLUTION OUTPUT" in folded_text  # ... and its output
    # Nothing else is folded: the ordinary cell and the exercise statement stay visible.
    assert "ordinary output" not in folded_text and "ordinary output" in page.get_text()
    assert "Compute" not in folded_text


# --- navigation, index and catalog ------------------------------------------------------------------


def test_page_has_index_previous_next_navigation(exporter):
    middle = [ENTRIES[0], site.Entry("01_mid", "Mid", "t", "o"), site.Entry("02_end", "End", "t", "o")]
    soup = BeautifulSoup(site.render_page(exporter, synthetic_notebook(), middle[1], middle), "html.parser")
    nav = soup.find("nav")
    links = {a.get("rel", ["index"])[0]: a["href"] for a in nav.find_all("a")}
    assert links == {"prev": "00_demo.html", "index": "index.html", "next": "02_end.html"}
    assert soup.title.get_text() == "01 · Mid | posenc"
    first = BeautifulSoup(site.render_page(exporter, synthetic_notebook(), middle[0], middle), "html.parser")
    assert [a["href"] for a in first.find("nav").find_all("a")] == ["index.html", "01_mid.html"]


def test_index_page_lists_the_notebooks_with_run_times():
    soup = BeautifulSoup(site.index_html(ENTRIES, {"00_demo": 34.4, "01_next": 75.0}), "html.parser")
    assert external_resources(str(soup)) == []
    rows = soup.find("tbody").find_all("tr")
    assert [r.find("a")["href"] for r in rows] == ["00_demo.html", "01_next.html"]
    cells = [[td.get_text(" ", strip=True) for td in r.find_all("td")] for r in rows]
    assert cells[0] == ["00", "Demo A demo topic", "Do demo things", "34 s"]
    assert cells[1][1] == "Next <one> Next topic"  # escaped, shown as text
    assert cells[1][3] == "1 min 15 s"
    assert "not measured" in site.index_html(ENTRIES, {})


def test_markdown_table_matches_the_index():
    table = site.markdown_table(ENTRIES, {"00_demo": 9.6})
    assert table.splitlines() == [
        "| # | Notebook | You will be able to | Run time |",
        "|---|---|---|---:|",
        "| 00 | [Demo](notebooks/00_demo.ipynb): A demo topic | Do demo things | 10 s |",
        "| 01 | [Next <one>](notebooks/01_next.ipynb): Next topic | Do next things | not measured |",
    ]


def test_catalog_plans_the_eight_notebooks():
    catalog = site.load_catalog()
    assert [e.stem for e in catalog] == PLANNED
    links = [a["href"] for a in BeautifulSoup(site.index_html(catalog, {}), "html.parser").find("tbody").find_all("a")]
    assert links == [f"{stem}.html" for stem in PLANNED]


def test_every_notebook_is_in_the_catalog_under_its_own_title():
    entries = site.existing(site.load_catalog())
    assert [e.stem for e in entries] == sorted(p.stem for p in site.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    for entry in entries:
        nb = nbformat.read(site.NOTEBOOKS / f"{entry.stem}.ipynb", as_version=4)
        heading = next(c for c in nb.cells if c.cell_type == "markdown").source.splitlines()[0]
        assert heading == f"# {entry.label}", f"catalog title of {entry.stem} differs from its heading {heading!r}"


def test_uncatalogued_notebook_is_an_error(tmp_path):
    (tmp_path / "09_extra.ipynb").write_text("{}")
    with pytest.raises(ValueError, match=r"notebooks without an entry in catalog.toml: \['09_extra'\]"):
        site.existing(ENTRIES, tmp_path)


@pytest.mark.parametrize("text, message", [
    ('[[notebook]]\nstem = "00_a"\ntitle = "A"\ntopic = "t"\n', r"notebook #0 must have exactly"),
    ('[[notebook]]\nstem = "0_a"\ntitle = "A"\ntopic = "t"\noutcome = "o"\n', r"stem must look like '01_sinusoidal', got '0_a'"),
    ('[[notebook]]\nstem = "01_a"\ntitle = "A"\ntopic = "t"\noutcome = "o"\n'
     '[[notebook]]\nstem = "00_b"\ntitle = "B"\ntopic = "t"\noutcome = "o"\n', r"stems must be unique and in order"),
    ('title = "no notebooks"\n', r"expected one or more \[\[notebook\]\] tables"),
])
def test_bad_catalog_is_rejected(tmp_path, text, message):
    path = tmp_path / "catalog.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        site.load_catalog(path)


def test_first_real_notebook_renders_offline(exporter):
    """Real outputs (figures, tables, progress bars) rendered with the site's template load nothing remote."""
    paths = sorted(site.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    assert paths, "no notebooks/[0-9][0-9]_*.ipynb to render (tests/test_notebooks.py reports this too)"
    entries = site.existing(site.load_catalog())
    nb = nbformat.read(paths[0], as_version=4)
    html = site.render_page(exporter, nb, entries[0], entries)
    assert external_resources(html) == []
    soup = BeautifulSoup(html, "html.parser")
    solutions = [c for c in nb.cells if "solution" in c.metadata.get("tags", [])]
    assert len(soup.find_all("details", class_="posenc-solution")) == len(solutions)

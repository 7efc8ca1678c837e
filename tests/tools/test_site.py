"""The course site: Sphinx + myst-nb + sphinx-book-theme, staged and rendered by tools/build_site.py.

- The catalog (notebooks/catalog.toml) and the project's glue (tools/site/posenc_site.py: folded
  solutions, figure alt text, anchors, run time and downloads, glossary links), on synthetic input.
- A synthetic site written to the series' conventions is rendered: what each page must contain,
  and that a broken link or anchor between notebooks fails the build.
- The real site, rendered from the committed notebooks with execution off (as `make html` renders
  after executing), is opened page by page in headless Chromium by tools/check_site.py; the
  screenshots go to build/site-check/.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import nbformat
import pytest
from bs4 import BeautifulSoup
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from tools import build_site, catalog, check_site, record_run_times
from tools.i18n_common import ENGLISH_LABEL
from tools.site import posenc_site as glue

ROOT = Path(__file__).resolve().parents[2]
PLANNED = [
    "00_permutation_blindness", "01_sinusoidal", "02_learnable", "03_rope",
    "04_vision", "05_relative_biases", "06_length_extrapolation", "07_debugging", "08_todays_models",
]
PNG_1PX = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
NETWORK = re.compile(r"^\s*(https?:)?//", re.IGNORECASE)
# The theme and myst-parser use Sphinx APIs that Sphinx 11 will remove; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated. Check CHANGES for Sphinx API modifications")


def external_resources(html: str) -> list[str]:
    """Everything in a page that a browser would fetch from the network (links in prose are not fetched)."""
    soup = BeautifulSoup(html, "html.parser")
    found = [tag["src"] for tag in soup.find_all(src=True) if NETWORK.match(tag["src"])]
    found += [tag["href"] for tag in soup.find_all("link", href=True) if NETWORK.match(tag["href"])]
    for style in [s.get_text() for s in soup.find_all("style")] + [t["style"] for t in soup.find_all(style=True)]:
        found += re.findall(r"url\(\s*['\"]?(?:https?:)?//[^)]*\)", style)
    return found


# --- the catalog ------------------------------------------------------------------------------------


def test_catalog_plans_the_nine_notebooks():
    assert [e.stem for e in catalog.load_catalog()] == PLANNED


def test_every_notebook_is_in_the_catalog_under_its_own_title():
    entries = catalog.existing(catalog.load_catalog())
    assert [e.stem for e in entries] == sorted(p.stem for p in catalog.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    for entry in entries:
        nb = nbformat.read(catalog.NOTEBOOKS / f"{entry.stem}.ipynb", as_version=4)
        heading = next(c for c in nb.cells if c.cell_type == "markdown").source.splitlines()[0]
        assert heading == f"# {entry.label}", f"catalog title of {entry.stem} differs from its heading {heading!r}"
        assert entry.run_time_s, f"{entry.stem} exists but has no measured run_time_s in catalog.toml"


def test_uncatalogued_notebook_is_an_error(tmp_path):
    (tmp_path / "09_extra.ipynb").write_text("{}")
    with pytest.raises(ValueError, match=r"notebooks without an entry in catalog.toml: \['09_extra'\]"):
        catalog.existing([catalog.Entry("00_demo", "Demo", "t", "o")], tmp_path)


@pytest.mark.parametrize("text, message", [
    ('[[notebook]]\nstem = "00_a"\ntitle = "A"\ntopic = "t"\n', r"notebook #0 must have exactly"),
    ('[[notebook]]\nstem = "0_a"\ntitle = "A"\ntopic = "t"\noutcome = "o"\n', r"stem must look like '01_sinusoidal', got '0_a'"),
    ('[[notebook]]\nstem = "01_a"\ntitle = "A"\ntopic = "t"\noutcome = "o"\n'
     '[[notebook]]\nstem = "00_b"\ntitle = "B"\ntopic = "t"\noutcome = "o"\n', r"stems must be unique and in order"),
    ('[[notebook]]\nstem = "00_a"\ntitle = "A"\ntopic = "t"\noutcome = "o"\nrun_time_s = 1.5\n', r"run_time_s must be a positive int"),
    ('title = "no notebooks"\n', r"expected one or more \[\[notebook\]\] tables"),
])
def test_bad_catalog_is_rejected(tmp_path, text, message):
    path = tmp_path / "catalog.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        catalog.load_catalog(path)


def test_run_times_are_formatted():
    assert [catalog.format_seconds(s) for s in (None, 9.6, 34, 75)] == ["not measured yet", "10 s", "34 s", "1 min 15 s"]


def test_markdown_table_for_the_readme():
    entries = [catalog.Entry("00_demo", "Demo", "A demo topic", "Do demo things", 12),
               catalog.Entry("01_next", "Next", "Next topic", "Do next things")]
    assert build_site.markdown_table(entries).splitlines() == [
        "| # | Notebook | You will be able to | Run time |",
        "|---|---|---|---:|",
        "| 00 | [Demo](notebooks/00_demo.ipynb): a demo topic | Do demo things | 12 s |",
        "| 01 | [Next](notebooks/01_next.ipynb): next topic | Do next things | not measured yet |",
    ]


def test_readme_table_and_headers_agree_with_the_catalog(capsys):
    # catalog.toml's run_time_s is the one record; README's table and each notebook header are copies of it
    status = record_run_times.main(["--check"])
    assert status == 0, f"run `python tools/record_run_times.py`: {capsys.readouterr().err}"


def test_catalog_time_is_set_after_the_outcome_line():
    text = '[[notebook]]\nstem = "00_a"\noutcome = "x"\n\n[[notebook]]\nstem = "01_b"\noutcome = "y"\nrun_time_s = 5\n'
    text = record_run_times.set_catalog_time(text, "00_a", 12)
    text = record_run_times.set_catalog_time(text, "01_b", 7)
    assert text == '[[notebook]]\nstem = "00_a"\noutcome = "x"\nrun_time_s = 12\n\n[[notebook]]\nstem = "01_b"\noutcome = "y"\nrun_time_s = 7\n'


def test_measured_times_enter_the_catalog_only_when_asked(tmp_path, monkeypatch):
    """A loaded machine's build/timings.json must not become the record by accident: the script reads it
    only with --from-timings, and says so when it is missing."""
    copy = tmp_path / "catalog.toml"
    copy.write_text(catalog.CATALOG.read_text(encoding="utf-8"), encoding="utf-8")
    timings = tmp_path / "timings.json"
    timings.write_text('{"00_permutation_blindness": 999.2}')
    monkeypatch.setattr(record_run_times, "CATALOG", copy)
    monkeypatch.setattr(record_run_times, "TIMINGS", timings)
    assert record_run_times.main([]) == 0 and copy.read_text(encoding="utf-8") == catalog.CATALOG.read_text(
        encoding="utf-8")  # the headers and README already agree with the real catalog: nothing written
    assert record_run_times.main(["--from-timings"]) == 0
    assert "run_time_s = 1000" in copy.read_text(encoding="utf-8")
    monkeypatch.setattr(record_run_times, "TIMINGS", tmp_path / "missing.json")
    assert record_run_times.main(["--from-timings"]) == 1


# --- the glue, on synthetic cells ---------------------------------------------------------------------


def test_solutions_fold_and_stubs_do_not():
    nb = new_notebook(cells=[
        new_code_cell("def f():\n    raise NotImplementedError\n\ncheck_exercise_1(f)", metadata={"tags": ["exercise"]}),
        new_code_cell("# Exercise 1\ndef f():\n    return 1\n\ncheck_exercise_1(f)",
                      metadata={"tags": ["solution"], "jupyter": {"source_hidden": True}}),
    ])
    stub, anchor, solution = glue.prepare(nb).cells  # the anchor an exercise's link points at (link_solutions)
    assert anchor.source == '<div class="posenc-solution-anchor" id="solution-1"></div>'
    assert stub.metadata["tags"] == ["exercise"]
    assert solution.metadata["tags"] == ["solution", "hide-cell"]
    assert solution.metadata["mystnb"]["code_prompt_show"] == "Show the solution to exercise 1"


def test_a_solution_is_numbered_by_the_checker_it_calls():
    nb = new_notebook(cells=[new_code_cell("x = 2\ncheck_exercise_3(x)", metadata={"tags": ["solution"]})])
    anchor, solution = glue.prepare(nb).cells
    assert solution.metadata["mystnb"]["code_prompt_show"] == "Show the solution to exercise 3"
    assert 'id="solution-3"' in anchor.source


def test_a_solution_that_does_not_name_its_exercise_is_an_error():
    nb = new_notebook(cells=[new_code_cell("def f():\n    return 1", metadata={"tags": ["solution"]})])
    with pytest.raises(ValueError, match="must start with the comment '# Exercise N' or call check_exercise_N"):
        glue.prepare(nb)


def test_deep_dive_block_folds_into_one_details_element():
    dive = {"tags": ["deep-dive"], "jp-MarkdownHeadingCollapsed": True}
    nb = new_notebook(cells=[
        new_markdown_cell("Main line."),
        new_markdown_cell("### Deep dive (optional) · Folding the bias\n\nWhy it works.", metadata=dive),
        new_code_cell("x = 1", metadata={"tags": ["deep-dive", "nbval-check-output"]}),
        new_markdown_cell("## 3 · Next section"),
    ])
    cells = glue.prepare(nb).cells
    assert [c.cell_type for c in cells] == ["markdown", "markdown", "code", "markdown", "markdown"]
    assert cells[1].source.startswith('<details class="deep-dive">\n<summary>Deep dive (optional) · Folding the bias</summary>')
    assert "Why it works." in cells[1].source and "###" not in cells[1].source
    assert cells[3].source == "</details>" and cells[4].source == "## 3 · Next section"


def test_deep_dive_summary_typesets_its_math():
    assert glue.summary_html("Deep dive (optional) · $L^2$ pairs & more") == \
        'Deep dive (optional) · <span class="math notranslate nohighlight">\\(L^2\\)</span> pairs &amp; more'


def test_deep_dive_block_without_its_heading_is_an_error():
    nb = new_notebook(cells=[new_code_cell("x = 1", metadata={"tags": ["deep-dive"]})])
    with pytest.raises(ValueError, match="must start with a markdown cell headed"):
        glue.prepare(nb)


@pytest.mark.parametrize("source, heading, alt", [
    ('line_plot(ax, x, ys, title="Error vs position (d = 64)", xlabel="p")\nplt.show()', None,
     "Figure: Error vs position (d = 64)"),
    ('ax1.set_title("Left")\nfig.suptitle(f"All {n} runs")\nax2.set_title("Right")', None,
     "Figure: Left; All … runs; Right"),
    ('ax.plot(x, y, title=r"Angle $\\theta$ = 0.4 rad")', None, "Figure: Angle theta = 0.4 rad"),
    ("# The learned table\nfor ax, t in zip(axes, titles):\n    heatmap(ax, t, name)", "3 · What the table learns",
     "Figure in section “3 · What the table learns”: The learned table"),
    ("heatmap(ax, table, name)", None, "Figure in this notebook"),
])
def test_figure_alt_text(source, heading, alt):
    assert glue.figure_alt(source, heading) == alt


def test_every_figure_cell_gets_an_alt_text():
    nb = new_notebook(cells=[
        new_markdown_cell("## 2 · The table"),
        new_code_cell("heatmap(ax, table, name)", outputs=[new_output(
            "display_data", data={"image/png": PNG_1PX, "text/plain": "<Figure size 600x400 with 1 Axes>"})]),
        new_code_cell("print(1)", outputs=[new_output("stream", name="stdout", text="1\n")]),
    ])
    figure, text = glue.prepare(nb).cells[1:]
    assert figure.metadata["mystnb"]["image"]["alt"] == "Figure in section “2 · The table”"
    assert "image" not in text.metadata.get("mystnb", {})


def test_explorer_calls_are_found_in_a_cells_code():
    assert glue.explorer_calls("x = 1\nrope_explorer()\nsinusoidal_explorer(interactive=False)") == ["rope", "sinusoidal"]
    assert glue.explorer_calls("f = rope_explorer") == [] and glue.explorer_calls("def broken(:") == []


def test_an_explorer_cell_gets_a_container_after_its_static_figure():
    figure = new_output("display_data", data={"image/png": PNG_1PX, "text/plain": "<Figure size 1125x960 with 2 Axes>"})
    nb = new_notebook(cells=[new_code_cell("context_explorer()", outputs=[figure]),
                             new_code_cell("context_explorer()")])  # not executed: nothing to put a drawing beside
    shown, empty = glue.prepare(nb).cells
    assert [o.output_type for o in shown.outputs] == ["display_data", "display_data"]
    assert shown.outputs[1].data == {"text/html": '<div class="posenc-explorer" data-explorer="context" hidden></div>'}
    assert shown.metadata["mystnb"]["image"]["alt"] == "Figure: Context extension: method = YaRN, factor s = ×8"
    assert empty.outputs == []


def test_jupyterlab_anchors_become_site_anchors(monkeypatch):
    monkeypatch.setitem(glue._HEADINGS, "01_next", {"1-·-The-formula": "1--the-formula"})
    nb = new_notebook(cells=[new_markdown_cell(
        "## 2 · Here\n\nSee [the formula](01_next.ipynb#1-·-The-formula), [above](#2-·-Here), "
        "[as written](01_next.ipynb#1--the-formula) and [a page](01_next.ipynb).")])
    text = glue.prepare(nb).cells[0].source
    assert "(01_next.ipynb#1--the-formula)" in text and "(#2--here)" in text
    assert text.count("01_next.ipynb#1--the-formula") == 2 and "(01_next.ipynb)" in text


def test_glossary_terms_are_english_and_chinese():
    terms = glue.load_glossary()
    assert len(terms) >= 30
    assert len({t["en"] for t in terms}) == len(terms)
    for term in terms:
        assert re.search(r"[\u4e00-\u9fff]", term["zh"]), f"{term['en']}: no Chinese in {term['zh']!r}"
        assert term["definition"].endswith(".")


@pytest.mark.parametrize("phrases, text, hit", [
    (["RoPE"], "rope and RoPE", "RoPE"),
    (["RoPE"], "ropes", None),
    (["attention"], "Self-Attention? no: Attention!", "Attention"),
    (["causal mask", "causal"], "a causal mask here", "causal mask"),
    (["token", "tokens"], "tokenizer", None),
])
def test_glossary_patterns(phrases, text, hit):
    m = glue._pattern(phrases).search(text)
    assert (m[0] if m else None) == hit


# --- the Chinese site's own pieces, on synthetic input --------------------------------------------------


@pytest.mark.parametrize("phrases, text, hit", [
    (["RoPE"], "用RoPE的模型", "RoPE"),  # CJK characters are \w: English's bounds would never match here
    (["RoPE"], "RoPEs 与 xRoPE", None),  # Latin letters still bound a Latin phrase
    (["旋转", "旋转位置编码"], "这是旋转位置编码的例子", "旋转位置编码"),  # longest first
    (["KV 缓存"], "使用KV缓存时", "KV缓存"),  # a space beside a CJK character: any space or none
    (["vision transformer"], "a Vision  Transformer here", "Vision  Transformer"),
    (["token", "tokens"], "tokenizer 与 词元", None),
    (["长度外推"], "不能外推", None),
])
def test_chinese_glossary_patterns(phrases, text, hit):
    m = glue.zh_pattern(phrases).search(text)
    assert (m[0] if m else None) == hit


def test_chinese_term_phrases_come_from_the_terminology_table_and_the_glossary(tmp_path):
    table = tmp_path / "terminology.toml"
    table.write_text('[[rule]]\nterm = "Checkpoint"\nen = ["checkpoint"]\nzh = ["检查点", "权重"]\n\n'
                     '[[rule]]\nterm = "Query, key, value"\nen = ["query"]\nzh = ["查询", "Q"]\n\n'
                     '[[rule]]\nterm = "Query, key, value"\nen = ["keys only"]\nzh = ["键集合"]\n', encoding="utf-8")
    terms = {t["en"]: t for t in glue.load_glossary()}
    forms = glue.terminology_forms(table)
    assert forms == {"Checkpoint": ["检查点", "权重"], "Query, key, value": ["查询", "Q"]}  # a rule off the glossary's match: not used
    # 权重 (weights) has other senses; 键, 值 alone and the Latin Q would match everywhere
    assert glue.term_phrases(terms["Checkpoint"], "zh_CN", forms) == ["checkpoint", "checkpoints", "检查点", "模型权重文件"]
    assert glue.term_phrases(terms["Query, key, value"], "zh_CN", forms) == ["query", "queries", "查询"]
    assert glue.term_phrases(terms["Query, key, value"], "en", forms) == ["query", "queries"]
    words = glue.search_words(ROOT / "locale" / "zh_CN" / "terminology.toml")
    assert {"旋转位置编码", "位置编码", "长度外推", "外推", "交错排列"} <= set(words) and "KV 缓存" not in words
    assert words == sorted(words, key=lambda w: (-len(w), w))


def test_the_language_switch_links_the_same_page_of_the_other_site():
    assert glue.switch_href("03_rope", "zh_CN/") == "zh_CN/03_rope.html"
    assert glue.switch_href("03_rope", "../") == "../03_rope.html"
    assert glue.switch_href("api/posenc_lib.rotary.rope", "zh_CN/") == "../zh_CN/api/posenc_lib.rotary.rope.html"
    assert glue.switch_href("api/posenc_lib.rotary.rope", "../") == "../../api/posenc_lib.rotary.rope.html"


def test_the_sites_own_words_in_each_language():
    assert glue.ui("download", "en") == "Download: " and glue.ui("download", "zh_CN") == "下载："
    assert glue.ui("show_solution", "zh_CN", n=2) == "显示练习 2 的答案"
    assert glue.ui("show_solution", "fr", n=2) == "Show the solution to exercise 2"  # no table: English
    assert set(glue.UI["zh_CN"]) == set(glue.UI["en"])


CATALOG_PO = """msgid ""
msgstr ""
"Content-Type: text/plain; charset=utf-8\\n"

msgid "Deep dive (optional) · Under the hood"
msgstr "深入阅读（选读）· 底层细节"

msgid "Optional detail."
msgstr "选读的细节：长度外推。"

#, fuzzy
msgid "Intro."
msgstr "引言（待审）。"

msgid "Text."
msgstr ""

msgid "## 1. Numbered"
msgstr "1. 编号的标题"
"""


def test_catalogs_keep_translated_entries_only_and_the_page_first(tmp_path, monkeypatch):
    (tmp_path / "source").mkdir()
    (tmp_path / "00_demo.po").write_text(CATALOG_PO, encoding="utf-8")
    (tmp_path / "source" / "00_demo.po").write_text(CATALOG_PO.replace("底层细节", "别的译法"), encoding="utf-8")
    catalogs = glue.load_catalogs(tmp_path)
    assert set(catalogs) == {"00_demo", "source/00_demo"}
    assert "Intro." not in catalogs["00_demo"] and "Text." not in catalogs["00_demo"]  # fuzzy, empty
    monkeypatch.setattr(glue, "_CATALOGS", catalogs)
    assert glue.translate("Deep dive (optional) · Under the hood", "source/00_demo") == "深入阅读（选读）· 别的译法"
    assert glue.translate("Deep dive  (optional) · Under the hood", "01_other") == "深入阅读（选读）· 底层细节"
    assert glue.translate("Not in any catalog.") == "Not in any catalog."
    monkeypatch.setattr(glue, "_CATALOGS", {})
    assert glue.translate("Optional detail.", "00_demo") == "Optional detail."  # an English build


def test_a_translation_that_starts_like_a_list_is_escaped_in_the_staged_catalogs(tmp_path):
    from babel.messages.pofile import read_po

    (tmp_path / "locale" / "zh_CN" / "LC_MESSAGES").mkdir(parents=True)
    (tmp_path / "locale" / "zh_CN" / "LC_MESSAGES" / "00_demo.po").write_text(CATALOG_PO, encoding="utf-8")
    (tmp_path / "locale" / "zh_CN" / "LC_MESSAGES" / "00_demo.mo").write_bytes(b"stale")
    assert build_site.stage_catalogs(tmp_path / "locale", tmp_path / "staged") == 1
    staged = tmp_path / "staged" / "zh_CN" / "LC_MESSAGES"
    assert not (staged / "00_demo.mo").exists()
    with open(staged / "00_demo.po", "rb") as f:
        messages = {m.id: m.string for m in read_po(f) if m.id}
    assert messages["## 1. Numbered"] == "1\\. 编号的标题" and messages["Optional detail."] == "选读的细节：长度外推。"


# --- a synthetic site, rendered ---------------------------------------------------------------------


CATALOG = """
[[notebook]]
stem = "00_demo"
title = "Demo"
topic = "A demo topic"
outcome = "Do demo things"
run_time_s = 34

[[notebook]]
stem = "01_next"
title = "Next"
topic = "Next topic"
outcome = "Do next things"
run_time_s = 75

[[notebook]]
stem = "02_later"
title = "Later"
topic = "A planned notebook"
outcome = "Nothing yet"
"""


def demo_notebook(link: str = "01_next.ipynb#1-·-The-formula") -> nbformat.NotebookNode:
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [
        new_markdown_cell("# 00 · Demo\n\nHow RoPE rotates: the angle $\\theta_i = 10000^{-2i/d}$ and\n\n"
                          "$$R_m q \\cdot R_n k$$\n\n"
                          f"See [the formula]({link}), [the planned one](02_later.ipynb), "
                          "[the paper](https://arxiv.org/abs/2104.09864). RoPE again."),
        new_code_cell("print('ordinary')", execution_count=1,
                      outputs=[new_output("stream", name="stdout", text="ordinary output\n"),
                               new_output("stream", name="stderr", text="train: 100%|##########| 200/200\n")]),
        new_code_cell("line_plot(ax, x, ys, title='Demo curve')\nplt.show()", execution_count=2,
                      outputs=[new_output("display_data", data={"image/png": PNG_1PX,
                                                                "text/plain": "<Figure size 600x400 with 1 Axes>"})]),
        new_markdown_cell("### Deep dive (optional) · Under the hood\n\nOptional detail.",
                          metadata={"tags": ["deep-dive"], "jp-MarkdownHeadingCollapsed": True}),
        new_code_cell("print('deep')", execution_count=3, metadata={"tags": ["deep-dive"]},
                      outputs=[new_output("stream", name="stdout", text="DEEP DIVE OUTPUT\n")]),
        new_markdown_cell("## Exercises\n\n**Exercise 1.** Compute it."),
        new_code_cell("def answer():\n    raise NotImplementedError  # your code here\n\n\ncheck_exercise_1(answer)",
                      execution_count=3, metadata={"tags": ["exercise"]},
                      outputs=[new_output("stream", name="stdout", text="[to do] Exercise 1: STUB OUTPUT\n")]),
        new_markdown_cell("## Solutions"),
        new_code_cell("# Exercise 1\ndef answer():\n    return 42\n\n\ncheck_exercise_1(answer)", execution_count=4,
                      metadata={"tags": ["solution"], "jupyter": {"source_hidden": True}},
                      outputs=[new_output("stream", name="stdout", text="[passed] Exercise 1: SOLUTION OUTPUT\n")]),
    ]
    return nb


def next_notebook() -> nbformat.NotebookNode:
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [new_markdown_cell("# 01 · Next\n\nIntro.\n\n## 1 · The formula\n\nText."),
                new_code_cell("x = 1", execution_count=1)]
    return nb


def render_synthetic(tmp_path: Path, demo: nbformat.NotebookNode) -> Path:
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    (notebooks / "catalog.toml").write_text(CATALOG, encoding="utf-8")
    nbformat.write(demo, notebooks / "00_demo.ipynb")
    nbformat.write(next_notebook(), notebooks / "01_next.ipynb")
    (notebooks / "00_demo.py").write_text("# %% [markdown]\n# # 00 · Demo\n", encoding="utf-8")
    build_site.stage(tmp_path / "src", notebooks, notebooks, notebooks / "catalog.toml", api=False)
    build_site.render(tmp_path / "src", tmp_path / "html")
    return tmp_path / "html"


@pytest.fixture(scope="module")
def synthetic_site(tmp_path_factory) -> Path:
    return render_synthetic(tmp_path_factory.mktemp("site"), demo_notebook())


def page(site: Path, name: str) -> BeautifulSoup:
    return BeautifulSoup((site / name).read_text(encoding="utf-8"), "html.parser")


def test_pages_load_nothing_from_the_network(synthetic_site):
    for path in synthetic_site.glob("*.html"):
        assert external_resources(path.read_text(encoding="utf-8")) == [], path.name
    assert not list(synthetic_site.rglob("*.map"))


def test_mathjax_is_served_from_the_site_with_its_menu_off(synthetic_site):
    soup = page(synthetic_site, "00_demo.html")
    scripts = [s["src"] for s in soup.find_all("script", src=True)]
    mathjax = [s for s in scripts if "mathjax" in s.lower()]
    assert len(mathjax) == 1 and mathjax[0].split("?")[0] == "_static/mathjax/tex-chtml-full.js"
    assert (synthetic_site / "_static/mathjax/tex-chtml-full.js").is_file()
    assert (synthetic_site / "_static/mathjax/output/chtml/fonts/woff-v2/MathJax_Main-Regular.woff").is_file()
    assert '"enableMenu": false' in " ".join(s.get_text() for s in soup.find_all("script", src=False))


def test_vendored_mathjax_is_the_recorded_files_unmodified():
    """tools/vendor/mathjax holds exactly the files its SHA256SUMS lists (npm's mathjax@3.2.2, README.md there),
    byte for byte: the fonts the script loads and the license among them."""
    mathjax = ROOT / "tools" / "vendor" / "mathjax"
    lines = (mathjax / "SHA256SUMS").read_text(encoding="utf-8").splitlines()
    recorded = {name: digest for digest, name in (line.split(maxsplit=1) for line in lines)}
    present = {p.relative_to(mathjax).as_posix() for p in mathjax.rglob("*") if p.is_file()} - {"README.md", "SHA256SUMS"}
    assert present == set(recorded), f"files not in SHA256SUMS: {present - set(recorded)}; missing: {set(recorded) - present}"
    changed = [name for name, digest in recorded.items()
               if hashlib.sha256((mathjax / name).read_bytes()).hexdigest() != digest]
    assert not changed, f"vendored files differ from SHA256SUMS: {changed}"
    assert {"LICENSE", "tex-chtml-full.js", "output/chtml/fonts/woff-v2/MathJax_Main-Regular.woff"} <= set(recorded)


def test_solution_folded_stub_shown(synthetic_site):
    soup = page(synthetic_site, "00_demo.html")
    solution = soup.select_one("div.cell.tag_solution")
    fold = solution.find("details")
    assert fold is not None and not fold.has_attr("open")
    assert "Show the solution to exercise 1" in fold.find("summary").get_text()
    assert "SOLUTION OUTPUT" in fold.get_text()  # the input and its output both folded
    stub = soup.select_one("div.cell.tag_exercise")
    assert stub.find("details") is None and "STUB OUTPUT" in stub.get_text()


def test_deep_dive_is_folded_closed_and_not_a_section(synthetic_site):
    soup = page(synthetic_site, "00_demo.html")
    fold = soup.select_one("details.deep-dive")
    assert fold is not None and not fold.has_attr("open")
    assert fold.find("summary").get_text(strip=True) == "Deep dive (optional) · Under the hood"
    assert "Optional detail." in fold.get_text() and "DEEP DIVE OUTPUT" in fold.get_text()
    assert "Exercises" not in fold.get_text()  # the fold ends where the block ends
    assert not soup.find(id=re.compile("deep-dive"))  # no heading, so no anchor and no contents entry


def test_page_facts_are_the_downloads_and_the_run_time_is_stated_once(synthetic_site):
    soup = page(synthetic_site, "00_demo.html")
    facts = soup.select_one("p.posenc-page-facts")
    assert facts.get_text().startswith("Download:") and "34 s" not in facts.get_text()  # the notebook states it
    links = [a["href"] for a in facts.find_all("a")]
    # the .py opens as a page (highlighted, with its own download link), not as a download
    assert links == ["_sources/00_demo.ipynb", "source/00_demo.html"]
    assert all((synthetic_site / href).is_file() for href in links)
    py = [a["href"] for a in page(synthetic_site, "source/00_demo.html").select("a[href$='.py']")]
    assert len(py) == 1 and (synthetic_site / "source" / py[0]).resolve().read_bytes() == \
        (synthetic_site.parent / "notebooks" / "00_demo.py").read_bytes()
    no_py = [a["href"] for a in page(synthetic_site, "01_next.html").select("p.posenc-page-facts a")]
    assert no_py == ["_sources/01_next.ipynb"]  # no .py beside it, no link
    src = synthetic_site.parent / "notebooks" / "00_demo.ipynb"
    assert (synthetic_site / "_sources" / "00_demo.ipynb").read_bytes() == src.read_bytes()  # as executed


def test_links_between_notebooks_are_site_links(synthetic_site):
    hrefs = [a["href"] for a in page(synthetic_site, "00_demo.html").select("article a[href]")]
    assert "01_next.html#the-formula" in hrefs  # written with JupyterLab's anchor
    assert "02_later.html" in hrefs and (synthetic_site / "02_later.html").is_file()  # planned: a placeholder
    assert "https://arxiv.org/abs/2104.09864" in hrefs
    assert not [h for h in hrefs if ".ipynb" in h and not h.startswith(("downloads/", "_sources/"))]
    assert "Planned" in page(synthetic_site, "02_later.html").get_text()


def test_glossary_links_the_first_occurrence_only(synthetic_site):
    soup = page(synthetic_site, "00_demo.html")
    rope = [a for a in soup.select("a.posenc-term") if a.get_text() == "RoPE"]
    assert len(rope) == 1 and rope[0]["href"].startswith("glossary.html#term-")
    anchor = rope[0]["href"].split("#")[1]
    glossary = page(synthetic_site, "glossary.html")
    assert glossary.find(id=anchor) is not None
    assert "旋转位置编码" in glossary.get_text()
    assert not soup.select("h1 a.posenc-term, pre a.posenc-term")  # headings and code are left alone


def test_figures_have_alt_text_and_stderr_is_plain_output(synthetic_site):
    soup = page(synthetic_site, "00_demo.html")
    assert [img["alt"] for img in soup.select("article img")] == ["Figure: Demo curve"]
    css = (synthetic_site / "_static" / "posenc.css").read_text(encoding="utf-8")
    assert ".output.stderr" in css and "@media print" in css


def test_index_lists_the_existing_notebooks_with_run_times(synthetic_site):
    soup = page(synthetic_site, "index.html")
    rows = soup.select("article table tbody tr")
    cells = [[td.get_text(" ", strip=True) for td in row.find_all("td")] for row in rows]
    assert cells == [["00", "Demo", "A demo topic", "Do demo things", "34 s"],
                     ["01", "Next", "Next topic", "Do next things", "1 min 15 s"]]
    assert [a["href"] for a in soup.select("article table tbody a")] == ["00_demo.html", "01_next.html"]
    assert "02 · Later" in soup.get_text()  # named as planned, not linked
    sidebar = [a.get_text(strip=True) for a in soup.select("nav.bd-links a")]
    assert sidebar[1:4] == ["00 · Demo", "01 · Next", "Glossary · 术语表"] and "02 · Later" not in sidebar


def test_index_says_where_to_start_and_names_the_source_article(synthetic_site):
    soup = page(synthetic_site, "index.html")
    start = next(p for p in soup.select("article p") if p.get_text().startswith("Start here"))
    assert start.find("a")["href"] == "00_demo.html" and "00 · Demo" in start.get_text()
    assert "《Transformer位置编码原理与实现：从正弦编码到RoPE》" in soup.get_text()


@pytest.mark.parametrize("link, message", [
    ("09_missing.ipynb", "cross-reference target not found: '09_missing.ipynb'"),
    ("01_next.ipynb#no-such-heading", "local id not found in doc '01_next': 'no-such-heading'"),
])
def test_a_broken_internal_link_fails_the_build(tmp_path, link, message):
    with pytest.raises(RuntimeError, match=re.escape(message)):
        render_synthetic(tmp_path, demo_notebook(link))


# --- a synthetic site in English and Chinese ----------------------------------------------------------


@pytest.fixture(scope="module")
def bilingual_site(tmp_path_factory) -> Path:
    """The synthetic site rendered as `make html` renders the course: English, and Chinese in zh_CN/ from a
    small catalog of 00_demo (its deep dive's heading and text translated, the rest left in English)."""
    tmp_path = tmp_path_factory.mktemp("bilingual")
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    (notebooks / "catalog.toml").write_text(CATALOG, encoding="utf-8")
    nbformat.write(demo_notebook(), notebooks / "00_demo.ipynb")
    nbformat.write(next_notebook(), notebooks / "01_next.ipynb")
    (notebooks / "00_demo.py").write_text("# %% [markdown]\n# # 00 · Demo\n", encoding="utf-8")
    messages = tmp_path / "locale" / "zh_CN" / "LC_MESSAGES"
    messages.mkdir(parents=True)
    (messages / "00_demo.po").write_text(CATALOG_PO, encoding="utf-8")
    (messages.parent / "terminology.toml").write_bytes((ROOT / "locale/zh_CN/terminology.toml").read_bytes())
    build_site.stage(tmp_path / "src", notebooks, notebooks, notebooks / "catalog.toml", api=False,
                     locale=tmp_path / "locale")
    build_site.render_languages(tmp_path / "src", tmp_path / "html")
    return tmp_path / "html"


def test_both_languages_render_side_by_side_each_page_linking_the_other(bilingual_site):
    english = sorted(p.relative_to(bilingual_site) for p in bilingual_site.rglob("*.html")
                     if p.relative_to(bilingual_site).parts[0] not in {"zh_CN", "_static", "_sources"})
    chinese = sorted(p.relative_to(bilingual_site / "zh_CN") for p in (bilingual_site / "zh_CN").rglob("*.html")
                     if p.relative_to(bilingual_site / "zh_CN").parts[0] not in {"_static", "_sources"})
    assert english == chinese and Path("00_demo.html") in english and Path("source/00_demo.html") in english
    for name in english:
        for site, lang, other, label in ((bilingual_site, "en", bilingual_site / "zh_CN", "中文"),
                                          (bilingual_site / "zh_CN", "zh-CN", bilingual_site, "English")):
            soup = page(site, str(name))
            assert soup.html["lang"] == lang, name
            [switch] = soup.select("a.posenc-language")
            assert switch.get_text() == label and switch["hreflang"] == switch["lang"]
            assert (site / name).parent.joinpath(switch["href"]).resolve() == (other / name).resolve(), name
    # the sections' anchors are the English ones in both languages
    ids = [{s["id"] for s in page(site, "00_demo.html").select("section[id]")}
           for site in (bilingual_site, bilingual_site / "zh_CN")]
    assert ids[0] == ids[1] and "exercises" in ids[0]
    assert not (bilingual_site / "jupyter_execute").exists()


def test_the_chinese_site_writes_its_own_words_in_chinese(bilingual_site):
    soup = page(bilingual_site / "zh_CN", "00_demo.html")
    facts = soup.select_one("p.posenc-page-facts")
    assert facts.get_text() == "下载：笔记本（.ipynb） · 源代码（.py，jupytext 格式）"
    assert [a["href"] for a in facts.find_all("a")] == ["_sources/00_demo.ipynb", "source/00_demo.html"]
    fold = soup.select_one("div.cell.tag_solution details")
    assert "显示练习 1 的答案" in fold.find("summary").get_text() and "隐藏练习 1 的答案" in fold.find("summary").get_text()
    # the deep dive's summary is raw HTML made before Sphinx translates: looked up in the catalog
    deep = soup.select_one("details.deep-dive")
    assert deep.find("summary").get_text(strip=True) == "深入阅读（选读）· 底层细节"
    assert "选读的细节" in deep.get_text() and "Optional detail." not in deep.get_text()
    assert "How RoPE rotates" in soup.get_text()  # not in the catalog: English
    # glossary links: the English term RoPE (first occurrence), and a Chinese form (长度外推) in the translation
    terms = {a.get_text(): a for a in soup.select("a.posenc-term")}
    assert {"RoPE", "长度外推"} <= set(terms) and terms["长度外推"]["href"].startswith("glossary.html#term-")
    assert terms["长度外推"]["title"].startswith("长度外推 / Length extrapolation：")
    assert page(bilingual_site / "zh_CN", "glossary.html").select_one("p.posenc-term-uses em").get_text() == "课程中用到它的地方："
    # the English site is as before: its own words, no Chinese
    english = page(bilingual_site, "00_demo.html")
    assert english.select_one("p.posenc-page-facts").get_text().startswith("Download: notebook (.ipynb)")
    assert english.select_one("details.deep-dive summary").get_text(strip=True) == "Deep dive (optional) · Under the hood"
    assert glue.LANGUAGE == "en" and not glue._CATALOGS  # the build leaves the module in English


def test_the_chinese_site_marks_what_it_shows_in_english(bilingual_site):
    """Text whose entry is missing, fuzzy or empty shows in English with the class the stylesheet labels;
    translated text, formulas and the English site are not marked."""
    soup = page(bilingual_site / "zh_CN", "00_demo.html")
    marked = soup.select(f".{glue.ENGLISH_CLASS}")
    assert any("How RoPE rotates" in m.get_text() for m in marked)  # no entry in the catalog
    assert not [m for m in marked if re.search(r"[\u4e00-\u9fff]", m.get_text())]  # nothing translated is marked
    assert not soup.select(f".math.{glue.ENGLISH_CLASS}, div.math .{glue.ENGLISH_CLASS}")
    css = (bilingual_site / "zh_CN" / "_static" / "posenc.css").read_text(encoding="utf-8")
    assert f'.{glue.ENGLISH_CLASS}::before {{\n  content: "{ENGLISH_LABEL}";' in css
    assert not page(bilingual_site, "00_demo.html").select(f".{glue.ENGLISH_CLASS}")


@pytest.fixture(scope="module")
def edited_chinese_page(tmp_path_factory) -> tuple[BeautifulSoup, dict[str, str]]:
    """A real page in Chinese, as make html renders it, after an English-only change: a notebook with one
    paragraph edited in English (its new text is in no catalog) and the real catalog with another
    paragraph's entry made fuzzy (as make i18n-update leaves a changed one). The other notebooks are
    left out (the site's placeholders), to render one page."""
    from babel.messages.pofile import write_po

    from tools import i18n_common

    tmp = tmp_path_factory.mktemp("edited")
    notebooks = tmp / "notebooks"
    notebooks.mkdir()
    (notebooks / "catalog.toml").write_bytes((ROOT / "notebooks" / "catalog.toml").read_bytes())

    def candidates(stem: str):
        """The notebook, its catalog, and the paragraphs the catalog translates (not fuzzy), with no formula,
        quote or dash for the page to typeset: cell, raw source, and the text the page shows."""
        nb = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
        po = i18n_common.load(i18n_common.CATALOGS / f"{stem}.po")
        current = {m.id: m.string for m in po if m.id and m.string and not m.fuzzy}
        return nb, po, [(cell, raw, " ".join(raw.split())) for cell in nb.cells if cell.cell_type == "markdown"
                        for raw in cell.source.split("\n\n")
                        if " ".join(raw.split()) in current and not raw.startswith("**Run time")
                        and re.fullmatch(r"[A-Z*][^$\"'<>|_\\#-]{60,}", " ".join(raw.split()))]

    # the first notebook with three such paragraphs without Chinese (an English change leaves a notebook's
    # catalog fuzzy until it is translated again) whose catalog marks no English that holds Chinese (a quote
    # of the source article, a Chinese title: marked English with Chinese in it, the last assertion below
    # could not tell it from a translation; a current translation of such a paragraph is not marked)
    cjk = re.compile("[\u4e00-\u9fff]")

    def usable(stem: str):
        nb, po, plain = candidates(stem)
        if any(cjk.search(m.id) for m in po if m.id and (m.fuzzy or not m.string)):
            return nb, po, []
        return nb, po, [c for c in plain if not cjk.search(c[1])]

    stems = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    stem, (nb, po, plain) = next((s, found) for s in stems if len((found := usable(s))[2]) >= 3)
    current = {m.id: m.string for m in po if m.id and m.string and not m.fuzzy}
    (cell, raw, edited), (_, _, fuzzy), (_, _, kept) = plain[:3]
    cell.source = cell.source.replace(raw, raw + " One more sentence.", 1)
    nbformat.write(nb, notebooks / f"{stem}.ipynb")
    po[fuzzy].flags.add("fuzzy")
    messages = tmp / "locale" / "zh_CN" / "LC_MESSAGES"
    messages.mkdir(parents=True)
    with open(messages / f"{stem}.po", "wb") as f:
        write_po(f, po, width=76)
    (messages.parent / "terminology.toml").write_bytes(i18n_common.TERMINOLOGY.read_bytes())
    build_site.stage(tmp / "src", notebooks, notebooks, notebooks / "catalog.toml", api=False, repository="",
                     locale=tmp / "locale")
    build_site.render_languages(tmp / "src", tmp / "html", ("zh_CN",))

    def shown(text: str) -> str:
        return " ".join(re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text).replace("*", "").replace("`", "").split())

    texts = {"edited": shown(edited + " One more sentence."), "fuzzy": shown(fuzzy), "fuzzy_zh": shown(current[fuzzy]),
             "kept_zh": shown(current[kept])}
    return page(tmp / "html" / "zh_CN", f"{stem}.html"), texts


def test_a_real_page_edited_in_english_shows_the_english_marked_in_chinese(edited_chinese_page):
    soup, texts = edited_chinese_page
    paragraphs = {" ".join(p.get_text().split()): p for p in soup.select("article p")}
    edited, fuzzy = paragraphs.get(texts["edited"]), paragraphs.get(texts["fuzzy"])
    assert edited is not None and fuzzy is not None, "the edited and the fuzzy paragraph show their English"
    assert glue.ENGLISH_CLASS in edited.get("class", []), "the edited paragraph is not marked"
    assert glue.ENGLISH_CLASS in fuzzy.get("class", []), "the fuzzy paragraph is not marked"
    assert texts["fuzzy_zh"] not in soup.get_text()  # a fuzzy translation is not shown
    kept = paragraphs[texts["kept_zh"]]
    assert glue.ENGLISH_CLASS not in kept.get("class", [])  # a current translation: Chinese, unmarked
    marked = soup.select(f".{glue.ENGLISH_CLASS}")
    # Chinese the English itself holds (a quote of the source article, a Chinese title) may show in a marked
    # paragraph; Chinese that is not in the English is a translation, and a translation is not marked
    english = "".join(cell.source for path in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")
                      for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "markdown")
    translated = [m for m in marked if any(run not in english for run in re.findall(r"[\u4e00-\u9fff]+", m.get_text()))]
    assert not translated, "a translated text is marked"


def test_the_chinese_search_splits_chinese_words(bilingual_site):
    import json

    site = bilingual_site / "zh_CN"
    language_data = (site / "_static" / "language_data.js").read_text(encoding="utf-8")
    assert "var splitQuery" in language_data and "window.Stemmer = EnglishStemmer;" in language_data
    text = (site / "searchindex.js").read_text(encoding="utf-8")
    index = json.loads(text[text.index("(") + 1:text.rindex(")")])
    assert "长度外推" in index["terms"] and "外推" in index["terms"]  # jieba, with the course's terms as words
    assert "window.Stemmer = EnglishStemmer;" in (bilingual_site / "_static" / "language_data.js").read_text(encoding="utf-8")


def test_one_language_alone_has_no_switch(tmp_path):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    (notebooks / "catalog.toml").write_text(CATALOG, encoding="utf-8")
    nbformat.write(demo_notebook(), notebooks / "00_demo.ipynb")
    nbformat.write(next_notebook(), notebooks / "01_next.ipynb")
    build_site.stage(tmp_path / "src", notebooks, notebooks, notebooks / "catalog.toml", api=False)
    assert set(build_site.render_languages(tmp_path / "src", tmp_path / "html", ("zh_CN",))) == {"zh_CN"}
    assert not (tmp_path / "html" / "index.html").exists()
    soup = page(tmp_path / "html" / "zh_CN", "00_demo.html")
    assert soup.html["lang"] == "zh-CN" and not soup.select("a.posenc-language")
    assert "Optional detail." in soup.get_text()  # no catalog at all: every entry in English
    with pytest.raises(ValueError, match="languages must be among"):
        build_site.render_languages(tmp_path / "src", tmp_path / "html", ("fr",))


# --- the real site, in a browser --------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_site() -> Path:
    """The course's site, built from the committed notebooks as `make html` builds it: the English site, and the
    Chinese one in zh_CN/, from one staging. (How long the render takes is measured by `make bench`, not here.)"""
    out = ROOT / "build" / "test-site"
    build_site.stage(ROOT / "build" / "test-site-src", catalog.NOTEBOOKS)
    build_site.render_languages(ROOT / "build" / "test-site-src", out)
    return out


def test_real_site_has_every_notebook_in_both_languages(real_site):
    stems = [e.stem for e in catalog.existing(catalog.load_catalog())]
    assert all((real_site / f"{stem}.html").is_file() and (real_site / "zh_CN" / f"{stem}.html").is_file()
               for stem in stems)
    assert not (real_site / "jupyter_execute").exists()  # MyST-NB's files of the Chinese render stay out of the site


def test_real_site_has_a_library_reference_with_sources(real_site):
    site = real_site
    modules = build_site.library_modules()
    assert "posenc_lib.rotary.rope" in modules and "posenc_lib.attention" in modules
    index = page(site, "api/index.html")
    assert {a["href"] for a in index.select("article table a")} >= {f"{m}.html" for m in modules}
    rope = page(site, "api/posenc_lib.rotary.rope.html")
    assert rope.find(id="posenc_lib.rotary.rope.apply_rope") is not None
    source = rope.select_one('a[href$="rope.py"]')
    assert source is not None and "posenc_lib/rotary/rope.py" in source.get_text()
    assert (site / "api" / source["href"]).resolve().read_text(encoding="utf-8") == \
        (ROOT / "posenc_lib/rotary/rope.py").read_text(encoding="utf-8")
    # a docstring's short reference (:func:`train` in another module) resolves to its definition
    probe = page(site, "api/posenc_lib.analysis.probes.html")
    assert probe.select_one('a[href$="posenc_lib.training.html#posenc_lib.training.train"]') is not None


def test_notebook_mentions_of_the_library_link_to_the_reference_and_back(real_site):
    site = real_site
    rope = page(site, "03_rope.html")
    links = {a.get_text(): a["href"] for a in rope.select("article a.posenc-api")}
    assert links["apply_rope"] == "api/posenc_lib.rotary.rope.html#posenc_lib.rotary.rope.apply_rope"
    assert links["posenc_lib/rotary/rope.py"].startswith("api/posenc_lib.rotary.rope.html#")
    assert "head_dim" not in links  # a variable in prose, not the attribute Sizes.head_dim
    readme = page(site, "06_length_extrapolation.html").find("a", class_="posenc-file", string="data/README.md")
    assert readme is not None and (site / readme["href"]).read_bytes() == (ROOT / "data" / "README.md").read_bytes()
    # a mention of a page of docs/ that the site renders links to that page, not to the raw file
    table = page(site, "06_length_extrapolation.html").find("a", class_="posenc-page", string="docs/replication.md")
    assert table is not None and table["href"] == "replication.html"
    back = page(site, "api/posenc_lib.rotary.rope.html").find(id="where-the-notebooks-use-it")
    assert back is not None
    hrefs = [a["href"] for a in back.find_all("a") if not a["href"].startswith("#")]  # not the permalink
    assert any(h.startswith("../03_rope.html#") for h in hrefs) and all((site / "api" / h.split("#")[0]).is_file()
                                                                        for h in hrefs)


def test_glossary_has_contents_definitions_as_tooltips_and_links_back(real_site):
    site = real_site
    glossary = page(site, "glossary.html")
    terms = glue.load_glossary()
    contents = next(p for p in glossary.select("article p") if p.get_text().startswith("Terms:"))
    targets = {a["href"].lstrip("#") for a in contents.find_all("a")}
    assert len(targets) == len(terms) and all(glossary.find(id=t) is not None for t in targets)
    uses = glossary.select("p.posenc-term-uses")
    assert len(uses) >= len(terms) - 2  # nearly every term is used in some notebook's prose
    assert all(a["href"].split("#")[0] in {f"{e.stem}.html" for e in catalog.existing(catalog.load_catalog())}
               for p in uses for a in p.find_all("a"))
    sinusoidal = next(t for t in terms if t["en"] == "Sinusoidal encoding")
    link = page(site, "01_sinusoidal.html").find("a", class_="posenc-term", title=re.compile("^Sinusoidal encoding"))
    assert link is not None and link["title"] == glue.term_tooltip(sinusoidal) and sinusoidal["definition"] in link["title"]


def test_the_chinese_site_has_the_reference_glossary_links_and_its_own_words(real_site):
    site = real_site
    zh = site / "zh_CN"
    rope = page(zh, "03_rope.html")
    assert rope.select_one("p.posenc-page-facts").get_text().startswith("下载：")
    summaries = [s.get_text(strip=True) for s in rope.select("details.deep-dive > summary")]
    assert summaries and all(s.startswith("深入阅读（选读）") for s in summaries)  # 03's catalog is complete
    links = [a.get_text() for a in rope.select("a.posenc-term")]
    assert len(links) >= 10 and sum(bool(glue.CJK.search(text)) for text in links) >= 5
    api = rope.select_one("a.posenc-api")
    assert api is not None and (zh / api["href"].split("#")[0]).is_file()  # the reference (in English) exists
    source = page(zh, "api/posenc_lib.rotary.rope.html").select_one('a[href$="rope.py"]')
    assert source is not None and (zh / "api" / source["href"]).is_file() and (zh / "api" / "index.html").is_file()
    uses = page(zh, "glossary.html").select("p.posenc-term-uses")
    assert len(uses) >= len(glue.load_glossary()) - 2 and all(p.em.get_text() == "课程中用到它的地方：" for p in uses)


def test_search_gets_the_page_texts_from_one_script_on_the_search_page(real_site):
    import json

    site = real_site
    script = (site / "_static" / glue.SEARCH_TEXT).read_text(encoding="utf-8")
    data = json.loads(script.removeprefix("window.POSENC_SEARCH = ").rstrip().removesuffix(";"))
    assert {"03_rope", "glossary", "index"} <= data.keys() and "00_demo" not in data  # not the synthetic site's
    term = next(iter(glue.load_glossary()))
    entry = next(i for i, text in data["glossary"]["sections"].items() if i.startswith("term-") and term["definition"] in text)
    assert data["glossary"]["labels"][entry] in (term["en"], term["zh"])
    assert "import torch" not in " ".join(data["03_rope"]["sections"].values())  # prose, not code
    assert glue.SEARCH_TEXT in (site / "search.html").read_text(encoding="utf-8")
    assert glue.SEARCH_TEXT not in (site / "03_rope.html").read_text(encoding="utf-8")  # loaded there only


EXPLORER_PAGES = {"01_sinusoidal": "sinusoidal", "03_rope": "rope", "05_relative_biases": "relative",
                  "06_length_extrapolation": "context"}


def test_explorer_pages_load_the_library_values_and_the_script_that_draws_them(real_site):
    import json

    from posenc_course.explorers import EXPLORERS, export_explorer

    site = real_site
    for stem, name in EXPLORER_PAGES.items():
        soup = page(site, f"{stem}.html")
        [container] = soup.select("div.posenc-explorer")
        assert container["data-explorer"] == name and container.has_attr("hidden")  # shown by its script only
        static = container.find_parent("div", class_="cell_output").find("img")
        assert static is not None and static["alt"] == glue.explorer_alt(name)
        scripts = [tag["src"].split("?")[0] for tag in soup.find_all("script", src=True)]
        assert f"_static/posenc_explorer_{name}.js" in scripts and "_static/posenc_explorer.js" in scripts
        data = site / "_static" / f"posenc_explorer_{name}.js"
        assert data.stat().st_size < 1_000_000, f"{name}: {data.stat().st_size / 1e6:.2f} MB"
        text = data.read_text(encoding="utf-8")
        exported = json.loads(text.split(f'window.POSENC_EXPLORERS["{name}"] = ', 1)[1].rstrip().removesuffix(";"))
        assert exported == json.loads(json.dumps(export_explorer(EXPLORERS[name])))
    assert "posenc_explorer" not in (site / "00_permutation_blindness.html").read_text(encoding="utf-8")


# The pages `make test` opens in the browser; `make check-site` (and CI, .ci/run) opens every page of both sites.
# In each language: the front page; 03, which has every kind of content a lesson has (formulas inline and
# displayed, a table of results, figures, solutions that print, a deep dive, an explorer); the glossary; search.
# The rest (the other eight notebooks, three more explorers, the guide, the errata, the reference pages) are the
# same templates and content kinds again: each notebook page takes 14-19 s in the browser on a slow day, and
# `make test` has 10 minutes (docs/performance.md). The language switch and the anchors of every page of both
# sites are checked as files either way.
EN_TEST_PAGES = ["index.html", "03_rope.html", "glossary.html", "search.html"]
ZH_TEST_PAGES = ["index.html", "03_rope.html", "glossary.html", "search.html"]


def test_real_site_passes_the_browser_check(real_site):
    site = real_site
    assert check_site.CHROMIUM.exists(), "Chromium is missing: `make setup` installs Debian's chromium package"
    # axe-core's accessibility rules are left to `make check-site` (CI runs it): 25-30 s here for pages it checks there
    report = check_site.check_site(site, ROOT / "build" / "site-check", zh_pages=ZH_TEST_PAGES,
                                   en_pages=EN_TEST_PAGES, axe_pages={"en": set(), "zh": set()})
    assert report.problems == [], "\n".join(report.problems)
    assert {name: facts["explorers"] for name, facts in report.pages.items() if facts.get("explorers")} == {
        "03_rope.html": 1, "zh_CN/03_rope.html": 1}  # its explorer exercised in both languages
    notebook_pages = [name for name in report.pages if re.match(r"(zh_CN/)?\d\d_", name)]
    assert notebook_pages and all(report.pages[n]["formulas"] > 0 for n in notebook_pages
                                  if (site / n).read_text(encoding="utf-8").count("math notranslate"))
    assert sorted(n for n in report.pages if n.startswith("zh_CN/") and n.endswith(".html")) == \
        [f"zh_CN/{n}" for n in sorted(ZH_TEST_PAGES)]
    assert sorted(n for n in report.pages if n.endswith(".html") and "/" not in n) == sorted(EN_TEST_PAGES)
    assert all(report.pages[n]["solutions"] for n in EN_TEST_PAGES if n[:2].isdigit())  # printed and opened
    # every page of both sites read as files: one switch, to the same page, which exists; the same anchors
    assert report.languages["en"] == report.languages["zh"] > 50
    assert "WenQuanYi" in report.pages["zh_CN/(CJK font)"]["CJK font"]  # the font `make chromium` installs
    assert "#" in report.pages["(language switch)"]["followed"] and "#" in report.pages["zh_CN/(language switch)"]["followed"]
    assert any(n.startswith("zh_CN/search.html?q=") for n in report.pages)


# --- tables as the site shows them -----------------------------------------------------------------


def test_tidy_table_folds_the_index_names_into_the_header_and_marks_numbers():
    import pandas as pd

    frame = pd.DataFrame({"loss": ["12.48 ± 0.03", "9.1 ± 0.2"], "note": ["slow", "fast"]},
                         index=pd.Index(["RoPE", "ALiBi"], name="scheme"))
    soup = BeautifulSoup(glue.tidy_table(frame.to_html(classes="dataframe")), "html.parser")
    header = soup.select("thead tr")
    assert len(header) == 1 and [th.get_text() for th in header[0].find_all("th")] == ["scheme", "loss", "note"]
    assert [td.get("class") for td in soup.select("tbody tr")[0].find_all("td")] == [["posenc-number"], None]


def test_tidy_table_drops_a_default_row_index_and_leaves_other_html_alone():
    import pandas as pd

    soup = BeautifulSoup(glue.tidy_table(pd.DataFrame({"n": [1, 2]}).to_html(classes="dataframe")),
                         "html.parser")
    assert [th.get_text() for th in soup.select("thead th")] == ["n"] and not soup.select("tbody th")
    kept = pd.DataFrame({"n": [1, 2]}, index=[5, 7]).to_html(classes="dataframe")
    assert BeautifulSoup(glue.tidy_table(kept), "html.parser").select("tbody th")  # not 0, 1: kept
    assert glue.tidy_table("<p>not a table</p>") == "<p>not a table</p>"


def test_the_front_page_says_how_to_get_the_code(real_site, tmp_path):
    import zipfile

    site = real_site
    link = page(site, "index.html").find("a", string="download the sources")
    assert link is not None and link["href"] == f"downloads/{build_site.ARCHIVE}"
    names = zipfile.ZipFile(site / link["href"]).namelist()
    assert {"posenc/Makefile", "posenc/notebooks/00_permutation_blindness.ipynb", "posenc/posenc_lib/scheme.py"} <= set(names)
    # with a repository address (a clone's origin), the clone command and the link come first
    text = build_site.index_markdown(catalog.existing(catalog.load_catalog()), [], archive="downloads/x.zip",
                                     repository="https://example.org/posenc")
    assert "git clone https://example.org/posenc posenc" in text and "[the repository](https://example.org/posenc)" in text
    assert text.index("git clone") < text.index("download the sources")
    # with none (no --repository, $POSENC_REPOSITORY or web origin): the zip, before the course's description
    # and with no clone command; with no zip either, still a sentence, and no link
    entries = catalog.existing(catalog.load_catalog())
    text = build_site.index_markdown(entries, [], archive="downloads/x.zip")
    assert "git clone" not in text and "repository" not in text.split("## The notebooks")[0]
    assert text.index("**Get the code:**") < text.index("Attention on its own") and "download the sources" in text
    bare = build_site.index_markdown(entries, [])
    assert "**Get the code:** the folder of the course" in bare and "git clone" not in bare and ".zip" not in bare


def test_repository_url_is_a_web_address_or_none(tmp_path):
    import subprocess

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert build_site.repository_url(tmp_path) is None  # no origin
    for origin, expected in [("git@github.com:someone/posenc.git", "https://github.com/someone/posenc"),
                             ("https://github.com/someone/posenc.git", "https://github.com/someone/posenc"),
                             ("/home/me/posenc", None)]:
        subprocess.run(["git", "-C", str(tmp_path), "remote", "remove", "origin"], capture_output=True)
        subprocess.run(["git", "-C", str(tmp_path), "remote", "add", "origin", origin], check=True)
        assert build_site.repository_url(tmp_path) == expected, origin


# --- the build's own functions (issue #41), on small synthetic input ---------------------------------


@pytest.mark.parametrize("line, noise", [
    ("scheme x seed: 100%|####################| 21/21", True),  # tqdm's ascii bar, finished
    ("training: 100%|██████████| 300/300, loss=0.0144", True),  # unicode blocks and a postfix
    ("scheme x seed: 57%|###########         | 12/21", False),  # not finished: it says something
    ("scheme x seed: 100%|####################| 20/21", False),  # 100% but not all steps: kept
    ("Accuracy reaches 100% at step 21/21", False),  # prose that looks like one
    ("Numerics: the course's reference (PyTorch kernels AVX2, oneDNN AVX2, MKL COMPATIBLE, 1 thread); x", True),
    ("The numerics of this run: see above", False),
    (" " + "Numerics: indented, so not setup_notebook's line", False),
])
def test_is_noise_by_what_the_line_says(line, noise):
    assert glue.is_noise(line) is noise


def test_is_noise_knows_the_sentence_of_a_machine_that_rounds_differently():
    from posenc_course import numerics

    assert glue.is_noise(numerics.DIFFERS) and not glue.is_noise(numerics.DIFFERS[:-1] + "!")


def test_drop_noise_removes_those_lines_and_the_outputs_they_leave_empty():
    bar = "scheme x seed: 100%|####################| 21/21"
    widget = {"application/vnd.jupyter.widget-view+json": {"model_id": "m", "version_major": 2, "version_minor": 0}}
    outputs = [
        new_output("stream", name="stdout", text=f"Training\n{bar}\nDone: loss 0.12\n"),  # the bar's line goes
        new_output("stream", name="stderr", text=f"{bar}\n"),  # only the bar: the output goes
        new_output("stream", name="stdout", text="scheme x seed: 57%|###   | 12/21\n"),  # unfinished: kept
        new_output("display_data", data={"text/plain": bar, **widget}),  # a saved progress widget: goes
        new_output("display_data", data={"text/plain": "scheme x seed: 0%|   | 0/21", **widget}),  # kept
        new_output("display_data", data={"text/plain": bar, "image/png": PNG_1PX}),  # a figure: kept
        new_output("execute_result", data={"text/plain": bar}, execution_count=3),  # a value: kept
    ]
    kept = glue.drop_noise(outputs)
    assert [o.get("text") or o.data["text/plain"] for o in kept] == [
        "Training\nDone: loss 0.12\n", "scheme x seed: 57%|###   | 12/21\n", "scheme x seed: 0%|   | 0/21", bar, bar]
    assert [o.output_type for o in kept] == ["stream", "stream", "display_data", "display_data", "execute_result"]


def test_link_solutions_anchors_each_solution_and_links_its_exercise():
    cells = [
        new_markdown_cell("### Exercise 1: the period\n\nFind it."),
        new_code_cell("period = None\ncheck_exercise_1(period)", metadata={"tags": ["exercise"]}),
        new_markdown_cell("### Exercise 2: unsolved\n\nNo solution cell for this one."),
        new_markdown_cell("## Solutions"),
        new_code_cell("# Exercise 1\nperiod = 6.28\ncheck_exercise_1(period)", metadata={"tags": ["solution"]}),
    ]
    out = glue.link_solutions(cells)
    assert [c.cell_type for c in out] == ["markdown", "code", "markdown", "markdown", "markdown", "code"]
    assert out[0].source == ("### Exercise 1: the period\n\nFind it.\n\n<p class=\"posenc-solution-link\">"
                             '<a href="#solution-1">Solution to exercise 1</a> (folded, with the others at the end '
                             "of the notebook: try the exercise first)</p>\n")
    assert out[2].source == "### Exercise 2: unsolved\n\nNo solution cell for this one."  # no solution: no link
    assert out[4].source == '<div class="posenc-solution-anchor" id="solution-1"></div>'
    assert out[5] is cells[4] and out[1] is cells[1]


def test_link_solutions_and_the_solution_folds_in_chinese(monkeypatch):
    monkeypatch.setattr(glue, "LANGUAGE", "zh_CN")  # as during the Chinese site's build (set_language)
    nb = new_notebook(cells=[
        new_markdown_cell("### Exercise 1: the period\n\nFind it."),
        new_code_cell("# Exercise 1\nperiod = 6.28\ncheck_exercise_1(period)", metadata={"tags": ["solution"]}),
    ])
    exercise, _, solution = glue.prepare(nb).cells
    assert exercise.source.endswith('<p class="posenc-solution-link"><a href="#solution-1">练习 1 的答案</a>'
                                    "（折叠在笔记本末尾，与其他答案放在一起：请先自己做练习）</p>\n")
    assert solution.metadata["mystnb"]["code_prompt_show"] == "显示练习 1 的答案"
    assert solution.metadata["mystnb"]["code_prompt_hide"] == "隐藏练习 1 的答案"


def test_link_code_names_links_imported_names_documented_attributes_and_module_paths():
    def n(name, kind="n"):
        return f'<span class="{kind}">{name}</span>'

    dot = '<span class="o">.</span>'
    code = (f'{n("from", "kn")} {n("posenc_lib.rotary", "nn")} {n("import", "kn")} {n("rope")}\n'
            f'{n("import", "kn")} {n("numpy", "nn")}\n'
            f'{n("y")} = {n("rope")}{dot}{n("apply_rope")}{dot}{n("hidden")}({n("x")})\n')
    urls = {"posenc_lib.rotary": "api/rotary.html#module-posenc_lib.rotary",
            "posenc_lib.rotary.rope": "api/rotary.rope.html#module-posenc_lib.rotary.rope",
            "posenc_lib.rotary.rope.apply_rope": "api/rotary.rope.html#posenc_lib.rotary.rope.apply_rope"}
    out = glue.link_code_names(code, {"rope": "posenc_lib.rotary.rope"}, urls.get)

    def a(url, text, kind="n"):
        return f'<a class="posenc-code-api" href="{url}" title="{text} in the library reference">{n(text, kind)}</a>'

    rope_url = urls["posenc_lib.rotary.rope"]
    assert out == (f'{n("from", "kn")} {a(urls["posenc_lib.rotary"], "posenc_lib.rotary", "nn")} {n("import", "kn")} '
                   f'{a(rope_url, "rope")}\n'
                   f'{n("import", "kn")} {n("numpy", "nn")}\n'  # not the library: left alone
                   f'{n("y")} = {a(rope_url, "rope")}{dot}{a(urls["posenc_lib.rotary.rope.apply_rope"], "apply_rope")}'
                   f'{dot}{n("hidden")}({n("x")})\n')  # an undocumented attribute: not linked
    assert glue.link_code_names(code, {}, urls.get).count("<a ") == 1  # only the module path of the import


def test_code_imports_names_what_cells_import_from_the_library():
    sources = ["from posenc_lib.rotary import rope, apply_rope as rot\nimport numpy as np",
               "import posenc_lib.scheme as scheme\nfrom . import local", "%timeit f()"]
    assert glue.code_imports(sources) == {"rope": "posenc_lib.rotary.rope", "rot": "posenc_lib.rotary.apply_rope",
                                          "scheme": "posenc_lib.scheme"}


def test_study_time_counts_words_code_cells_and_the_guides_plans(tmp_path):
    cells = [new_markdown_cell("# Title\n\nOne two three <!-- a comment of six words --> four."),
             new_markdown_cell("hidden words", metadata={"tags": ["remove-cell"]}),
             new_code_cell("x = 1"), new_code_cell("y = 2"),
             new_code_cell("setup()", metadata={"tags": ["remove-cell"]})]
    for stem in ("00_a", "01_b"):
        nbformat.write(new_notebook(cells=cells), tmp_path / f"{stem}.ipynb")
    guide = tmp_path / "guide.md"
    guide.write_text("## 00 · Plan (60 minutes)\n\n### 01 · Session 1 · Plan (90 minutes): a\n\n"
                     "### 01 · Session 2 · Plan (90 minutes): b\n\n## 02 · Plan (75 minutes)\n", encoding="utf-8")
    notebooks = sorted(tmp_path.glob("*.ipynb"))
    # "# Title" is 2 words, "One two three four." 4: 6 a notebook; 2 code cells a notebook
    assert build_site.study_time(notebooks, guide) == build_site.StudyTime(12, 4, {"00": [60], "01": [90, 90]})
    assert build_site.study_time(notebooks) == build_site.StudyTime(12, 4, {})


def test_study_time_sentence():
    study = build_site.StudyTime(words=9000, code_cells=40, class_minutes={"00": [60], "01": [90]})
    assert study.self_minutes == 120
    assert study.sentence() == (
        "about 2 hours on your own (some 9,000 words of text at 150 words a minute, and 40 code cells at 1.5 minutes "
        "each to read, run and look at); in class, 2 lessons of 60-90 minutes (one per notebook), 2.5 hours for "
        "the series (the instructor guide's lesson plans)")
    two = build_site.StudyTime(9000, 40, {"00": [90], "06": [90, 90]}).sentence()
    assert two.endswith("in class, 3 lessons of 90 minutes (one per notebook, 2 for 06), 4.5 hours for the series "
                        "(the instructor guide's lesson plans)")
    assert build_site.StudyTime(9000, 40, {}).sentence().endswith("to read, run and look at)")
    assert "(some 32,000 words" in build_site.StudyTime(32438, 40, {}).sentence()


FONTAWESOME = ('/* theme */ p("far",b),p("fa-regular",b)})})(),(()=>{var b={"bars":[448,512,[],"f0c9","REGULAR-BARS"]};'
               'p("far",b)})(),(()=>{var b={"bars-staggered":[512,512,["reorder","stream"],"f550","M0 96STAGGERED"],'
               'bars:[448,512,[],"f0c9","M0 96BARS"],"magnifying-glass":[512,512,["search"],"f002","M416 208GLASS"]};'
               'p("fas",b),p("fa-solid",b)})')


def test_trim_icons_keeps_the_solid_icons_the_pages_use(tmp_path):
    scripts = tmp_path / "_static" / "scripts"
    scripts.mkdir(parents=True)
    (scripts / "fontawesome.js").write_text(FONTAWESOME, encoding="utf-8")
    (scripts / "fontawesome.js.LICENSE.txt").write_text("MIT", encoding="utf-8")
    (tmp_path / "a.html").write_text('<i class="fa-solid fa-bars fa-lg"></i>', encoding="utf-8")
    (tmp_path / "api").mkdir()
    (tmp_path / "api" / "b.html").write_text('<button><i class="fas fa-magnifying-glass"></i></button>', encoding="utf-8")
    build_site.trim_icons(tmp_path)
    # the solid outlines (not the regular pack's "bars", not "bars-staggered"), and nothing else
    assert (scripts / "fontawesome.js").read_text(encoding="utf-8") == build_site.ICON_SCRIPT.replace(
        "__ICONS__", '{"bars":[448,512,"M0 96BARS"],"magnifying-glass":[512,512,"M416 208GLASS"]}')
    assert (scripts / "fontawesome.js.LICENSE.txt").read_text(encoding="utf-8") == \
        "MIT\n(Subset: the solid icons these pages use.)\n"


def test_trim_icons_fails_on_an_icon_it_cannot_find_and_skips_a_site_without_the_script(tmp_path):
    build_site.trim_icons(tmp_path)  # no theme script: nothing to do
    scripts = tmp_path / "_static" / "scripts"
    scripts.mkdir(parents=True)
    (scripts / "fontawesome.js").write_text(FONTAWESOME, encoding="utf-8")
    (tmp_path / "a.html").write_text('<i class="fa-solid fa-rocket"></i>', encoding="utf-8")
    with pytest.raises(RuntimeError, match="no solid icon 'rocket'"):
        build_site.trim_icons(tmp_path)
    (scripts / "fontawesome.js").write_text("an upgraded theme's script", encoding="utf-8")
    with pytest.raises(RuntimeError, match="the solid icon pack was not found"):
        build_site.trim_icons(tmp_path)

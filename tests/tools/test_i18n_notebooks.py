"""The Chinese notebooks (tools/i18n_notebooks.py, ``make lab``): generated from the English notebooks
and the catalogs, with the English code and outputs.

For every notebook of the series: the Chinese notebook has the same cells, and every code cell (source,
outputs, execution count, metadata, id) is the English one, so its outputs are the committed outputs
that nbval validates in the English notebook; every markdown block is an entry of the page's catalog
and every entry of the catalog is used (the block-by-block translation finds what Sphinx extracts);
for a page listed as complete, no block is left in English; each translated heading keeps its English
JupyterLab anchor. Then the translation of single blocks, and the writing rules (a notebook the reader
changed is kept).
"""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat
import pytest

from tools import catalog, i18n, i18n_notebooks
from tools.site import posenc_site

ROOT = Path(__file__).resolve().parents[2]
STEMS = [e.stem for e in catalog.existing(catalog.load_catalog())]


def figure_alts(nb: nbformat.NotebookNode) -> set[str]:
    """The alt texts the site gives figure and explorer cells: catalog entries that come from outputs."""
    prepared = posenc_site.prepare(copy.deepcopy(nb))
    return {c.metadata.get("mystnb", {}).get("image", {}).get("alt") for c in prepared.cells if c.cell_type == "code"} - {None}


@pytest.fixture(scope="module")
def pots() -> Path:
    return i18n.templates()


@pytest.mark.parametrize("stem", STEMS)
def test_chinese_notebook_has_the_english_code_and_outputs(stem):
    english = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
    chinese, _ = i18n_notebooks.translate_notebook(english, i18n_notebooks.catalog_lookup(stem))
    assert len(chinese.cells) == len(english.cells)
    for number, (zh, en) in enumerate(zip(chinese.cells, english.cells)):
        assert zh.cell_type == en.cell_type and zh.get("id") == en.get("id"), f"{stem} cell {number}"
        assert zh.metadata == en.metadata, f"{stem} cell {number}: metadata"
        if en.cell_type == "code":
            assert zh == en, f"{stem} cell {number}: a code cell differs from the English one"
    assert {k: v for k, v in chinese.metadata.items() if k != "posenc"} == english.metadata
    assert chinese.metadata["posenc"]["language"] == "zh_CN"


@pytest.mark.parametrize("stem", STEMS)
def test_every_markdown_block_is_a_catalog_entry_and_every_entry_is_used(stem, pots):
    english = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
    ids = {m.id for m in i18n.load(i18n.CATALOGS / f"{stem}.po") if m.id}
    _, summary = i18n_notebooks.translate_notebook(english, lambda key: key if key in ids else None)
    assert not summary.missing, f"{stem}: markdown blocks with no catalog entry (run make i18n-update?): {summary.missing[:5]}"
    unused = ids - set(summary.used) - i18n.formulas(pots, stem) - figure_alts(english)
    assert not unused, f"{stem}: catalog entries no markdown block matched: {sorted(unused)[:5]}"


@pytest.mark.parametrize("stem", [s for s in STEMS if s in i18n.complete_documents()])
def test_a_complete_page_leaves_nothing_in_english(stem):
    english = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
    chinese, summary = i18n_notebooks.translate_notebook(english, i18n_notebooks.catalog_lookup(stem))
    assert not summary.missing, f"{stem}: left in English: {summary.missing[:5]}"
    parse = i18n_notebooks._markdown().parse
    anchors = [posenc_site.jupyter_anchor(i18n_notebooks.msgid(t.content)) for c in english.cells
               if c.cell_type == "markdown" for i, t in enumerate(parse(c.source))
               if t.type == "inline" and parse(c.source)[i - 1].type == "heading_open"]
    assert len(anchors) >= 5
    text = "\n".join(c.source for c in chinese.cells if c.cell_type == "markdown")
    assert all(f'<a id="{a}"></a>' in text for a in anchors), f"{stem}: a translated heading lost its anchor"


def lookup(table: dict[str, str]):
    return table.get


@pytest.mark.parametrize("source, table, expected", [
    ("# Title\n\nOne line\nand another.", {"Title": "标题", "One line and another.": "一行。"},
     '# 标题<a id="Title"></a>\n\n一行。'),
    ("- first *item*\n- second\n  continued", {"first *item*": "第一项", "second continued": "第二项"},
     "- 第一项\n- 第二项"),
    ("1. one\n2. two", {"one": "一", "two": "二"}, "1. 一\n2. 二"),
    ("> quoted\n> text", {"quoted text": "引文"}, "> 引文"),
    ("| a | b |\n|---|---:|\n| `x` | 0.5 |", {"a": "甲", "b": "乙", "`x`": "`x`"}, "| 甲 | 乙 |\n|---|---:|\n| `x` | 0.5 |"),
    ("Kept.\n\n$$x^2$$\n\n```python\nx = 1\n```", {}, "Kept.\n\n$$x^2$$\n\n```python\nx = 1\n```"),
    ("<details>\n<summary>Raw</summary>\n\nText.", {"Text.": "正文。"}, "<details>\n<summary>Raw</summary>\n\n正文。"),
])
def test_translate_markdown(source, table, expected):
    assert i18n_notebooks.translate_markdown(source, lookup(table)).source == expected


def test_a_block_left_untranslated_is_reported():
    done = i18n_notebooks.translate_markdown("A.\n\nB.", lookup({"A.": "甲。"}))
    assert done.source == "甲。\n\nB." and done.used == ["A."] and done.missing == ["B."]


def test_written_folder_and_a_changed_notebook_is_kept(tmp_path):
    source = ROOT / "notebooks" / f"{STEMS[0]}.ipynb"
    out = tmp_path / "zh"
    i18n_notebooks.write_notebooks([source], out, quiet=True)
    target = out / source.name
    assert (out / ".posenc-language").read_text().strip() == "zh_CN"
    assert 'formats = "ipynb"' in (out / "jupytext.toml").read_text()
    first = target.read_bytes()
    i18n_notebooks.write_notebooks([source], out, quiet=True)
    assert target.read_bytes() == first  # regenerated identically
    changed = first.replace(b'"cells": [', b'"cells": [', 1) + b"\n"
    target.write_bytes(changed)  # the reader saved it
    i18n_notebooks.write_notebooks([source], out, quiet=True)
    assert target.read_bytes() == changed
    target.unlink()  # deleted: written afresh
    i18n_notebooks.write_notebooks([source], out, quiet=True)
    assert target.read_bytes() == first

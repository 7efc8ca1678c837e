"""The Chinese notebooks (tools/i18n_notebooks.py, ``make lab``): generated from the English notebooks
and the catalogs, with the English code and outputs.

For every notebook of the series: the Chinese notebook has the same cells, and every code cell (source,
outputs, execution count, metadata, id) is the English one, so its outputs are the committed outputs
that nbval validates in the English notebook; the markdown blocks the translation looks up are exactly
the entries Sphinx extracts from the current English (the templates, not the catalog, so that this holds
whether or not the translation is current); each heading keeps its English JupyterLab anchor. A block
whose translation is missing or fuzzy stays English, marked (whether the catalog lags is listed by `make
i18n-check`, tests/tools/test_i18n.py). Then the translation of single blocks, and the writing rules (a
notebook the reader changed is kept).
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from babel.messages.pofile import write_po

from tools import catalog, i18n, i18n_notebooks
from tools.site import posenc_site

ROOT = Path(__file__).resolve().parents[2]
STEMS = [e.stem for e in catalog.existing(catalog.load_catalog())]
MARK = i18n_notebooks.ENGLISH_MARK


def blocks(nb: nbformat.NotebookNode, opener: str) -> list[tuple[nbformat.NotebookNode, str]]:
    """The markdown blocks of ``nb`` opened by ``opener`` (``heading_open``, ``paragraph_open`` outside a
    list), each as its cell and its inline source, as tools/i18n_notebooks.py parses them."""
    found = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        tokens = i18n_notebooks._markdown().parse(cell.source)
        found += [(cell, t.content) for i, t in enumerate(tokens) if t.type == "inline" and tokens[i - 1].type == opener
                  and not (i > 1 and tokens[i - 2].type == "list_item_open")]
    return found


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
def test_every_markdown_block_is_an_extracted_message_and_every_message_a_block(stem, pots):
    """The notebook splitter's blocks are what Sphinx's gettext builder extracts from the current English
    (the page's template): so every translated entry reaches its block, and only the catalog can lag."""
    english = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
    ids = {m.id for m in i18n.load(pots / f"{stem}.pot") if m.id}
    missing, unused = i18n_notebooks.compare_blocks(english, ids, i18n.formulas(pots, stem))
    assert not missing, f"{stem}: markdown blocks Sphinx does not extract: {missing[:5]}"
    assert not unused, f"{stem}: extracted messages no markdown block matched: {sorted(unused)[:5]}"


@pytest.mark.parametrize("stem", STEMS)
def test_every_heading_keeps_its_english_anchor(stem):
    """A heading, translated or left in English and marked, keeps its JupyterLab anchor, so the links
    between notebooks land in both languages (every block "translated" here, whatever the catalog holds)."""
    english = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
    anchors = [posenc_site.jupyter_anchor(i18n_notebooks.msgid(text)) for _, text in blocks(english, "heading_open")]
    assert len(anchors) >= 5
    for lookup in (lambda key: "中文：" + key, lambda key: None):
        chinese, _ = i18n_notebooks.translate_notebook(english, lookup)
        text = "\n".join(c.source for c in chinese.cells if c.cell_type == "markdown")
        missing = [a for a in anchors if f'<a id="{a}"></a>' not in text]
        assert not missing, f"{stem}: headings without their anchor: {missing[:5]}"


def test_a_paragraph_edited_in_english_or_fuzzy_shows_the_english_marked(tmp_path):
    """A real notebook with one paragraph edited in English (its msgid no longer in the catalog) and
    another whose entry is fuzzy: both stay English, after the mark; the other paragraphs are Chinese."""
    stem = "00_permutation_blindness"
    english = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
    catalogs = tmp_path / "LC_MESSAGES"
    catalogs.mkdir()
    po = i18n.load(i18n.CATALOGS / f"{stem}.po")
    table = {m.id: m.string for m in po if m.id and m.string and not m.fuzzy}
    paragraphs = [(cell, text) for cell, text in blocks(english, "paragraph_open")
                  if i18n_notebooks.msgid(text) in table and len(text) > 80]
    (edited_cell, edited), (_, fuzzy), (_, kept) = paragraphs[2], paragraphs[5], paragraphs[3]
    edited_cell.source = edited_cell.source.replace(edited, edited + " One more sentence.", 1)
    po[i18n_notebooks.msgid(fuzzy)].flags.add("fuzzy")
    with open(catalogs / f"{stem}.po", "wb") as f:
        write_po(f, po, width=76)

    chinese, summary = i18n_notebooks.translate_notebook(english, i18n_notebooks.catalog_lookup(stem, catalogs))
    text = "\n".join(c.source for c in chinese.cells if c.cell_type == "markdown")
    assert MARK + edited + " One more sentence." in text  # the English, as written, after the mark
    assert MARK + fuzzy in text
    assert {i18n_notebooks.msgid(edited) + " One more sentence.", i18n_notebooks.msgid(fuzzy)} <= set(summary.missing)
    assert table[i18n_notebooks.msgid(kept)] in text and MARK + table[i18n_notebooks.msgid(kept)] not in text
    # one mark per block left in English that has words to translate (here, whatever else the catalog lacks)
    assert text.count(MARK) == len([m for m in summary.missing if not i18n.nothing_to_translate(m)])


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


@pytest.mark.parametrize("source, table, expected", [
    ("Some words.\n\n$x$ = 0.5", {}, f"{MARK}Some words.\n\n$x$ = 0.5"),  # a formula and a number: no words
    ("## A title", {}, f'## {MARK}A title<a id="A-title"></a>'),
    ("- one item\n- `code`", {"one item": "一项"}, "- 一项\n- `code`"),
    ("| a word | 1 |\n|---|---|\n| more words | 2 |", {"a word": "一个词"},
     f"| 一个词 | 1 |\n|---|---|\n| {MARK}more words | 2 |"),
    ("First line\nsecond line.", {}, f"{MARK}First line\nsecond line."),
])
def test_a_block_left_in_english_is_marked(source, table, expected):
    assert i18n_notebooks.translate_markdown(source, lookup(table), MARK).source == expected


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

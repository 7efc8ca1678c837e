"""The Chinese notebooks for JupyterLab, generated from the English ones and the catalogs: ``make lab``.

    python -m tools.i18n_notebooks                 # notebooks/NN_*.ipynb -> notebooks/zh/NN_*.ipynb
    python -m tools.i18n_notebooks --out DIR NB..  # chosen notebooks, another folder

A Chinese notebook is its English notebook with the text of its markdown cells translated, block by
block, from the page's catalog (``locale/zh_CN/LC_MESSAGES/NN_name.po``, the catalog the Chinese site
uses; ``docs/i18n.md``). Everything else is the English notebook's, byte for byte: every code cell,
its outputs (so the figures, tables and printed numbers are the committed ones, which nbval validates
in the English notebooks), the cell ids, tags and metadata. Nobody edits these files by hand: they are
git-ignored and rewritten from the sources.

How a markdown cell is translated: it is parsed by MyST's own parser (markdown-it: CommonMark, tables,
dollar math), and each paragraph, heading, list item's paragraph and table cell is looked up by its
text with line breaks turned into spaces, which is the msgid Sphinx's gettext builder extracts for
it. The translation replaces the block's lines in the source, after the block's own marker (``## ``,
``- ``, ``1. ``, ``> ``). A block whose translation is missing or fuzzy (the English changed since it was
translated) stays English, marked for the reader: it starts with ``ENGLISH_MARK``, *〔英文原文，翻译待更新〕*
("the English original, its translation to be updated"); a block with no words to translate (a number, a
code name) is not marked. A heading, translated or marked, keeps its English JupyterLab anchor (an empty
``<a id="...">``), so the links between notebooks (``01_sinusoidal.ipynb#4-·-Wavelengths``) land on it
in both languages.

The folder also gets ``.posenc-language`` (``zh_CN``: the exercise checkers and ``setup_notebook()``
speak Chinese in a kernel started there, ``posenc_course.i18n``) and a ``jupytext.toml`` that pairs
nothing (the ``.py`` twins belong to the English notebooks).

A notebook the reader has changed since it was generated (run, edited, saved) is kept: ``.generated.json``
records the digest of each file as written, and a file that no longer matches it is left alone (delete it
to get a fresh copy).
"""

from __future__ import annotations

import argparse
import copy
import functools
import hashlib
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from tools.catalog import NOTEBOOKS, existing, load_catalog
from tools.i18n_common import CATALOGS, ENGLISH_LABEL, LANGUAGE, load, nothing_to_translate
from tools.site import posenc_site
from tools.site.posenc_site import jupyter_anchor

ROOT = Path(__file__).resolve().parent.parent
OUT = NOTEBOOKS / "zh"
LANGUAGE_FILE = ".posenc-language"  # read by posenc_course.i18n.language()
MANIFEST = ".generated.json"
JUPYTEXT = """# The Chinese notebooks are generated (python -m tools.i18n_notebooks, run by `make lab`):
# no .py twin is paired with them; the English notebooks' .py files are the sources.
formats = "ipynb"
"""
# Before a block left in English (its translation missing or out of date), in the Chinese notebooks.
ENGLISH_MARK = f"*〔{ENGLISH_LABEL}〕* "
README = f"""# 中文版笔记本

这里的笔记本由 `make lab`（`python -m tools.i18n_notebooks`）从上一级目录中的英文笔记本和翻译目录
`locale/zh_CN/LC_MESSAGES/*.po` 生成，请不要手工编辑：要修改正文，请修改英文笔记本并更新翻译目录
（见 `docs/i18n.md`）。

- 代码单元与英文版逐字节相同，输出也是英文版已提交的输出；图表中的标题与坐标轴标签保留英文。
- 在这个目录中运行时，练习的检查函数和 `setup_notebook()` 用中文说明结果。
- 英文正文修改后、译文更新之前，相应段落显示英文原文，并以“*〔{ENGLISH_LABEL}〕*”开头。
- 你运行或修改过的笔记本不会被再次生成覆盖；删除它即可重新生成。
"""


@functools.cache
def _markdown():
    """MyST's own markdown-it parser, configured as the site configures it (tools/site/conf.py)."""
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    return create_md_parser(MdParserConfig(enable_extensions={"dollarmath", "amsmath"}, dmath_double_inline=True),
                            RendererHTML)


def msgid(content: str) -> str:
    """The msgid Sphinx extracts for a block whose inline source is ``content``."""
    return content.replace("\n", " ").strip()


@dataclass
class Translated:
    """One markdown cell's translation: the new source, the msgids used and those left in English."""
    source: str
    used: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def translate_markdown(source: str, lookup: Callable[[str], str | None], mark: str = "") -> Translated:
    """Translate the blocks of one markdown cell (see the module's docstring). ``lookup(msgid)`` gives
    the translation or None; a block with none stays English, after ``mark`` when it has words to
    translate. Raises ValueError when a block's text cannot be found on its lines."""
    tokens = _markdown().parse(source)
    lines = source.split("\n")
    edits: dict[int, tuple[int, list[str]]] = {}  # first line -> (end line, new lines)
    result = Translated(source)
    rows: dict[int, list[tuple[str, str]]] = {}  # a table row's line -> (cell text, translation)
    row = None
    for i, token in enumerate(tokens):
        if token.type == "tr_open":
            row = token.map[0]
        if token.type != "inline":
            continue
        key = msgid(token.content)
        if not key:
            continue
        text = lookup(key)
        if text is None:
            result.missing.append(key)
            if not mark or nothing_to_translate(key):
                continue
            text = mark + token.content  # the English, marked: the block's lines are rewritten below
        else:
            result.used.append(key)
        opener = tokens[i - 1]
        if opener.type in ("th_open", "td_open"):
            rows.setdefault(row, []).append((token.content, text))
            continue
        start, end = opener.map
        first = token.content.split("\n")[0]
        at = lines[start].find(first)
        if at < 0:
            raise ValueError(f"block {first[:60]!r} not found on its line {start}: {lines[start][:60]!r}")
        prefix = lines[start][:at]
        if opener.type == "heading_open":
            tail = lines[start][at + len(first):]  # a closing sequence of #, kept
            new = [f'{prefix}{text}<a id="{jupyter_anchor(key)}"></a>{tail}']
        else:
            indent = " " * len(prefix)
            new = [prefix + text.split("\n")[0]] + [indent + part for part in text.split("\n")[1:]]
        edits[start] = (end, new)
    for line_no, cells in rows.items():
        line, at, out = lines[line_no], 0, []
        for cell, text in cells:
            found = line.find(cell, at)
            if found < 0:
                raise ValueError(f"table cell {cell[:60]!r} not found on its row: {line[:80]!r}")
            out.append(line[at:found] + text)
            at = found + len(cell)
        edits[line_no] = (line_no + 1, ["".join(out) + line[at:]])
    for start in sorted(edits, reverse=True):
        end, new = edits[start]
        lines[start:end] = new
    result.source = "\n".join(lines)
    return result


def catalog_lookup(document: str, catalogs: Path = CATALOGS) -> Callable[[str], str | None]:
    """``lookup(msgid)`` from the page's catalog: the translation, or None when it is missing or fuzzy."""
    path = catalogs / f"{document}.po"
    table = {}
    if path.is_file():
        table = {m.id: m.string for m in load(path) if m.id and m.string and not m.fuzzy}
    return table.get


def translate_notebook(nb: nbformat.NotebookNode, lookup: Callable[[str], str | None],
                       origin: str = "", mark: str = ENGLISH_MARK) -> tuple[nbformat.NotebookNode, Translated]:
    """The Chinese notebook (a new object) and, summed over its cells, the msgids used and missing
    (those blocks stay English, after ``mark``)."""
    out = copy.deepcopy(nb)
    total = Translated("")
    first = True
    for cell in out.cells:
        if cell.cell_type != "markdown":
            continue
        done = translate_markdown(cell.source, lookup, mark)
        cell.source = done.source
        total.used += done.used
        total.missing += done.missing
        if first and origin:  # said once, invisibly: where the file comes from
            cell.source += f"\n\n<!-- {origin} -->"
            first = False
    out.metadata.setdefault("posenc", {})["language"] = LANGUAGE
    return out, total


def figure_alts(nb: nbformat.NotebookNode) -> set[str]:
    """The alt texts the site gives figure and explorer cells: catalog entries that come from outputs,
    not from a markdown block."""
    prepared = posenc_site.prepare(copy.deepcopy(nb))
    return {c.metadata.get("mystnb", {}).get("image", {}).get("alt") for c in prepared.cells if c.cell_type == "code"} - {None}


def compare_blocks(nb: nbformat.NotebookNode, ids: set[str], display: set[str] = frozenset()) -> tuple[list[str], set[str]]:
    """The notebook's markdown blocks, as this module looks them up, against the msgids ``ids`` (a
    template's or a catalog's): the blocks that are not among them, and those of ``ids`` that no block
    uses (``display``, the page's display formulas, and the figures' alt texts come from elsewhere)."""
    _, summary = translate_notebook(nb, lambda key: key if key in ids else None, mark="")
    return summary.missing, ids - set(summary.used) - set(display) - figure_alts(nb)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_notebooks(paths: list[Path], out: Path = OUT, quiet: bool = False) -> dict[str, Translated]:
    """Write the Chinese notebooks of ``paths`` into ``out``, keeping any the reader changed since
    they were generated; returns each notebook's translation summary."""
    out.mkdir(parents=True, exist_ok=True)
    (out / LANGUAGE_FILE).write_text(LANGUAGE + "\n", encoding="utf-8")
    (out / "jupytext.toml").write_text(JUPYTEXT, encoding="utf-8")
    (out / "README.md").write_text(README, encoding="utf-8")
    manifest_path = out / MANIFEST
    manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.is_file() else {}
    summaries = {}
    for path in paths:
        origin = (f"Generated by `make lab` (python -m tools.i18n_notebooks) from ../{path.name} and "
                  f"locale/zh_CN/LC_MESSAGES/{path.stem}.po: do not edit; edit those and regenerate.")
        nb, summary = translate_notebook(nbformat.read(path, as_version=4), catalog_lookup(path.stem), origin)
        summaries[path.stem] = summary
        target = out / path.name
        if target.is_file() and manifest.get(path.name) != _digest(target):
            if not quiet:
                print(f"kept {target.name}: it changed since it was generated (delete it to regenerate)")
            continue
        text = nbformat.writes(nb) + "\n"
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
        manifest[path.name] = _digest(target)
        if not quiet:
            left = f", {len(summary.missing)} left in English (marked)" if summary.missing else ""
            print(f"{target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}: "
                  f"{len(summary.used)} blocks in Chinese{left}")
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return summaries


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every catalogued notebooks/NN_*.ipynb")
    parser.add_argument("--out", type=Path, default=OUT, help="output folder (default notebooks/zh)")
    args = parser.parse_args(argv)
    paths = args.notebooks or [NOTEBOOKS / f"{e.stem}.ipynb" for e in existing(load_catalog())]
    write_notebooks(paths, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

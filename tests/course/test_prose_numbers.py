"""Prose that cannot go stale: every decimal number typed in a notebook's text is printed by its own section.

A notebook's sections are its level-2 headings (``## 4 · Title``, ``## Summary``, ...); the text
before the first one is a section of its own. A number in a markdown cell passes when it appears
among the outputs of the code cells of the same section, at the precision it is typed with (typed
0.49 matches a printed 0.492), or literally in the notebook's code (a setting such as an init
scale of 0.02). A number printed by another section passes only where the markdown cell cites that
section, in the same paragraph, list item or table row: "05 §7" (notebook 05, section 7), "section 4 of [06 · ...](06_....ipynb)", or "§7" and
"section 7" (this notebook's section 7). A notebook cited without a section ("notebook 03", a link
to ``03_rope.ipynb``) lends nothing: a number is tied to the section that prints it. The only
other numbers allowed are those cited from papers, each listed with its source in
notebooks/cited_numbers.toml.

Not counted: math ($...$, which states definitions and formulas), inline code, link targets,
headings, section/table/figure numbers, and software or model versions (Llama 3.1).
"""

from __future__ import annotations

import re
import tomllib
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = {p.stem: p for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))}
CITED = ROOT / "notebooks" / "cited_numbers.toml"

NUMBER = re.compile(r"(?<![\w.§])[-+−]?\d*\.\d+(?:e[-+]?\d+)?(?![\w.]\d)")
VERSIONED = r"(?:Llama|Python|PyTorch|Gemma|Phi|GPT|Sphinx|JupyterLab|MathJax|transformers|torch)"
NOT_PROSE = [
    re.compile(r"\$\$.*?\$\$", re.S),                                   # display math
    re.compile(r"\$[^$\n]+\$"),                                          # inline math
    re.compile(r"`[^`]*`"),                                              # inline code
    re.compile(r"\]\([^)]*\)"),                                          # link targets
    re.compile(r"^#+ .*$", re.M),                                        # headings
    re.compile(r"(?:§|\b[Ss]ections? |\b[Tt]ables? |\b[Ff]igures? |\bEq\. ?)\s*\d+(?:\.\d+)*"),
    re.compile(rf"\b{VERSIONED}[ -]?v?\d+(?:\.\d+)+"),
]
#: How a text names a notebook (tests/test_docs_numbers.py: a document's section takes the numbers of those it names).
CITES = [re.compile(r"\b(\d\d)_\w+\.ipynb"), re.compile(r"\b[Nn]otebooks? (\d\d)\b"), re.compile(r"\b(\d\d) §")]


def numbers(text: str) -> list[str]:
    return [m.group(0).lstrip("+-−") for m in NUMBER.finditer(text)]


def prose(markdown: str) -> str:
    for pattern in NOT_PROSE:
        markdown = pattern.sub(" ", markdown)
    return markdown


def printed(nb: nbformat.NotebookNode) -> set[str]:
    """Every decimal number in the text outputs of ``nb`` (images left out)."""
    texts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.output_type == "stream":
                texts.append(out.text)
            for kind, value in out.get("data", {}).items():
                if not kind.startswith("image/"):
                    texts.append(value if isinstance(value, str) else "".join(value))
    return set(numbers("\n".join(texts)))


def typed_in_code(nb: nbformat.NotebookNode) -> set[str]:
    return set(numbers("\n".join(c.source for c in nb.cells if c.cell_type == "code")))


def shown(number: str, pool: set[str]) -> bool:
    """Whether ``number`` is in ``pool`` as typed, or as a more precise value rounded to its digits."""
    if number in pool:
        return True
    if "e" in number:
        return False
    step = Decimal(1).scaleb(-len(number.split(".")[1]))
    for candidate in pool:
        if "e" in candidate or len(candidate.split(".")[1]) < len(number.split(".")[1]):
            continue
        value = Decimal(candidate)
        if number in (str(value.quantize(step, ROUND_HALF_UP)), str(value.quantize(step, ROUND_HALF_EVEN))):
            return True
    return False


def cited_from_papers() -> dict[str, set[str]]:
    entries = tomllib.loads(CITED.read_text(encoding="utf-8"))["cited"]
    allowed: dict[str, set[str]] = {}
    for entry in entries:
        assert entry["notebook"] in NOTEBOOKS, f"cited_numbers.toml names an unknown notebook {entry['notebook']!r}"
        assert entry.get("source", "").strip(), f"cited_numbers.toml: an entry for {entry['notebook']} has no source"
        allowed.setdefault(entry["notebook"], set()).update(entry["numbers"])
    return allowed


@pytest.fixture(scope="module")
def executed() -> dict[str, nbformat.NotebookNode]:
    return {stem: nbformat.read(path, as_version=4) for stem, path in NOTEBOOKS.items()}


SECTION = re.compile(r"^## (?:(\d+) ·|(.+))", re.M)
#: "05 §7", "05 § 7": notebook 05, section 7.
CITES_SECTION = re.compile(r"\b(\d\d) ?§ ?(\d+)")
#: "section 4 of [06 · Length extrapolation](06_length_extrapolation.ipynb)": notebook 06, section 4.
CITES_SECTION_OF = re.compile(r"\b[Ss]ection (\d+) of \[?(?:notebook )?(\d\d)\b")
#: "§7", "section 7", "sections 3 and 4": this notebook's sections (unless another notebook is named right before).
CITES_OWN = re.compile(r"(?<!\d )(?<!\d)§ ?(\d+)|\b[Ss]ections? (\d+)(?:(?:,| and| or) (\d+))*(?! of \[?(?:notebook )?\d\d)")

INTRO = "(introduction)"
FENCED = re.compile(r"```.*?```", re.S)   # a code block in a markdown cell: not prose
#: A citation counts for its own paragraph, list item or table row: a summary's bullets cite one each.
BLOCK = re.compile(r"\n\s*\n|\n(?=\s*(?:[-*] |\d+\. |\|))")


def by_section(nb: nbformat.NotebookNode) -> list[tuple[str, nbformat.NotebookNode, str]]:
    """Every cell of ``nb`` with the section it belongs to, as ``(section, cell, text)``: the number of
    its ``## N ·`` heading, the title of another level-2 heading (``Summary``), or ``(introduction)``
    before the first. A markdown cell whose text runs on into the next heading is cut there: each
    part belongs to its own section (``text`` is the part)."""
    section, out = INTRO, []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            out.append((section, cell, cell.source))
            continue
        start = 0
        for m in SECTION.finditer(cell.source):
            if cell.source[start:m.start()].strip():
                out.append((section, cell, cell.source[start:m.start()]))
            section, start = m.group(1) or m.group(2).strip(), m.start()
        out.append((section, cell, cell.source[start:]))
    return out


def printed_by_section(nb: nbformat.NotebookNode) -> dict[str, set[str]]:
    """The decimal numbers printed by each section's code cells."""
    pools: dict[str, set[str]] = {}
    for section, cell, _ in by_section(nb):
        pools.setdefault(section, set())
        if cell.cell_type == "code":
            single = nbformat.v4.new_notebook(cells=[cell])
            pools[section] |= printed(single)
    return pools


def cited_pool(text: str, stem: str, executed: dict[str, nbformat.NotebookNode],
               sections: dict[str, dict[str, set[str]]]) -> set[str]:
    """What a paragraph of notebook ``stem`` may quote beyond its own section: what the sections it cites print."""
    by_number = {s[:2]: s for s in executed}
    pool: set[str] = set()
    cited_sections = [(nn, sec) for nn, sec in CITES_SECTION.findall(text)]
    cited_sections += [(nn, sec) for sec, nn in CITES_SECTION_OF.findall(text)]
    for nn, sec in cited_sections:
        if nn in by_number:
            pool |= sections[by_number[nn]].get(sec, set())
    without_cross = CITES_SECTION.sub(" ", CITES_SECTION_OF.sub(" ", text))
    for match in CITES_OWN.finditer(without_cross):
        for sec in match.groups():
            if sec:
                pool |= sections[stem].get(sec, set())
    return pool


@pytest.fixture(scope="module")
def sections(executed) -> dict[str, dict[str, set[str]]]:
    return {stem: printed_by_section(nb) for stem, nb in executed.items()}


@pytest.mark.parametrize("stem", list(NOTEBOOKS))
def test_every_number_in_the_prose_is_printed_by_its_section(stem, executed, sections):
    nb = executed[stem]
    code = typed_in_code(nb)
    papers = cited_from_papers().get(stem, set())
    stale = []
    for section, cell, text in by_section(nb):
        if cell.cell_type != "markdown":
            continue
        for block in BLOCK.split(FENCED.sub(" ", text)):
            pool = sections[stem][section] | code | cited_pool(block, stem, executed, sections)
            for number in numbers(prose(block)):
                if not shown(number, pool) and number not in papers:
                    context = re.search(rf".{{0,50}}{re.escape(number)}.{{0,30}}", prose(block))
                    stale.append(f"§{section}: {number!r} in '...{context.group(0).strip() if context else ''}...'")
    assert not stale, (f"{stem}: numbers typed in a section's text that none of its cells prints (print them "
                       f"from a cell of that section, cite the section that prints them as 'NN §M', or list a "
                       f"paper's number in notebooks/cited_numbers.toml): " + "; ".join(stale))


def test_cited_sections_are_read_as_cited():
    assert CITES_SECTION.findall("as 05 §7 and 06 § 4 show") == [("05", "7"), ("06", "4")]
    assert CITES_SECTION_OF.findall("in section 4 of [06 · Length](06_length.ipynb)") == [("4", "06")]
    own = [g for m in CITES_OWN.finditer("see §3, and sections 4 and 5; section 2 of [06 · X](06_x.ipynb)")
           for g in m.groups() if g]
    assert own == ["3", "4", "5"]


def test_the_paper_numbers_are_still_in_the_text(executed):
    """An entry of cited_numbers.toml that the text no longer contains is dead: remove it."""
    for stem, allowed in cited_from_papers().items():
        text = " ".join(prose(c.source) for c in executed[stem].cells if c.cell_type == "markdown")
        assert allowed <= set(numbers(text)), f"{stem}: cited_numbers.toml lists {sorted(allowed - set(numbers(text)))}"


@pytest.mark.parametrize("typed, pool, ok", [
    ("0.49", {"0.492"}, True), ("0.50", {"0.495"}, True), ("0.622", {"0.667"}, False),
    ("0.49", {"0.5"}, False), ("12.48", {"12.48"}, True), ("1e-5", {"1e-5"}, True), ("1e-5", {"0.00001"}, False),
])
def test_rounding_rule(typed, pool, ok):
    assert shown(typed, pool) is ok


def test_what_is_not_prose():
    text = "see §5.1 and Table 3, in $x = 0.5$, `lr=0.1`, [a](x.ipynb#1.5), Llama 3.1; measured 0.73."
    assert numbers(prose(text)) == ["0.73"]


def test_a_number_printed_by_another_section_needs_a_citation():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("## 1 · First"),
        nbformat.v4.new_code_cell("print(0.353)", outputs=[nbformat.v4.new_output("stream", text="0.353\n")]),
        nbformat.v4.new_markdown_cell("Measured 0.35 here.\n\n## 2 · Second\n\nAs before, 0.35.\n\n- again 0.35 (§1)"),
    ])
    pools = printed_by_section(nb)
    assert pools == {"1": {"0.353"}, "2": set()}
    parts = [(section, text.strip()) for section, cell, text in by_section(nb) if cell.cell_type == "markdown"]
    assert [section for section, _ in parts] == ["1", "1", "2"]
    blocks = BLOCK.split(parts[-1][1])
    own = [shown("0.35", pools["2"] | cited_pool(block, "99_x", {"99_x": nb}, {"99_x": pools})) for block in blocks[1:]]
    assert own == [False, True]   # uncited: stale; cited "§1": passes

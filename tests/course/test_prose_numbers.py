"""Prose that cannot go stale: every decimal number typed in a notebook's text is printed by a cell.

A number in a markdown cell passes when it appears among the outputs of its own notebook, or of a
notebook that the same markdown cell cites (a link ``NN_name.ipynb``, "notebook NN" or "NN §"),
at the precision it is typed with (typed 0.49 matches a printed 0.492), or literally in the
notebook's code (a setting such as an init scale of 0.02). The only other numbers allowed are
those cited from papers, each listed with its source in notebooks/cited_numbers.toml.

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


@pytest.mark.parametrize("stem", list(NOTEBOOKS))
def test_every_number_in_the_prose_is_printed(stem, executed):
    by_number = {s[:2]: s for s in NOTEBOOKS}
    nb = executed[stem]
    own = printed(nb) | typed_in_code(nb)
    papers = cited_from_papers().get(stem, set())
    stale = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        pool = set(own)
        for pattern in CITES:
            for other in pattern.findall(cell.source):
                if other in by_number:
                    pool |= printed(executed[by_number[other]])
        for number in numbers(prose(cell.source)):
            if not shown(number, pool) and number not in papers:
                context = re.search(rf".{{0,50}}{re.escape(number)}.{{0,30}}", prose(cell.source))
                stale.append(f"{number!r} in '...{context.group(0).strip() if context else ''}...'")
    assert not stale, (f"{stem}: numbers typed in the text that no cell prints (print them from a cell, or "
                       f"list a paper's number in notebooks/cited_numbers.toml): " + "; ".join(stale))


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

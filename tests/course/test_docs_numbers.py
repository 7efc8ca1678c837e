"""The course's documents cannot go stale: docs/errata.md, docs/instructor-guide.md, docs/replication.md.

- Every decimal number typed in them is printed by a notebook that its section cites: the pool of
  a section is the text outputs of the notebooks linked or named in the section or in the
  sections above it (``../notebooks/NN_name.ipynb``, "notebook NN", "NN §"), and a number passes
  at the precision it is typed with (typed 0.49 matches a printed 0.492). Math, inline code, link
  targets, headings and section numbers are not counted, exactly as for the notebooks' own prose
  (the rules and helpers are those of tests/course/test_prose_numbers.py). Unlike notebook prose, a
  document may not take a number from a notebook's code; a number from a paper passes only where
  docs/cited_numbers.toml lists it for that page, with its place in the paper.
- The replication table is held to the section: each paragraph, list item or table row takes its
  numbers from the notebook *sections* it cites ("06 §4"), or, citing none, from those its page
  section cites.
- The errata are numbered once: the labels E1, E2, ... of docs/errata.md are consecutive; each
  is carried ("erratum E3") by the markdown of a notebook its section cites; and a notebook
  carries only labels whose section on the page cites it.
- Their links to notebook sections point at headings that exist (the site build would fail
  otherwise), and the site stages them as pages linking the notebook pages.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import nbformat
import pytest
from test_prose_numbers import (  # tests/ is on sys.path
    BLOCK,
    CITES,
    CITES_SECTION,
    NOTEBOOKS,
    numbers,
    printed,
    printed_by_section,
    prose,
    shown,
)

from tools import build_site

ROOT = Path(__file__).resolve().parents[2]
DOCS = {name: ROOT / "docs" / f"{name}.md" for name in ("errata", "instructor-guide", "replication")}
PAPERS = ROOT / "docs" / "cited_numbers.toml"
#: Pages whose numbers are tied to the notebook sections they cite, not only to the notebooks.
BY_SECTION = ("replication",)
HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
FENCE = re.compile(r"^\s*```")
ERRATUM_SECTION = re.compile(r"^## (E\d+) · ", re.MULTILINE)
LABEL = re.compile(r"\b[Ee]rrat(?:um|a) (E\d+)(?:(?:,| and) (E\d+))*")
LABELS = re.compile(r"\bE\d+\b")


def sections(markdown: str) -> list[tuple[str, str, str]]:
    """(heading, own text, text of the sections above it) for every section.

    A section runs from its heading to the next heading of any level; code fences are skipped
    (a ``#`` in a shell block is not a heading). "Above" means the enclosing sections of level 2
    and deeper: the page's title section (its introduction, a table of contents) is not inherited,
    so that a section cites only what it or its own parent section names."""
    out: list[tuple[str, str, str]] = []
    stack: list[tuple[int, str, list[str]]] = [(0, "(top)", [])]  # (level, heading, own lines)

    def close() -> None:
        level, heading, lines = stack[-1]
        above = "\n".join("\n".join([h, *ls]) for lv, h, ls in stack[:-1] if lv >= 2)
        out.append((heading, "\n".join([heading, *lines]), above))

    in_code = False
    for line in markdown.splitlines():
        if FENCE.match(line):
            in_code = not in_code
        m = None if in_code else HEADING.match(line)
        if not m:
            stack[-1][2].append(line)
            continue
        close()
        level = len(m[1])
        while stack[-1][0] >= level:
            stack.pop()
        stack.append((level, line, []))
    close()
    return out


def cited(text: str) -> set[str]:
    by_number = {stem[:2]: stem for stem in NOTEBOOKS}
    return {by_number[n] for pattern in CITES for n in pattern.findall(text) if n in by_number}


def cited_from_papers() -> dict[str, set[str]]:
    """docs/cited_numbers.toml: page -> the numbers it may cite from papers (each entry names its source)."""
    allowed: dict[str, set[str]] = {}
    for entry in tomllib.loads(PAPERS.read_text(encoding="utf-8"))["cited"]:
        assert entry["page"] in DOCS, f"docs/cited_numbers.toml names an unknown page {entry['page']!r}"
        assert entry.get("source", "").strip(), f"docs/cited_numbers.toml: an entry for {entry['page']} has no source"
        allowed.setdefault(entry["page"], set()).update(entry["numbers"])
    return allowed


@pytest.fixture(scope="module")
def outputs() -> dict[str, set[str]]:
    return {stem: printed(nbformat.read(path, as_version=4)) for stem, path in NOTEBOOKS.items()}


@pytest.fixture(scope="module")
def section_outputs() -> dict[str, dict[str, set[str]]]:
    return {stem: printed_by_section(nbformat.read(path, as_version=4)) for stem, path in NOTEBOOKS.items()}


@pytest.mark.parametrize("name", list(DOCS))
def test_every_number_in_the_documents_is_printed_by_a_cited_notebook(name, outputs):
    text = DOCS[name].read_text(encoding="utf-8")
    papers = cited_from_papers().get(name, set())
    checked, stale, uncited = 0, [], []
    for heading, own, above in sections(text):
        body = own.split("\n", 1)[1] if "\n" in own else ""
        typed = numbers(prose(body))
        if not typed:
            continue
        stems = cited(own) | cited(above)
        if not stems:
            uncited.append(heading)
            continue
        pool = set().union(*(outputs[s] for s in stems))
        for number in typed:
            checked += 1
            if not shown(number, pool) and number not in papers:
                context = re.search(rf".{{0,50}}{re.escape(number)}.{{0,30}}", prose(body))
                stale.append(f"{number!r} under {heading!r} (cites {sorted(s[:2] for s in stems)}): "
                             f"'...{context.group(0).strip() if context else ''}...'")
    assert not uncited, f"docs/{name}.md: sections with numbers but no notebook cited: {uncited}"
    assert not stale, (f"docs/{name}.md: numbers that no cited notebook prints (copy them from the outputs, "
                       f"at most at the printed precision, or list a paper's number with its source in "
                       f"docs/cited_numbers.toml):\n" + "\n".join(stale))
    assert checked >= 50, f"docs/{name}.md: only {checked} numbers checked; is the parser still reading the file?"


def section_pool(text: str, sections: dict[str, dict[str, set[str]]]) -> tuple[set[str], list[str]]:
    """The outputs of the notebook sections that ``text`` cites as "NN §M", and those citations."""
    by_number = {stem[:2]: stem for stem in NOTEBOOKS}
    pool, cites = set(), []
    for nn, sec in CITES_SECTION.findall(text):
        if nn in by_number:
            pool |= sections[by_number[nn]].get(sec, set())
            cites.append(f"{nn} §{sec}")
    return pool, cites


@pytest.mark.parametrize("name", BY_SECTION)
def test_the_replication_numbers_are_printed_by_the_sections_they_cite(name, section_outputs):
    text = DOCS[name].read_text(encoding="utf-8")
    papers = cited_from_papers().get(name, set())
    stale, checked = [], 0
    for heading, own, _ in sections(text):
        body = own.split("\n", 1)[1] if "\n" in own else ""
        section_wide, section_cites = section_pool(body, section_outputs)
        for block in BLOCK.split(body):
            pool, cites = section_pool(block, section_outputs)
            if not cites:
                pool, cites = section_wide, section_cites
            for number in numbers(prose(block)):
                checked += 1
                if number not in papers and not shown(number, pool):
                    context = re.search(rf".{{0,50}}{re.escape(number)}.{{0,30}}", prose(block))
                    stale.append(f"{number!r} under {heading!r} (cites {cites or 'no section'}): "
                                 f"'...{context.group(0).strip() if context else ''}...'")
    assert not stale, (f"docs/{name}.md: numbers that the notebook sections cited beside them do not print "
                       f"(cite the section as 'NN §M' in the same row or paragraph):\n" + "\n".join(stale))
    assert checked >= 50, f"docs/{name}.md: only {checked} numbers checked"


def test_the_paper_numbers_of_the_documents_are_still_in_their_text():
    """An entry of docs/cited_numbers.toml that its page no longer contains is dead: remove it."""
    for name, allowed in cited_from_papers().items():
        typed = set(numbers(prose(DOCS[name].read_text(encoding="utf-8"))))
        assert allowed <= typed, f"docs/cited_numbers.toml lists for {name}: {sorted(allowed - typed)}"


def test_the_errata_are_numbered_once_and_the_notebooks_use_the_same_labels():
    text = DOCS["errata"].read_text(encoding="utf-8")
    defined = ERRATUM_SECTION.findall(text)
    assert defined == [f"E{i}" for i in range(1, len(defined) + 1)] and len(defined) >= 6, defined
    where: dict[str, set[str]] = {}
    for heading, own, _ in sections(text):
        m = ERRATUM_SECTION.match(heading + " ")
        if m:
            where[m[1]] = cited(own)
    labelled: dict[str, set[str]] = {}
    for stem, path in NOTEBOOKS.items():
        markdown = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
        for m in LABEL.finditer(markdown):
            for label in LABELS.findall(m[0]):
                labelled.setdefault(label, set()).add(stem)
    unknown = sorted(set(labelled) - set(defined))
    assert not unknown, f"notebooks use erratum labels that docs/errata.md does not define: {unknown}"
    for label, stems in labelled.items():
        stray = sorted(stems - where[label])
        assert not stray, f"{stray} say 'erratum {label}', but the section {label} of docs/errata.md does not cite them"
    for label in defined:
        assert labelled.get(label, set()) & where[label], (
            f"{label}: none of the notebooks its section cites ({sorted(where[label])}) says 'erratum {label}'")


def test_sections_and_their_citations():
    text = ("# Title\n\nAll: 03 §2.\n\n## T\n\nSee [01](../notebooks/01_sinusoidal.ipynb#x).\n\n### A\n\n"
            "number 0.5\n\n```bash\n# not a heading\n```\n\n### B\n\n07 § here\n\n## U\n\nnothing\n")
    found = {heading: (cited(own), cited(above)) for heading, own, above in sections(text)}
    assert found["# Title"] == ({"03_rope"}, set())
    assert found["### A"] == (set(), {"01_sinusoidal"})
    assert found["### B"] == ({"07_debugging"}, {"01_sinusoidal"})
    assert found["## U"] == (set(), set())  # the title section's citations are not inherited
    assert "# not a heading" in dict((h, o) for h, o, _ in sections(text))["### A"]


@pytest.mark.parametrize("name", list(DOCS))
def test_links_to_notebook_sections_resolve(name):
    text = DOCS[name].read_text(encoding="utf-8")
    anchors = {stem: build_site.anchor_map(nbformat.read(path, as_version=4)) for stem, path in NOTEBOOKS.items()}
    links = list(build_site.DOC_NOTEBOOK_LINK.finditer(text))
    assert links, f"docs/{name}.md links no notebook"
    broken = [m[0] for m in links if m["stem"] not in anchors
              or (m["anchor"] and m["anchor"] not in anchors[m["stem"]] and m["anchor"] not in anchors[m["stem"]].values())]
    assert not broken, f"docs/{name}.md: links to notebooks or headings that do not exist: {broken}"
    staged = build_site.doc_markdown(text, anchors)
    assert "../notebooks/" not in staged
    assert name in build_site.DOC_PAGES


def test_doc_links_become_site_links():
    anchors = {"01_next": {"1-·-The-formula": "1--the-formula"}}
    text = ("[a](../notebooks/01_next.ipynb#1-·-The-formula), [b](../notebooks/01_next.ipynb), "
            "[c](../notebooks/01_next.ipynb#1--the-formula), [d](instructor-guide.md)")
    assert build_site.doc_markdown(text, anchors) == (
        "[a](01_next.ipynb#1--the-formula), [b](01_next.ipynb), [c](01_next.ipynb#1--the-formula), "
        "[d](instructor-guide.md)")


def test_the_float16_facts_of_erratum_e8():
    """docs/errata.md, E8: theta ** (2i/d) overflows only where the base itself does not fit (float16
    above 65504); at base 10000, or in float32 and bfloat16, it stays finite, while the slowest
    frequencies of a large base fall below float16's smallest normal number."""
    import torch

    d = 128
    exponents = torch.arange(0, d, 2) / d
    for base in (5e5, 1e6, 5e6):  # the largest bases of 08's table
        assert torch.isinf(torch.tensor(base, dtype=torch.float16))
        assert torch.isinf(base ** exponents.half()).sum() == d // 2 - 1  # every power but theta ** 0
        for dtype in (torch.float32, torch.bfloat16):
            assert torch.isfinite(torch.tensor(base, dtype=dtype) ** exponents.to(dtype)).all()
        slowest = (1.0 / base ** exponents).half()[-1]
        assert 0 < slowest < torch.finfo(torch.float16).tiny
    assert torch.isfinite(10000.0 ** exponents.half()).all()

"""What the i18n tools share: where the Chinese catalogs are, how to read them, and the rules every
translation follows, in the pages' catalogs (``tools/i18n.py``) and in the course package's
(``tools/i18n_course.py``). The generated Chinese notebooks (``tools/i18n_notebooks.py``) read the
catalogs through it too.

This module imports no other i18n tool, so the imports go one way: ``tools.i18n`` (the commands)
imports ``tools.i18n_course`` and ``tools.i18n_notebooks``, and all three import this module.

A problem a check finds is of one of two kinds (docs/i18n.md):

- :data:`ERROR`: a translation that is wrong (it changes a formula, inline code span, link target, HTML
  tag, number or markup of its English, leaves the terminology table, or translates a display formula).
  ``make test`` fails on it.
- :data:`OUT_OF_DATE`: the translation lags the English (an entry untranslated or fuzzy, a catalog stale
  against the English, a page not yet translated). ``make i18n-check`` and ``make i18n-status`` list it;
  ``make test`` passes, and the Chinese pages and notebooks show the English, marked, until the
  translator catches up. An English change is never blocked by the translation.
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parent.parent
LANGUAGE = "zh_CN"
LOCALE = ROOT / "locale"
CATALOGS = LOCALE / LANGUAGE / "LC_MESSAGES"
MANIFEST = LOCALE / LANGUAGE / "complete.toml"
TERMINOLOGY = LOCALE / LANGUAGE / "terminology.toml"
GLOSSARY = ROOT / "tools" / "site" / "glossary.toml"

#: The two kinds of problem (see the module's docstring).
ERROR = "error"
OUT_OF_DATE = "out of date"

#: What a Chinese page or notebook shows beside a paragraph left in English (its translation missing or
#: out of date): the site's label (tools/site/posenc_site.py) and the generated notebooks' marker.
ENGLISH_LABEL = "英文原文，翻译待更新"


def load(path: Path) -> Catalog:
    """A catalog (``.po``) or template (``.pot``) file."""
    with open(path, "rb") as f:
        return read_po(f, charset="utf-8")


# --- what a translation must keep -----------------------------------------------------------------

MATH = re.compile(r"(?<!\\)\$\$.+?(?<!\\)\$\$|(?<![\\$])\$(?!\$)[^$\n]+?(?<!\\)\$", re.S)
CODE = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
LINK_TARGET = re.compile(r"\]\(([^)\s]+)\)")
TAG = re.compile(r"</?[a-zA-Z][^<>]*>")
NUMBER = re.compile(r"\d+(?:\.\d+)?")
# A number with a word for its size ("210 thousand", "3 million", "4K"; "21 万", "300 万", "3 亿") counts
# as its value, so that a translation may write the size as its language does (210 thousand = 21 万).
SCALED = re.compile(r"(\d+(?:\.\d+)?)\s*(thousand|million|billion|[KMB](?![A-Za-z])|万|亿|千|百万)")
SCALE = {"thousand": 3, "K": 3, "million": 6, "M": 6, "billion": 9, "B": 9, "千": 3, "万": 4, "百万": 6, "亿": 8}


def numbers(text: str) -> list[str]:
    """The numbers of a text, those with a size word as their plain value (``"21 万"`` -> ``"210000"``)."""
    values = [format(Decimal(m.group(1)).scaleb(SCALE[m.group(2)]).normalize(), "f")
              for m in SCALED.finditer(text)]
    return values + NUMBER.findall(SCALED.sub(" ", text))


def spans(text: str) -> dict[str, Counter]:
    """The parts of a message a translation keeps byte for byte, each as a multiset."""
    maths = MATH.findall(text)
    rest = MATH.sub(" ", text)
    codes = [m.group(0) for m in CODE.finditer(rest)]
    rest = CODE.sub(" ", rest)
    links = LINK_TARGET.findall(rest)
    rest = LINK_TARGET.sub("] ", rest)
    tags = TAG.findall(rest)
    rest = TAG.sub(" ", rest)
    return {"formula": Counter(maths), "inline code": Counter(codes), "link": Counter(links),
            "HTML tag": Counter(tags), "number": Counter(numbers(rest))}


def prose(text: str) -> str:
    """A message without its formulas, code spans, link targets and tags: the words a reader reads."""
    text = MATH.sub(" ", text)
    text = CODE.sub(" ", text)
    text = LINK_TARGET.sub("] ", text)
    return TAG.sub(" ", text)


@functools.cache
def _commonmark() -> MarkdownIt:
    return MarkdownIt("commonmark")


def markup(text: str) -> Counter:
    """The inline markup of a message as MyST parses it (CommonMark, with formulas set aside): how many
    bold, italic and link spans. Chinese text needs care here: CommonMark does not close ``**粗体。**``
    when a letter follows it directly, and the reader would see the asterisks."""
    tokens = [t for block in _commonmark().parse(MATH.sub("M", text)) for t in (block.children or [])]
    return Counter(t.type for t in tokens if t.type in ("strong_open", "em_open", "link_open"))


def kept(msgid: str, msgstr: str) -> list[str]:
    """What the translation changed of what it must keep (empty when all is kept)."""
    problems = []
    names = {"strong_open": "bold", "em_open": "italic", "link_open": "link"}
    source_markup, target_markup = markup(msgid), markup(msgstr)
    if source_markup != target_markup:
        problems.append("markup: " + ", ".join(f"{names[k]} {source_markup[k]} -> {target_markup[k]}"
                                               for k in names if source_markup[k] != target_markup[k]))
    source, target = spans(msgid), spans(msgstr)
    for kind in source:
        missing, extra = source[kind] - target[kind], target[kind] - source[kind]
        if missing or extra:
            detail = "; ".join(filter(None, [
                "missing " + ", ".join(repr(s) for s in missing.elements()) if missing else "",
                "added " + ", ".join(repr(s) for s in extra.elements()) if extra else ""]))
            problems.append(f"{kind}: {detail}")
    return problems


def words(text: str) -> int:
    """How many English words ``text`` has outside its formulas, code spans, link targets and tags."""
    return len(re.findall(r"[A-Za-z]+(?:'[a-z]+)?", prose(text)))


def nothing_to_translate(msgid: str) -> bool:
    """A message with no word outside its formulas, code, links and tags (a display formula, a number)."""
    return not re.search(r"[A-Za-z]{2,}", prose(msgid))


# --- terminology ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    term: str  # the glossary term ("" for a rule of the table's own)
    en: tuple[str, ...]  # English phrases (a phrase with a capital letter matches case-sensitively)
    zh: tuple[str, ...]  # the Chinese a translation of such a message uses (any one of them)
    not_zh: tuple[str, ...] = ()  # Chinese forms of the concept no translation uses, whatever its English

    @property
    def pattern(self) -> re.Pattern:
        sensitive = [re.escape(p) for p in self.en if p != p.lower()]
        insensitive = [re.escape(p) for p in self.en if p == p.lower()]
        parts = ([rf"(?:{'|'.join(sensitive)})"] if sensitive else []) + (
            [rf"(?i:{'|'.join(insensitive)})"] if insensitive else [])
        return re.compile(rf"(?<![\w-])(?:{'|'.join(parts)})(?![\w-])")


def load_terminology(path: Path = TERMINOLOGY) -> list[Rule]:
    """The terminology table's rules (``locale/zh_CN/terminology.toml``)."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return [Rule(r.get("term", ""), tuple(r["en"]), tuple(r["zh"]), tuple(r.get("not_zh", ()))) for r in data["rule"]]


# A link to the outside world: its text is the title of a cited work, which stays in its own language.
CITATION = re.compile(r"\[[^\]]*\]\(https?://[^)\s]+\)")


def terminology_problems(msgid: str, msgstr: str, rules: list[Rule]) -> list[str]:
    """The rules whose English the message uses and whose Chinese its translation does not, and the
    forms a rule rules out (its ``not_zh``: 头宽度 where the table says 头维度) that the translation uses,
    whatever its English says: one word per concept in every catalog.

    Phrases match longest first: in "bag of tokens" the rule for "bag of tokens" applies, not the one
    for "tokens". Titles of cited works (the text of a link to the web) are not checked."""
    english, chinese = prose(CITATION.sub(" ", msgid)), prose(CITATION.sub(" ", msgstr)).lower()
    matches = sorted(((m.start(), m.end(), m[0], rule) for rule in rules for m in rule.pattern.finditer(english)),
                     key=lambda t: (t[0] - t[1], t[0]))
    taken: list[tuple[int, int]] = []
    problems = []
    for start, end, text, rule in matches:
        if any(start < e and s < end for s, e in taken):
            continue
        taken.append((start, end))
        message = f"term: {text!r} is translated with none of {' / '.join(rule.zh)}"
        if not any(form.lower() in chinese for form in rule.zh) and message not in problems:
            problems.append(message)
    for rule in rules:
        for form in rule.not_zh:
            message = f"term: {form!r} is not the table's word (its rule for {rule.en[0]!r} gives {' / '.join(rule.zh)})"
            if form.lower() in chinese and message not in problems:
                problems.append(message)
    return problems


def load_glossary(path: Path = GLOSSARY) -> list[dict]:
    """The glossary's terms (``tools/site/glossary.toml``; the site reads it with ``posenc_site.load_glossary``)."""
    return tomllib.loads(path.read_text(encoding="utf-8"))["term"]


@functools.lru_cache(maxsize=None)
def glossary_terms() -> frozenset[str]:
    """Every term of the glossary, English and Chinese, as the glossary page writes it."""
    return frozenset(name for t in load_glossary() for name in (t["en"], t["zh"]))


def glossary_problems(rules: list[Rule]) -> list[str]:
    """The table follows the glossary: every glossary term has a rule, each rule's Chinese is the
    glossary's (one of its forms appears in the glossary's Chinese for that term), no glossary entry's
    Chinese uses a form a rule rules out, and no form the table gives contains one it rules out."""
    glossary = {t["en"]: t for t in load_glossary()}
    problems = [f"glossary term {en!r} has no rule in {TERMINOLOGY.relative_to(ROOT)}"
                for en in glossary if en not in {r.term for r in rules}]
    for rule in rules:
        if rule.term and rule.term not in glossary:
            problems.append(f"rule for {rule.term!r}: no such glossary term")
        elif rule.term and not any(form.lower() in glossary[rule.term]["zh"].lower() for form in rule.zh):
            problems.append(f"rule for {rule.term!r}: none of {rule.zh} is in the glossary's {glossary[rule.term]['zh']!r}")
    for rule in rules:
        for form in rule.not_zh:
            problems += [f"glossary term {en!r}: its Chinese {t['zh']!r} uses {form!r}, which the table rules out"
                         for en, t in glossary.items() if form.lower() in t["zh"].lower()]
            problems += [f"rule for {other.en[0]!r}: its form {allowed!r} contains {form!r}, which the table rules out"
                         for other in rules for allowed in other.zh if form.lower() in allowed.lower()]
    return problems

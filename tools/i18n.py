"""The Chinese edition's translation catalogs (gettext): ``make i18n-update``, ``make i18n-status``.

    python -m tools.i18n update   # extract the English, merge it into locale/zh_CN/LC_MESSAGES/*.po
                                  # (and the checkers' messages into posenc_course.po, tools/i18n_course.py)
    python -m tools.i18n status   # per document: entries, translated, fuzzy, untranslated, complete or not
    python -m tools.i18n check    # what tests/tools/test_i18n.py checks, as a report (exit status 1 on a problem)

The English notebooks and pages stay the source. ``update`` stages the site's sources exactly as
``make html`` does (``tools/build_site.stage``, without the library reference, whose docstrings stay
English), runs Sphinx's **gettext** builder over them with the site's configuration
(``tools/site/conf.py``), and merges the templates (``.pot``, one per page) into the catalogs with
**sphinx-intl** (babel's ``Catalog.update``, msgmerge's rules): a new paragraph gets an empty entry,
an English change keeps the old translation marked **fuzzy** for review, a paragraph that is gone
becomes obsolete (``#~``). One entry per paragraph, heading, list item, table cell, figure alt text
and display formula, its msgid the MyST source (math, inline code and links as written).

A translation must keep each formula (``$...$``, ``$$...$$``), inline code span, link target, HTML tag
and number of its English byte for byte, and use the terminology table
(``locale/zh_CN/terminology.toml``, which follows the glossary's Chinese, ``tools/site/glossary.toml``).
The documents listed in ``locale/zh_CN/complete.toml`` must have every entry translated, none fuzzy,
and their catalog current with the English. See docs/i18n.md.

The extraction (about 20 s) is cached under ``build/i18n/cache/``, keyed by a digest of its inputs.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import io
import json
import re
import shutil
import sys
import tomllib
from collections import Counter
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "tools" / "site"
LANGUAGE = "zh_CN"
LOCALE = ROOT / "locale"
CATALOGS = LOCALE / LANGUAGE / "LC_MESSAGES"
MANIFEST = LOCALE / LANGUAGE / "complete.toml"
TERMINOLOGY = LOCALE / LANGUAGE / "terminology.toml"
GLOSSARY = CONF / "glossary.toml"
CACHE = ROOT / "build" / "i18n" / "cache"
# Beside the .pot files: per page, each msgid's section headings, and the msgids that are display formulas.
SECTIONS = "messages.json"

# What the extraction reads: a change to any of these may change the messages.
INPUTS = ("notebooks/[0-9][0-9]_*.ipynb", "notebooks/catalog.toml", "docs/*.md", "tools/site/*.py",
          "tools/site/*.toml", "tools/build_site.py", "tools/catalog.py", "tools/i18n.py")


# --- extraction ------------------------------------------------------------------------------------


def source_digest(root: Path = ROOT) -> str:
    """A digest of everything the extraction reads (files, tool versions, the checkout's origin)."""
    import subprocess

    h = hashlib.sha256()
    for pattern in INPUTS:
        for path in sorted(root.glob(pattern)):
            h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    for dist in ("sphinx", "myst-nb", "myst-parser", "docutils"):
        h.update(f"{dist}=={metadata.version(dist)}\0".encode())
    # the front page names the repository when it has one (tools/build_site.repository_url)
    origin = subprocess.run(["git", "-C", str(root), "config", "--get", "remote.origin.url"],
                            capture_output=True, text=True).stdout
    h.update(origin.encode())
    return h.hexdigest()[:16]


def _mime_priorities() -> list[tuple[str, str, int]]:
    """The gettext builder renders notebook outputs as the html builder does (so that a figure's alt
    text becomes an entry, and an HTML-only output is not reported as unrenderable)."""
    from myst_nb.core.render import base_render_priority

    return [("gettext", mime, priority) for mime, priority in base_render_priority()["html"].items()]


def extract(target: Path) -> None:
    """Stage the site's sources and run Sphinx's gettext builder: ``target`` gets one ``NAME.pot``
    per page and ``sections.json`` (for each page, each msgid's section headings)."""
    from sphinx.application import Sphinx
    from sphinx.util.docutils import docutils_namespace, patch_docutils
    from sphinx.util.nodes import extract_messages

    from docutils import nodes

    from tools.build_site import NOTEBOOKS, forget_translations, stage

    work = target.parent / (target.name + ".work")
    if work.exists():
        shutil.rmtree(work)
    src = work / "src"
    stage(src, NOTEBOOKS, api=False)
    sections: dict[str, dict[str, list[str]]] = {}
    formulas: dict[str, list[str]] = {}

    def record(app: Sphinx, doctree: nodes.document, docname: str) -> None:
        found = sections.setdefault(docname, {})
        for node, msg in extract_messages(doctree):
            if isinstance(node, nodes.math_block):  # its msgid is the bare LaTeX, without $$
                formulas.setdefault(docname, []).append(msg)
            section = next((p for p in _parents(node) if isinstance(p, nodes.section)), None)
            title = section[0].astext() if section is not None and isinstance(section[0], nodes.title) else ""
            found.setdefault(msg, [])
            if title not in found[msg]:
                found[msg].append(title)

    from tools.site import posenc_site

    warnings = io.StringIO()
    posenc_site.FOLD_DEEP_DIVES = False  # a deep dive's heading is a heading here, not a fold's raw HTML
    # A Chinese render earlier in this process (a test) leaves its catalogs loaded, keyed by domain and not by
    # language: Sphinx would translate the English it extracts here. `make test` found it (docs/i18n.md).
    forget_translations()
    with patch_docutils(CONF), docutils_namespace():
        app = Sphinx(src, CONF, work / "gettext", work / "doctrees", "gettext",
                     confoverrides={"html_extra_path": [str(src / "_extra")],
                                    "nb_mime_priority_overrides": _mime_priorities()},
                     status=None, warning=warnings, freshenv=True)
        app.connect("doctree-resolved", record)
        try:
            app.build(force_all=True)
        finally:
            posenc_site.FOLD_DEEP_DIVES = True
    if app.statuscode != 0 or warnings.getvalue().strip():
        raise RuntimeError(f"the gettext extraction failed or warned:\n{warnings.getvalue()}")
    (work / "gettext" / SECTIONS).write_text(json.dumps({"sections": sections, "formulas": formulas},
                                                        ensure_ascii=False, indent=0), encoding="utf-8")
    if target.exists():
        shutil.rmtree(target)
    (work / "gettext").rename(target)
    shutil.rmtree(work)


def _parents(node):
    while node is not None:
        yield node
        node = node.parent


@functools.lru_cache(maxsize=None)
def templates(root: Path = ROOT, cache: Path = CACHE) -> Path:
    """The folder of ``.pot`` templates for the current English, extracted once per input digest
    (and looked up once per process)."""
    import fcntl

    folder = cache / source_digest(root)
    if (folder / SECTIONS).exists():
        return folder
    cache.parent.mkdir(parents=True, exist_ok=True)
    # one extraction at a time (parallel test workers, a second terminal): the others wait, then reuse it
    with open(cache.parent / "extract.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / SECTIONS).exists():
            if cache.exists():  # older extractions
                for old in cache.iterdir():
                    shutil.rmtree(old, ignore_errors=True)
            cache.mkdir(parents=True, exist_ok=True)
            extract(folder)
    return folder


def update(catalogs: Path = CATALOGS) -> dict[str, int]:
    """Merge the current templates into the catalogs (sphinx-intl): new entries empty, changed ones fuzzy."""
    from sphinx_intl.basic import update as intl_update

    from tools import i18n_course

    pots = templates()
    status = intl_update(str(catalogs.parent.parent), str(pots), (catalogs.parent.name,), jobs=1)
    copied = fill_untranslatable(catalogs, pots)
    if copied:
        print(f"filled {copied} entries that hold nothing to translate (a display formula, a number) with their English")
    course = i18n_course.update()  # the checkers' messages: extracted from posenc_course/, not a page
    print(f"{COURSE_DOMAIN}.po (the course package's messages): {course}")
    return status


# --- what a translation must keep -----------------------------------------------------------------

MATH = re.compile(r"(?<!\\)\$\$.+?(?<!\\)\$\$|(?<![\\$])\$(?!\$)[^$\n]+?(?<!\\)\$", re.S)
CODE = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
LINK_TARGET = re.compile(r"\]\(([^)\s]+)\)")
TAG = re.compile(r"</?[a-zA-Z][^<>]*>")
NUMBER = re.compile(r"\d+(?:\.\d+)?")


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
            "HTML tag": Counter(tags), "number": Counter(NUMBER.findall(rest))}


def prose(text: str) -> str:
    """A message without its formulas, code spans, link targets and tags: the words a reader reads."""
    text = MATH.sub(" ", text)
    text = CODE.sub(" ", text)
    text = LINK_TARGET.sub("] ", text)
    return TAG.sub(" ", text)


_MARKDOWN = None


def markup(text: str) -> Counter:
    """The inline markup of a message as MyST parses it (CommonMark, with formulas set aside): how many
    bold, italic and link spans. Chinese text needs care here: CommonMark does not close ``**粗体。**``
    when a letter follows it directly, and the reader would see the asterisks."""
    global _MARKDOWN
    if _MARKDOWN is None:
        from markdown_it import MarkdownIt

        _MARKDOWN = MarkdownIt("commonmark")
    tokens = [t for block in _MARKDOWN.parse(MATH.sub("M", text)) for t in (block.children or [])]
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


def nothing_to_translate(msgid: str) -> bool:
    """A message with no word outside its formulas, code, links and tags (a display formula, a number)."""
    return not re.search(r"[A-Za-z]{2,}", prose(msgid))


def fill_untranslatable(catalogs: Path = CATALOGS, pots: Path | None = None) -> int:
    """Entries with nothing to translate (a display formula, a number) get their English as the
    translation, not fuzzy: a formula is the same in both languages. Returns how many were filled."""
    from babel.messages.pofile import write_po

    pots = pots or templates()
    total = 0
    for name, path in pages(catalogs).items():
        catalog = load(path)
        display = formulas(pots, name)
        changed = 0
        for message in catalog:
            if message.id and (message.id in display or nothing_to_translate(message.id)) and (
                    not message.string or message.fuzzy):
                if message.string != message.id or message.fuzzy:
                    message.string = message.id
                    message.flags.discard("fuzzy")
                    changed += 1
        if changed:
            with open(path, "wb") as f:
                write_po(f, catalog, width=76)
            total += changed
    return total


# --- terminology ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    term: str  # the glossary term ("" for a rule of the table's own)
    en: tuple[str, ...]  # English phrases (a phrase with a capital letter matches case-sensitively)
    zh: tuple[str, ...]  # the Chinese a translation of such a message uses (any one of them)

    @property
    def pattern(self) -> re.Pattern:
        sensitive = [re.escape(p) for p in self.en if p != p.lower()]
        insensitive = [re.escape(p) for p in self.en if p == p.lower()]
        parts = ([rf"(?:{'|'.join(sensitive)})"] if sensitive else []) + (
            [rf"(?i:{'|'.join(insensitive)})"] if insensitive else [])
        return re.compile(rf"(?<![\w-])(?:{'|'.join(parts)})(?![\w-])")


def load_terminology(path: Path = TERMINOLOGY) -> list[Rule]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return [Rule(r.get("term", ""), tuple(r["en"]), tuple(r["zh"])) for r in data["rule"]]


# A link to the outside world: its text is the title of a cited work, which stays in its own language.
CITATION = re.compile(r"\[[^\]]*\]\(https?://[^)\s]+\)")


def terminology_problems(msgid: str, msgstr: str, rules: list[Rule]) -> list[str]:
    """The rules whose English the message uses and whose Chinese its translation does not.

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
    return problems


def load_glossary(path: Path = GLOSSARY) -> list[dict]:
    """The glossary's terms (``tools/site/glossary.toml``; the site reads it with ``posenc_site.load_glossary``)."""
    return tomllib.loads(path.read_text(encoding="utf-8"))["term"]


@functools.lru_cache(maxsize=None)
def glossary_terms() -> frozenset[str]:
    """Every term of the glossary, English and Chinese, as the glossary page writes it."""
    return frozenset(name for t in load_glossary() for name in (t["en"], t["zh"]))


def glossary_problems(rules: list[Rule]) -> list[str]:
    """The table follows the glossary: every glossary term has a rule, and each rule's Chinese is the
    glossary's (one of its forms appears in the glossary's Chinese for that term)."""
    glossary = {t["en"]: t for t in load_glossary()}
    problems = [f"glossary term {en!r} has no rule in {TERMINOLOGY.relative_to(ROOT)}"
                for en in glossary if en not in {r.term for r in rules}]
    for rule in rules:
        if rule.term and rule.term not in glossary:
            problems.append(f"rule for {rule.term!r}: no such glossary term")
        elif rule.term and not any(form.lower() in glossary[rule.term]["zh"].lower() for form in rule.zh):
            problems.append(f"rule for {rule.term!r}: none of {rule.zh} is in the glossary's {glossary[rule.term]['zh']!r}")
    return problems


# --- reading the catalogs --------------------------------------------------------------------------

# The catalog of the course package's own messages (exercise checkers, the first cell's notice):
# extracted from Python by tools/i18n_course.py, not a page of the site.
COURSE_DOMAIN = "posenc_course"


def pages(catalogs: Path = CATALOGS) -> dict[str, Path]:
    """The site pages' catalogs by document name ("03_rope", "source/03_rope"), sorted."""
    found = {path.relative_to(catalogs).with_suffix("").as_posix(): path for path in catalogs.rglob("*.po")}
    return {name: found[name] for name in sorted(found) if name != COURSE_DOMAIN}


def load(path: Path) -> Catalog:
    with open(path, "rb") as f:
        return read_po(f, charset="utf-8")


def complete_documents(path: Path = MANIFEST) -> list[str]:
    return list(tomllib.loads(path.read_text(encoding="utf-8"))["complete"])


def _short(text: str, n: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


@dataclass
class Problem:
    document: str
    sections: list[str]
    msgid: str
    what: str

    def __str__(self) -> str:
        if self.document == COURSE_DOMAIN and not self.msgid:  # already "file:line: what: msgid"
            return f"{self.document}: {self.what}"
        where = " / ".join(s for s in self.sections if s) or "(before the first heading)"
        return f"{self.document} § {where}: {self.what}: {_short(self.msgid)!r}"


def _messages(pots: Path | None, key: str, document: str) -> dict | list:
    if pots is None or not (pots / SECTIONS).exists():
        return {}
    return json.loads((pots / SECTIONS).read_text(encoding="utf-8"))[key].get(document, {})


def _sections(pots: Path | None, document: str) -> dict[str, list[str]]:
    return _messages(pots, "sections", document)


def formulas(pots: Path | None, document: str) -> set[str]:
    """The msgids of ``document`` that are display formulas (kept as they are in every language)."""
    return set(_messages(pots, "formulas", document))


def entry_problems(document: str, catalog: Catalog, rules: list[Rule], complete: bool,
                   pots: Path | None = None) -> list[Problem]:
    """Every problem of one catalog: untranslated or fuzzy entries (when the document is listed as
    complete), translations that change a formula, code span, link, tag or number, or leave the
    terminology table. ``pots``: the extraction whose ``sections.json`` names the sections."""
    where = _sections(pots, document)
    display = formulas(pots, document)
    problems = []
    for message in catalog:
        if not message.id:
            continue
        found = []
        if message.id in display and message.string and message.string != message.id:
            found.append("display formula: its translation must be the formula itself")
        if complete and not message.string:
            found.append("untranslated")
        elif complete and message.fuzzy:
            found.append("fuzzy (the English changed: review the translation, then remove the flag)")
        if message.string and not message.fuzzy:
            found += kept(message.id, message.string)
            # A display formula, and a glossary term kept as itself (the glossary page lists every term in
            # English and in Chinese, and {term} references name the English), are not prose.
            if message.id not in display and not (message.string == message.id and message.id in glossary_terms()):
                found += terminology_problems(message.id, message.string, rules)
        problems += [Problem(document, where.get(message.id, []), message.id, what) for what in found]
    return problems


def stale_problems(document: str, catalog: Catalog, pots: Path) -> list[Problem]:
    """The catalog's msgids against a fresh extraction of the English: added or removed paragraphs."""
    pot = pots / f"{document}.pot"
    if not pot.exists():
        return [Problem(document, [], "", "the document is no longer extracted (no template)")]
    current = [m.id for m in load(pot) if m.id]
    have = {m.id for m in catalog if m.id}
    where = _sections(pots, document)
    problems = [Problem(document, where.get(m, []), m, "not in the catalog (run make i18n-update)")
                for m in current if m not in have]
    problems += [Problem(document, [], m, "in the catalog, no longer in the English (run make i18n-update)")
                 for m in have - set(current)]
    return problems


def statistics(catalog: Catalog, display: set[str] = frozenset()) -> dict[str, int]:
    """Entries translated, fuzzy and untranslated, and the English words of the page (outside
    formulas, code and links; ``display``: the page's display formulas, which hold none)."""
    entries = [m for m in catalog if m.id]
    done = [m for m in entries if m.string and not m.fuzzy]
    return {"entries": len(entries), "translated": len(done), "fuzzy": sum(1 for m in entries if m.fuzzy),
            "untranslated": sum(1 for m in entries if not m.string),
            "words": sum(len(re.findall(r"[A-Za-z]+(?:'[a-z]+)?", prose(m.id))) for m in entries if m.id not in display)}


def check(catalogs: Path = CATALOGS, stale: bool = True) -> list[Problem]:
    """All problems of all catalogs (what the test asserts is empty)."""
    rules = load_terminology()
    complete = set(complete_documents())
    pots = templates()
    problems = [Problem("terminology", [], "", p) for p in glossary_problems(rules)]
    for name in sorted(complete - set(pages(catalogs))):
        problems.append(Problem(name, [], "", "listed as complete, but it has no catalog"))
    for name, path in pages(catalogs).items():
        catalog = load(path)
        problems += entry_problems(name, catalog, rules, name in complete, pots)
        if stale and name in complete:
            problems += stale_problems(name, catalog, pots)
    if catalogs == CATALOGS:  # the checkers' messages (tools/i18n_course.py), named file:line
        from tools import i18n_course

        problems += [Problem(COURSE_DOMAIN, [], "", p) for p in i18n_course.problems()]
    return problems


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["update", "status", "check", "extract"])
    args = parser.parse_args(argv)
    if args.command == "extract":
        print(templates())
    elif args.command == "update":
        status = update()
        print(f"catalogs in {CATALOGS.relative_to(ROOT)}: {status}")
    if args.command in ("update", "status"):
        complete = set(complete_documents())
        print(f"{'document':32} {'entries':>7} {'done':>5} {'fuzzy':>5} {'empty':>5} {'words':>6}  complete")
        for name, path in pages().items():
            s = statistics(load(path), formulas(templates(), name))
            print(f"{name:32} {s['entries']:7} {s['translated']:5} {s['fuzzy']:5} {s['untranslated']:5} "
                  f"{s['words']:6}  {'yes' if name in complete else ''}")
        from tools import i18n_course

        course = [m for m in i18n_course.load() if m.id]
        done = sum(1 for m in course if m.string and not m.fuzzy)
        print(f"{COURSE_DOMAIN + ' (checker messages)':32} {len(course):7} {done:5} {sum(1 for m in course if m.fuzzy):5} "
              f"{sum(1 for m in course if not m.string):5}")
    if args.command == "check":
        problems = check()
        for problem in problems:
            print(problem)
        print(f"{len(problems)} problem(s)")
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The Chinese edition's translation catalogs (gettext): ``make i18n-update``, ``make i18n-check``.

    python -m tools.i18n update   # extract the English, merge it into locale/zh_CN/LC_MESSAGES/*.po
                                  # (and the checkers' messages into posenc_course.po, tools/i18n_course.py)
    python -m tools.i18n status   # per document: entries, translated, fuzzy, untranslated, stale, complete or not
    python -m tools.i18n check    # every problem, errors first, then what is out of date (exit status 1 on any)

The English notebooks and pages stay the source. ``update`` stages the site's sources exactly as
``make html`` does (``tools/build_site.stage``; the library reference's pages are left out of the
templates, their docstrings staying English), runs Sphinx's **gettext** builder over them with the site's configuration
(``tools/site/conf.py``), and merges the templates (``.pot``, one per page) into the catalogs with
**sphinx-intl** (babel's ``Catalog.update``, msgmerge's rules): a new paragraph gets an empty entry,
an English change keeps the old translation marked **fuzzy** for review, and a paragraph that is gone
is dropped (no obsolete ``#~`` entries are kept). One entry per paragraph, heading, list item, table
cell, figure alt text and display formula, its msgid the MyST source (math, inline code and links as
written).

What ``check`` finds is of two kinds (``tools/i18n_common.py``, docs/i18n.md):

- **errors**, a translation that is wrong: it changes a formula (``$...$``, ``$$...$$``), inline code
  span, link target, HTML tag, number or markup of its English, leaves the terminology table
  (``locale/zh_CN/terminology.toml``, which follows the glossary's Chinese, ``tools/site/glossary.toml``),
  or translates a display formula; the table itself must follow the glossary. ``make test`` fails on
  these (tests/tools/test_i18n.py).
- **out of date**, the translation lags the English: an entry untranslated or fuzzy in a page listed in
  ``locale/zh_CN/complete.toml``, a catalog stale against a fresh extraction of the English, a page
  with no catalog or not listed as complete, a catalog or listing of a page the site no longer has, a
  markdown block of a notebook with no catalog entry or an entry no block uses, an obsolete entry.
  ``make test`` passes: the Chinese pages and notebooks show such a paragraph in English, marked as
  awaiting its translation, and ``check`` lists it, with its page and section, for the translator.

The extraction (about 20 s) is cached under ``build/i18n/cache/``, keyed by a digest of its inputs.
"""

from __future__ import annotations

import argparse
import fcntl
import functools
import hashlib
import io
import json
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import nbformat
from babel.messages.catalog import Catalog
from babel.messages.pofile import write_po
from docutils import nodes
from myst_nb.core.render import base_render_priority
from sphinx.application import Sphinx
from sphinx.util.docutils import docutils_namespace, patch_docutils
from sphinx.util.nodes import extract_messages
from sphinx_intl.basic import update as intl_update

from tools import i18n_course, i18n_notebooks
from tools.build_site import NOTEBOOKS, forget_translations, stage
from tools.i18n_common import (CATALOGS, ERROR, LANGUAGE, MANIFEST, NUMBER, OUT_OF_DATE, ROOT, Rule,
                               glossary_problems, glossary_terms, kept, load, load_terminology,
                               nothing_to_translate, prose, spans, terminology_problems, words)
from tools.site import posenc_site

__all__ = ["CATALOGS", "ERROR", "LANGUAGE", "NUMBER", "OUT_OF_DATE", "Problem", "Rule", "check", "complete_documents",
           "entry_problems", "formulas", "glossary_problems", "load", "load_terminology", "pages", "prose",
           "spans", "stale_problems", "statistics", "templates", "update"]

CONF = ROOT / "tools" / "site"
CACHE = ROOT / "build" / "i18n" / "cache"
# Beside the .pot files: per page, each msgid's section headings, and the msgids that are display formulas.
SECTIONS = "messages.json"
# The library reference's folder of pages: staged for the extraction, not extracted (English in both sites).
API = "api"

# What the extraction reads: a change to any of these may change the messages.
INPUTS = ("notebooks/[0-9][0-9]_*.ipynb", "notebooks/catalog.toml", "docs/*.md", "tools/site/*.py",
          "tools/site/*.toml", "tools/build_site.py", "tools/catalog.py", "tools/i18n.py")

# The catalog of the course package's own messages (exercise checkers, the first cell's notice):
# extracted from Python by tools/i18n_course.py, not a page of the site.
COURSE_DOMAIN = i18n_course.DOMAIN


# --- extraction ------------------------------------------------------------------------------------


def source_digest(root: Path = ROOT) -> str:
    """A digest of everything the extraction reads (files, tool versions, the checkout's origin)."""
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
    return [("gettext", mime, priority) for mime, priority in base_render_priority()["html"].items()]


def extract(target: Path) -> None:
    """Stage the site's sources and run Sphinx's gettext builder: ``target`` gets one ``NAME.pot``
    per page and ``messages.json`` (for each page, each msgid's section headings, and its display
    formulas)."""
    work = target.parent / (target.name + ".work")
    if work.exists():
        shutil.rmtree(work)
    src = work / "src"
    # The library reference is staged, so that the pages link to it as the site's do (the front page's
    # paragraph about it among them), but its own pages are not extracted: their docstrings stay English.
    stage(src, NOTEBOOKS, api=True)
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
    shutil.rmtree(work / "gettext" / API, ignore_errors=True)
    sections = {name: found for name, found in sections.items() if not name.startswith(f"{API}/")}
    formulas = {name: found for name, found in formulas.items() if not name.startswith(f"{API}/")}
    (work / "gettext" / SECTIONS).write_text(json.dumps({"sections": sections, "formulas": formulas},
                                                        ensure_ascii=False, indent=0), encoding="utf-8")
    if target.exists():
        shutil.rmtree(target)
    (work / "gettext").rename(target)
    shutil.rmtree(work)


def _parents(node: nodes.Node | None) -> Iterator[nodes.Node]:
    """``node`` and its ancestors, innermost first."""
    while node is not None:
        yield node
        node = node.parent


@functools.lru_cache(maxsize=None)
def templates(root: Path = ROOT, cache: Path = CACHE) -> Path:
    """The folder of ``.pot`` templates for the current English, extracted once per input digest
    (and looked up once per process)."""
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


def update(catalogs: Path = CATALOGS, pots: Path | None = None, course: bool = True) -> dict[str, int]:
    """Merge the current templates into the catalogs (sphinx-intl): new entries empty, changed ones
    fuzzy, removed ones dropped (``ignore_obsolete``). Then every obsolete (``#~``) entry is dropped
    (sphinx-intl leaves a catalog it finds current untouched, old obsolete entries included), the
    entries with nothing to translate are filled, and (``course``) the course package's catalog is
    updated too. ``pots``: the templates (default: :func:`templates`, the current English)."""
    pots = pots or templates()
    status = intl_update(str(catalogs.parent.parent), str(pots), (catalogs.parent.name,), jobs=1,
                         ignore_obsolete=True)
    filled, dropped = tidy(catalogs, pots)
    if filled:
        print(f"filled {filled} entries that hold nothing to translate (a display formula, a number) with their English")
    if dropped:
        print(f"dropped {dropped} obsolete (#~) entries")
    if course:  # the checkers' messages: extracted from posenc_course/, not a page
        print(f"{COURSE_DOMAIN}.po (the course package's messages): {i18n_course.update()}")
    return status


def tidy(catalogs: Path = CATALOGS, pots: Path | None = None) -> tuple[int, int]:
    """Entries with nothing to translate (a display formula, a number) get their English as the
    translation, not fuzzy (a formula is the same in both languages), and obsolete (``#~``) entries are
    dropped. Returns how many entries were filled and how many dropped."""
    pots = pots or templates()
    filled = dropped = 0
    for name, path in pages(catalogs).items():
        catalog = load(path)
        display = formulas(pots, name)
        changed = len(catalog.obsolete)
        dropped += changed
        catalog.obsolete.clear()
        for message in catalog:
            if message.id and (message.id in display or nothing_to_translate(message.id)) and (
                    not message.string or message.fuzzy):
                if message.string != message.id or message.fuzzy:
                    message.string = message.id
                    message.flags.discard("fuzzy")
                    changed += 1
                    filled += 1
        if changed:
            with open(path, "wb") as f:
                write_po(f, catalog, width=76)
    return filled, dropped


# --- reading the catalogs --------------------------------------------------------------------------


def pages(catalogs: Path = CATALOGS) -> dict[str, Path]:
    """The site pages' catalogs by document name ("03_rope", "source/03_rope"), sorted."""
    found = {path.relative_to(catalogs).with_suffix("").as_posix(): path for path in catalogs.rglob("*.po")}
    return {name: found[name] for name in sorted(found) if name != COURSE_DOMAIN}


def extracted_pages(pots: Path) -> list[str]:
    """The pages of the site, as the extraction found them (one ``.pot`` each), sorted."""
    return sorted(p.relative_to(pots).with_suffix("").as_posix() for p in pots.rglob("*.pot"))


def complete_documents(path: Path = MANIFEST) -> list[str]:
    """The pages ``complete.toml`` lists as fully translated and reviewed."""
    return list(tomllib.loads(path.read_text(encoding="utf-8"))["complete"])


def _short(text: str, n: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


@dataclass
class Problem:
    """One finding of the check: where (page, section headings, the entry's msgid), what, and its kind:
    ``ERROR`` (a wrong translation: ``make test`` fails) or ``OUT_OF_DATE`` (the translation lags the
    English: listed by ``make i18n-check``)."""
    document: str
    sections: list[str]
    msgid: str
    what: str
    kind: str = ERROR

    def __str__(self) -> str:
        if not self.msgid and not self.sections:  # about the page, or already "file:line: what: msgid"
            return f"{self.document}: {self.what}"
        where = " / ".join(s for s in self.sections if s) or "(before the first heading)"
        return f"{self.document} § {where}: {self.what}: {_short(self.msgid)!r}"


def errors(problems: list[Problem]) -> list[Problem]:
    """The problems ``make test`` fails on."""
    return [p for p in problems if p.kind == ERROR]


def out_of_date(problems: list[Problem]) -> list[Problem]:
    """The problems ``make i18n-check`` lists and ``make test`` lets pass."""
    return [p for p in problems if p.kind == OUT_OF_DATE]


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
    """Every problem of one catalog's entries: translations that change a formula, code span, link, tag,
    number or markup, translate a display formula, or leave the terminology table (errors); and, when
    the document is listed as complete, entries untranslated or fuzzy (out of date). ``pots``: the
    extraction whose ``messages.json`` names the sections and the display formulas."""
    where = _sections(pots, document)
    display = formulas(pots, document)
    problems = []
    for message in catalog:
        if not message.id:
            continue
        found: list[tuple[str, str]] = []
        if message.id in display and message.string and message.string != message.id:
            found.append(("display formula: its translation must be the formula itself", ERROR))
        if complete and not message.string:
            found.append(("untranslated", OUT_OF_DATE))
        elif complete and message.fuzzy:
            found.append(("fuzzy (the English changed: review the translation, then remove the flag)", OUT_OF_DATE))
        if message.string and not message.fuzzy:
            whats = kept(message.id, message.string)
            # A display formula, and a glossary term kept as itself (the glossary page lists every term in
            # English and in Chinese, and {term} references name the English), are not prose.
            if message.id not in display and not (message.string == message.id and message.id in glossary_terms()):
                whats += terminology_problems(message.id, message.string, rules)
            found += [(what, ERROR) for what in whats]
        problems += [Problem(document, where.get(message.id, []), message.id, what, kind) for what, kind in found]
    return problems


def stale_problems(document: str, catalog: Catalog, pots: Path) -> list[Problem]:
    """The catalog's msgids against a fresh extraction of the English (out of date): paragraphs added
    or changed in English and not merged yet, and entries the English no longer has."""
    pot = pots / f"{document}.pot"
    if not pot.exists():
        return [Problem(document, [], "", "the site no longer has this page (no template): delete its catalog",
                        OUT_OF_DATE)]
    current = [m.id for m in load(pot) if m.id]
    have = {m.id for m in catalog if m.id}
    where = _sections(pots, document)
    problems = [Problem(document, where.get(m, []), m, "not in the catalog (run make i18n-update)", OUT_OF_DATE)
                for m in current if m not in have]
    problems += [Problem(document, [], m, "in the catalog, no longer in the English (run make i18n-update)",
                         OUT_OF_DATE) for m in sorted(have - set(current))]
    return problems


def obsolete_problems(document: str, catalog: Catalog) -> list[Problem]:
    """Obsolete entries (``#~``), which ``make i18n-update`` no longer keeps (out of date)."""
    return [Problem(document, [], msgid, "obsolete entry (#~): delete it (make i18n-update drops them)", OUT_OF_DATE)
            for msgid in catalog.obsolete]


def notebook_problems(document: str, catalog: Catalog, pots: Path, notebooks: Path = NOTEBOOKS) -> list[Problem]:
    """A notebook's markdown blocks against its catalog (out of date), as the generated Chinese notebook
    looks them up (tools/i18n_notebooks.py): blocks with no entry, entries no block uses."""
    path = notebooks / f"{document}.ipynb"
    if not path.is_file():
        return []
    ids = {m.id for m in catalog if m.id}
    missing, unused = i18n_notebooks.compare_blocks(nbformat.read(path, as_version=4), ids, formulas(pots, document))
    where = _sections(pots, document)
    return ([Problem(document, where.get(m, []), m, "a markdown block with no catalog entry (run make i18n-update)",
                     OUT_OF_DATE) for m in missing]
            + [Problem(document, where.get(m, []), m, "a catalog entry no markdown block uses (run make i18n-update)",
                       OUT_OF_DATE) for m in sorted(unused)])


def statistics(catalog: Catalog, display: set[str] = frozenset()) -> dict[str, int]:
    """Entries translated, fuzzy and untranslated, and the English words of the page (outside
    formulas, code and links; ``display``: the page's display formulas, which hold none)."""
    entries = [m for m in catalog if m.id]
    done = [m for m in entries if m.string and not m.fuzzy]
    return {"entries": len(entries), "translated": len(done), "fuzzy": sum(1 for m in entries if m.fuzzy),
            "untranslated": sum(1 for m in entries if not m.string),
            "words": sum(words(m.id) for m in entries if m.id not in display)}


def check(catalogs: Path = CATALOGS, manifest: Path = MANIFEST, pots: Path | None = None,
          course: bool = True, notebooks: Path = NOTEBOOKS) -> list[Problem]:
    """Every problem of the catalogs under ``catalogs``, errors and out of date (what ``make i18n-check``
    lists; ``make test`` fails on the errors alone). ``pots``: the extraction of the current English
    (default: :func:`templates`); ``course``: the course package's catalog too (tools/i18n_course.py)."""
    rules = load_terminology()
    complete = complete_documents(manifest)
    pots = pots or templates()
    extracted = set(extracted_pages(pots))
    found = pages(catalogs)
    problems = [Problem("terminology", [], "", p) for p in glossary_problems(rules)]
    problems += [Problem(name, [], "", f"listed {complete.count(name)} times in {manifest.name}")
                 for name in sorted(set(complete)) if complete.count(name) > 1]
    problems += [Problem(name, [], "", "no catalog yet (run make i18n-update, then translate it)", OUT_OF_DATE)
                 for name in sorted(extracted - set(found))]
    problems += [Problem(name, [], "", f"not listed in {manifest.name} (translate it, read it through in Chinese, "
                         "then list it)", OUT_OF_DATE) for name in sorted(extracted - set(complete))]
    problems += [Problem(name, [], "", f"listed in {manifest.name}, but the site no longer has this page",
                         OUT_OF_DATE) for name in sorted(set(complete) - extracted)]
    for name, path in found.items():
        catalog = load(path)
        problems += entry_problems(name, catalog, rules, name in complete, pots)
        stale = stale_problems(name, catalog, pots)
        seen = {p.msgid for p in stale}
        problems += stale + obsolete_problems(name, catalog)
        if name in extracted:  # what stale_problems did not already say
            problems += [p for p in notebook_problems(name, catalog, pots, notebooks) if p.msgid not in seen]
    if course:  # the checkers' messages (tools/i18n_course.py), named file:line
        problems += [Problem(COURSE_DOMAIN, [], "", str(f), f.kind) for f in i18n_course.problems()]
    return problems


def report(problems: list[Problem]) -> str:
    """The check's findings as ``make i18n-check`` prints them: the errors, then what is out of date."""
    lines = []
    for title, group in (("errors (a wrong translation: make test fails on these)", errors(problems)),
                         ("out of date (the Chinese shows the English, marked, until these are translated; "
                          "make test passes)", out_of_date(problems))):
        if group:
            lines += [f"--- {len(group)} {title}"] + [str(p) for p in group]
    lines.append(f"{len(errors(problems))} error(s), {len(out_of_date(problems))} out of date")
    return "\n".join(lines)


def status(catalogs: Path = CATALOGS, manifest: Path = MANIFEST) -> str:
    """Per page: entries, translated, fuzzy, untranslated, stale (msgids added or removed in the English
    and not merged), the English words, and whether it is listed as complete; then the totals of the check."""
    complete = set(complete_documents(manifest))
    pots = templates()
    lines = [f"{'document':32} {'entries':>7} {'done':>5} {'fuzzy':>5} {'empty':>5} {'stale':>5} {'words':>6}  complete"]
    for name, path in pages(catalogs).items():
        catalog = load(path)
        s = statistics(catalog, formulas(pots, name))
        stale = len(stale_problems(name, catalog, pots))
        lines.append(f"{name:32} {s['entries']:7} {s['translated']:5} {s['fuzzy']:5} {s['untranslated']:5} "
                     f"{stale:5} {s['words']:6}  {'yes' if name in complete else ''}")
    course = [m for m in i18n_course.load() if m.id]
    done = sum(1 for m in course if m.string and not m.fuzzy)
    lines.append(f"{COURSE_DOMAIN + ' (checker messages)':32} {len(course):7} {done:5} "
                 f"{sum(1 for m in course if m.fuzzy):5} {sum(1 for m in course if not m.string):5}")
    problems = check(catalogs, manifest, pots)
    lines.append(f"{len(errors(problems))} error(s), {len(out_of_date(problems))} out of date: "
                 "make i18n-check lists them")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["update", "status", "check", "extract"])
    args = parser.parse_args(argv)
    if args.command == "extract":
        print(templates())
    elif args.command == "update":
        counts = update()
        print(f"catalogs in {CATALOGS.relative_to(ROOT)}: {counts}")
    if args.command in ("update", "status"):
        print(status())
    if args.command == "check":
        problems = check()
        print(report(problems))
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

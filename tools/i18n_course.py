"""The catalog of the course package's own messages (the exercise checkers, ``setup_notebook``'s notice).

    python -m tools.i18n_course update   # extract the messages of posenc_course/ and merge them into the catalog
    python -m tools.i18n_course check    # every problem of the catalog (exit status 1 when there is one)

The pages' catalogs (``tools/i18n.py``) hold the notebooks' prose; this one holds what the Python code
of ``posenc_course`` prints, domain ``posenc_course``, in ``locale/zh_CN/LC_MESSAGES/posenc_course.po``.
:mod:`posenc_course.i18n` reads it at run time.

The code marks a message with ``_("...")`` (translated when it runs) or ``N_("...")`` (stored at import,
translated when printed); a message with values is a ``str.format`` template (``{name}``), flagged
``python-brace-format``. The extraction is babel's (``extract_from_dir`` with the Python extractor over
``posenc_course/``), the merge babel's ``Catalog.update`` (msgmerge's rules): a new message gets an
empty entry, a changed one keeps the old translation marked fuzzy for review, a removed one is
dropped (no obsolete ``#~`` entry is kept). A comment ``# Translators: ...`` just above a marked
message goes into the catalog as a note for the translator.

A translation must keep its English's placeholders (``{name}``, with their conversions and format
specs), numbers, inline code spans (backticks) and the marks ``[passed]``, ``[to do]``, ``[not yet]``
exactly; ``check`` also applies the pages' rules (``tools/i18n_common.py``: terminology, markup). A
translation that breaks one of these is an **error** (``make test`` fails). An entry untranslated or
fuzzy, or the catalog stale against the code, is **out of date**: the checker prints its English until
the translator catches up, ``check`` and ``make i18n-check`` list it, and ``make test`` passes.
"""

from __future__ import annotations

import argparse
import re
import string
import sys
from collections import Counter
from pathlib import Path
from typing import NamedTuple

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po, write_po

from tools import i18n_common
from tools.i18n_common import CATALOGS, CODE, ERROR, LANGUAGE, OUT_OF_DATE, ROOT, numbers

PACKAGE = ROOT / "posenc_course"
DOMAIN = "posenc_course"
CATALOG = CATALOGS / f"{DOMAIN}.po"
KEYWORDS = {"_": None, "N_": None}  # both take the message as their only argument
COMMENT_TAG = "Translators:"
WIDTH = 76

MARKS = ("[passed]", "[to do]", "[not yet]")


# --- extraction and merge ----------------------------------------------------------------------------


def extract(package: Path = PACKAGE) -> Catalog:
    """The messages the code of ``package`` marks, each with its ``file:line`` locations (paths from the
    repository root) and, for a template, the ``python-brace-format`` flag."""
    catalog = Catalog(domain=DOMAIN, project="posenc", charset="utf-8", fuzzy=False)
    prefix = package.relative_to(ROOT).as_posix() if package.is_relative_to(ROOT) else package.name
    for filename, lineno, message, comments, context in extract_from_dir(
            str(package), method_map=[("**.py", "python")], keywords=KEYWORDS, comment_tags=(COMMENT_TAG,),
            strip_comment_tags=True):
        if not isinstance(message, str) or not message:
            continue
        catalog.add(message, None, [(f"{prefix}/{Path(filename).as_posix()}", lineno)], auto_comments=comments,
                    context=context)
    return catalog


def load(path: Path = CATALOG) -> Catalog:
    """The course package's catalog."""
    with open(path, "rb") as f:
        return read_po(f, locale=LANGUAGE, domain=DOMAIN, charset="utf-8")


def write(catalog: Catalog, path: Path = CATALOG) -> None:
    """Write ``catalog`` to ``path``, without obsolete (``#~``) entries."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        write_po(f, catalog, width=WIDTH, ignore_obsolete=True)


def update(path: Path = CATALOG, template: Catalog | None = None) -> dict[str, int]:
    """Merge a fresh extraction into the catalog at ``path`` (created when missing) and write it.

    Returns how many entries are new (empty), fuzzy (changed English, the old translation kept for
    review) and removed (gone from the code: dropped, not kept as obsolete ``#~`` entries)."""
    template = template or extract()
    if path.exists():
        catalog = load(path)
    else:
        catalog = Catalog(locale=LANGUAGE, domain=DOMAIN, project="posenc", charset="utf-8", fuzzy=False)
    before = {m.id for m in catalog if m.id}
    catalog.update(template, update_creation_date=False)
    write(catalog, path)
    return {"entries": sum(1 for m in catalog if m.id),
            "new": sum(1 for m in catalog if m.id and m.id not in before),
            "fuzzy": sum(1 for m in catalog if m.id and m.fuzzy),
            "removed": len(catalog.obsolete)}


# --- what a translation keeps ------------------------------------------------------------------------


def placeholders(text: str) -> Counter:
    """The ``str.format`` fields of ``text`` as written (``{name!r:.3g}``), as a multiset; raises
    ``ValueError`` when ``text`` is not a valid template (a lone brace)."""
    fields = Counter()
    for _literal, name, spec, conversion in string.Formatter().parse(text):
        if name is not None:
            fields["{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"] += 1
    return fields


def _outside_fields(text: str) -> str:
    """``text`` without its placeholders and code spans (where numbers are counted)."""
    text = CODE.sub(" ", text)
    return re.sub(r"\{[^{}]*\}", " ", text)


def kept(msgid: str, msgstr: str, template: bool) -> list[str]:
    """What ``msgstr`` changed of what it must keep from ``msgid`` (empty when all is kept)."""
    problems = []

    def compare(kind: str, source: Counter, target: Counter) -> None:
        missing, extra = source - target, target - source
        if missing or extra:
            problems.append(f"{kind}: " + "; ".join(filter(None, [
                "missing " + ", ".join(repr(s) for s in missing.elements()) if missing else "",
                "added " + ", ".join(repr(s) for s in extra.elements()) if extra else ""])))

    if template:
        try:
            compare("placeholder", placeholders(msgid), placeholders(msgstr))
        except ValueError as error:
            problems.append(f"placeholder: the translation is not a valid template ({error})")
    compare("number", Counter(numbers(_outside_fields(msgid))), Counter(numbers(_outside_fields(msgstr))))
    compare("inline code", Counter(m.group(0) for m in CODE.finditer(msgid)),
            Counter(m.group(0) for m in CODE.finditer(msgstr)))
    compare("mark", Counter({m: msgid.count(m) for m in MARKS if m in msgid}),
            Counter({m: msgstr.count(m) for m in MARKS if m in msgstr}))
    return problems


def _where(locations) -> str:
    return ", ".join(f"{file}:{line}" for file, line in locations) or "(no location)"


def _short(text: str, n: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


class Finding(NamedTuple):
    """One problem of the catalog: its kind (``ERROR`` or ``OUT_OF_DATE``, tools/i18n_common.py) and
    ``file:line: what: msgid``."""
    kind: str
    text: str

    def __str__(self) -> str:
        return self.text


def problems(path: Path = CATALOG, template: Catalog | None = None, pages: bool = True) -> list[Finding]:
    """Every problem of the catalog, each as ``file:line: what: msgid``. Out of date: an entry untranslated
    or fuzzy, the catalog stale against a fresh extraction (a message missing, or one the code no longer
    has), an obsolete entry. Errors: a translation that changes a placeholder, number, inline code span or
    mark of its English, and (``pages``) what the pages' rules (``tools/i18n_common.py``) find in it
    (terminology, markup)."""
    template = template or extract()
    if not path.exists():
        return [Finding(OUT_OF_DATE, f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: no catalog "
                        "(run python -m tools.i18n_course update)")]
    catalog = load(path)
    found = []
    current = {m.id: m for m in template if m.id}
    have = {m.id: m for m in catalog if m.id}
    for msgid, message in current.items():
        if msgid not in have:
            found.append(Finding(OUT_OF_DATE, f"{_where(message.locations)}: not in the catalog (run python -m "
                                 f"tools.i18n_course update): {_short(msgid)!r}"))
    for msgid, message in have.items():
        if msgid not in current:
            found.append(Finding(OUT_OF_DATE, f"{_where(message.locations)}: in the catalog, no longer in the code "
                                 f"(run python -m tools.i18n_course update): {_short(msgid)!r}"))
    found += [Finding(OUT_OF_DATE, f"{_where(message.locations)}: obsolete entry (#~): delete it (update drops "
                      f"them): {_short(msgid)!r}") for msgid, message in catalog.obsolete.items()]
    rules = i18n_common.load_terminology() if pages else []
    for msgid, message in have.items():
        where = _where(current[msgid].locations if msgid in current else message.locations)
        if not message.string:
            found.append(Finding(OUT_OF_DATE, f"{where}: untranslated: {_short(msgid)!r}"))
            continue
        if message.fuzzy:
            found.append(Finding(OUT_OF_DATE, f"{where}: fuzzy (the English changed: review the translation, "
                                 f"then remove the flag): {_short(msgid)!r}"))
            continue
        template_message = "python-brace-format" in message.flags or "python-brace-format" in (
            current[msgid].flags if msgid in current else ())
        whats = kept(msgid, message.string, template_message)
        if pages:
            whats += i18n_common.kept(msgid, message.string)
            whats += i18n_common.terminology_problems(msgid, message.string, rules)
        found += [Finding(ERROR, f"{where}: {what}: {_short(msgid)!r}") for what in dict.fromkeys(whats)]
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["update", "check"])
    args = parser.parse_args(argv)
    if args.command == "update":
        counts = update()
        print(f"{CATALOG.relative_to(ROOT)}: {counts['entries']} entries, {counts['new']} new, "
              f"{counts['fuzzy']} fuzzy, {counts['removed']} removed")
        return 0
    found = problems()
    for kind in (ERROR, OUT_OF_DATE):
        for problem in found:
            if problem.kind == kind:
                print(f"{kind}: {problem}")
    print(f"{CATALOG.relative_to(ROOT)}: {sum(1 for p in found if p.kind == ERROR)} error(s), "
          f"{sum(1 for p in found if p.kind == OUT_OF_DATE)} out of date")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

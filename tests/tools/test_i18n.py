"""The Chinese edition's translation catalogs (tools/i18n.py, locale/zh_CN/, docs/i18n.md).

Every document listed as complete (locale/zh_CN/complete.toml) has every entry translated, none
fuzzy, and its catalog current with the English (re-extracted with Sphinx's gettext builder, cached
by a digest of the sources); every translation in every catalog keeps the formulas, inline code,
link targets, HTML tags and numbers of its English and follows the terminology table. A failure
names the document and section of each offending entry. The last tests break entries on purpose
and check that each problem is reported.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po, write_po

from tools import i18n

COMPLETE = i18n.complete_documents()


@pytest.fixture(scope="module")
def pots() -> Path:
    return i18n.templates()


@pytest.fixture(scope="module")
def rules() -> list[i18n.Rule]:
    return i18n.load_terminology()


def report(problems: list[i18n.Problem]) -> str:
    return f"{len(problems)} problem(s) (make i18n-check lists them; docs/i18n.md):\n" + "\n".join(map(str, problems[:40]))


def test_the_terminology_table_follows_the_glossary(rules):
    problems = i18n.glossary_problems(rules)
    assert not problems, "\n".join(problems)


def test_every_page_is_translated_completely(pots):
    """The Chinese edition is whole: every page the extraction finds is listed as complete (and so, by
    the next tests, fully translated, none fuzzy, current)."""
    extracted = {p.relative_to(pots).with_suffix("").as_posix() for p in pots.rglob("*.pot")}
    assert extracted - set(COMPLETE) == set(), "pages not listed in locale/zh_CN/complete.toml (translate them, then list them)"
    assert set(i18n.pages()) == extracted, "catalogs and extracted pages differ (run make i18n-update)"


def test_the_manifest_lists_documents_that_are_extracted(pots):
    extracted = {p.relative_to(pots).with_suffix("").as_posix() for p in pots.rglob("*.pot")}
    assert set(COMPLETE) <= extracted, f"complete.toml lists pages the site does not have: {set(COMPLETE) - extracted}"
    assert len(COMPLETE) == len(set(COMPLETE))


@pytest.mark.parametrize("document", COMPLETE)
def test_a_complete_document_is_translated_and_current(document, pots, rules):
    catalog = i18n.load(i18n.CATALOGS / f"{document}.po")
    problems = i18n.entry_problems(document, catalog, rules, complete=True, pots=pots)
    problems += i18n.stale_problems(document, catalog, pots)
    assert not problems, report(problems)


def test_every_translation_keeps_formulas_code_numbers_and_terms(pots, rules):
    """In every catalog, complete or not: what is translated is translated right."""
    problems = []
    for name, path in i18n.pages().items():
        problems += i18n.entry_problems(name, i18n.load(path), rules, complete=False, pots=pots)
    assert not problems, report(problems)


# --- the checks fail on broken entries ----------------------------------------------------------------

GOOD = ("Seed $s$ fixes the weights: the positional encoding of `SinusoidalPE` scores 0.762 "
        "([§4](01_sinusoidal.ipynb#4--wavelengths)).",
        "种子 $s$ 固定权重：`SinusoidalPE` 的位置编码得 0.762 分（[§4](01_sinusoidal.ipynb#4--wavelengths)）。")


@pytest.mark.parametrize("broken, expected", [
    ("种子 $t$ 固定权重：`SinusoidalPE` 的位置编码得 0.762 分（[§4](01_sinusoidal.ipynb#4--wavelengths)）。", "formula"),
    ("种子 $s$ 固定权重：SinusoidalPE 的位置编码得 0.762 分（[§4](01_sinusoidal.ipynb#4--wavelengths)）。", "inline code"),
    ("种子 $s$ 固定权重：`SinusoidalPE` 的位置编码得 0.76 分（[§4](01_sinusoidal.ipynb#4--wavelengths)）。", "number"),
    ("种子 $s$ 固定权重：`SinusoidalPE` 的位置编码得 0.762 分（[§4](01_sinusoidal.ipynb#4-wavelengths)）。", "link"),
    ("种子 $s$ 固定权重：`SinusoidalPE` 的位置嵌入得 0.762 分（[§4](01_sinusoidal.ipynb#4--wavelengths)）。", "term"),
    ("随机数 $s$ 固定权重：`SinusoidalPE` 的位置编码得 0.762 分（[§4](01_sinusoidal.ipynb#4--wavelengths)）。", "term"),
])
def test_a_translation_that_changes_what_it_must_keep_is_reported(broken, expected, rules):
    catalog = Catalog(locale="zh_CN")
    catalog.add(GOOD[0], GOOD[1])
    assert i18n.entry_problems("demo", catalog, rules, complete=True) == []
    catalog = Catalog(locale="zh_CN")
    catalog.add(GOOD[0], broken)
    problems = i18n.entry_problems("demo", catalog, rules, complete=False)
    assert [p.what.split(":")[0] for p in problems] == [expected], problems


@pytest.mark.parametrize("broken", [
    "**问题。**如果把词元打乱，注意力会察觉吗？",  # CommonMark does not close bold after 。 before a letter
    "**问题。 如果把词元打乱，注意力会察觉吗？",
    "问题。如果把*词元*打乱，注意力会察觉吗？",
])
def test_a_translation_that_loses_or_adds_markup_is_reported(broken, rules):
    english = "**Question.** If we shuffle the tokens, does attention notice?"
    catalog = Catalog(locale="zh_CN")
    catalog.add(english, "**问题。** 如果把词元打乱，注意力会察觉吗？")
    assert i18n.entry_problems("demo", catalog, rules, complete=True) == []
    catalog[english].string = broken
    problems = i18n.entry_problems("demo", catalog, rules, complete=True)
    assert [p.what.split(":")[0] for p in problems] == ["markup"], problems


def test_a_display_formula_must_stay_the_formula(pots, rules):
    document = "00_permutation_blindness"
    formula = sorted(i18n.formulas(pots, document))[0]
    catalog = Catalog(locale="zh_CN")
    catalog.add(formula, formula)
    assert i18n.entry_problems(document, catalog, rules, complete=True, pots=pots) == []
    catalog[formula].string = formula + " + 1"
    problems = i18n.entry_problems(document, catalog, rules, complete=True, pots=pots)
    assert "display formula" in [p.what.split(":")[0] for p in problems]


def test_an_english_change_makes_the_entry_fuzzy_and_the_test_names_its_section(tmp_path, pots, rules):
    """The workflow end to end on a real catalog: a translated paragraph of 00 changes in English;
    sphinx-intl's update (what make i18n-update runs) keeps the old translation marked fuzzy, and
    the checks name the document and section; an untranslated entry and a stale catalog are reported too."""
    from sphinx_intl.basic import update as intl_update

    document = "00_permutation_blindness"
    template = i18n.load(pots / f"{document}.pot")
    paragraph = next(m.id for m in template if m.id.startswith("**Question.**"))
    section = i18n._sections(pots, document)[paragraph]
    assert section and section[0]

    po = tmp_path / "locale" / "zh_CN" / "LC_MESSAGES" / f"{document}.po"
    po.parent.mkdir(parents=True)
    catalog = Catalog(locale="zh_CN")
    for m in template:
        if m.id:
            catalog.add(m.id, "译文" if m.id == paragraph else m.id)
    with open(po, "wb") as f:
        write_po(f, catalog)
    # The English edits one paragraph: a new template, as the gettext builder would write it.
    edited = paragraph + " And one more sentence."
    pot_dir = tmp_path / "pot"
    pot_dir.mkdir()
    new_template = Catalog()
    for m in template:
        if m.id:
            new_template.add(edited if m.id == paragraph else m.id)
    with open(pot_dir / f"{document}.pot", "wb") as f:
        write_po(f, new_template)
    intl_update(str(tmp_path / "locale"), str(pot_dir), ("zh_CN",), jobs=1)

    with open(po, "rb") as f:
        updated = read_po(f)
    assert updated[edited].fuzzy and updated[edited].string == "译文"
    problems = i18n.entry_problems(document, updated, [], complete=True, pots=pots)
    fuzzy = [p for p in problems if p.what.startswith("fuzzy")]
    assert [p.msgid for p in fuzzy] == [edited]
    # the section: the edited msgid is not in the extraction, so name it from the old text's section
    assert str(i18n.Problem(document, section, edited, "fuzzy")).startswith(f"{document} § {section[0]}: fuzzy")

    # Against the current English, the edited catalog is stale (one msgid added, one gone).
    stale = i18n.stale_problems(document, updated, pots)
    assert {p.msgid for p in stale} == {paragraph, edited}
    assert any(str(p).startswith(f"{document} § {section[0]}: not in the catalog") for p in stale)

    # An untranslated entry of a complete document is reported with its section.
    updated[edited].string = ""
    problems = i18n.entry_problems(document, updated, [], complete=True, pots=pots)
    assert [(p.what, p.msgid) for p in problems] == [("untranslated", edited)]


def test_the_committed_catalogs_fail_the_test_when_an_entry_is_broken(tmp_path, pots, rules):
    """The real check over a copy of the committed catalogs: a complete document with one entry made
    fuzzy, one emptied and one whose number changed fails, naming each."""
    if not COMPLETE:
        pytest.skip("no document is complete yet")
    document = COMPLETE[0]
    catalog = i18n.load(i18n.CATALOGS / f"{document}.po")
    translated = [m for m in catalog if m.id and m.string and i18n.NUMBER.search(i18n.prose(m.id))
                  and m.id not in i18n.formulas(pots, document) and i18n.spans(m.id)["number"]]
    first, second, third = [m for m in catalog if m.id and m.string][3:5] + translated[:1]
    first.flags.add("fuzzy")
    second.string = ""
    number = next(iter(i18n.spans(third.id)["number"]))
    third.string = third.string.replace(number, number + "9", 1)
    problems = i18n.entry_problems(document, catalog, rules, complete=True, pots=pots)
    whats = {(p.msgid, p.what.split(" ")[0].rstrip(":")) for p in problems}
    assert (first.id, "fuzzy") in whats and (second.id, "untranslated") in whats and (third.id, "number") in whats
    assert all(str(p).startswith(f"{document} § ") for p in problems)

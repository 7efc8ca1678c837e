"""The Chinese edition's translation catalogs (tools/i18n.py, locale/zh_CN/, docs/i18n.md).

What fails here is a translation that is wrong (an error): every translation in every catalog keeps
the formulas, inline code, link targets, HTML tags, numbers and markup of its English, follows the
terminology table, and leaves a display formula as it is; the table follows the glossary. A failure
names the document and section of each offending entry.

A translation that lags the English (out of date: an entry untranslated or fuzzy, a catalog stale
against a fresh extraction with Sphinx's gettext builder, a page not translated yet, an obsolete
entry) does not fail here, so that an English change is never blocked by the translation: `make
i18n-check` lists it, and the tests below prove that it does, kind by kind, on broken copies of the
real catalogs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog, Message
from babel.messages.pofile import read_po, write_po

from tools import i18n, i18n_common

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


def test_the_manifest_lists_each_page_once():
    assert len(COMPLETE) == len(set(COMPLETE)), "a page listed twice in locale/zh_CN/complete.toml"


@pytest.fixture(scope="module")
def checked(pots) -> list[i18n.Problem]:
    """What make i18n-check finds in the committed catalogs."""
    return i18n.check(pots=pots)


def test_make_i18n_check_finds_no_error(checked):
    """Nothing in the committed catalogs is wrong (what is merely out of date is listed, not failed):
    the terminology table, the manifest, the pages' catalogs and the checker messages."""
    problems = i18n.errors(checked)
    assert not problems, report(problems)


def test_every_translation_keeps_formulas_code_numbers_and_terms(checked):
    """In every catalog, complete or not: what is translated is translated right."""
    pages = set(i18n.pages())
    problems = [p for p in i18n.errors(checked) if p.document in pages and p.msgid]
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
    assert problems[0].kind == i18n.ERROR  # make test fails on it


@pytest.mark.parametrize("english, chinese, ruled_out", [
    ("The head width is 16.", "头宽度为 16。", "头宽度"),  # and the table's 头维度 is missing
    ("PI applied zero-shot gets worse.", "零样本的 PI 更差。", "零样本"),
    ("PI applied without fine-tuning gets worse.", "零样本的 PI 更差。", "零样本"),  # whatever the English says
    ("A table of position vectors trained with the model.", "与模型一起训练的位置向量表（可训练位置嵌入）。", "可训练位置嵌入"),
])
def test_a_form_the_table_rules_out_is_an_error_in_any_entry(english, chinese, ruled_out, rules):
    """One word per concept in every catalog: a rule's ``not_zh`` form is an error wherever a translation
    uses it, even where the English does not use the rule's phrase."""
    catalog = Catalog(locale="zh_CN")
    catalog.add(english, chinese)
    problems = i18n.entry_problems("demo", catalog, rules, complete=True)
    assert any(repr(ruled_out) in p.what and "not the table's word" in p.what for p in problems), problems
    assert all(p.kind == i18n.ERROR for p in problems)


def test_a_glossary_definition_need_not_repeat_its_term(rules):
    """The glossary's headword carries the Chinese term; a definition's translation uses a term only
    where its English does (the check asks nothing more of it)."""
    terms = {t["en"]: t for t in i18n_common.load_glossary()}
    definition = terms["Perplexity"]["definition"]
    assert "perplexity" not in definition.lower()
    catalog = Catalog(locale="zh_CN")
    catalog.add(definition, "对下一个词元的平均交叉熵取指数：越低越好。")
    assert i18n.entry_problems("glossary", catalog, rules, complete=True) == []
    # the committed glossary does not stuff a headword into its definition as a parenthesis
    glossary = i18n.load(i18n.CATALOGS / "glossary.po")
    stuffed = [(t["zh"], glossary[t["definition"]].string) for t in terms.values()
               if glossary.get(t["definition"]) and f"（{t['zh']}）" in glossary[t["definition"]].string
               and t["en"].lower() not in t["definition"].lower()]
    assert not stuffed, stuffed


def test_the_table_rules_out_no_form_it_gives_or_the_glossary_uses(rules):
    """A ``not_zh`` form that the glossary's Chinese or another rule's Chinese contains is a contradiction."""
    contradiction = i18n.Rule("", ("head width",), ("头维度",), ("位置编码",))
    problems = i18n.glossary_problems([*rules, contradiction])
    assert any("glossary term 'Positional encoding'" in p and "rules out" in p for p in problems), problems
    assert any("rule for 'positional encoding'" in p and "rules out" in p for p in problems), problems


def test_one_word_per_concept_across_all_catalogs(checked):
    """No catalog, page or checker messages, uses a form the terminology table rules out."""
    problems = [p for p in i18n.errors(checked) if "not the table's word" in p.what]
    assert not problems, report(problems)


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
    assert problems[0].kind == i18n.ERROR


def test_a_display_formula_must_stay_the_formula(pots, rules):
    document = "00_permutation_blindness"
    formula = sorted(i18n.formulas(pots, document))[0]
    catalog = Catalog(locale="zh_CN")
    catalog.add(formula, formula)
    assert i18n.entry_problems(document, catalog, rules, complete=True, pots=pots) == []
    catalog[formula].string = formula + " + 1"
    problems = i18n.entry_problems(document, catalog, rules, complete=True, pots=pots)
    assert ("display formula", i18n.ERROR) in [(p.what.split(":")[0], p.kind) for p in problems]


def test_an_english_change_makes_the_entry_fuzzy_and_the_test_names_its_section(tmp_path, pots, rules):
    """The workflow end to end on a real catalog: a translated paragraph of 00 changes in English;
    sphinx-intl's update (what make i18n-update runs) keeps the old translation marked fuzzy, and
    the checks name the document and section, as out of date; an untranslated entry and a stale
    catalog are reported too."""
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
    assert [(p.msgid, p.kind) for p in fuzzy] == [(edited, i18n.OUT_OF_DATE)]
    # the section: the edited msgid is not in the extraction, so name it from the old text's section
    assert str(i18n.Problem(document, section, edited, "fuzzy")).startswith(f"{document} § {section[0]}: fuzzy")

    # Against the current English, the edited catalog is stale (one msgid added, one gone).
    stale = i18n.stale_problems(document, updated, pots)
    assert {p.msgid for p in stale} == {paragraph, edited} and {p.kind for p in stale} == {i18n.OUT_OF_DATE}
    assert any(str(p).startswith(f"{document} § {section[0]}: not in the catalog") for p in stale)

    # An untranslated entry of a complete document is reported with its section.
    updated[edited].string = ""
    problems = i18n.entry_problems(document, updated, [], complete=True, pots=pots)
    assert [(p.what, p.msgid, p.kind) for p in problems] == [("untranslated", edited, i18n.OUT_OF_DATE)]


def test_the_committed_catalogs_fail_the_test_when_an_entry_is_broken(tmp_path, pots, rules):
    """The real check over a committed catalog: a complete document with one entry made fuzzy, one
    emptied and one whose number changed: the number is an error, the other two are out of date."""
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
    whats = {(p.msgid, p.what.split(" ")[0].rstrip(":"), p.kind) for p in problems}
    assert {(first.id, "fuzzy", i18n.OUT_OF_DATE), (second.id, "untranslated", i18n.OUT_OF_DATE),
            (third.id, "number", i18n.ERROR)} <= whats
    assert all(str(p).startswith(f"{document} § ") for p in problems)


# --- make i18n-check lists what is out of date, and make test passes -----------------------------------


@pytest.fixture(scope="module")
def out_of_date(tmp_path_factory, pots) -> tuple[list[i18n.Problem], dict[str, str]]:
    """A copy of the committed catalogs and manifest with every kind of lag an English change (or a
    translator's tool) leaves, checked as make i18n-check checks them; and the msgids involved."""
    tmp_path = tmp_path_factory.mktemp("out_of_date")
    catalogs = tmp_path / "LC_MESSAGES"
    shutil.copytree(i18n.CATALOGS, catalogs)
    pages = sorted(i18n.pages(catalogs))
    notebooks = [name for name in pages if name[:2].isdigit()]
    fuzzy_page, empty_page, missing_page, extra_page, obsolete_page = notebooks[:5]
    ids: dict[str, str] = {}

    def edit(name: str, change) -> None:
        path = catalogs / f"{name}.po"
        catalog = i18n.load(path)
        with open(pots / f"{name}.pot", "rb") as f:
            english = {m.id for m in read_po(f)}  # the current English: an entry of an edited paragraph has no section
        change(catalog, [m for m in catalog if m.id in english and m.string and not i18n.nothing_to_translate(m.id)][5])
        with open(path, "wb") as f:
            write_po(f, catalog, width=76)

    def fuzzy(catalog, message):
        message.flags.add("fuzzy")
        ids["fuzzy"] = message.id

    def empty(catalog, message):
        message.string = ""
        ids["untranslated"] = message.id

    def delete(catalog, message):  # the English has a paragraph the catalog does not (not merged yet)
        del catalog[message.id]
        ids["not in the catalog"] = message.id

    def extra(catalog, message):  # the catalog has an entry the English no longer has
        catalog.add("A paragraph the English no longer has.", "英文中已删去的段落。")
        ids["no longer in the English"] = "A paragraph the English no longer has."

    def obsolete(catalog, message):
        catalog.obsolete["An old paragraph."] = Message("An old paragraph.", "旧段落。")
        ids["obsolete"] = "An old paragraph."

    for name, change in ((fuzzy_page, fuzzy), (empty_page, empty), (missing_page, delete), (extra_page, extra),
                         (obsolete_page, obsolete)):
        edit(name, change)
    (catalogs / f"{notebooks[5]}.po").unlink()  # a page with no catalog yet
    shutil.copy(catalogs / f"{notebooks[6]}.po", catalogs / "gone.po")  # a catalog of a page the site lacks
    manifest = tmp_path / "complete.toml"
    listed = [name for name in i18n.complete_documents() if name != "glossary"] + ["gone"]
    manifest.write_text("complete = [\n" + "".join(f'    "{name}",\n' for name in listed) + "]\n", encoding="utf-8")
    ids.update(no_catalog=notebooks[5], unlisted="glossary", gone="gone")
    return i18n.check(catalogs, manifest, pots, course=False), ids


def test_every_kind_of_lag_is_listed_as_out_of_date_and_none_is_an_error(out_of_date):
    problems, ids = out_of_date
    assert not i18n.errors(problems), report(i18n.errors(problems))  # make test passes
    lines = [str(p) for p in i18n.out_of_date(problems)]

    def listed(what: str, msgid: str = "") -> list[str]:
        return [line for line in lines if what in line and (not msgid or repr(i18n._short(msgid)) in line)]

    for what, key in (("fuzzy", "fuzzy"), ("untranslated", "untranslated"), ("not in the catalog", "not in the catalog"),
                      ("no longer in the English", "no longer in the English"), ("obsolete entry", "obsolete")):
        assert listed(what, ids[key]), f"{what} is not listed: {lines[:20]}"
    assert listed(f"{ids['no_catalog']}: no catalog yet")
    assert listed("glossary: not listed in complete.toml")
    assert listed("gone: the site no longer has this page")
    assert listed("gone: listed in complete.toml, but the site no longer has this page")
    # an entry inside a section is named with its page and section, as before
    [line] = listed("fuzzy", ids["fuzzy"])
    assert " § " in line and "(before the first heading)" not in line
    # the markdown blocks of the notebook whose paragraph is missing from its catalog: not said twice
    assert len(listed("", ids["not in the catalog"])) == 1


def test_make_i18n_check_prints_the_errors_then_what_is_out_of_date_and_exits_1(out_of_date, monkeypatch, capsys):
    problems, ids = out_of_date
    wrong = i18n.Problem("03_rope", ["1. Rotations"], "Rotate $q$.", "formula: missing '$q$'")
    monkeypatch.setattr(i18n, "check", lambda: [wrong] + problems)
    assert i18n.main(["check"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "--- 1 errors (a wrong translation: make test fails on these)"
    assert out[1] == "03_rope § 1. Rotations: formula: missing '$q$': 'Rotate $q$.'"
    assert out[2].startswith(f"--- {len(problems)} out of date (")
    assert out[-1] == f"1 error(s), {len(problems)} out of date"
    monkeypatch.setattr(i18n, "check", lambda: [])
    assert i18n.main(["check"]) == 0


def test_update_drops_obsolete_entries(tmp_path, pots):
    """make i18n-update keeps no #~ entry: a paragraph gone from the English leaves the catalog, and an
    obsolete entry already there is dropped (sphinx-intl alone leaves a catalog it finds current as it is)."""
    document = "00_permutation_blindness"
    catalogs = tmp_path / "locale" / "zh_CN" / "LC_MESSAGES"
    catalogs.mkdir(parents=True)
    pot_dir = tmp_path / "pot"
    pot_dir.mkdir()
    shutil.copy(pots / f"{document}.pot", pot_dir)
    shutil.copy(pots / i18n.SECTIONS, pot_dir)
    template = i18n.load(pots / f"{document}.pot")
    for name, extra in (("gone", "A paragraph the English no longer has."), ("obsolete", None)):
        catalog = Catalog(locale="zh_CN")
        for m in template:
            if m.id:
                catalog.add(m.id, m.id, locations=m.locations)
        if extra:
            catalog.add(extra, "英文中已删去的段落。")
        else:
            catalog.obsolete["An old paragraph."] = Message("An old paragraph.", "旧段落。")
        with open(catalogs / f"{document}.po", "wb") as f:
            write_po(f, catalog, width=76)
        assert i18n.obsolete_problems(document, i18n.load(catalogs / f"{document}.po")) or extra
        i18n.update(catalogs, pot_dir, course=False)
        text = (catalogs / f"{document}.po").read_text(encoding="utf-8")
        assert "#~" not in text and "A paragraph the English no longer has." not in text, name
        assert not i18n.obsolete_problems(document, i18n.load(catalogs / f"{document}.po"))
        assert {m.id for m in i18n.load(catalogs / f"{document}.po") if m.id} == {m.id for m in template if m.id}


def test_a_markdown_block_with_no_entry_and_an_entry_no_block_uses_are_listed(pots):
    """The notebook's blocks against its catalog, as the generated Chinese notebook looks them up: a block
    whose entry is gone and an entry no block uses are out of date (check() names each once, beside the
    stale catalog's lines)."""
    document = "00_permutation_blindness"
    catalog = i18n.load(i18n.CATALOGS / f"{document}.po")
    gone = [m.id for m in catalog if m.id and m.string and not i18n.nothing_to_translate(m.id)][7]
    del catalog[gone]
    catalog.add("An entry no block uses.", "没有段落用到的条目。")
    problems = [p for p in i18n.notebook_problems(document, catalog, pots) if p.msgid in {gone, "An entry no block uses."}]
    assert [(p.msgid, p.what.split(" (")[0], p.kind) for p in problems] == [
        (gone, "a markdown block with no catalog entry", i18n.OUT_OF_DATE),
        ("An entry no block uses.", "a catalog entry no markdown block uses", i18n.OUT_OF_DATE)]
    assert str(problems[0]).startswith(f"{document} § ")


def test_a_number_may_take_the_size_words_of_its_language():
    """210 thousand is 21 万 and 3 million is 300 万: a translation may write sizes as Chinese does,
    and still may not change a number."""
    assert i18n_common.kept("about 210 thousand parameters and 3 million characters",
                            "约 21 万个参数、300 万个字符") == []
    assert i18n_common.kept("trained at 4K-8K tokens", "在 4K-8K 个词元上训练") == []
    assert i18n_common.numbers("约 21 万个参数，0.5 的比例") == ["210000", "0.5"]
    assert i18n_common.kept("about 210 thousand parameters", "约 2 万个参数") != []

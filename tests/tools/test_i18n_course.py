"""The Chinese edition of the course package's own messages (posenc_course/i18n.py, tools/i18n_course.py).

The catalog's translations (``locale/zh_CN/LC_MESSAGES/posenc_course.po``) keep every placeholder,
number, code span and mark of their English (an error fails here); whether the catalog is complete and
current with the code (a fresh babel extraction) is out of date at worst, listed by the check, not a
failure, so that a checker's English can change before its translation; the checks catch a broken entry
of each kind on catalogs made for the purpose. ``language()`` follows ``POSENC_LANG``, then the
working directory's ``.posenc-language``; a checker and ``notice()`` speak Chinese there, and their
English is byte for byte what the committed notebooks show.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog, Message
from babel.messages.pofile import write_po

from posenc_course import i18n, numerics
from posenc_course.exercises import nb05, strict, ExerciseFailure
from tools import i18n_common, i18n_course
from tools.i18n_common import ERROR, OUT_OF_DATE


@pytest.fixture(scope="module")
def template() -> Catalog:
    return i18n_course.extract()


@pytest.fixture
def english(monkeypatch, tmp_path):
    """No POSENC_LANG, and a working directory without a .posenc-language file."""
    monkeypatch.delenv("POSENC_LANG", raising=False)
    monkeypatch.chdir(tmp_path)


def report(problems: list[i18n_course.Finding]) -> str:
    return (f"{len(problems)} problem(s) (python -m tools.i18n_course check lists them; update with "
            "python -m tools.i18n_course update):\n" + "\n".join(map(str, problems[:40])))


# --- the catalog ------------------------------------------------------------------------------------


def test_every_translation_of_the_catalog_keeps_what_it_must(template):
    problems = [p for p in i18n_course.problems(template=template) if p.kind == ERROR]
    assert not problems, report(problems)


def test_the_extraction_finds_the_checkers_titles_hints_and_the_notice(template):
    ids = {m.id: m for m in template if m.id}
    assert numerics.DIFFERS in ids
    assert "Exercise 1 (ALiBi slopes)" in ids  # a title given to @checker (N_)
    assert "for n_heads={n} expected {want}, got {got}" in ids  # a hint built at call time (_)
    message = ids["you predicted {guess}, the run gives {truth}"]
    assert "python-brace-format" in message.flags
    assert message.locations and all(file.startswith("posenc_course/") and line > 0 for file, line in message.locations)
    assert len(ids) > 250


def test_update_is_idempotent(tmp_path, template):
    copy = tmp_path / "posenc_course.po"
    shutil.copy(i18n_course.CATALOG, copy)
    i18n_course.update(copy, template)
    once = copy.read_bytes()
    i18n_course.update(copy, template)
    assert copy.read_bytes() == once


def _translated(template: Catalog, n: int = 2) -> list:
    """``n`` messages of the code (in ``template``) that the committed catalog translates, with numbers."""
    catalog = i18n_course.load()
    return [m for m in template if m.id and catalog.get(m.id) is not None and catalog.get(m.id).string
            and not catalog.get(m.id).fuzzy and i18n_common.NUMBER.search(m.id)][:n]


def test_update_keeps_a_changed_message_fuzzy_adds_a_new_one_empty_and_drops_a_removed_one(tmp_path, template):
    copy = tmp_path / "posenc_course.po"
    shutil.copy(i18n_course.CATALOG, copy)
    before = i18n_course.update(copy, template)  # current with the code first (it may have changed since)
    changing, removed = _translated(template)
    new_id = changing.id + " (and one more clause)"
    changed = Catalog(domain=i18n_course.DOMAIN, fuzzy=False)
    for message in template:
        if message.id == changing.id:
            changed.add(new_id, locations=message.locations, flags=message.flags)
        elif message.id != removed.id:
            changed.add(message.id, locations=message.locations, flags=message.flags)
    changed.add("a brand new hint about {thing}", locations=[("posenc_course/exercises/nb05.py", 1)])
    counts = i18n_course.update(copy, changed)
    catalog = i18n_course.load(copy)
    fuzzy = catalog.get(new_id)
    assert fuzzy.fuzzy and fuzzy.string == i18n_course.load()[changing.id].string
    assert catalog.get("a brand new hint about {thing}").string == ""
    assert catalog.get(removed.id) is None and not catalog.obsolete and "#~" not in copy.read_text(encoding="utf-8")
    assert counts["new"] == 2 and counts["fuzzy"] == before["fuzzy"] + 1 and counts["removed"] == 1  # the changed one is reused
    problems = i18n_course.problems(copy, changed, pages=False)
    assert {p.kind for p in problems} == {OUT_OF_DATE}  # make test passes; the check lists them
    text = "\n".join(map(str, problems))
    assert "fuzzy" in text and "untranslated: 'a brand new hint" in text


def _broken(tmp_path: Path, msgid: str, msgstr: str, fuzzy: bool = False) -> tuple[Path, Catalog]:
    """A catalog of one message translated as ``msgstr``, and the template it is checked against (made
    here, not taken from the code, so that these tests do not depend on the checkers' current wording)."""
    flags = ["python-brace-format"] if "{" in msgid else []
    template = Catalog(domain=i18n_course.DOMAIN, fuzzy=False)
    template.add(msgid, locations=[("posenc_course/exercises/nb05.py", 10)], flags=flags)
    catalog = Catalog(locale="zh_CN", domain=i18n_course.DOMAIN, fuzzy=False)
    catalog.add(msgid, msgstr, locations=[("posenc_course/exercises/nb05.py", 10)],
                flags=flags + (["fuzzy"] if fuzzy else []))
    path = tmp_path / "posenc_course.po"
    i18n_course.write(catalog, path)
    return path, template


PLACEHOLDERS = "un-shuffled outputs differ from the originals by {worst:.2e}"


@pytest.mark.parametrize(("msgid", "broken", "expected"), [
    (PLACEHOLDERS, "还原顺序后的输出与原始输出相差 {worst}", "placeholder: missing '{worst:.2e}'; added '{worst}'"),
    (PLACEHOLDERS, "还原顺序后的输出与原始输出相差 {差距:.2e}", "placeholder: missing '{worst:.2e}'"),
    (PLACEHOLDERS, "还原顺序后的输出与原始输出相差 {worst:.2e", "not a valid template"),
    ("the slopes match for 1-32 heads, powers of two or not", "1-23 个头的斜率都一致，无论头数是不是二的幂",
     "number: missing '32'; added '23'"),
    ("the slopes match for 1-32 heads, powers of two or not", "所有头的斜率都一致，无论头数是不是二的幂",
     "number: missing '1', '32'"),
    ("RoPE has no weights: `with_scheme` changes only the frequencies (section 3).",
     "RoPE 没有权重：with_scheme 只改变频率（第 3 节）。", "inline code: missing '`with_scheme`'"),
    ("exp of the *sum* of the losses: perplexity is exp of their *mean*",
     "这是损失总和的 exp：困惑度是损失平均值的 exp", "markup: italic 2 -> 0"),
    ("Exercise 1 (ALiBi slopes)", "练习 1（斜率）", "term: 'ALiBi'"),
])
def test_the_checks_catch_a_broken_translation(tmp_path, msgid, broken, expected):
    problems = i18n_course.problems(*_broken(tmp_path, msgid, broken))
    assert len(problems) >= 1 and all(msgid[:40] in str(p) for p in problems), problems
    assert any(expected in str(p) for p in problems), problems
    assert all(p.kind == ERROR for p in problems), problems  # make test fails on it
    assert all(str(p).startswith("posenc_course/") and ".py:" in str(p).split(": ")[0] for p in problems), problems


def test_the_checks_list_a_fuzzy_or_empty_entry_a_stale_catalog_and_an_obsolete_entry_as_out_of_date(tmp_path, template):
    msgid = "the index matches for square and rectangular windows"
    problems = i18n_course.problems(*_broken(tmp_path, msgid, "正方形和矩形窗口的索引都一致", fuzzy=True))
    assert [(p.kind, str(p).split(": ", 1)[1]) for p in problems] == [
        (OUT_OF_DATE, f"fuzzy (the English changed: review the translation, then remove the flag): {msgid!r}")]
    problems = i18n_course.problems(*_broken(tmp_path, msgid, ""))
    assert [(p.kind, str(p).split(": ", 1)[1]) for p in problems] == [(OUT_OF_DATE, f"untranslated: {msgid!r}")]
    # the committed catalog against the code, one message of the code missing from it, and an obsolete entry
    catalog = i18n_course.load()
    [gone] = _translated(template, 1)
    del catalog[gone.id]
    catalog.obsolete["an old hint"] = Message("an old hint", "旧的提示")
    with open(tmp_path / "stale.po", "wb") as f:
        write_po(f, catalog, width=i18n_course.WIDTH)
    problems = i18n_course.problems(tmp_path / "stale.po", template)
    assert {p.kind for p in problems} == {OUT_OF_DATE}, problems
    [missing] = [str(p) for p in problems if "not in the catalog (run python -m tools.i18n_course update)" in str(p)
                 and gone.id[:40] in str(p)]
    assert missing.startswith(f"{gone.locations[0][0]}:{gone.locations[0][1]}")
    assert [str(p) for p in problems if "obsolete entry (#~)" in str(p) and "an old hint" in str(p)]


def test_the_marks_are_kept():
    assert i18n_course.kept("the checker prints [to do] until then", "在此之前检查器打印 [待办]", False) == [
        "mark: missing '[to do]'"]


# --- the language ---------------------------------------------------------------------------------------


def test_the_language_comes_from_posenc_lang_then_the_folder_then_english(english, monkeypatch, tmp_path):
    assert i18n.language() == "en"
    (tmp_path / ".posenc-language").write_text("zh_CN\n", encoding="utf-8")
    assert i18n.language() == "zh_CN"  # read at each call: no restart needed
    monkeypatch.setenv("POSENC_LANG", "en")
    assert i18n.language() == "en"
    monkeypatch.delenv("POSENC_LANG")
    monkeypatch.chdir(tmp_path.parent)
    assert i18n.language() == "en"


def test_a_bad_language_is_rejected_with_a_clear_message(english, monkeypatch, tmp_path):
    monkeypatch.setenv("POSENC_LANG", "zh")
    with pytest.raises(ValueError, match=r"^POSENC_LANG must be one of en, zh_CN, got 'zh'$"):
        i18n.language()
    monkeypatch.delenv("POSENC_LANG")
    (tmp_path / ".posenc-language").write_text("fr", encoding="utf-8")
    with pytest.raises(ValueError, match=r"^\.posenc-language \(in .*\) must be one of en, zh_CN, got 'fr'$"):
        i18n.language()


def test_untranslated_fuzzy_and_english_fall_back_to_the_message(monkeypatch):
    monkeypatch.setenv("POSENC_LANG", "zh_CN")
    assert i18n._("a message nobody translated") == "a message nobody translated"
    assert i18n.translate(numerics.DIFFERS, "en") == numerics.DIFFERS
    with pytest.raises(ValueError, match="language must be one of en, zh_CN, got 'de'"):
        i18n.translate("x", "de")


def test_join_sentences_is_english_join_and_drops_the_space_after_chinese_punctuation():
    assert i18n.join_sentences("A b.", "", "C d.") == "A b. C d."
    assert i18n.join_sentences("甲。", "乙？", "丙") == "甲。乙？丙"


# --- what a learner sees -------------------------------------------------------------------------------

# Lines of the committed notebooks (05's solution cells; 05's exercise 1 stub): the English must stay byte-identical.
EN_T5 = ("[passed] Exercise 3 (predict how many T5 bias rows training changes): you predicted 19, the run gives 19 "
         "(exact). Causal T5 gives distances 0-15 one bucket each (16 rows); 16-23 fall into the log-spaced buckets "
         "16, 17 and 18. No distance in a 24-token sequence reaches buckets 19-31, so their rows get no gradient and "
         "keep their initial values: run on longer sequences, the model meets biases it never trained (06 returns "
         "to this).\n")
EN_ALIBI_WEIGHT = ("[passed] Exercise 5 (can one ALiBi head peak at distance 3?): (a) In one layer a key is its token's "
                   "embedding alone, and with random tokens nothing in the content marks the key 3 back. The only "
                   "position input is -m d, which falls with the distance for every m > 0, so on average each head's "
                   "weights fall with the distance too (section 7 prints 1, 0.78, 0.61, 0.47 for the steepest head). "
                   "Whether the four heads together could form a peak is the question section 7 leaves open.\n")
EN_STUB = ("[to do] Exercise 1 (ALiBi slopes): the stub above still raises NotImplementedError; write your code in "
           "its place, then run the cell again.\n")


def _stub(n_heads):
    raise NotImplementedError


@pytest.fixture
def bracketed(monkeypatch, tmp_path, template) -> None:
    """The Chinese catalog replaced by one that translates every message of the code as itself in 〈〉:
    what a checker prints in Chinese is then its English line with each message bracketed. These tests
    check the mechanism (every word a checker prints goes through the catalog, the marks stay outside,
    the English stays byte for byte), not the wording of a translation, so a checker's English can
    change before its Chinese does (docs/i18n.md)."""
    catalog = Catalog(locale="zh_CN", domain=i18n_course.DOMAIN, fuzzy=False)
    for message in template:
        if message.id:
            catalog.add(message.id, f"〈{message.id}〉", flags=message.flags)
    path = tmp_path / "posenc_course.po"
    i18n_course.write(catalog, path)
    monkeypatch.setitem(i18n.CATALOG, "zh_CN", path)
    monkeypatch.setattr(i18n, "_cache", {})


def _unbracketed(text: str) -> str:
    return text.replace("〈", "").replace("〉", "")


def _calls() -> None:
    nb05.check_exercise_3(19, 19)
    nb05.check_exercise_5("a")
    nb05.check_exercise_1(_stub)
    nb05.check_exercise_4("a")
    nb05.check_exercise_2(21, 20)


def test_a_checker_speaks_chinese_with_posenc_lang_and_english_without(english, bracketed, monkeypatch, capsys):
    nb05.check_exercise_3(19, 19)
    nb05.check_exercise_5("a")
    nb05.check_exercise_1(_stub)
    assert capsys.readouterr().out == EN_T5 + EN_ALIBI_WEIGHT + EN_STUB
    _calls()
    en = capsys.readouterr().out.splitlines()

    monkeypatch.setenv("POSENC_LANG", "zh_CN")  # the same imported checkers: translated when they print
    _calls()
    zh = capsys.readouterr().out.splitlines()
    assert len(zh) == len(en) == 5
    for chinese, english_line in zip(zh, en):
        [mark] = [m for m in i18n_course.MARKS if chinese.startswith(m + " ")]
        rest = chinese[len(mark) + 1:]
        assert english_line.startswith(mark + " ")
        assert rest.startswith("〈") and rest.count("〈") >= 2, chinese  # the title and the message, translated
        assert _unbracketed(chinese) == english_line  # every word went through the catalog, nothing else changed
    with strict(), pytest.raises(ExerciseFailure) as caught:
        nb05.check_exercise_3(16, 19)
    assert caught.value.title.startswith("〈") and caught.value.title.endswith("〉")
    assert caught.value.hint.startswith("〈")

    monkeypatch.delenv("POSENC_LANG")
    nb05.check_exercise_3(19, 19)
    assert capsys.readouterr().out == EN_T5


def test_a_notebook_folder_with_the_marker_gets_chinese(english, bracketed, tmp_path, capsys):
    nb05.check_exercise_3(...)
    english_line = capsys.readouterr().out
    (tmp_path / ".posenc-language").write_text("zh_CN", encoding="utf-8")
    nb05.check_exercise_3(...)
    chinese = capsys.readouterr().out
    assert chinese != english_line and _unbracketed(chinese) == english_line


def test_notice_speaks_the_language(english, bracketed, monkeypatch):
    assert numerics.notice(True) == ""
    assert numerics.notice(False) == numerics.DIFFERS
    monkeypatch.setenv("POSENC_LANG", "zh_CN")
    assert numerics.notice(True) == ""
    assert numerics.notice(False) == f"〈{numerics.DIFFERS}〉"


def test_the_committed_catalog_speaks_chinese(english, monkeypatch):
    """The real catalog, where its entry is current: the notice in Chinese (an out-of-date entry would
    print the English, which make i18n-check lists)."""
    entry = i18n_course.load().get(numerics.DIFFERS)
    if entry is None or not entry.string or entry.fuzzy:
        pytest.skip("the notice's translation is out of date (make i18n-check lists it)")
    monkeypatch.setenv("POSENC_LANG", "zh_CN")
    assert numerics.notice(False) == entry.string and re.search(r"[\u4e00-\u9fff]", entry.string)

"""The Chinese edition of the course package's own messages (posenc_course/i18n.py, tools/i18n_course.py).

The catalog ``locale/zh_CN/LC_MESSAGES/posenc_course.po`` is complete and current with the code (a
fresh babel extraction), and its translations keep every placeholder, number, code span and mark of
their English; the checks catch a broken entry. ``language()`` follows ``POSENC_LANG``, then the
working directory's ``.posenc-language``; a checker and ``notice()`` speak Chinese there, and their
English is byte for byte what the committed notebooks show.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog

from posenc_course import i18n, numerics
from posenc_course.exercises import nb00, nb05, strict, ExerciseFailure
from tools import i18n_course


@pytest.fixture(scope="module")
def template() -> Catalog:
    return i18n_course.extract()


@pytest.fixture
def english(monkeypatch, tmp_path):
    """No POSENC_LANG, and a working directory without a .posenc-language file."""
    monkeypatch.delenv("POSENC_LANG", raising=False)
    monkeypatch.chdir(tmp_path)


def report(problems: list[str]) -> str:
    return (f"{len(problems)} problem(s) (python -m tools.i18n_course check lists them; update with "
            "python -m tools.i18n_course update):\n" + "\n".join(problems[:40]))


# --- the catalog ------------------------------------------------------------------------------------


def test_the_catalog_is_complete_current_and_keeps_what_it_must(template):
    problems = i18n_course.problems(template=template)
    assert not problems, report(problems)


def test_the_extraction_finds_the_checkers_titles_hints_and_the_notice(template):
    ids = {m.id: m for m in template if m.id}
    assert numerics.DIFFERS in ids
    assert "Exercise 3 (where T5's exact buckets end)" in ids  # a title given to @checker (N_)
    assert "d = {d} and d + 1 fall in buckets {bucket} and {next_bucket}" in ids  # a hint built at call time (_)
    message = ids["you predicted {guess}, the run gives {truth}"]
    assert "python-brace-format" in message.flags
    assert message.locations and all(file.startswith("posenc_course/") and line > 0 for file, line in message.locations)
    assert len(ids) > 250


def test_update_is_idempotent(tmp_path, template):
    copy = tmp_path / "posenc_course.po"
    shutil.copy(i18n_course.CATALOG, copy)
    i18n_course.update(copy, template)
    assert copy.read_bytes() == i18n_course.CATALOG.read_bytes()


def test_update_keeps_a_changed_message_fuzzy_adds_a_new_one_empty_and_obsoletes_a_removed_one(tmp_path, template):
    copy = tmp_path / "posenc_course.po"
    shutil.copy(i18n_course.CATALOG, copy)
    changed = Catalog(domain=i18n_course.DOMAIN, fuzzy=False)
    for message in template:
        if message.id == "the slopes match for 1-32 heads, powers of two or not":
            changed.add("the slopes match for 1-64 heads, powers of two or not", locations=message.locations)
        elif message.id != "look at distances 0-199":
            changed.add(message.id, locations=message.locations, flags=message.flags)
    changed.add("a brand new hint about {thing}", locations=[("posenc_course/exercises/nb05.py", 1)])
    counts = i18n_course.update(copy, changed)
    catalog = i18n_course.load(copy)
    fuzzy = catalog.get("the slopes match for 1-64 heads, powers of two or not")
    assert fuzzy.fuzzy and fuzzy.string == i18n_course.load()["the slopes match for 1-32 heads, powers of two or not"].string
    assert catalog.get("a brand new hint about {thing}").string == ""
    assert "look at distances 0-199" in catalog.obsolete
    assert counts["new"] == 2 and counts["fuzzy"] == 1 and counts["obsolete"] == 1  # the changed one is reused, not obsolete
    problems = "\n".join(i18n_course.problems(copy, changed, pages=False))
    assert "fuzzy" in problems and "untranslated: 'a brand new hint" in problems


def _broken(tmp_path: Path, msgid: str, msgstr: str, fuzzy: bool = False) -> Path:
    catalog = i18n_course.load()
    message = catalog[msgid]
    message.string = msgstr
    if fuzzy:
        message.flags.add("fuzzy")
    path = tmp_path / "posenc_course.po"
    i18n_course.write(catalog, path)
    return path


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
def test_the_checks_catch_a_broken_translation(tmp_path, template, msgid, broken, expected):
    path = _broken(tmp_path, msgid, broken)
    problems = i18n_course.problems(path, template)
    assert len(problems) >= 1 and all(msgid[:40] in p for p in problems), problems
    assert any(expected in p for p in problems), problems
    assert all(p.startswith("posenc_course/") and ".py:" in p.split(": ")[0] for p in problems), problems


def test_the_checks_catch_a_fuzzy_or_empty_entry_and_a_stale_catalog(tmp_path, template):
    msgid = "the index matches for square and rectangular windows"
    problems = i18n_course.problems(_broken(tmp_path, msgid, "正方形和矩形窗口的索引都一致", fuzzy=True), template)
    assert [p.split(": ", 1)[1] for p in problems] == [
        f"fuzzy (the English changed: review the translation, then remove the flag): {msgid!r}"]
    problems = i18n_course.problems(_broken(tmp_path, msgid, ""), template)
    assert [p.split(": ", 1)[1] for p in problems] == [f"untranslated: {msgid!r}"]
    catalog = i18n_course.load()
    del catalog[msgid]
    i18n_course.write(catalog, tmp_path / "stale.po")
    problems = i18n_course.problems(tmp_path / "stale.po", template)
    assert len(problems) == 1 and problems[0].startswith("posenc_course/exercises/nb05.py:")
    assert "not in the catalog (run python -m tools.i18n_course update)" in problems[0]


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

# Lines of the committed notebooks (05's solution cells; 00's stub): the English must stay byte-identical.
EN_T5 = ("[passed] Exercise 3 (where T5's exact buckets end): distances 0-7 have their own bucket; from 8 on, "
         "neighbours share (log spacing)\n")
EN_ALIBI_WEIGHT = ("[passed] Exercise 5 (predict ALiBi's weight at distance 3, 8 heads): you predicted 0.22, the run "
                   "gives 0.2231 (within ±0.03). m_1 = 2^(-8/n) = 1/2 for n = 8, so distance 3 gets exp(-1.5) = 0.22 "
                   "of the weight of distance 0: a clear recency preference, still no peak at distance 3.\n")
EN_STUB = ("[to do] Exercise 3 (undo a shuffle): the stub above still raises NotImplementedError; write your code in "
           "its place, then run the cell again.\n")


def _stub(perm):
    raise NotImplementedError


def test_a_checker_speaks_chinese_with_posenc_lang_and_english_without(english, monkeypatch, capsys):
    nb05.check_exercise_3(8)
    nb05.check_exercise_5(0.22, 0.2231)
    nb00.check_exercise_3(_stub)
    assert capsys.readouterr().out == EN_T5 + EN_ALIBI_WEIGHT + EN_STUB

    monkeypatch.setenv("POSENC_LANG", "zh_CN")  # the same imported checkers: translated when they print
    nb05.check_exercise_3(8)
    nb05.check_exercise_5(0.22, 0.2231)
    nb00.check_exercise_3(_stub)
    nb05.check_exercise_4("a")
    nb05.check_exercise_5(0.5, 0.2231)
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == [
        "[passed] 练习 3（T5 的精确桶止于何处）：距离 0-7 各有自己的桶；从 8 开始，相邻距离共用桶（对数间隔）",
        "[passed] 练习 5（预测 8 个头时 ALiBi 在距离 3 上的权重）：你预测的是 0.22，运行结果是 0.2231（误差在 ±0.03 以内）。"
        "n = 8 时 m_1 = 2^(-8/n) = 1/2，所以距离 3 得到的权重是距离 0 的 exp(-1.5) = 0.22 倍：明显偏好近处，但在距离 3 上仍然没有峰值。",
        "[to do] 练习 3（撤销打乱）：上面的占位函数仍在抛出 NotImplementedError；在它的位置写上你的代码，然后重新运行这个单元格。",
    ]
    assert lines[3].startswith("[not yet] 练习 4（为什么紧凑 ALiBi 需要因果掩码）：(a) 不对：在 float32 下")
    assert lines[4].startswith("[not yet] 练习 5（预测 8 个头时 ALiBi 在距离 3 上的权重）：你预测的是 0.5，运行结果是 0.2231：高了 0.2769"
                               "（预测误差不超过 ±0.03 即算通过）。8 个头时")  # no space after 。
    with strict(), pytest.raises(ExerciseFailure) as caught:
        nb05.check_exercise_3(16)
    assert caught.value.title == "练习 3（T5 的精确桶止于何处）" and caught.value.hint.startswith("16 是每个方向的桶数")

    monkeypatch.delenv("POSENC_LANG")
    nb05.check_exercise_3(8)
    assert capsys.readouterr().out == EN_T5


def test_a_notebook_folder_with_the_marker_gets_chinese(english, tmp_path, capsys):
    (tmp_path / ".posenc-language").write_text("zh_CN", encoding="utf-8")
    nb05.check_exercise_3(...)
    assert capsys.readouterr().out == "[to do] 练习 3（T5 的精确桶止于何处）：把上面单元格中的 `...` 换成你的答案，然后重新运行它。\n"


def test_notice_speaks_the_language(english, monkeypatch):
    assert numerics.notice(True) == ""
    assert numerics.notice(False) == numerics.DIFFERS
    monkeypatch.setenv("POSENC_LANG", "zh_CN")
    assert numerics.notice(True) == ""
    assert numerics.notice(False) == "这台电脑的浮点运算舍入方式与生成笔记本中这些数字的机器不同：训练得到的结果在最后几位上可能有出入。"

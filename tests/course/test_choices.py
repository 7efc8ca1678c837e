"""Every multiple-choice question of the course, read together (issue #50): answers not guessable by
position or length, a nudge for the first wrong try, and the notebook listing the options the checker
knows, under the same letters.

A student answered all eight questions of the second edition by pattern: each answer was (b) and the
longest option. Across the course, no letter is the right answer of more than 40% of the questions,
and the right option is the longest of its question in at most a third of them.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections import Counter
from pathlib import Path

import pytest

from posenc_course.exercises import Question

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted((ROOT / "posenc_course" / "exercises").glob("nb0*.py"))


def _choice_calls(path: Path) -> int:
    """How many ``choice(...)`` calls the module's source holds."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return sum(isinstance(node, ast.Call) and getattr(node.func, "id", None) == "choice" for node in ast.walk(tree))


def _questions() -> dict[str, list[Question]]:
    """Module stem (``nb00``) -> the questions of its ``choice`` checkers, in source order."""
    found = {}
    for path in MODULES:
        module = importlib.import_module(f"posenc_course.exercises.{path.stem}")
        found[path.stem] = [value.question for value in vars(module).values() if hasattr(value, "question")]
    return found


QUESTIONS = _questions()
ALL = [q for questions in QUESTIONS.values() for q in questions]


def test_every_choice_call_is_read():
    counted = {path.stem: _choice_calls(path) for path in MODULES}
    assert counted == {stem: len(qs) for stem, qs in QUESTIONS.items()}
    assert len(ALL) >= 8


def test_no_letter_is_the_answer_of_more_than_40_percent_of_the_questions():
    letters = Counter(q.answer for q in ALL)
    letter, most = letters.most_common(1)[0]
    assert most <= 0.4 * len(ALL), f"({letter}) answers {most} of the {len(ALL)} questions: {dict(letters)}"


def _longest(q: Question) -> bool:
    return len(q.options[q.answer]) >= max(len(text) for text in q.options.values())


def test_the_right_option_is_the_longest_in_at_most_a_third_of_the_questions():
    longest = [q.title for q in ALL if _longest(q)]
    assert len(longest) <= len(ALL) / 3, f"the right option is the longest in {longest}"


def test_the_rules_would_catch_the_second_editions_pattern():
    """Eight questions answered (b), the longest option each time, fail both rules."""
    patterned = [Question("q", {"a": "short", "b": "the longest option of all", "c": "short", "d": "short"}, "b",
                          "", {}, "") for _ in range(8)]
    assert Counter(q.answer for q in patterned).most_common(1)[0][1] > 0.4 * len(patterned)
    assert sum(_longest(q) for q in patterned) > len(patterned) / 3


@pytest.mark.parametrize("q", ALL, ids=[q.title for q in ALL])
def test_each_nudge_is_one_sentence_that_gives_nothing_away(q):
    nudge = q.nudge.strip()
    assert nudge[-1] in ".?" and not re.search(r"[.?!] [A-Z]", nudge[:-1]), f"not one sentence: {nudge!r}"
    assert f"({q.answer})" not in nudge and q.options[q.answer] not in nudge


@pytest.mark.parametrize("q", ALL, ids=[q.title for q in ALL])
def test_each_wrong_option_has_its_own_hint(q):
    assert set(q.hints) == set(q.options) - {q.answer} and all(h.strip() for h in q.hints.values())


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower().replace("\\", " ")) if len(w) > 2}


def _listed_options(script: str) -> dict[str, str]:
    """The options a notebook lists in its markdown: ``# - **(a)** text`` and its continuation lines."""
    options, letter = {}, None
    for line in script.splitlines():
        start = re.match(r"^# - \*\*\(([a-e])\)\*\* (.*)", line)
        if start:
            letter = start.group(1)
            options[letter] = start.group(2)
        elif letter and line.startswith("#   "):
            options[letter] += " " + line[4:]
        else:
            letter = None
    return options


@pytest.mark.parametrize("stem", sorted(stem for stem, qs in QUESTIONS.items() if qs))
def test_the_notebook_lists_each_option_under_the_checkers_letter(stem):
    """The markdown's option (x) shares more words with the checker's option (x) than with any other."""
    (script,) = (ROOT / "notebooks").glob(f"{stem[2:]}_*.py")
    listed = _listed_options(script.read_text(encoding="utf-8"))
    (question,) = QUESTIONS[stem]
    assert set(listed) == set(question.options), f"{script.name} lists {sorted(listed)}"
    for letter, text in listed.items():
        overlap = {other: len(_words(text) & _words(known)) / len(_words(text) | _words(known))
                   for other, known in question.options.items()}
        assert max(overlap, key=overlap.get) == letter, f"{script.name} ({letter}): {text!r} matches {overlap}"

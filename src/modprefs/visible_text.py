"""Text as a reader sees it: what a check of emptiness or sameness compares.

A lab's table may hold characters no one sees: zero-width spaces and joiners, byte-order marks, bidirectional
controls (Unicode category Cf), Hangul fillers and the blank Braille pattern, and compatibility forms (a
full-width ``ｈｅｌｐ`` is ``help`` to a reader). A prompt made only of invisible characters is empty, and
``help-01`` and ``help-01`` followed by a zero-width space are one id. :func:`visible_text` is the text with NFKC
applied and those characters removed; checks compare it, while the text itself is kept as the lab wrote it.
"""

from __future__ import annotations

import unicodedata

__all__ = ["invisible_characters", "visible_text"]

#: invisible characters outside category Cf: Hangul fillers, the blank Braille pattern
INVISIBLE_OTHER = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def _invisible(ch: str) -> bool:
    return unicodedata.category(ch) == "Cf" or ch in INVISIBLE_OTHER


def visible_text(text: str) -> str:
    """``text`` in NFKC with every invisible character (category Cf, :data:`INVISIBLE_OTHER`) removed."""
    return "".join(ch for ch in unicodedata.normalize("NFKC", str(text)) if not _invisible(ch))


def invisible_characters(text: str) -> list[str]:
    """The invisible characters of ``text``, each once in order, as ``U+200B ZERO WIDTH SPACE`` (for messages)."""
    found = dict.fromkeys(ch for ch in str(text) if _invisible(ch))
    return [f"U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed')}" for ch in found]

"""Response text -> the text a TTS engine should read aloud.

LLM responses are Markdown. Read verbatim, a TTS engine says "asterisk asterisk", spells URLs
letter by letter and runs list items together. :func:`speakable_text` keeps every word a reader
of the text condition sees and drops only the markup:

- fenced code blocks: the fence lines go, the code lines stay (each read as its own sentence);
- headers ``# Title`` -> ``Title.``; blockquote ``>`` and horizontal rules go;
- list items (``-``, ``*``, ``+``, ``•``, ``1.``, ``1)``) lose the marker and end with punctuation;
- tables: the separator row goes, each row's cells are joined with ", " into one sentence;
- ``**bold**``, ``__bold__``, ``*italic*``, ``_italic_``, ``~~strike~~``, ```code``` -> their text;
- ``[text](url)`` -> text, ``![alt](url)`` -> alt, bare URLs and ``<url>`` -> the domain
  (``https://www.nhs.uk/x`` -> ``nhs.uk``), HTML tags go (``<br>`` ends a sentence);
- emoji and pictographs go;
- whitespace collapses to single spaces; a line that ends a block without punctuation gets a
  full stop, so the engine pauses where the eye would.

PRISM's literal ``EMPTY STRING`` (an empty model output) and text with nothing speakable left
raise ``ValueError`` naming the clip.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

__all__ = ["speakable_text", "EMPTY_MARKER"]

EMPTY_MARKER = "EMPTY STRING"

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADER = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)(\s+#+)?\s*$")
_RULE = re.compile(r"^\s{0,3}(?:([-*_])(\s*\1){2,}|=+)\s*$")  # also a setext header's underline
_QUOTE = re.compile(r"^\s{0,3}(>\s?)+")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•◦▪‣]|\d{1,3}[.)]|[a-z][.)](?=\s))\s+(?:\[[ xX]\]\s+)?")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")

_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_AUTOLINK = re.compile(r"<((?:https?|ftp)://[^>\s]+)>")
_URL = re.compile(r"\b(?:(?:https?|ftp)://|www\.)[^\s<>()\[\]]+[^\s<>()\[\].,;:!?'\"]")
_HTML_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
_HTML_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?/?>")

_INLINE_CODE = re.compile(r"`+([^`]*?)`+")
_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_ITALIC_STAR = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])")
_ITALIC_UNDERSCORE = re.compile(r"(?<!\w)_(?=\S)([^_\n]+?)(?<=\S)_(?!\w)")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|>~<])")
_ESCAPED = re.compile("[\ue000-\ue07f]")  # private-use stand-ins for escaped ASCII
_STRAY_MARKUP = re.compile(r"[*`|]+|(?<!\w)#+(?=\s|$)")

_EMOJI = re.compile(
    "["
    "\U0001f000-\U0001faff"  # mahjong .. symbols & pictographs extended-A (incl. emoticons)
    "\U0001f1e6-\U0001f1ff"  # regional indicators (flags)
    "\u2600-\u27bf"  # miscellaneous symbols, dingbats
    "\u2b00-\u2bff"  # arrows & stars (⭐, ⬆)
    "\u2300-\u23ff"  # technical (⌚, ⏰)
    "\ufe00-\ufe0f"  # variation selectors
    "\u200d"  # zero-width joiner
    "\u20e3"  # combining keycap
    "\U000e0020-\U000e007f"  # tag characters (subdivision flags)
    "]+"
)

_SPACE_BEFORE_MARK = re.compile(r"\s+([.,!?;:…](?:\s|$))")  # left where emoji or markup were removed

# A line "ends" if its last visible character (before closing quotes/brackets) is one of these.
_FINAL = re.compile(r"[.!?…:;,][\"'”’)\]]*$")


def _url_domain(url: str) -> str:
    """``https://www.example.co.uk/a?b`` -> ``example.co.uk``; falls back to ``a link``."""
    if url.lower().startswith("www."):
        url = "http://" + url
    host = urlsplit(url).hostname or ""
    host = host.removeprefix("www.")
    return host or "a link"


def _inline(line: str) -> str:
    """Strip inline Markdown, links, URLs, HTML tags and emoji from one line."""
    line = _ESCAPE.sub(lambda m: chr(0xE000 + ord(m.group(1))), line)  # protect \* etc.
    line = _IMAGE.sub(r"\1", line)
    line = _LINK.sub(r"\1", line)
    line = _AUTOLINK.sub(lambda m: _url_domain(m.group(1)), line)
    line = _URL.sub(lambda m: _url_domain(m.group(0)), line)
    line = _HTML_TAG.sub(" ", line)
    line = _INLINE_CODE.sub(r"\1", line)
    line = _BOLD.sub(r"\2", line)
    line = _STRIKE.sub(r"\1", line)
    line = _ITALIC_STAR.sub(r"\1", line)
    line = _ITALIC_UNDERSCORE.sub(r"\1", line)
    line = _STRAY_MARKUP.sub(" ", line)
    line = _EMOJI.sub("", line)
    line = _ESCAPED.sub(lambda m: chr(ord(m.group(0)) - 0xE000), line)
    return " ".join(line.split())


def _terminate(sentence: str) -> str:
    """Add a full stop unless ``sentence`` already ends in punctuation."""
    return sentence if not sentence or _FINAL.search(sentence) else sentence + "."


def _table_row(line: str) -> str:
    cells = [_inline(c) for c in line.strip().strip("|").split("|")]
    return _terminate(", ".join(c for c in cells if c))


def _classify(raw: str) -> tuple[str, bool] | None:
    """One Markdown line outside a code fence -> (cleaned line, is_a_block_of_its_own).

    None for lines that carry no words (blank lines, rules, table separator rows).
    """
    if not raw.strip() or _RULE.match(raw) or (_TABLE_SEP.match(raw) and "-" in raw and "|" in raw):
        return None
    if _TABLE_ROW.match(raw):
        return _table_row(raw), True
    line = _QUOTE.sub("", raw)
    header = _HEADER.match(line)
    if header:
        return _inline(header.group(1)), True
    item = _LIST_ITEM.match(line)
    if item:
        return _inline(line[item.end() :]), True
    return _inline(line), False


def _blocks(text: str) -> list[tuple[str, bool]]:
    """Split ``text`` into (inline-cleaned line, ends_a_sentence) pairs.

    Headers, list items, table rows and code lines stand alone: they, the line before them and
    the last line of a paragraph must end in punctuation. Wrapped paragraph lines are joined as-is.
    """
    out: list[tuple[str, bool]] = []

    def end_previous() -> None:
        if out:
            out[-1] = (out[-1][0], True)

    in_fence = False
    for raw in _HTML_BREAK.sub("\n\n", text).split("\n"):
        if _FENCE.match(raw):
            in_fence = not in_fence
            end_previous()
            continue
        if in_fence:
            code = " ".join(_EMOJI.sub("", raw).split())
            if code:
                out.append((code, True))
            continue
        classified = _classify(raw)
        if classified is None:
            end_previous()
            continue
        line, standalone = classified
        if standalone:
            end_previous()
        out.append((line, standalone))
    end_previous()
    return [(line, end) for line, end in out if line]


def speakable_text(text: str, clip_id: str | None = None) -> str:
    """Markdown response ``text`` -> one line of plain sentences for a TTS engine.

    Args:
        text: the response as shown in the text condition.
        clip_id: named in the error message when nothing speakable is left.

    Raises:
        ValueError: ``text`` is PRISM's ``EMPTY STRING`` or has no letters or digits left
            after cleaning (e.g. only emoji).
    """
    where = f"clip {clip_id}" if clip_id is not None else "text"
    if not isinstance(text, str):
        raise ValueError(f"{where}: response text is {type(text).__name__}, not a string")
    if text.strip() == EMPTY_MARKER:
        raise ValueError(f"{where}: response is PRISM's {EMPTY_MARKER!r} (an empty model output); nothing to speak")
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u00a0", " ")
    parts = [_terminate(line) if ends else line for line, ends in _blocks(text)]
    spoken = _SPACE_BEFORE_MARK.sub(r"\1", " ".join(" ".join(parts).split()))
    if not re.search(r"[^\W_]", spoken):
        raise ValueError(f"{where}: nothing speakable left after removing markup and emoji from {text[:80]!r}")
    return spoken

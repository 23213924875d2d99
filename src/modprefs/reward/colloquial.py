"""A rule-based spoken-style rewriter: the offline backend of the colloquial pairs (clearly rule-based).

SDiaReward's colloquial pairs put a spoken-style rewrite of a reply (chosen) against its written form
(rejected), both rendered by the same TTS voice, so that only the style differs. Real studies should
make the rewrites with an LLM (:func:`modprefs.reward.speech_pairs.request_rewrites` over any
OpenAI-compatible endpoint); this module makes them offline, deterministically, by fixed rules, so the
default run builds colloquial pairs and trains on them. Pairs made by it carry ``rewriter =
rule-based`` and the category ``colloquial_rule_based`` in every table and in the report: a model
that learns them has learned *these rules* (contractions, markers, fillers), which is a narrower
notion of colloquialness than a human's or an LLM's.

:func:`spoken_style` applies, in this order:

1. **list to speech**: Markdown list items become a spoken enumeration ("First, ... Then, ... And
   finally, ..."); headings, emphasis, code marks and links lose their markup
   (:func:`modprefs.speech.text.speakable_text`);
2. **numbers as speech**: ``25%`` -> "twenty-five percent", ``$5`` -> "five dollars", ``3.5`` ->
   "three point five", ``2nd`` -> "second", years ``1990`` -> "nineteen ninety", ``10,000`` -> "ten
   thousand" (``num2words``);
3. **plain words**: formal connectives and Latinate words -> everyday ones ("However," -> "But",
   "Therefore," -> "So", "approximately" -> "about", "utilize" -> "use", ...; :data:`PLAIN_WORDS`);
4. **contractions**: "do not" -> "don't", "it is" -> "it's", "you are" -> "you're", ... (:data:`CONTRACTIONS`);
5. **shorter clauses**: a sentence longer than ``max_clause_words`` words is split at "; ", ", and ",
   ", but ", ", so ", ", which " into sentences of their own;
6. **discourse markers**: the reply opens with a marker ("So,", "Well,", "Okay, so", "Yeah,");
7. **fillers**: "you know,", "I mean,", "like,", "um," open a share ``filler_rate`` of the later sentences;
8. **brevity**: at most ``max_sentences`` sentences are kept.

Choices in 6-7 are drawn from a generator seeded by ``(seed, sha256(text))``: the same text and seed
always give the same rewrite, and other texts do not change it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence

import numpy as np

REWRITER_NAME = "rule-based"

#: formal phrase (regex, case-insensitive, at a word boundary) -> everyday phrase
PLAIN_WORDS: list[tuple[str, str]] = [
    (r"however,", "but"),
    (r"nevertheless,", "still,"),
    (r"therefore,", "so"),
    (r"thus,", "so"),
    (r"consequently,", "so"),
    (r"additionally,", "also,"),
    (r"furthermore,", "also,"),
    (r"moreover,", "plus,"),
    (r"in addition,", "also,"),
    (r"in conclusion,", "so basically,"),
    (r"overall,", "all in all,"),
    (r"for example,", "like,"),
    (r"for instance,", "like,"),
    (r"in order to", "to"),
    (r"prior to", "before"),
    (r"approximately", "about"),
    (r"utilize", "use"),
    (r"utilise", "use"),
    (r"purchase", "buy"),
    (r"assist", "help"),
    (r"numerous", "lots of"),
    (r"obtain", "get"),
    (r"regarding", "about"),
    (r"commence", "start"),
    (r"sufficient", "enough"),
    (r"individuals", "people"),
    (r"require", "need"),
    (r"it is important to", "you really want to"),
    (r"it is essential to", "you've got to"),
    (r"additionally", "also"),
    (r"ensure", "make sure"),
    (r"a variety of", "all sorts of"),
]

#: full form (regex, case-insensitive) -> contraction; applied longest first
CONTRACTIONS: list[tuple[str, str]] = [
    (r"will not", "won't"),
    (r"cannot", "can't"),
    (r"can not", "can't"),
    (r"do not", "don't"),
    (r"does not", "doesn't"),
    (r"did not", "didn't"),
    (r"is not", "isn't"),
    (r"are not", "aren't"),
    (r"was not", "wasn't"),
    (r"were not", "weren't"),
    (r"have not", "haven't"),
    (r"has not", "hasn't"),
    (r"had not", "hadn't"),
    (r"would not", "wouldn't"),
    (r"should not", "shouldn't"),
    (r"could not", "couldn't"),
    (r"must not", "mustn't"),
    (r"I am", "I'm"),
    (r"I have", "I've"),
    (r"I will", "I'll"),
    (r"I would", "I'd"),
    (r"you are", "you're"),
    (r"you have", "you've"),
    (r"you will", "you'll"),
    (r"you would", "you'd"),
    (r"we are", "we're"),
    (r"we have", "we've"),
    (r"we will", "we'll"),
    (r"they are", "they're"),
    (r"they have", "they've"),
    (r"they will", "they'll"),
    (r"it is", "it's"),
    (r"it will", "it'll"),
    (r"that is", "that's"),
    (r"there is", "there's"),
    (r"here is", "here's"),
    (r"what is", "what's"),
    (r"who is", "who's"),
    (r"let us", "let's"),
    (r"he is", "he's"),
    (r"she is", "she's"),
]

OPENERS = ("So,", "Well,", "Okay, so", "Yeah,", "Right, so")
FILLERS = ("you know,", "I mean,", "like,", "um,", "honestly,")
ENUMERATION = ("First,", "Then,", "After that,", "Also,", "Plus,", "On top of that,")

_LIST_LINE = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+(.*\S)\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_CLAUSE_SPLIT = re.compile(r";\s+|,\s+(?=(?:and|but|so|which)\s)")


def _words(n: float) -> str:
    from num2words import num2words

    return num2words(n)


def _number(match: re.Match) -> str:
    text = match.group(0)
    try:
        if text.endswith("%"):
            value = text[:-1].replace(",", "")
            return f"{_words(float(value) if '.' in value else int(value))} percent"
        if text.startswith("$"):
            value = text[1:].replace(",", "")
            return f"{_words(float(value) if '.' in value else int(value))} dollars"
        m = re.fullmatch(r"(\d+)(st|nd|rd|th)", text)
        if m:
            from num2words import num2words

            return num2words(int(m.group(1)), to="ordinal")
        plain = text.replace(",", "")
        if re.fullmatch(r"1[1-9]\d\d|20\d\d", plain) and "," not in text:
            from num2words import num2words

            return num2words(int(plain), to="year")
        return _words(float(plain) if "." in plain else int(plain))
    except (ValueError, OverflowError, NotImplementedError):
        return text


_NUMBER = re.compile(r"\$\d[\d,]*(?:\.\d+)?|\d[\d,]*(?:\.\d+)?%|\b\d+(?:st|nd|rd|th)\b|\b\d[\d,]*(?:\.\d+)?\b")


def numbers_as_speech(text: str) -> str:
    """Digits, percentages, amounts, ordinals and years spelled out as they are said."""
    return _NUMBER.sub(_number, text)


def _replace_all(text: str, table: Sequence[tuple[str, str]]) -> str:
    for pattern, repl in sorted(table, key=lambda t: -len(t[0])):

        def keep_case(m: re.Match, repl: str = repl) -> str:
            return repl[0].upper() + repl[1:] if m.group(0)[0].isupper() and repl != "I'm" else repl

        text = re.sub(rf"(?<![\w']){pattern}(?![\w'])", keep_case, text, flags=re.IGNORECASE)
    return text


def list_to_speech(text: str) -> str:
    """Markdown list items as a spoken enumeration; other lines as they are."""
    lines = text.splitlines()
    out: list[str] = []
    items: list[str] = []

    def flush() -> None:
        if not items:
            return
        spoken = []
        for i, item in enumerate(items):
            item = item.rstrip(".;:")
            if len(items) > 1 and i == len(items) - 1:
                lead = "And finally,"
            else:
                lead = ENUMERATION[min(i, len(ENUMERATION) - 1)]
            spoken.append(f"{lead} {item[0].lower() + item[1:] if item[:2] != item[:2].upper() else item}.")
        out.append(" ".join(spoken))
        items.clear()

    for line in lines:
        m = _LIST_LINE.match(line)
        if m:
            items.append(m.group(1))
        else:
            flush()
            out.append(line)
    flush()
    return "\n".join(out)


def sentences(text: str) -> list[str]:
    """Sentences of a paragraph of plain text (split after . ! ? before a capital, digit or quote)."""
    return [s.strip() for s in _SENTENCE_END.split(re.sub(r"\s+", " ", text).strip()) if s.strip()]


def _shorter(sentence: str, max_words: int) -> list[str]:
    if len(sentence.split()) <= max_words:
        return [sentence]
    parts = [p.strip() for p in _CLAUSE_SPLIT.split(sentence) if p and p.strip()]
    if len(parts) < 2:
        return [sentence]
    out = []
    for p in parts:
        p = p.rstrip(",")
        if not p.endswith((".", "!", "?")):
            p += "."
        out.append(p[0].upper() + p[1:])
    return out


def _lower_first(s: str) -> str:
    """Lower-case the first letter unless the first word is "I" or an acronym."""
    first = s.split(" ", 1)[0].rstrip(",.:;!?")
    return (
        s
        if first in ("I", "I'm", "I've", "I'll", "I'd") or (len(first) > 1 and first.isupper())
        else s[0].lower() + s[1:]
    )


_NO_FILLER = tuple(w.split()[0] for w in ENUMERATION + ("And finally,",)) + ("And", "But", "So", "Or")


def spoken_style(
    text: str, seed: int = 0, max_sentences: int = 4, max_clause_words: int = 14, filler_rate: float = 0.35
) -> str:
    """The spoken-style rewrite of ``text`` (steps 1-8 of the module docs); deterministic in (text, seed)."""
    from modprefs.speech.text import speakable_text

    rng = np.random.default_rng([seed, int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16)])
    plain = speakable_text(list_to_speech(text))
    plain = _replace_all(_replace_all(numbers_as_speech(plain), PLAIN_WORDS), CONTRACTIONS)
    out: list[str] = []
    for s in sentences(plain):
        out += _shorter(s, max_clause_words)
    out = out[:max_sentences] or [plain]
    opener = OPENERS[int(rng.integers(len(OPENERS)))]
    out[0] = f"{opener} {_lower_first(out[0])}"
    for i in range(1, len(out)):
        if rng.random() < filler_rate and not out[i].startswith(_NO_FILLER):
            filler = FILLERS[int(rng.integers(len(FILLERS)))]
            out[i] = f"{filler[0].upper() + filler[1:]} {_lower_first(out[i])}"
    return " ".join(out)


def markdown_excerpt(text: str, max_chars: int = 240) -> str:
    """The opening of a Markdown reply, cut after a whole sentence or list line so that it stays within
    ``max_chars`` characters (at least one sentence); line structure (lists) is kept."""
    out: list[str] = []
    used = 0
    for line in text.strip().splitlines():
        parts = sentences(line) if not _LIST_LINE.match(line) else [line.strip()]
        kept = []
        for part in parts:
            if used and used + len(part) + 1 > max_chars:
                break
            kept.append(part)
            used += len(part) + 1
        if kept:
            out.append(" ".join(kept))
        if len(kept) < len(parts) or used >= max_chars:
            break
    return "\n".join(out)


def written_opening(text: str, target_chars: int, longer: bool, measure: Callable[[str], int] = len) -> str:
    """A whole-sentence opening of a Markdown reply (:func:`markdown_excerpt`), by its length as ``measure``
    counts it (characters as spoken): with ``longer`` the shortest opening longer than ``target_chars`` (the
    whole reply when none is), else the longest opening not longer than it (at least one sentence).

    The written side of a colloquial pair: its spoken rewrite is a few characters longer than the excerpt it
    rewrites (a discourse marker, fillers), so half the pairs take a longer opening and length does not decide."""
    openings: list[str] = []
    for limit in range(20, max(40, len(text) + 40), 20):
        cand = markdown_excerpt(text, limit)
        if not openings or cand != openings[-1]:
            openings.append(cand)
    if longer:
        return next((o for o in openings if measure(o) > target_chars), openings[-1])
    fits = [o for o in openings if measure(o) <= target_chars]
    return fits[-1] if fits else openings[0]

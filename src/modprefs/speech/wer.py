"""Word error rate of an ASR transcript against the text that was spoken, with a fixed normalisation.

Normalisation (:func:`normalize_words`), applied to reference and hypothesis alike:

1. Unicode NFKC; curly quotes and dashes become ASCII;
2. numbers are written as words, so "100" and "one hundred" match: integers with or without
   thousands commas (``1,250`` -> "one thousand two hundred fifty"), decimals (``3.5`` -> "three
   point five"), ordinals (``21st`` -> "twenty first"), a trailing ``%`` -> "percent", a leading
   ``$``/``£``/``€`` -> the number then "dollars"/"pounds"/"euros". Years are read as cardinals
   (``2024`` -> "two thousand twenty four"), which is how Kokoro and piper say them too;
   "and" is never inserted ("one hundred five", not "one hundred and five"), and a standalone
   "and" inside a spelled-out number in the reference is left as a word;
3. lower case;
4. ``&`` -> "and"; hyphens, slashes and underscores separate words (``well-known`` -> "well known");
5. apostrophes are removed inside words (``don't`` -> "dont", ``it's`` -> "its");
6. every other character that is not a letter or digit is dropped; whitespace splits words.

No spelling canonicalisation (``okay``/``ok``, ``colour``/``color``) and no contraction expansion:
both texts pass through the same rules, so these count as errors only when the ASR spells a word
differently from the text — rare for the short English sentences the round trip checks.

WER = (substitutions + deletions + insertions) / reference words, from a word-level Levenshtein
alignment (all three costs 1). It can exceed 1. An empty reference gives 0.0 for an empty
hypothesis and 1.0 otherwise.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["normalize_words", "number_to_words", "word_error_rate", "edit_counts"]

_ONES = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_SCALES = [(10**12, "trillion"), (10**9, "billion"), (10**6, "million"), (1000, "thousand")]
_ORDINAL_WORDS = {
    "one": "first",
    "two": "second",
    "three": "third",
    "five": "fifth",
    "eight": "eighth",
    "nine": "ninth",
    "twelve": "twelfth",
}
_CURRENCY = {"$": "dollars", "£": "pounds", "€": "euros"}

_NUMBER = re.compile(
    r"(?P<cur>[$£€])?(?P<num>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<frac>\d+))?"
    r"(?P<ord>st|nd|rd|th)?(?P<pct>%)?(?![\w])",
    re.IGNORECASE,
)
_TRANSLATE = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u02bc": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2013": "-",
        "\u2014": "-",
        "\u2212": "-",
        "&": " and ",
        "/": " ",
        "_": " ",
        "-": " ",
    }
)


def _below_thousand(n: int) -> list[str]:
    words: list[str] = []
    if n >= 100:
        words += [_ONES[n // 100], "hundred"]
        n %= 100
    if n >= 20:
        words.append(_TENS[n // 10])
        n %= 10
        if n:
            words.append(_ONES[n])
    elif n or not words:
        words.append(_ONES[n])
    return words


def number_to_words(n: int) -> str:
    """A non-negative integer in words, American style without "and": 1205 -> "one thousand two hundred five".

    Integers of 10**15 or more are read digit by digit.
    """
    if n < 0:
        raise ValueError(f"number_to_words: {n} is negative")
    if n >= 10**15:
        return " ".join(_ONES[int(d)] for d in str(n))
    if n == 0:
        return "zero"
    words: list[str] = []
    for scale, name in _SCALES:
        if n >= scale:
            words += _below_thousand(n // scale) + [name]
            n %= scale
    if n:
        words += _below_thousand(n)
    return " ".join(words)


def _ordinal(cardinal: str) -> str:
    *head, last = cardinal.split()
    if last in _ORDINAL_WORDS:
        last = _ORDINAL_WORDS[last]
    elif last.endswith("y"):
        last = last[:-1] + "ieth"
    else:
        last += "th"
    return " ".join([*head, last])


def _spell_number(match: re.Match[str]) -> str:
    words = number_to_words(int(match["num"].replace(",", "")))
    if match["frac"]:
        words += " point " + " ".join(_ONES[int(d)] for d in match["frac"])
    elif match["ord"]:
        words = _ordinal(words)
    if match["pct"]:
        words += " percent"
    if match["cur"]:
        words += " " + _CURRENCY[match["cur"]]
    return f" {words} "


def normalize_words(text: str) -> list[str]:
    """``text`` -> the list of normalised words WER is computed on (rules in the module docstring)."""
    text = unicodedata.normalize("NFKC", text).translate(_TRANSLATE)
    text = _NUMBER.sub(_spell_number, text).lower()
    text = re.sub(r"(?<=\w)'(?=\w)", "", text)
    text = re.sub(r"[^\w\s]|_", " ", text)
    return text.split()


def edit_counts(reference: list[str], hypothesis: list[str]) -> tuple[int, int, int]:
    """(substitutions, deletions, insertions) of a minimum-cost word alignment (unit costs)."""
    n, m = len(reference), len(hypothesis)
    # each cell: (total cost, substitutions, deletions, insertions); ties prefer substitution
    prev = [(j, 0, 0, j) for j in range(m + 1)]
    for i in range(1, n + 1):
        cur = [(i, 0, i, 0)]
        for j in range(1, m + 1):
            if reference[i - 1] == hypothesis[j - 1]:
                best = prev[j - 1]
            else:
                s, d, left = prev[j - 1], prev[j], cur[j - 1]
                best = min(
                    (s[0] + 1, s[1] + 1, s[2], s[3]),
                    (d[0] + 1, d[1], d[2] + 1, d[3]),
                    (left[0] + 1, left[1], left[2], left[3] + 1),
                    key=lambda c: c[0],
                )
            cur.append(best)
        prev = cur
    _, subs, dels, ins = prev[m]
    return subs, dels, ins


def word_error_rate(reference: str, hypothesis: str) -> float:
    """WER of ``hypothesis`` (the ASR transcript) against ``reference`` (the spoken text), normalised."""
    ref, hyp = normalize_words(reference), normalize_words(hypothesis)
    if not ref:
        return 0.0 if not hyp else 1.0
    return sum(edit_counts(ref, hyp)) / len(ref)

"""Text screening of candidate interactions before they reach participants.

The paper (§3.1) removed interactions whose output was empty, in another language, or content
that could be construed as offensive, discriminatory or distressing, and replaced each from the
same stratum. Reason codes (``removals.csv``): ``empty``, ``other_language``, ``harmful``
(``audio_quality`` is assigned by the speech stage's QC).

Rules, in the order they are applied (the first that fires is the reason):

* ``empty`` — a response is PRISM's literal ``"EMPTY STRING"``, blank after stripping, or without a single
  letter or digit (emoji or punctuation only: nothing a voice can speak, so its clip would be silence).
* ``other_language`` — a response with at least :data:`MIN_WORDS_FOR_LANGUAGE_ID` words whose most
  likely language (lingua, all languages) is not the study language and whose confidence is at
  least ``min_language_confidence``. Shorter texts are not judged: language identification on
  two or three words is unreliable (lingua calls "Ok" Zulu).
* ``harmful`` — the prompt or a response contains a term of the word list (case-insensitive,
  whole words or whole phrases). The list is ``resources/screening/harmful_terms.txt``. A
  moderation model can replace or complement it: any object with ``flag(text) -> str | None``
  (see :class:`Moderator`) plugs into :func:`screen_interaction`.

Language identification is the screen's only slow part: lingua loads its models lazily, ~7 s per process.
The first draw (one process) therefore also identifies the languages of the candidates later review rounds
would take (:func:`language_ids`, ``results/sampling/language_ids.csv``), and a review round looks them up
by text hash (:func:`known_language_detector`) instead of loading lingua again; a text not in the table is
identified as before, so the decisions are the same either way.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from modprefs.data.prism import EMPTY_STRING
from modprefs.errors import UserInputError

MIN_WORDS_FOR_LANGUAGE_ID = 4


class ScreeningError(UserInputError):
    """The screening configuration cannot be used (e.g. an unreadable or empty term list)."""


@dataclass(frozen=True)
class ScreeningResult:
    """Why an interaction was removed (``reason`` None = it passed)."""

    reason: str | None
    detail: str = ""


class Moderator(Protocol):
    """A content check: returns a short description of the problem, or None if the text is fine."""

    def flag(self, text: str) -> str | None: ...


class WordListModerator:
    """Flags text containing any listed term (case-insensitive, whole word or whole phrase)."""

    def __init__(self, terms: Sequence[str]):
        self.terms = sorted({t.strip().lower() for t in terms if t.strip()})
        if not self.terms:
            raise ValueError("harmful-term list is empty")
        alternatives = "|".join(re.escape(t).replace(r"\ ", r"\s+") for t in self.terms)
        self._pattern = re.compile(rf"(?<![\w])({alternatives})(?![\w])", re.IGNORECASE)

    @classmethod
    def from_file(cls, path: str | Path) -> WordListModerator:
        """One term or phrase per line; ``#`` starts a comment.

        Raises:
            ScreeningError: the file is missing, not UTF-8 (line named) or lists no term.
        """
        try:
            data = Path(path).read_bytes()
        except OSError as err:
            raise ScreeningError(f"harmful-term list {path}: cannot be read ({err.strerror})") from None
        terms = []
        for n, raw in enumerate(data.splitlines(), start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise ScreeningError(
                    f"harmful-term list {path} line {n}, column {err.start + 1}: not UTF-8 text "
                    f"(byte 0x{raw[err.start]:02x})"
                ) from None
            term = line.split("#", 1)[0].strip()
            if term:
                terms.append(term)
        if not terms:
            raise ScreeningError(
                f"harmful-term list {path} lists no term (one term or phrase per line; '#' starts a comment)"
            )
        return cls(terms)

    def flag(self, text: str) -> str | None:
        match = self._pattern.search(text)
        return None if match is None else f"matches listed term {match.group(1).lower()!r}"


@lru_cache(maxsize=1)
def _language_detector():
    from lingua import LanguageDetectorBuilder

    return LanguageDetectorBuilder.from_all_languages().build()


def detectable_languages() -> list[str]:
    """ISO 639-1 codes lingua can tell apart (``sampling.screening.language`` must be one), sorted."""
    from lingua import Language

    return sorted(lang.iso_code_639_1.name.lower() for lang in Language.all())


def detect_language(text: str) -> tuple[str | None, float]:
    """Most likely ISO 639-1 code (lowercase) of ``text`` and its confidence in [0, 1] (lingua)."""
    values = _language_detector().compute_language_confidence_values(text)
    if not values:
        return None, 0.0
    top = values[0]
    return top.language.iso_code_639_1.name.lower(), float(top.value)


#: (ISO 639-1 code or None, confidence in [0, 1]) of a text
Detection = tuple[str | None, float]
#: Columns of a language-identification table (:func:`language_ids`).
LANGUAGE_ID_COLUMNS = ["text_sha256", "language", "confidence"]


def text_sha256(text: str) -> str:
    """Hex SHA-256 of ``text`` (UTF-8): the key of a language-identification table."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def language_ids(texts: Sequence[str], detect: Callable[[str], Detection] | None = None) -> pd.DataFrame:
    """:data:`LANGUAGE_ID_COLUMNS` for every distinct text the screen would identify (at least
    :data:`MIN_WORDS_FOR_LANGUAGE_ID` words, not empty); ``detect`` defaults to :func:`detect_language`.
    ``language`` is "" where lingua names none; ``confidence`` is rounded to 12 decimals."""
    detect = detect or detect_language
    rows, seen = [], set()
    for text in texts:
        if not isinstance(text, str) or is_empty_response(text) or len(text.split()) < MIN_WORDS_FOR_LANGUAGE_ID:
            continue
        key = text_sha256(text)
        if key in seen:
            continue
        seen.add(key)
        code, conf = detect(text)
        # lingua's confidence can differ in the last bit from call to call: 12 decimals keep the file reproducible
        rows.append({"text_sha256": key, "language": code or "", "confidence": round(conf, 12)})
    return pd.DataFrame.from_records(rows, columns=LANGUAGE_ID_COLUMNS)


def read_language_ids(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A table :func:`language_ids` wrote as CSV (an empty ``language`` stays "", confidences bit for bit)."""
    return pd.read_csv(path, dtype={"text_sha256": str, "language": str}, keep_default_na=False)


def known_language_detector(table: pd.DataFrame | None) -> Callable[[str], Detection]:
    """A detector that answers from ``table`` (:func:`language_ids`' columns) by text hash, else asks lingua."""
    known: dict[str, Detection] = {}
    if table is not None and len(table):
        missing = sorted(set(LANGUAGE_ID_COLUMNS) - set(table.columns))
        if missing:
            raise ValueError(f"language-identification table lacks column(s) {missing}")
        for key, code, conf in table[LANGUAGE_ID_COLUMNS].itertuples(index=False):
            known[str(key)] = (code if isinstance(code, str) and code else None, float(conf))

    def detect(text: str) -> Detection:
        hit = known.get(text_sha256(text))
        return hit if hit is not None else detect_language(text)

    return detect


def is_empty_response(text: str | None) -> bool:
    """No speakable content: None, blank, PRISM's ``"EMPTY STRING"``, or no letter or digit (e.g. emoji only)."""
    return text is None or text.strip() == EMPTY_STRING or not any(ch.isalnum() for ch in text)


def screen_interaction(
    interaction: Mapping[str, Any],
    moderator: Moderator,
    language: str = "en",
    min_language_confidence: float = 0.5,
    detect: Callable[[str], Detection] | None = None,
) -> ScreeningResult:
    """Apply the rules of the module docstring to one interaction (a conversations.parquet row); ``detect``
    identifies a text's language (default :func:`detect_language`)."""
    detect = detect or detect_language
    responses = [interaction["text_0"], interaction["text_1"]]
    for k, text in enumerate(responses):
        if is_empty_response(text):
            what = (
                "is empty"
                if text is None or not text.strip() or text.strip() == EMPTY_STRING
                else "has no letter or digit to speak"
            )
            return ScreeningResult("empty", f"response {k} {what} ({text!r})")
    for k, text in enumerate(responses):
        if len(text.split()) < MIN_WORDS_FOR_LANGUAGE_ID:
            continue
        code, conf = detect(text)
        if code is not None and code != language and conf >= min_language_confidence:
            return ScreeningResult("other_language", f"response {k} detected as {code} (confidence {conf:.2f})")
    for label, text in [("prompt", interaction["prompt"]), ("response 0", responses[0]), ("response 1", responses[1])]:
        problem = moderator.flag(text)
        if problem:
            return ScreeningResult("harmful", f"{label} {problem}")
    return ScreeningResult(None)


def screen_from_config(
    screening: Mapping[str, Any], harmful_terms: str | Path, detect: Callable[[str], Detection] | None = None
) -> Callable[[Mapping[str, Any]], ScreeningResult]:
    """The text screen configured by ``sampling.screening`` with the word list at ``harmful_terms``; ``detect``
    as for :func:`screen_interaction` (e.g. :func:`known_language_detector`)."""
    return partial(
        screen_interaction,
        moderator=WordListModerator.from_file(harmful_terms),
        language=screening.get("language", "en"),
        min_language_confidence=screening.get("min_language_confidence", 0.5),
        detect=detect or detect_language,
    )

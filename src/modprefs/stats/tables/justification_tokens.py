"""Justification text to terms (step 2 of :mod:`modprefs.stats.tables.justifications`) and the exclusion list (step 4).

Lowercase; negated contractions expanded (:func:`normalize_negations`); tokens are runs of ASCII letters of length
>= 2; the project's stop words (:data:`STOP_WORDS_PATH`) removed before Porter stemming (:func:`stem`); a negator
(:data:`NEGATORS`) is a term and turns the next content word within :data:`MAX_NEGATION_GAP` stop words or
intensifiers, before punctuation or a contrastive conjunction (:data:`SCOPE_BREAKS`), into ``<negator>_<stem>``
(:func:`analyze`). Excluded words (:func:`exclusion_words`, matched before stemming) never become terms. The rules
and their reasons: the pipeline's step 2 in :mod:`modprefs.stats.tables.justifications`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

#: the documented stop list (function words only), resolved against the repository root
STOP_WORDS_PATH = Path(__file__).resolve().parents[4] / "resources" / "analysis" / "stop_words.txt"
STOP_WORDS_NAME = "resources/analysis/stop_words.txt (scikit-learn ENGLISH_STOP_WORDS minus content words)"
STEMMER_NAME = "nltk PorterStemmer (NLTK_EXTENSIONS mode)"
NEGATION_NAME = "not/no/never (n't, cannot -> not) kept; the next content word becomes <negator>_<stem>"
_TOKEN = re.compile(r"[a-z]{2,}")
#: tokens and the punctuation that ends a negation's scope
_PIECE = re.compile(r"[a-z]{2,}|[.,;:!?()\[\]\"\n]")
#: negation words; each is a term, and prefixes the next content word (its head)
NEGATORS = frozenset({"not", "no", "never"})
#: degree words skipped (and kept as terms unless stop words) between a negator and its head
INTENSIFIERS = frozenset(
    {
        "very",
        "too",
        "so",
        "really",
        "quite",
        "overly",
        "particularly",
        "especially",
        "entirely",
        "completely",
        "totally",
        "fully",
        "necessarily",
        "always",
        "even",
        "much",
    }
)
#: contrastive conjunctions: a negation does not reach past them ("not long but clear")
SCOPE_BREAKS = frozenset({"but", "however", "although", "though", "yet", "whereas", "while"})
#: stop words or intensifiers allowed between a negator and its head ("not as very clear")
MAX_NEGATION_GAP = 3
_CONTRACTIONS = (
    (re.compile(r"\b(?:can['\u2019]?t|cannot)\b"), "can not"),
    (re.compile(r"\bwon['\u2019]t\b"), "will not"),
    (re.compile(r"\bain['\u2019]t\b"), "is not"),
    (re.compile(r"\b([a-z]+)n['\u2019]t\b"), r"\1 not"),
    (re.compile(r"\b(do|does|did|is|was|are|were|could|would|should|has|have|had)nt\b"), r"\1 not"),
)
EXCLUDED_MARK = "excluded:"  # marks an excluded word in the tokenizer's output (never a real token: no ':')


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """The stop list of :data:`STOP_WORDS_PATH` (lowercase words; see the file's header for its rule)."""
    if not STOP_WORDS_PATH.is_file():
        raise FileNotFoundError(
            f"justification stop list not found: {STOP_WORDS_PATH} "
            "(resources/analysis/stop_words.txt of the modprefs repository)"
        )
    return frozenset(load_terms(STOP_WORDS_PATH))


@lru_cache(maxsize=1)
def _stemmer():
    from nltk.stem.porter import PorterStemmer

    return PorterStemmer()


@lru_cache(maxsize=50_000)
def stem(word: str) -> str:
    """Porter stem of one lowercase word (NLTK's PorterStemmer; no downloaded data needed)."""
    return _stemmer().stem(word.lower())


def normalize_negations(text: str) -> str:
    """Lowercased ``text`` with negative contractions spelled out: "don't"/"dont" -> "do not",
    "can't"/"cant"/"cannot" -> "can not", "won't" -> "will not", "isn't" -> "is not" (straight or
    curly apostrophe)."""
    out = str(text).lower()
    for pattern, repl in _CONTRACTIONS:
        out = pattern.sub(repl, out)
    return out


def analysed_tokens(doc: str, exclude: frozenset[str] = frozenset()) -> list[str]:
    """Terms of one document, excluded words marked ``excluded:<word>`` (see :func:`analyze`)."""
    stops = stop_words()
    out: list[str] = []
    negator: str | None = None
    gap = 0
    for piece in _PIECE.findall(normalize_negations(doc)):
        if not piece[0].isalpha():  # punctuation ends a negation's scope
            negator = None
            continue
        if piece in SCOPE_BREAKS:
            negator = None
        if piece in NEGATORS:
            out.append(piece)
            negator, gap = piece, 0
            continue
        if piece in stops or piece in INTENSIFIERS:
            if piece not in stops:
                out.append(stem(piece))
            gap += 1
            if gap > MAX_NEGATION_GAP or piece == "only":  # "not only clear but ..." negates nothing
                negator = None
            continue
        if piece in exclude:
            out.append(EXCLUDED_MARK + piece)
        elif negator is not None:
            out.append(f"{negator}_{stem(piece)}")
        else:
            out.append(stem(piece))
        negator = None
    return out


def analyze(doc: str, exclude: Iterable[str] = ()) -> list[str]:
    """Terms of one justification: negations spelled out, lowercase letter runs (>= 2), stop words
    dropped, words in ``exclude`` (exact, lowercase) dropped, Porter-stemmed; a content word after
    ``not``/``no``/``never`` becomes ``<negator>_<stem>`` (module docstring, step 2)."""
    return [t for t in analysed_tokens(doc, frozenset(exclude)) if not t.startswith(EXCLUDED_MARK)]


def load_terms(path: str | Path) -> list[str]:
    """Words of a term list: one per line, '#' comments and blank lines ignored, lowercased."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip().lower()
        if line:
            out.append(line)
    return out


def exclusion_words(terms: Iterable[str]) -> frozenset[str]:
    """The exact words excluded from the analysis (lowercased); each entry must be one token ``[a-z]{2,}``.

    Matching is on the word before stemming, so "heading" excludes "heading" only (not "head", its
    stem) and "play" does not exclude "playful"; list every inflection to exclude.
    """
    out = set()
    for term in terms:
        word = str(term).strip().lower()
        if not _TOKEN.fullmatch(word):
            raise ValueError(
                f"modality term {term!r}: entries are single words of letters a-z (length >= 2), matched exactly"
            )
        out.add(word)
    return frozenset(out)

"""Justification text analysis (§4.3, §5.2): which stemmed terms differ in use between modalities.

Pipeline (paper: 658 justifications, 347 audio / 311 text, TF-IDF with Porter stemming, vocabulary
= 223 terms, a chi-square test per term on presence/absence, Benjamini-Hochberg FDR at q = .05,
modality-specific terms excluded):

1. **Documents.** Non-empty ``justification`` texts (after stripping whitespace) of analysed rows:
   participants whose ``passed_attention`` is true, trials ``>= 1`` (trial 0 is the attention
   check). The condition comes from participants.csv. One justification = one document.
2. **Tokens** (:func:`analyze`). Lowercase; tokens are runs of ASCII letters ``[a-z]`` of length
   >= 2 (as scikit-learn's default ``token_pattern``, except that digits and ``_`` are not word
   characters; "don't" gives "don"); stop words removed *before* stemming, using the project's
   documented list ``resources/analysis/stop_words.txt`` (:data:`STOP_WORDS_PATH`; provenance and
   rule at its top): scikit-learn's ``ENGLISH_STOP_WORDS`` with every content word taken out, so
   the words preference justifications are about -- order (first, last, next, before, after),
   length and amount (full, enough, more, less, few), content and help (detail, give, show,
   describe, find), tone and ties (well, same, serious) -- are never removed. scikit-learn's list
   itself would delete "detail", "give", "first" and "last": ``analyze("More detail.")`` returned
   [] with it, and on simulated paper-size studies documents with the stem "detail" fell by about
   half (benchmarks/ratings_calibration.py reports both counts). Then Porter stemming with NLTK's
   ``PorterStemmer()`` (its default ``NLTK_EXTENSIONS`` mode; pure code, no downloaded data).
   Removing stop words before stemming matters: sklearn removes them after a custom tokenizer, so
   e.g. "was" -> "wa" would survive.
3. **Vocabulary.** ``sklearn.feature_extraction.text.TfidfVectorizer`` over those tokens with
   ``min_df`` (default :data:`DEFAULT_MIN_DF` = 5 documents; an int is a document count, a float a
   proportion, as in sklearn). Why 5: the paper's 223 terms from 658 short justifications. Short
   free text is close to Zipfian (frequency of the r-th type ~ N / (r ln V)), and in one- or
   two-sentence documents a term's document frequency is about its frequency, so the number of
   stems with df >= k is ~ N / (k ln V). With ~15-20 words per justification and about half of
   them stop words, N ~ 5,000-6,500 content tokens and V ~ 1,000-1,500 stems: k = 5 gives
   ~150-200 and k = 4 ~190-250 terms, k = 1 (sklearn's default) over 1,000. min_df = 5 is the
   conventional value in that range; pass ``min_df=4`` for a vocabulary nearer 223 on the paper's
   counts. (The simulator's template sentences have far fewer distinct stems, so on simulated data
   the vocabulary is a few dozen terms whatever min_df.) The TF-IDF weights themselves do not enter
   the test; a document "contains" a term when its TF-IDF weight is > 0.
4. **Exclusion.** Modality-specific terms (``resources/analysis/modality_terms.txt``: listen,
   audio, read, text, hear, sound, voice, speak, ...) are stemmed with the same stemmer and dropped
   from the vocabulary BEFORE testing, so they are not in the BH family.
5. **Test per term.** 2x2 table ``[[audio docs with, audio docs without], [text docs with, text
   docs without]]``, ``scipy.stats.chi2_contingency(table, correction=...)``. Yates' continuity
   correction: ON by default (``correction=True``), because it is scipy's default for 2x2 tables
   and hence what a Python TF-IDF pipeline calling ``chi2_contingency(table)`` reports; the paper's
   chi-square values do not say. ``correction=False`` gives Pearson's uncorrected statistic. A term
   present in every document (a zero margin; the test is undefined) gets chi2 = 0, p = 1.
6. **Direction** ``more_in``: the modality with the larger document-frequency proportion
   (docs with term / docs in that modality); ``"equal"`` when the proportions are equal.
7. **FDR.** Benjamini-Hochberg step-up adjusted p-values (:func:`benjamini_hochberg`, equal to
   ``scipy.stats.false_discovery_control(p, method="bh")``) over all tested terms;
   ``significant`` = q <= ``alpha`` (default .05).

The result has one row per tested term (:data:`TERM_COLUMNS`), sorted by q, p, term; the counts
(documents per modality, vocabulary size before and after exclusion, the settings) are in
:class:`JustificationAnalysis` (:func:`analyze_justifications`) and, for
:func:`justification_terms`, in the frame's ``attrs`` and the log.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import chi2_contingency

from modprefs.io_tables import as_bool_column

log = logging.getLogger(__name__)

CONDITIONS: tuple[str, ...] = ("audio", "text")
TERM_COLUMNS = [
    "term",
    "docs_audio",
    "docs_text",
    "prop_audio",
    "prop_text",
    "chi2",
    "p",
    "q",
    "significant",
    "more_in",
]
DEFAULT_MIN_DF = 5
DEFAULT_ALPHA = 0.05
#: the documented exclusion list, relative to the repository root
MODALITY_TERMS_PATH = Path("resources") / "analysis" / "modality_terms.txt"
#: the documented stop list (function words only), resolved against the repository root
STOP_WORDS_PATH = Path(__file__).resolve().parents[4] / "resources" / "analysis" / "stop_words.txt"
STOP_WORDS_NAME = "resources/analysis/stop_words.txt (scikit-learn ENGLISH_STOP_WORDS minus content words)"
STEMMER_NAME = "nltk PorterStemmer (NLTK_EXTENSIONS mode)"
_TOKEN = re.compile(r"[a-z]{2,}")


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


def analyze(doc: str) -> list[str]:
    """Tokens of one justification: lowercase letter runs (>= 2), stop words dropped, Porter-stemmed."""
    stops = stop_words()
    return [stem(tok) for tok in _TOKEN.findall(str(doc).lower()) if tok not in stops]


def load_terms(path: str | Path) -> list[str]:
    """Words of a term list: one per line, '#' comments and blank lines ignored, lowercased."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip().lower()
        if line:
            out.append(line)
    return out


def exclusion_stems(terms: Iterable[str]) -> set[str]:
    """The stems removed from the vocabulary: each listed word stemmed (and, if given as a stem, itself)."""
    out: set[str] = set()
    for term in terms:
        for tok in _TOKEN.findall(str(term).lower()):
            out.add(tok)
            out.add(stem(tok))
    return out


def benjamini_hochberg(pvalues: Iterable[float]) -> np.ndarray:
    """Benjamini-Hochberg (1995) step-up adjusted p-values, in the input order.

    q_(i) = min_{j >= i} min(1, m p_(j) / j) over p sorted ascending (m = number of p-values);
    a hypothesis is rejected at FDR level alpha when q <= alpha. Empty input -> empty array.
    """
    p = np.asarray(list(pvalues), dtype=float)
    m = p.size
    if m == 0:
        return p
    if np.any(np.isnan(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError("p-values must lie in [0, 1]")
    order = np.argsort(p, kind="mergesort")
    scaled = p[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    q = np.empty(m)
    q[order] = adjusted
    return q


def presence_test(
    docs_audio: int, n_audio: int, docs_text: int, n_text: int, correction: bool = True
) -> tuple[float, float]:
    """Chi-square test of a term's presence/absence by modality (2x2): (chi2, p).

    Table ``[[docs_audio, n_audio - docs_audio], [docs_text, n_text - docs_text]]`` through
    ``scipy.stats.chi2_contingency(table, correction=correction)`` (Yates when True). A zero margin
    (term in no or in every document) gives (0.0, 1.0).
    """
    table = np.array([[docs_audio, n_audio - docs_audio], [docs_text, n_text - docs_text]], dtype=float)
    if np.any(table < 0):
        raise ValueError("document counts exceed the number of documents")
    if np.any(table.sum(axis=0) == 0) or np.any(table.sum(axis=1) == 0):
        return 0.0, 1.0
    res = chi2_contingency(table, correction=correction)
    return float(res.statistic), float(res.pvalue)


def select_justifications(trials: pd.DataFrame, participants: pd.DataFrame) -> pd.DataFrame:
    """The analysed documents: participant_id, condition, trial, justification (stripped, non-empty).

    Rows of participants who passed the attention check, trial >= 1, with a non-empty justification.
    """
    for col in ("participant_id", "trial", "justification"):
        if col not in trials.columns:
            raise ValueError(f"trials: missing column {col!r}")
    for col in ("participant_id", "condition", "passed_attention"):
        if col not in participants.columns:
            raise ValueError(f"participants: missing column {col!r}")
    people = participants.loc[as_bool_column(participants["passed_attention"]), ["participant_id", "condition"]].copy()
    people["participant_id"] = people["participant_id"].astype(str)
    people["condition"] = people["condition"].astype(str).str.strip().str.lower()
    t = trials[["participant_id", "trial", "justification"]].copy()
    t["participant_id"] = t["participant_id"].astype(str)
    t["trial"] = pd.to_numeric(t["trial"], errors="coerce")
    text = t["justification"].astype("string").str.strip()
    t["justification"] = text
    t = t[(t["trial"] >= 1) & text.notna() & (text != "")]
    docs = t.merge(people, on="participant_id", how="inner", validate="many_to_one")
    unknown = sorted(set(docs["condition"]) - set(CONDITIONS))
    if unknown:
        raise ValueError(f"participants: unknown condition(s) {unknown} (expected {list(CONDITIONS)})")
    docs = docs.sort_values(["condition", "participant_id", "trial"], kind="mergesort").reset_index(drop=True)
    return docs[["participant_id", "condition", "trial", "justification"]]


@dataclass
class JustificationAnalysis:
    """Result of :func:`analyze_justifications`."""

    terms: pd.DataFrame  # TERM_COLUMNS, one row per tested term
    n_docs: dict[str, int]  # analysed justifications per condition
    vocabulary_size: int  # TF-IDF vocabulary (stems with df >= min_df), before exclusion
    n_tested: int  # terms tested (= BH family size) after exclusion
    excluded: list[str] = field(default_factory=list)  # vocabulary stems removed as modality-specific
    min_df: int | float = DEFAULT_MIN_DF
    correction: bool = True
    alpha: float = DEFAULT_ALPHA

    @property
    def n_significant(self) -> int:
        return int(self.terms["significant"].sum())

    def summary(self) -> dict:
        return {
            "n_justifications": int(sum(self.n_docs.values())),
            **{f"n_justifications_{c}": int(self.n_docs.get(c, 0)) for c in CONDITIONS},
            "vocabulary_size": self.vocabulary_size,
            "n_excluded": len(self.excluded),
            "excluded": list(self.excluded),
            "n_tested": self.n_tested,
            "n_significant": self.n_significant,
            "min_df": self.min_df,
            "yates_correction": self.correction,
            "alpha": self.alpha,
            "stop_words": STOP_WORDS_NAME,
            "stemmer": STEMMER_NAME,
        }


def _empty_terms() -> pd.DataFrame:
    """A term table (:data:`TERM_COLUMNS`) without rows, its columns typed."""
    return pd.DataFrame(
        {
            c: pd.Series(dtype=d)
            for c, d in zip(
                TERM_COLUMNS,
                ["object", "int64", "int64", "float64", "float64", "float64", "float64", "float64", "bool", "object"],
            )
        }
    )


def _term_table(
    vocab: np.ndarray,
    docs_audio: np.ndarray,
    docs_text: np.ndarray,
    na: int,
    nt: int,
    correction: bool,
    alpha: float,
) -> pd.DataFrame:
    """Each tested term's presence test and BH q-value (:data:`TERM_COLUMNS`), sorted by q, p, term."""
    stats = [presence_test(a, na, t, nt, correction) for a, t in zip(docs_audio, docs_text)]
    chi2 = np.array([s[0] for s in stats], dtype=float)
    p = np.array([s[1] for s in stats], dtype=float)
    q = benjamini_hochberg(p)
    prop_a, prop_t = docs_audio / na, docs_text / nt
    more_in = np.where(prop_a > prop_t, "audio", np.where(prop_a < prop_t, "text", "equal"))
    table = pd.DataFrame(
        {
            "term": vocab.astype(str),
            "docs_audio": docs_audio,
            "docs_text": docs_text,
            "prop_audio": prop_a,
            "prop_text": prop_t,
            "chi2": chi2,
            "p": p,
            "q": q,
            "significant": q <= alpha,
            "more_in": more_in,
        },
        columns=TERM_COLUMNS,
    )
    return table.sort_values(["q", "p", "term"], kind="mergesort").reset_index(drop=True)


def analyze_justifications(
    trials: pd.DataFrame,
    participants: pd.DataFrame,
    exclude_terms: Iterable[str] | str | Path,
    min_df: int | float = DEFAULT_MIN_DF,
    correction: bool = True,
    alpha: float = DEFAULT_ALPHA,
) -> JustificationAnalysis:
    """The §4.3 analysis with its counts (see the module docstring).

    ``exclude_terms``: words/stems to exclude, or a path to a term list (:func:`load_terms`).
    """
    from sklearn.feature_extraction.text import TfidfVectorizer

    if isinstance(exclude_terms, (str, Path)):
        exclude_terms = load_terms(exclude_terms)
    excluded_stems = exclusion_stems(exclude_terms)
    docs = select_justifications(trials, participants)
    n_docs = {c: int((docs["condition"] == c).sum()) for c in CONDITIONS}
    empty = _empty_terms()
    if min(n_docs.values()) == 0:
        log.warning(
            "justifications: no analysed justifications in %s; nothing tested",
            [c for c in CONDITIONS if n_docs[c] == 0],
        )
        return JustificationAnalysis(empty, n_docs, 0, 0, [], min_df, correction, alpha)

    vectorizer = TfidfVectorizer(analyzer=analyze, min_df=min_df, lowercase=False)
    try:
        matrix = vectorizer.fit_transform(docs["justification"].tolist())
    except ValueError:  # no term reaches min_df (or only stop words)
        log.warning("justifications: empty vocabulary at min_df=%s", min_df)
        return JustificationAnalysis(empty, n_docs, 0, 0, [], min_df, correction, alpha)
    vocab = np.asarray(vectorizer.get_feature_names_out(), dtype=object)
    present = (matrix > 0).tocsc()
    is_audio = (docs["condition"] == "audio").to_numpy()
    docs_audio = np.asarray(present[is_audio].sum(axis=0)).ravel().astype(int)
    docs_text = np.asarray(present[~is_audio].sum(axis=0)).ravel().astype(int)

    keep = np.array([t not in excluded_stems for t in vocab], dtype=bool)
    excluded = sorted(str(t) for t in vocab[~keep])
    vocab, docs_audio, docs_text = vocab[keep], docs_audio[keep], docs_text[keep]

    na, nt = n_docs["audio"], n_docs["text"]
    table = _term_table(vocab, docs_audio, docs_text, na, nt, correction, alpha)
    result = JustificationAnalysis(table, n_docs, int(keep.size), int(keep.sum()), excluded, min_df, correction, alpha)
    log.info(
        "justifications: %d analysed (%d audio, %d text); TF-IDF vocabulary %d terms (min_df=%s), "
        "%d modality-specific excluded, %d tested, %d significant at q=%.2f (Yates %s)",
        na + nt,
        na,
        nt,
        result.vocabulary_size,
        min_df,
        len(excluded),
        result.n_tested,
        result.n_significant,
        alpha,
        "on" if correction else "off",
    )
    return result


def justification_terms(
    trials: pd.DataFrame,
    participants: pd.DataFrame,
    exclude_terms: Iterable[str] | str | Path,
    min_df: int | float = DEFAULT_MIN_DF,
    correction: bool = True,
    alpha: float = DEFAULT_ALPHA,
) -> pd.DataFrame:
    """One row per tested term (:data:`TERM_COLUMNS`); the counts are in ``.attrs`` and logged.

    ``attrs`` keys: n_justifications, n_justifications_audio, n_justifications_text,
    vocabulary_size (before exclusion), n_excluded, excluded, n_tested, n_significant, min_df,
    yates_correction, alpha, stop_words, stemmer.
    """
    result = analyze_justifications(
        trials, participants, exclude_terms, min_df=min_df, correction=correction, alpha=alpha
    )
    table = result.terms
    table.attrs.update(result.summary())
    return table

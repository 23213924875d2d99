"""Justification text analysis (§4.3, §5.2): which terms differ in use between modalities.

Pipeline (paper: 658 justifications, 347 audio / 311 text, TF-IDF with Porter stemming, vocabulary
= 223 terms, a chi-square test per term on presence/absence, Benjamini-Hochberg FDR at q = .05,
modality-specific terms excluded). The paper's chi-square treats the justifications as independent
although each participant writes several (~7 of 20 trials); participants have phrase habits, so
its false-positive rate is far above q (issue 27: 95 of 100 null studies with a "discovery"). The
terms' significance here comes from a **participant-level permutation test** (step 5); the
paper's document-level chi-square is kept beside it for comparison (step 6).

1. **Documents.** Non-empty ``justification`` texts (after stripping whitespace) of analysed rows:
   participants whose ``passed_attention`` is true, trials ``>= 1`` (trial 0 is the attention
   check). The condition comes from participants.csv (between subjects: one per participant). One
   justification = one document.
2. **Tokens** (:func:`analyze`). Lowercase; contractions with a negation are expanded first
   (:func:`normalize_negations`: "don't"/"dont" -> "do not", "can't"/"cannot" -> "can not",
   "won't" -> "will not"); tokens are runs of ASCII letters ``[a-z]`` of length >= 2 (as
   scikit-learn's default ``token_pattern``, except that digits and ``_`` are not word characters);
   stop words removed *before* stemming, using the project's documented list
   ``resources/analysis/stop_words.txt`` (:data:`STOP_WORDS_PATH`; provenance and rule at its top):
   scikit-learn's ``ENGLISH_STOP_WORDS`` with every content word taken out, so the words preference
   justifications are about -- order (first, last, next, before, after), length and amount (full,
   enough, more, less, few), content and help (detail, give, show, describe, find), tone and ties
   (well, same, serious), negation and degree (not, no, never, cannot, too, very, but) -- are never
   removed. scikit-learn's list itself would delete "detail", "give", "first" and "last":
   ``analyze("More detail.")`` returned [] with it. Then Porter stemming with NLTK's
   ``PorterStemmer()`` (its default ``NLTK_EXTENSIONS`` mode; pure code, no downloaded data).
   Removing stop words before stemming matters: sklearn removes them after a custom tokenizer, so
   e.g. "was" -> "wa" would survive.

   **Negation.** ``not``, ``no`` and ``never`` (:data:`NEGATORS`; "n't" and "cannot" become
   ``not``) are terms themselves, and the first content word after one, within
   :data:`MAX_NEGATION_GAP` stop words or intensifiers ("not very clear") and before punctuation or
   a contrastive conjunction (:data:`SCOPE_BREAKS`: but, however, ...), becomes a negated bigram
   ``<negator>_<stem>`` *instead of* its stem: "not clear" gives ``not`` and ``not_clear``, never
   ``clear``; "no detail" gives ``no`` and ``no_detail``; "not only" is not a negation.
   Intensifiers (:data:`INTENSIFIERS`: very, too, overly, ...) that are not stop words stay terms.
3. **Vocabulary.** ``sklearn.feature_extraction.text.TfidfVectorizer`` over those tokens with
   ``min_df`` (default :data:`DEFAULT_MIN_DF` = 5 documents; an int is a document count, a float a
   proportion, as in sklearn). Why 5: the paper's 223 terms from 658 short justifications. Short
   free text is close to Zipfian (frequency of the r-th type ~ N / (r ln V)), and in one- or
   two-sentence documents a term's document frequency is about its frequency, so the number of
   stems with df >= k is ~ N / (k ln V). With ~15-20 words per justification and about half of
   them stop words, N ~ 5,000-6,500 content tokens and V ~ 1,000-1,500 stems: k = 5 gives
   ~150-200 and k = 4 ~190-250 terms, k = 1 (sklearn's default) over 1,000. min_df = 5 is the
   conventional value in that range; pass ``min_df=4`` for a vocabulary nearer 223 on the paper's
   counts. The TF-IDF weights themselves do not enter the tests; a document "contains" a term when
   its TF-IDF weight is > 0.
4. **Exclusion** (``resources/analysis/modality_terms.txt``; its header states the rule). Entries
   are **exact words**, matched on the lowercased token *before* stemming: "heading" is excluded,
   "head" (its Porter stem) is not, "play" does not remove "playful". Every inflection to exclude
   is listed. Excluded words never become terms (nor heads of negated bigrams), so they are not in
   any test family; the vocabulary size before exclusion counts them as their own terms.
5. **Test per term: participant-level permutation** (:func:`permutation_tests`). For each
   participant i with documents, n_i = their justifications and c_ij = how many of them contain
   term j. Statistic: the difference in the pooled document proportions, audio minus text,
   ``sum_audio c_ij / sum_audio n_i - sum_text c_ij / sum_text n_i`` (the ``prop_audio`` -
   ``prop_text`` of the table). Two-sided p-value: condition labels permuted over participants
   (each participant keeps all their documents; the number of participants per condition is
   fixed), ``p = (1 + #{|d*| >= |d|}) / (1 + B)``. This is exact under the null that a
   participant's justifications do not depend on the condition, whatever each participant's
   habits; the chi-square of step 6 is not. Terms used by fewer than ``min_participants``
   (default :data:`DEFAULT_MIN_PARTICIPANTS` = 5) different participants are not tested (a
   condition-blind filter, so the test stays exact): at the paper's 47 + 47 participants, five
   users all in one condition give p = 2 C(47,5)/C(94,5) = .055, so such a term cannot be
   significant. B = ``n_perm`` (the config's ``stats.n_perm``, default 2000), raised to
   ``ceil(2 m / alpha)`` when that is larger (m = terms tested), so that the smallest attainable p,
   1 / (B + 1), is below half of BH's first threshold alpha / m (223 terms: 8,920 permutations).
   The permutations are seeded from ``seed`` (the config's ``seed``; stream :data:`SEED_STREAM`)
   and computed as one matrix product per block of permutations (participants x terms), drawn
   twice from the same stream (step 7 needs the scales first; memory is one block): a paper-size
   study takes well under a second.
6. **Document-level chi-square (the paper's, for comparison).** 2x2 table ``[[audio docs with,
   audio docs without], [text docs with, text docs without]]``,
   ``scipy.stats.chi2_contingency(table, correction=...)``; Yates' continuity correction ON by
   default (``correction=True``, scipy's default for 2x2 tables). A zero margin gives chi2 = 0,
   p = 1. Columns ``chi2``, ``p_chi2`` and ``q_chi2`` (BH over every term after exclusion, the
   paper's family); they are NOT what ``significant`` reports.
7. **Multiplicity.** ``significant`` = ``p_fwer`` <= ``alpha`` (default .05): the Westfall-Young
   step-down maxT adjusted p-value (:func:`stepdown_maxt_pvalues`; Westfall & Young 1993,
   Algorithm 2.8) over the tested terms, on the same relabellings as step 5, with each term's
   statistic standardised as t_j = |d_j| / s_j (s_j: the root mean square of d_j over the identity
   and the B relabellings, a symmetric function of them, so the procedure stays an exact
   permutation test). It controls the family-wise error rate, hence also the FDR, and it uses the
   terms' joint permutation distribution: the terms' dependence (a habit's words move together)
   and their lumpy tails (a term used by a few heavy users) are in its null distribution. Beside
   it, ``q``: Benjamini-Hochberg step-up adjusted p-values (:func:`benjamini_hochberg`, equal to
   ``scipy.stats.false_discovery_control(p, method="bh")``) over the same permutation p-values
   (counted in ``n_significant_fdr``). Why not BH for ``significant`` (issue 27 suggested it): its
   rate of any discovery under the global null is the Simes test's size, which positive
   dependence and lumpy tails push below alpha -- 3.2 % under the strongest habits at paper size
   (1,000 studies, outside 5 % +- 2 MC SE), where the step-down maxT gives 4.4 % on the same
   studies, at the same power (below).
8. **Direction** ``more_in``: the modality with the larger document proportion; ``"equal"`` when
   the proportions are equal.

Measured (benchmarks/justifications_null.py -> benchmarks/out/justifications_null.md; identical
conditions, each participant a Dirichlet(alpha) habit over 18 reasons, alpha 0.1, 0.3, 1 and inf =
independent documents, 46 + 48 and 20 + 20 participants, 1,000 studies per cell): the share of null
studies with at least one discovery (``significant``, family-wise) is 3.9-6.1 % (MC SE 0.6-0.8 %;
every cell within 5 % +- 2 MC SE, 3.62-6.38 %); with BH (``q``) on the same studies 3.2-5.8 %;
33-98 % for the document-level chi-square under habits (2.1-2.8 % with independent documents).
Power at the paper's size for a word twice as frequent in audio (400 studies): 46 % with independent
documents (BH 46 %, chi-square 49 %), 2.5-8 % under habits; four times as frequent: 100 %, 81 %
(alpha 1; BH 80 %), 24 % (alpha 0.3; BH 22 %).

The result has one row per term of the vocabulary after exclusion (:data:`TERM_COLUMNS`), tested
terms first, sorted by p_fwer, q, p_perm, term; untested (rare) terms have NaN ``p_perm``/``q``/``p_fwer`` and a
``note``. The counts (documents and participants per modality, vocabulary size before and after
exclusion, the settings) are in :class:`JustificationAnalysis` (:func:`analyze_justifications`)
and, for :func:`justification_terms`, in the frame's ``attrs`` and the log.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache, partial
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.sparse import csr_matrix
from scipy.stats import chi2 as chi2_dist
from scipy.stats import chi2_contingency

from modprefs.io_tables import as_bool_column
from modprefs.stats.defaults import STATS_DEFAULTS
from modprefs.study.terms import CONDITIONS

log = logging.getLogger(__name__)

TERM_COLUMNS = [
    "term",
    "participants_audio",
    "participants_text",
    "docs_audio",
    "docs_text",
    "prop_audio",
    "prop_text",
    "p_perm",
    "q",
    "p_fwer",
    "significant",
    "more_in",
    "chi2",
    "p_chi2",
    "q_chi2",
    "note",
]
_COLUMN_DTYPES = ["object"] + ["int64"] * 4 + ["float64"] * 5 + ["bool", "object"] + ["float64"] * 3 + ["object"]
DEFAULT_MIN_DF = 5
DEFAULT_MIN_PARTICIPANTS = 5
DEFAULT_ALPHA = 0.05
DEFAULT_N_PERM: int = STATS_DEFAULTS["n_perm"]  # the config's stats.n_perm
DEFAULT_SEED: int = STATS_DEFAULTS["seed"]  # the config's seed
#: mixed into the permutation seed so this analysis' stream differs from the other analyses' on the same seed
SEED_STREAM = 43
_PERM_BLOCK = 1024
TEST_NAME = (
    "participant-level permutation test of the difference in document proportions "
    "(condition labels permuted over participants); significant: Westfall-Young step-down maxT "
    "family-wise error rate over the tested terms (q: Benjamini-Hochberg, shown beside it)"
)
#: the documented exclusion list, relative to the repository root
MODALITY_TERMS_PATH = Path("resources") / "analysis" / "modality_terms.txt"
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
_EXCLUDED = "excluded:"  # marks an excluded word in the tokenizer's output (never a real token: no ':')


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


def _tokens(doc: str, exclude: frozenset[str] = frozenset()) -> list[str]:
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
            out.append(_EXCLUDED + piece)
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
    return [t for t in _tokens(doc, frozenset(exclude)) if not t.startswith(_EXCLUDED)]


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
    """Document-level chi-square test of a term's presence/absence by modality (2x2): (chi2, p).

    Table ``[[docs_audio, n_audio - docs_audio], [docs_text, n_text - docs_text]]`` through
    ``scipy.stats.chi2_contingency(table, correction=correction)`` (Yates when True). A zero margin
    (term in no or in every document) gives (0.0, 1.0). Treats documents as independent (the paper's
    test; not the one ``significant`` reports).
    """
    table = np.array([[docs_audio, n_audio - docs_audio], [docs_text, n_text - docs_text]], dtype=float)
    if np.any(table < 0):
        raise ValueError("document counts exceed the number of documents")
    if np.any(table.sum(axis=0) == 0) or np.any(table.sum(axis=1) == 0):
        return 0.0, 1.0
    res = chi2_contingency(table, correction=correction)
    return float(res.statistic), float(res.pvalue)


def permutation_count(n_perm: int, n_terms: int, alpha: float = DEFAULT_ALPHA) -> int:
    """Permutations used: ``n_perm`` raised to ``ceil(2 m / alpha)`` (m = ``n_terms``), so that
    1 / (B + 1) < alpha / (2 m), half of Benjamini-Hochberg's first-rank threshold."""
    return max(int(n_perm), math.ceil(2 * n_terms / alpha) if n_terms else 0, 1)


def _proportion_difference(s_c: np.ndarray, s_n: np.ndarray, c_tot: np.ndarray, n_tot: float) -> np.ndarray:
    """Audio minus text pooled document proportion, from the audio sums (``s_c`` per term, ``s_n`` docs)."""
    s_n = np.asarray(s_n, dtype=float)[..., None]
    return s_c / s_n - (c_tot - s_c) / (n_tot - s_n)


def stepdown_exceedances(
    observed: np.ndarray, permuted: np.ndarray, tolerance: float | np.ndarray = 1e-12
) -> np.ndarray:
    """Westfall-Young step-down maxT counts for one block of permutations (Westfall & Young 1993, Algorithm 2.8).

    ``observed``: the m standardised statistics sorted in decreasing order, t_(1) >= ... >= t_(m);
    ``permuted``: B x m, each permutation's statistics in the same (observed) order. Returns, per rank k,
    #{b : max_{l >= k} permuted[b, l] >= t_(k) - tolerance_k}: how often the largest statistic among the terms
    ranked k..m reaches the k-th observed one (``tolerance``: for ties; a scalar or one per rank).
    """
    successive_max = np.maximum.accumulate(permuted[:, ::-1], axis=1)[:, ::-1]
    return (successive_max >= (observed - tolerance)[None, :]).sum(axis=0)


def stepdown_maxt_pvalues(observed: np.ndarray, permuted: np.ndarray) -> np.ndarray:
    """Westfall-Young step-down maxT adjusted p-values (family-wise error rate), in the input order.

    ``observed``: m statistics (larger = more extreme, e.g. |t|); ``permuted``: B x m, the same statistics
    under B relabellings. With the terms ordered by decreasing observed statistic,
    ``p~_(k) = max_{l <= k} (1 + #{b : max_{j >= l} permuted[b, j] >= t_(l)}) / (1 + B)``. Strong control of
    the family-wise error rate under subset pivotality (Westfall & Young 1993, Resampling-Based Multiple
    Testing, §2.6; Dudoit, Shaffer & Boldrick 2003, Statist. Sci. 18:71-103); the statistics' dependence
    is whatever the relabellings give it, so the rate of any rejection under the global null is the
    permutation test's alpha.
    """
    observed = np.asarray(observed, dtype=float)
    permuted = np.asarray(permuted, dtype=float)
    if permuted.ndim != 2 or permuted.shape[1] != observed.size:
        raise ValueError("permuted must be B x m with one column per observed statistic")
    order = np.argsort(-observed, kind="mergesort")
    counts = stepdown_exceedances(observed[order], permuted[:, order])
    adjusted = np.maximum.accumulate((1.0 + counts) / (1.0 + permuted.shape[0]))
    out = np.empty(observed.size)
    out[order] = adjusted
    return out


def _permutation_blocks(audio: np.ndarray, n_perm: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """The condition labels of ``n_perm`` random relabellings (group sizes fixed), in blocks of rows (0/1)."""
    done = 0
    while done < n_perm:
        size = min(_PERM_BLOCK, n_perm - done)
        yield rng.permuted(np.tile(audio, (size, 1)), axis=1).astype(float)
        done += size


def _replay(rng: np.random.Generator) -> np.random.Generator:
    """An independent generator in ``rng``'s current state: it draws what ``rng`` will draw next."""
    twin = np.random.Generator(type(rng.bit_generator)())
    twin.bit_generator.state = rng.bit_generator.state
    return twin


@dataclass
class PermutationTests:
    """Result of :func:`permutation_tests`: one entry per term (column of ``counts``)."""

    difference: np.ndarray  # observed audio minus text pooled document proportion
    p: np.ndarray  # marginal two-sided permutation p-value, (1 + #{|d*| >= |d|}) / (1 + B)
    p_fwer: np.ndarray  # Westfall-Young step-down maxT adjusted p-value (family-wise error rate)
    scale: np.ndarray  # the permutation root mean square of d over the identity and the B relabellings


def permutation_tests(
    counts: np.ndarray, n_docs: np.ndarray, is_audio: np.ndarray, n_perm: int, rng: np.random.Generator
) -> PermutationTests:
    """Participant-level permutation tests of each term, marginal and family-wise (see the module docstring).

    ``counts``: participants x terms, documents of participant i containing term j; ``n_docs``: each
    participant's documents (>= 1); ``is_audio``: each participant's condition. Statistic: d_j, the
    difference in pooled document proportions, audio minus text. ``n_perm`` random permutations of the
    condition labels over participants (group sizes fixed), in blocks of matrix products, drawn twice from
    the same stream (so memory is one block, not B x m):

    1. marginal ``p = (1 + #{|d*| >= |d|}) / (1 + B)`` and the scale s_j = sqrt(mean of d_j^2 over the
       identity and the B relabellings) -- a symmetric function of the relabellings, so t_j = |d_j| / s_j is
       still an exact permutation statistic;
    2. the Westfall-Young step-down maxT adjusted p-values of t (:func:`stepdown_maxt_pvalues`).

    A term whose d is the same under every relabelling (s_j = 0) gets t = 0 and p_fwer = 1.
    """
    counts = np.asarray(counts, dtype=float)
    n = np.asarray(n_docs, dtype=float)
    audio = np.asarray(is_audio, dtype=bool)
    if counts.ndim != 2 or counts.shape[0] != n.size or n.size != audio.size:
        raise ValueError("counts must be participants x terms, with one n_docs and one condition per participant")
    if not audio.any() or audio.all() or np.any(n < 1):
        raise ValueError("both conditions need participants, and every participant at least one document")
    c_tot, n_tot = counts.sum(axis=0), float(n.sum())
    observed = _proportion_difference(counts[audio].sum(axis=0), n[audio].sum(), c_tot, n_tot)
    bar = np.abs(observed) - 1e-12
    exceed = np.zeros(counts.shape[1], dtype=np.int64)
    squares = observed**2
    second_pass = _replay(rng)
    for labels in _permutation_blocks(audio, n_perm, rng):
        diff = _proportion_difference(labels @ counts, labels @ n, c_tot, n_tot)
        exceed += (np.abs(diff) >= bar).sum(axis=0)
        squares += (diff**2).sum(axis=0)
    scale = np.sqrt(squares / (1.0 + n_perm))
    usable = scale > 1e-12 * max(1.0, float(np.abs(observed).max(initial=0.0)))
    inverse = np.where(usable, 1.0 / np.where(usable, scale, 1.0), 0.0)
    t = np.abs(observed) * inverse
    order = np.argsort(-t, kind="mergesort")
    fw_exceed = np.zeros(counts.shape[1], dtype=np.int64)
    for labels in _permutation_blocks(audio, n_perm, second_pass):
        diff = _proportion_difference(labels @ counts, labels @ n, c_tot, n_tot)
        # the marginal test's tie tolerance (1e-12 in d) in t's units, so p_fwer >= p holds exactly
        fw_exceed += stepdown_exceedances(t[order], (np.abs(diff) * inverse)[:, order], 1e-12 * inverse[order])
    p_fwer = np.empty(counts.shape[1])
    p_fwer[order] = np.maximum.accumulate((1.0 + fw_exceed) / (1.0 + n_perm))
    p_fwer[~usable] = 1.0
    return PermutationTests(observed, (1.0 + exceed) / (1.0 + n_perm), p_fwer, scale)


def permutation_pvalues(
    counts: np.ndarray, n_docs: np.ndarray, is_audio: np.ndarray, n_perm: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(observed difference, marginal two-sided p) of :func:`permutation_tests` (the same stream of relabellings)."""
    res = permutation_tests(counts, n_docs, is_audio, n_perm, rng)
    return res.difference, res.p


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

    terms: pd.DataFrame  # TERM_COLUMNS, one row per vocabulary term after exclusion
    n_docs: dict[str, int]  # analysed justifications per condition
    vocabulary_size: int  # TF-IDF vocabulary (terms with df >= min_df, excluded words included), before exclusion
    n_tested: int  # terms tested by the permutation test (= its family for p_fwer and q)
    excluded: list[str] = field(default_factory=list)  # vocabulary words removed as modality-specific
    min_df: int | float = DEFAULT_MIN_DF
    correction: bool = True
    alpha: float = DEFAULT_ALPHA
    n_participants: dict[str, int] = field(default_factory=dict)  # participants with >= 1 document
    min_participants: int = DEFAULT_MIN_PARTICIPANTS
    n_perm: int = 0  # permutations used (after permutation_count)
    seed: int = DEFAULT_SEED

    @property
    def n_significant(self) -> int:
        """Terms significant by the participant-level permutation test (Westfall-Young p_fwer <= alpha)."""
        return int(self.terms["significant"].sum())

    @property
    def n_significant_fdr(self) -> int:
        """Terms whose Benjamini-Hochberg q over the permutation p-values is <= alpha (the FDR view)."""
        return int((self.terms["q"] <= self.alpha).sum())

    @property
    def n_significant_chi2(self) -> int:
        """Terms the paper's document-level chi-square would call significant (BH over all terms)."""
        return int((self.terms["q_chi2"] <= self.alpha).sum())

    def summary(self) -> dict:
        return {
            "n_justifications": int(sum(self.n_docs.values())),
            **{f"n_justifications_{c}": int(self.n_docs.get(c, 0)) for c in CONDITIONS},
            **{f"n_participants_{c}": int(self.n_participants.get(c, 0)) for c in CONDITIONS},
            "vocabulary_size": self.vocabulary_size,
            "n_excluded": len(self.excluded),
            "excluded": list(self.excluded),
            "n_terms": len(self.terms),
            "n_tested": self.n_tested,
            "n_significant": self.n_significant,
            "n_significant_fdr": self.n_significant_fdr,
            "n_significant_chi2": self.n_significant_chi2,
            "test": TEST_NAME,
            "n_perm": self.n_perm,
            "seed": self.seed,
            "min_participants": self.min_participants,
            "min_df": self.min_df,
            "yates_correction": self.correction,
            "alpha": self.alpha,
            "stop_words": STOP_WORDS_NAME,
            "stemmer": STEMMER_NAME,
            "negation": NEGATION_NAME,
        }


def _empty_terms() -> pd.DataFrame:
    """A term table (:data:`TERM_COLUMNS`) without rows, its columns typed."""
    return pd.DataFrame({c: pd.Series(dtype=d) for c, d in zip(TERM_COLUMNS, _COLUMN_DTYPES)})


@dataclass
class _Corpus:
    """Per-term counts of one corpus after exclusion (participants x terms)."""

    vocab: np.ndarray  # term names
    counts: np.ndarray  # participants x terms: documents containing the term
    n_docs: np.ndarray  # documents per participant
    is_audio: np.ndarray  # condition per participant
    vocabulary_size: int
    excluded: list[str]


def _corpus(docs: pd.DataFrame, exclude: frozenset[str], min_df: int | float) -> _Corpus | None:
    """Vocabulary (TfidfVectorizer, min_df) and participant x term document counts; None if empty."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(analyzer=partial(_tokens, exclude=exclude), min_df=min_df, lowercase=False)
    try:
        matrix = vectorizer.fit_transform(docs["justification"].tolist())
    except ValueError:  # no term reaches min_df (or only stop words)
        return None
    vocab = np.asarray(vectorizer.get_feature_names_out(), dtype=object)
    keep = np.array([not str(t).startswith(_EXCLUDED) for t in vocab], dtype=bool)
    excluded = sorted(str(t)[len(_EXCLUDED) :] for t in vocab[~keep])
    present = (matrix[:, np.flatnonzero(keep)] > 0).astype(np.float64).tocsr()
    codes, people = pd.factorize(docs["participant_id"], sort=True)
    member = csr_matrix((np.ones(len(codes)), (codes, np.arange(len(codes)))), shape=(len(people), len(codes)))
    counts = np.asarray((member @ present).todense()).astype(np.int64)
    cond = docs.groupby("participant_id", sort=True)["condition"].first().reindex(people)
    n_docs = np.bincount(codes, minlength=len(people))
    return _Corpus(vocab[keep], counts, n_docs, (cond == "audio").to_numpy(), int(vocab.size), excluded)


def presence_tests(
    docs_audio: np.ndarray, n_audio: int, docs_text: np.ndarray, n_text: int, correction: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`presence_test` for many terms at once, vectorised: (chi2, p) arrays.

    The same statistic as ``chi2_contingency`` on each 2x2 table (Yates: every observed count moved
    towards its expected count by min(0.5, |O - E|)); a zero margin gives (0, 1).
    """
    with_ = np.stack([np.asarray(docs_audio, dtype=float), np.asarray(docs_text, dtype=float)], axis=-1)
    totals = np.array([n_audio, n_text], dtype=float)
    observed = np.stack([with_, totals - with_], axis=-2)  # terms x (with, without) x (audio, text)
    if np.any(observed < 0):
        raise ValueError("document counts exceed the number of documents")
    rows, cols = observed.sum(axis=-1, keepdims=True), observed.sum(axis=-2, keepdims=True)
    degenerate = (rows == 0).any(axis=(-2, -1)) | (cols == 0).any(axis=(-2, -1))
    expected = rows * cols / totals.sum()
    expected[degenerate] = 1.0
    diff = expected - observed
    if correction:
        observed = observed + np.sign(diff) * np.minimum(0.5, np.abs(diff))
    chi2 = ((observed - expected) ** 2 / expected).sum(axis=(-2, -1))
    chi2[degenerate] = 0.0
    p = chi2_dist.sf(chi2, 1)
    p[degenerate] = 1.0
    return chi2, p


def _term_table(corpus: _Corpus, settings: dict, rng: np.random.Generator) -> tuple[pd.DataFrame, int, int]:
    """(table, terms tested, permutations used): every term's counts, permutation and chi-square tests."""
    c, a = corpus.counts, corpus.is_audio
    users_a, users_t = (c[a] > 0).sum(axis=0), (c[~a] > 0).sum(axis=0)
    docs_a, docs_t = c[a].sum(axis=0), c[~a].sum(axis=0)
    na, nt = int(corpus.n_docs[a].sum()), int(corpus.n_docs[~a].sum())
    tested = (users_a + users_t) >= settings["min_participants"]
    n_perm = permutation_count(settings["n_perm"], int(tested.sum()), settings["alpha"])
    p_perm = np.full(c.shape[1], np.nan)
    q = np.full(c.shape[1], np.nan)
    p_fwer = np.full(c.shape[1], np.nan)
    if tested.any():
        tests = permutation_tests(c[:, tested], corpus.n_docs, a, n_perm, rng)
        p_perm[tested], p_fwer[tested] = tests.p, tests.p_fwer
        q[tested] = benjamini_hochberg(p_perm[tested])
    chi2, p_chi2 = presence_tests(docs_a, na, docs_t, nt, settings["correction"])
    q_chi2 = benjamini_hochberg(p_chi2)
    prop_a, prop_t = docs_a / na, docs_t / nt
    note = np.where(tested, "", f"used by fewer than {settings['min_participants']} participants: not tested")
    table = pd.DataFrame(
        {
            "term": corpus.vocab.astype(str),
            "participants_audio": users_a,
            "participants_text": users_t,
            "docs_audio": docs_a,
            "docs_text": docs_t,
            "prop_audio": prop_a,
            "prop_text": prop_t,
            "p_perm": p_perm,
            "q": q,
            "p_fwer": p_fwer,
            "significant": np.nan_to_num(p_fwer, nan=1.0) <= settings["alpha"],
            "more_in": np.where(prop_a > prop_t, "audio", np.where(prop_a < prop_t, "text", "equal")),
            "chi2": chi2,
            "p_chi2": p_chi2,
            "q_chi2": q_chi2,
            "note": note,
        },
        columns=TERM_COLUMNS,
    )
    table = table.sort_values(["p_fwer", "q", "p_perm", "q_chi2", "term"], kind="mergesort", na_position="last")
    return table.reset_index(drop=True), int(tested.sum()), n_perm


def analyze_justifications(
    trials: pd.DataFrame,
    participants: pd.DataFrame,
    exclude_terms: Iterable[str] | str | Path,
    min_df: int | float = DEFAULT_MIN_DF,
    correction: bool = True,
    alpha: float = DEFAULT_ALPHA,
    *,
    n_perm: int = DEFAULT_N_PERM,
    seed: int = DEFAULT_SEED,
    min_participants: int = DEFAULT_MIN_PARTICIPANTS,
) -> JustificationAnalysis:
    """The §4.3 analysis with its counts (see the module docstring).

    ``exclude_terms``: exact words to exclude, or a path to a term list (:func:`load_terms`).
    ``n_perm``/``seed``: the permutation test's (the config's ``stats.n_perm`` and ``seed``);
    ``min_participants``: fewest different participants using a term for it to be tested.
    """
    if isinstance(exclude_terms, (str, Path)):
        exclude_terms = load_terms(exclude_terms)
    exclude = exclusion_words(exclude_terms)
    docs = select_justifications(trials, participants)
    n_docs = {c: int((docs["condition"] == c).sum()) for c in CONDITIONS}
    n_people = {c: int(docs.loc[docs["condition"] == c, "participant_id"].nunique()) for c in CONDITIONS}
    settings = {"min_participants": int(min_participants), "n_perm": int(n_perm), "alpha": alpha}
    settings["correction"] = correction

    def result(table: pd.DataFrame, vocabulary_size: int, n_tested: int, excluded: list[str], used: int):
        return JustificationAnalysis(
            table,
            n_docs,
            vocabulary_size,
            n_tested,
            excluded,
            min_df=min_df,
            correction=correction,
            alpha=alpha,
            n_participants=n_people,
            min_participants=int(min_participants),
            n_perm=used,
            seed=int(seed),
        )

    if min(n_docs.values()) == 0:
        log.warning(
            "justifications: no analysed justifications in %s; nothing tested",
            [c for c in CONDITIONS if n_docs[c] == 0],
        )
        return result(_empty_terms(), 0, 0, [], 0)
    corpus = _corpus(docs, exclude, min_df)
    if corpus is None:
        log.warning("justifications: empty vocabulary at min_df=%s", min_df)
        return result(_empty_terms(), 0, 0, [], 0)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), SEED_STREAM]))
    table, n_tested, used = _term_table(corpus, settings, rng)
    out = result(table, corpus.vocabulary_size, n_tested, corpus.excluded, used)
    log.info(
        "justifications: %d analysed (%d audio, %d text) from %d + %d participants; TF-IDF vocabulary %d terms "
        "(min_df=%s), %d modality-specific excluded, %d tested (used by >= %d participants), %d significant at "
        "family-wise %.2f by the participant permutation test (Westfall-Young maxT, %d permutations; Benjamini-"
        "Hochberg q: %d; the document-level chi-square: %d)",
        sum(n_docs.values()),
        n_docs["audio"],
        n_docs["text"],
        n_people["audio"],
        n_people["text"],
        out.vocabulary_size,
        min_df,
        len(out.excluded),
        n_tested,
        min_participants,
        out.n_significant,
        alpha,
        used,
        out.n_significant_fdr,
        out.n_significant_chi2,
    )
    return out


def justification_terms(
    trials: pd.DataFrame,
    participants: pd.DataFrame,
    exclude_terms: Iterable[str] | str | Path,
    min_df: int | float = DEFAULT_MIN_DF,
    correction: bool = True,
    alpha: float = DEFAULT_ALPHA,
    *,
    n_perm: int = DEFAULT_N_PERM,
    seed: int = DEFAULT_SEED,
    min_participants: int = DEFAULT_MIN_PARTICIPANTS,
) -> pd.DataFrame:
    """One row per term after exclusion (:data:`TERM_COLUMNS`); the counts are in ``.attrs`` and logged.

    ``attrs`` keys: :meth:`JustificationAnalysis.summary`'s (n_justifications[_audio/_text],
    n_participants_audio/_text, vocabulary_size (before exclusion), n_excluded, excluded, n_terms,
    n_tested, n_significant (permutation test, family-wise), n_significant_fdr (its BH q), n_significant_chi2
    (document-level, the paper's), test, n_perm, seed, min_participants, min_df, yates_correction, alpha,
    stop_words, stemmer, negation).
    """
    result = analyze_justifications(
        trials,
        participants,
        exclude_terms,
        min_df=min_df,
        correction=correction,
        alpha=alpha,
        n_perm=n_perm,
        seed=seed,
        min_participants=min_participants,
    )
    table = result.terms
    table.attrs.update(result.summary())
    return table

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
   statistic standardised as t_j = ``|d_j|`` / s_j (s_j: the root mean square of d_j over the identity
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

Measured (benchmarks/validity/justifications_null.py -> benchmarks/out/justifications_null.md; identical
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

Where the steps live: tokens, stop words, stemming, negation and the exclusion list (steps 2 and 4) in
:mod:`modprefs.stats.tables.justification_tokens`; the permutation test, the step-down maxT and BH and the
document-level chi-square (steps 5-7) in :mod:`modprefs.stats.tables.justification_tests`; the documents, the
vocabulary and the table here.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.sparse import csr_matrix
from scipy.stats import chi2 as chi2_dist

from modprefs.io_tables import as_bool_column
from modprefs.stats.defaults import STATS_DEFAULTS
from modprefs.stats.tables.justification_tests import benjamini_hochberg, permutation_tests
from modprefs.stats.tables.justification_tokens import (
    EXCLUDED_MARK,
    NEGATION_NAME,
    STEMMER_NAME,
    STOP_WORDS_NAME,
    analysed_tokens,
    exclusion_words,
    load_terms,
)
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
TEST_NAME = (
    "participant-level permutation test of the difference in document proportions "
    "(condition labels permuted over participants); significant: Westfall-Young step-down maxT "
    "family-wise error rate over the tested terms (q: Benjamini-Hochberg, shown beside it)"
)
#: the documented exclusion list, relative to the repository root
MODALITY_TERMS_PATH = Path("resources") / "analysis" / "modality_terms.txt"


def permutation_count(n_perm: int, n_terms: int, alpha: float = DEFAULT_ALPHA) -> int:
    """Permutations used: ``n_perm`` raised to ``ceil(2 m / alpha)`` (m = ``n_terms``), so that
    1 / (B + 1) < alpha / (2 m), half of Benjamini-Hochberg's first-rank threshold."""
    return max(int(n_perm), math.ceil(2 * n_terms / alpha) if n_terms else 0, 1)


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

    vectorizer = TfidfVectorizer(analyzer=partial(analysed_tokens, exclude=exclude), min_df=min_df, lowercase=False)
    try:
        matrix = vectorizer.fit_transform(docs["justification"].tolist())
    except ValueError:  # no term reaches min_df (or only stop words)
        return None
    vocab = np.asarray(vectorizer.get_feature_names_out(), dtype=object)
    keep = np.array([not str(t).startswith(EXCLUDED_MARK) for t in vocab], dtype=bool)
    excluded = sorted(str(t)[len(EXCLUDED_MARK) :] for t in vocab[~keep])
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
    towards its expected count by min(0.5, ``|O - E|``)); a zero margin gives (0, 1).
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

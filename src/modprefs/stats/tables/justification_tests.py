"""The tests of :mod:`modprefs.stats.tables.justifications` (steps 5-7): which terms differ in use between modalities.

* :func:`permutation_tests` -- the participant-level permutation test of the difference in document proportions
  (condition labels permuted over participants, in blocks of :data:`_PERM_BLOCK` relabellings), with the
  exceedance counts of the step-down maxT (:func:`stepdown_exceedances`, :func:`stepdown_maxt_pvalues`;
  Westfall & Young 1993, Algorithm 2.8);
* :func:`benjamini_hochberg` -- BH step-up adjusted p-values;
* :func:`presence_test` -- the paper's document-level chi-square on a 2 x 2 presence table.

Why each, and what they measure: the pipeline in :mod:`modprefs.stats.tables.justifications`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
from scipy.stats import chi2_contingency

_PERM_BLOCK = 1024


def benjamini_hochberg(pvalues: Iterable[float]) -> np.ndarray:
    """Benjamini-Hochberg (1995) step-up adjusted p-values, in the input order.

    q_(i) = min_{j >= i} min(1, m p_(j) / j) over p sorted ascending (m = number of p-values);
    a hypothesis is rejected at FDR level alpha when q <= alpha. Empty input -> empty array.

    Examples
    --------
    >>> from modprefs.stats.tables.justification_tests import benjamini_hochberg
    >>> [round(float(q), 4) for q in benjamini_hochberg([0.01, 0.04, 0.03, 0.2])]
    [0.04, 0.0533, 0.0533, 0.2]
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

    Examples
    --------
    A term in 30 of 100 audio justifications and 15 of 100 text ones (Yates-corrected, as scipy):

    >>> from modprefs.stats.tables.justification_tests import presence_test
    >>> chi2, p = presence_test(30, 100, 15, 100)
    >>> round(chi2, 3), round(p, 4)
    (5.62, 0.0178)
    """
    table = np.array([[docs_audio, n_audio - docs_audio], [docs_text, n_text - docs_text]], dtype=float)
    if np.any(table < 0):
        raise ValueError("document counts exceed the number of documents")
    if np.any(table.sum(axis=0) == 0) or np.any(table.sum(axis=1) == 0):
        return 0.0, 1.0
    res = chi2_contingency(table, correction=correction)
    return float(res.statistic), float(res.pvalue)


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

    ``observed``: m statistics (larger = more extreme, e.g. ``|t|``); ``permuted``: B x m, the same statistics
    under B relabellings. With the terms ordered by decreasing observed statistic,
    ``p~_(k) = max_{l <= k} (1 + #{b : max_{j >= l} permuted[b, j] >= t_(l)}) / (1 + B)``. Strong control of
    the family-wise error rate under subset pivotality (Westfall & Young 1993, Resampling-Based Multiple
    Testing, §2.6; Dudoit, Shaffer & Boldrick 2003, Statist. Sci. 18:71-103); the statistics' dependence
    is whatever the relabellings give it, so the rate of any rejection under the global null is the
    permutation test's alpha.

    Examples
    --------
    Two terms, four relabellings: the larger statistic (3.0) is beaten by one relabelling's maximum over both terms,
    p = (1 + 1) / (1 + 4); the smaller (1.0) by two of its own, (1 + 2) / 5, kept monotone:

    >>> import numpy as np
    >>> from modprefs.stats.tables.justification_tests import stepdown_maxt_pvalues
    >>> permuted = np.array([[1.0, 0.5], [2.5, 2.0], [0.5, 1.5], [3.5, 0.2]])
    >>> [round(float(p), 2) for p in stepdown_maxt_pvalues(np.array([3.0, 1.0]), permuted)]
    [0.4, 0.6]
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
       identity and the B relabellings) -- a symmetric function of the relabellings, so t_j = ``|d_j|`` / s_j is
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

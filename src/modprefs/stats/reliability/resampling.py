"""Seeded resampling: stimulus bootstrap, between-group permutation test, percentile intervals.

* :func:`stimulus_bootstrap` resamples *units* (stimuli: clips or prompts) with replacement; a unit
  drawn twice counts as two distinct units. Statistics that are sums over units (Krippendorff's
  alpha, :mod:`modprefs.stats.reliability.alpha`) take the (B, U) draw-count matrix at once; others take the
  drawn indices one resample at a time. The ICC bootstrap, which refits a mixed model on the
  drawn clips' rows with a clip drawn twice as two levels, lives in
  :func:`modprefs.stats.reliability.icc.icc_for_design` / :func:`modprefs.stats.reliability.icc.resample_clips`.
* :func:`permutation_test_between_groups` pools the participants of two conditions and reassigns
  them at random to pseudo-groups of the original sizes (the paper's Table 4: 2,000 permutations
  for the ICC, 5,000 for alpha); two-sided p = (1 + #{``|d*|`` >= ``|d|``}) / (1 + n_perm)
  (Phipson & Smyth 2010), never 0.
* :func:`percentile_ci` is the percentile interval of bootstrap replicates (Efron & Tibshirani 1993,
  ch. 13).

All randomness comes from one ``np.random.Generator`` (:func:`make_rng`), and every draw of a
call is made before any statistic is evaluated, so results depend on the seed only — not on
chunk sizes or on whether the statistic is vectorised.

References:
    Efron, B. & Tibshirani, R. J. (1993). An Introduction to the Bootstrap. Chapman & Hall.
    Phipson, B. & Smyth, G. K. (2010). Permutation p-values should never be zero. Statistical
    Applications in Genetics and Molecular Biology 9(1), art. 39.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

#: relative tolerance under which ``|d*|`` counts as equal to ``|d|`` (float noise of equal statistics).
P_VALUE_RTOL = 1e-12


def jackknife_variance(values: np.ndarray) -> tuple[float, int]:
    """(jackknife variance, n) of leave-one-out values: (n-1)/n * sum (v_i - mean)^2 over the finite ones, and their
    number n (NaN below 2). Efron & Stein (1981); the crossed jackknives of ICC(2,1) and of alpha's difference.

    Examples
    --------
    For the mean, the jackknife variance is the textbook s^2 / n:

    >>> import numpy as np
    >>> from modprefs.stats.reliability.resampling import jackknife_variance
    >>> x = np.array([2.0, 4.0, 4.0, 5.0, 7.0, 9.0])
    >>> leave_one_out = (x.sum() - x) / (x.size - 1)
    >>> variance, n = jackknife_variance(leave_one_out)
    >>> round(variance, 6), round(float(x.var(ddof=1)) / x.size, 6), n
    (1.027778, 1.027778, 6)
    """
    v = values[np.isfinite(values)]
    n = int(v.size)
    if n < 2:
        return float("nan"), n
    return float((n - 1) / n * np.sum((v - v.mean()) ** 2)), n


def make_rng(seed: int | Sequence[int] | np.random.SeedSequence | np.random.Generator) -> np.random.Generator:
    """A ``np.random.Generator`` (PCG64) from a seed; a Generator passes through unchanged."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


# ---------------------------------------------------------------------------------------------
# bootstrap
# ---------------------------------------------------------------------------------------------


def draw_units(n_units: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(n_boot, n_units) unit indices drawn with replacement, one ``rng.integers`` call."""
    if n_units < 1:
        raise ValueError(f"need at least one unit, got {n_units}")
    if n_boot < 0:
        raise ValueError(f"n_boot must be >= 0, got {n_boot}")
    return rng.integers(0, n_units, size=(n_boot, n_units))


def draw_counts(draws: np.ndarray, n_units: int) -> np.ndarray:
    """(B, U) multiplicities of each unit in each resample from (B, U*) drawn indices; rows sum to U*."""
    draws = np.asarray(draws, dtype=np.intp)
    B = draws.shape[0]
    offsets = (np.arange(B, dtype=np.intp) * n_units)[:, None]
    return np.bincount((draws + offsets).ravel(), minlength=B * n_units).reshape(B, n_units)


@dataclass(frozen=True)
class BootstrapResult:
    """Replicates of a stimulus bootstrap.

    Attributes:
        estimates: (B,) or (B, k) statistic per resample (NaN where it failed / was undefined).
        n_units: units per resample (= units in the data).
        n_boot: resamples drawn.
        n_failed: resamples with a non-finite estimate (any component).
    """

    estimates: np.ndarray
    n_units: int
    n_boot: int
    n_failed: int

    def ci(self, level: float = 0.95) -> tuple[np.ndarray | float, np.ndarray | float]:
        """Percentile interval of the finite replicates (see :func:`percentile_ci`)."""
        return percentile_ci(self.estimates, level)


def stimulus_bootstrap(
    units: int | Sequence,
    statistic: Callable[[np.ndarray], np.ndarray | float],
    n_boot: int,
    rng: np.random.Generator,
    mode: Literal["counts", "indices"] = "counts",
    chunk_size: int = 1000,
) -> BootstrapResult:
    """Stimulus (unit) bootstrap: resample the U units with replacement, ``n_boot`` times.

    A unit drawn twice counts as two distinct units.

    Args:
        units: the number of units U, or the units themselves (only their count is used; draws
            are indices 0..U-1 into them).
        statistic: ``mode="counts"``: called with a (b, U) float array of multiplicities (rows
            of whole numbers summing to U), returns (b,) or (b, k) — the fast path for statistics
            that are weighted sums over units (e.g. ``lambda w: bootstrap_alpha(features, w)``).
            ``mode="indices"``: called once per resample with the (U,) drawn indices in draw order,
            returns a scalar or (k,); exceptions of type ValueError / LinAlgError count as failures.
        n_boot: number of resamples B (0 gives an empty result).
        rng: generator; all B x U indices are drawn at once before any evaluation.
        chunk_size: resamples per call in ``counts`` mode (memory only; results do not depend on it).

    Returns:
        :class:`BootstrapResult`.
    """
    n_units = int(units) if isinstance(units, (int, np.integer)) else len(units)
    draws = draw_units(n_units, n_boot, rng)
    if mode == "counts":
        parts = []
        for i in range(0, n_boot, max(1, chunk_size)):
            w = draw_counts(draws[i : i + chunk_size], n_units).astype(float)
            parts.append(np.asarray(statistic(w), dtype=float))
        est = np.concatenate(parts) if parts else np.empty(0)
    elif mode == "indices":
        out: list[np.ndarray] = []
        for row in draws:
            try:
                out.append(np.atleast_1d(np.asarray(statistic(row), dtype=float)))
            except (ValueError, np.linalg.LinAlgError):
                out.append(None)  # type: ignore[arg-type]
        width = next((o.size for o in out if o is not None), 1)
        est = np.array([np.full(width, np.nan) if o is None else o for o in out]).reshape(n_boot, width)
        if width == 1:
            est = est[:, 0]
    else:
        raise ValueError(f"mode must be 'counts' or 'indices', got {mode!r}")
    if est.shape[0] != n_boot:
        raise ValueError(f"statistic returned {est.shape[0]} values for {n_boot} resamples")
    bad = ~np.isfinite(est) if est.ndim == 1 else ~np.isfinite(est).all(axis=1)
    return BootstrapResult(estimates=est, n_units=n_units, n_boot=n_boot, n_failed=int(bad.sum()))


def percentile_ci(
    samples: np.ndarray, level: float = 0.95, axis: int = 0
) -> tuple[np.ndarray | float, np.ndarray | float]:
    """Percentile interval (lo, hi) at two-sided coverage ``level`` of the finite ``samples``.

    Quantiles at (1 - level)/2 and (1 + level)/2 with numpy's default (linear) interpolation,
    as :func:`modprefs.stats.reliability.icc.icc_for_design`; non-finite replicates are ignored (NaN if none).
    Scalars for 1-D input, arrays over the other axes otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> from modprefs.stats.reliability.resampling import percentile_ci
    >>> lo, hi = percentile_ci(np.arange(101.0), level=0.90)
    >>> round(lo, 6), round(hi, 6)
    (5.0, 95.0)
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    x = np.asarray(samples, dtype=float)
    x = np.where(np.isfinite(x), x, np.nan)
    tail = (1.0 - level) / 2.0
    if x.size == 0 or np.isnan(x).all():
        shape = np.delete(np.array(x.shape), axis) if x.ndim > 1 else ()
        nan = np.full(tuple(shape), np.nan) if x.ndim > 1 else float("nan")
        return nan, nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN slice gives NaN there
        lo, hi = np.nanquantile(x, [tail, 1.0 - tail], axis=axis)
    if x.ndim == 1:
        return float(lo), float(hi)
    return lo, hi


# ---------------------------------------------------------------------------------------------
# permutation test
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PermutationResult:
    """Two-sided permutation test of a between-group difference.

    Attributes:
        observed: d = statistic(first group) - statistic(second group) on the real grouping.
        null: (n_perm,) differences under random regroupings (NaN where undefined).
        p_value: (1 + #{``|d*|`` >= ``|d|``}) / (1 + n_valid) over the finite d*.
        n_perm: permutations drawn; n_valid: those with a finite d*.
        groups: (first, second) labels; sizes: their sizes (kept by every permutation).
        null_mean, null_sd, null_quantiles: summary of the finite d* (quantiles at .025, .5, .975).
    """

    observed: float
    null: np.ndarray
    p_value: float
    n_perm: int
    n_valid: int
    groups: tuple
    sizes: tuple[int, int]
    null_mean: float
    null_sd: float
    null_quantiles: tuple[float, float, float]

    def summary(self) -> dict:
        """JSON-friendly dict without the null distribution itself."""
        return {
            "observed": self.observed,
            "p_value": self.p_value,
            "n_perm": self.n_perm,
            "n_valid": self.n_valid,
            "groups": list(map(str, self.groups)),
            "sizes": list(self.sizes),
            "null_mean": self.null_mean,
            "null_sd": self.null_sd,
            "null_quantiles": list(self.null_quantiles),
        }


def permutation_p_value(observed: float, null: np.ndarray, rtol: float = P_VALUE_RTOL) -> float:
    """Two-sided p = (1 + #{``|d*|`` >= ``|d|``}) / (1 + #finite d*); NaN if d is not finite.

    ``|d*|`` within ``rtol`` (relative) of ``|d|`` counts as ">=" so that a regrouping equal to the
    observed one, computed in a different float order, is not missed.

    Examples
    --------
    Two of five permuted statistics are at least as extreme as the observed 2.0: p = (1 + 2) / (1 + 5):

    >>> import numpy as np
    >>> from modprefs.stats.reliability.resampling import permutation_p_value
    >>> permutation_p_value(2.0, np.array([-3.0, -1.0, 0.5, 1.5, 2.5]))
    0.5
    """
    null = np.asarray(null, dtype=float)
    null = null[np.isfinite(null)]
    if not np.isfinite(observed):
        return float("nan")
    threshold = abs(observed) * (1.0 - rtol)
    return float((1 + int(np.count_nonzero(np.abs(null) >= threshold))) / (1 + null.size))


def permutation_masks(in_first: np.ndarray, n_perm: int, rng: np.random.Generator) -> np.ndarray:
    """(n_perm, C) bool: each row an independent random shuffle of ``in_first`` (sizes preserved)."""
    base = np.asarray(in_first, dtype=bool)
    if n_perm < 0:
        raise ValueError(f"n_perm must be >= 0, got {n_perm}")
    return rng.permuted(np.tile(base, (n_perm, 1)), axis=1)


def permutation_test_between_groups(
    participant_conditions: Sequence | np.ndarray,
    statistic_diff: Callable[[np.ndarray], np.ndarray | float],
    n_perm: int,
    rng: np.random.Generator,
    groups: tuple | None = None,
    vectorised: bool = True,
    chunk_size: int = 1000,
) -> PermutationResult:
    """Permutation test of statistic(first group) - statistic(second group) over participants.

    The participants of both conditions are pooled and randomly reassigned to pseudo-groups of
    the original sizes, ``n_perm`` times (all shuffles drawn up front from ``rng``).

    Args:
        participant_conditions: (C,) condition label of each participant (exactly two labels).
        statistic_diff: the difference for given group memberships. ``vectorised=True``: called
            with a (P, C) bool array (True = participant in the FIRST group), returns (P,).
            ``vectorised=False``: called with one (C,) bool row, returns a float. ValueError /
            LinAlgError in the scalar form count as an undefined (NaN) replicate.
        n_perm: number of permutations.
        rng: generator.
        groups: (first, second) labels; default: the two labels sorted. The observed difference is
            first minus second (for Table 4: ``("audio", "text")``).
        vectorised: see ``statistic_diff``.
        chunk_size: permutations per vectorised call (memory only).

    Returns:
        :class:`PermutationResult`.
    """
    labels = np.asarray(participant_conditions).astype(str)
    present = sorted(set(labels.tolist()))
    if groups is None:
        if len(present) != 2:
            raise ValueError(f"need exactly two conditions, got {present}")
        groups = (present[0], present[1])
    groups = (str(groups[0]), str(groups[1]))
    if set(present) != set(groups) or groups[0] == groups[1]:
        raise ValueError(f"participant conditions {present} do not match groups {groups}")
    in_first = labels == groups[0]
    sizes = (int(in_first.sum()), int((~in_first).sum()))
    masks = permutation_masks(in_first, n_perm, rng)

    def evaluate(m: np.ndarray) -> np.ndarray:
        if vectorised:
            return np.asarray(statistic_diff(m), dtype=float).reshape(m.shape[0])
        out = np.empty(m.shape[0])
        for i, row in enumerate(m):
            try:
                out[i] = float(statistic_diff(row))
            except (ValueError, np.linalg.LinAlgError):
                out[i] = np.nan
        return out

    observed = float(evaluate(in_first[None, :])[0])
    step = max(1, chunk_size)
    null = np.concatenate([evaluate(masks[i : i + step]) for i in range(0, n_perm, step)]) if n_perm else np.empty(0)
    finite = null[np.isfinite(null)]
    if finite.size:
        q = tuple(float(v) for v in np.quantile(finite, [0.025, 0.5, 0.975]))
        mean, sd = float(finite.mean()), float(finite.std(ddof=1)) if finite.size > 1 else float("nan")
    else:
        q, mean, sd = (float("nan"),) * 3, float("nan"), float("nan")
    return PermutationResult(
        observed=observed,
        null=null,
        p_value=permutation_p_value(observed, null),
        n_perm=int(n_perm),
        n_valid=int(finite.size),
        groups=groups,
        sizes=sizes,
        null_mean=mean,
        null_sd=sd,
        null_quantiles=q,  # type: ignore[arg-type]
    )

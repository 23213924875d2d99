"""Krippendorff's alpha from per-unit value counts, vectorised for bootstraps and permutations.

Orientation — READ THIS
-----------------------
Every matrix here is **coders x units** (rows = raters/participants, columns = units/stimuli), with
``NaN`` for a missing value: the orientation of the ``krippendorff`` package's ``reliability_data``.
A units x coders (transposed) matrix is *not* rejected by any shape rule — both orientations are
2-D — and silently gives a **different, wrong** alpha (coders would be treated as the units whose
values should agree). Build matrices with :func:`reliability_matrix` from a long table, which
fixes the orientation by column name, or pass ``n_units=`` to :func:`krippendorff_alpha` to have the
shape checked.

Method
------
Krippendorff (2011), "Computing Krippendorff's alpha-reliability" (Annenberg School for
Communication, departmental paper 43), coincidence-matrix form. With n_uc the number of coders
giving value c to unit u, m_u = sum_c n_uc, only *pairable* units (m_u >= 2) count::

    o_ck  = sum_u (n_uc n_uk - [c = k] n_uc) / (m_u - 1)        coincidences
    n_c   = sum_k o_ck = sum_{u: m_u >= 2} n_uc,   n = sum_c n_c
    alpha = 1 - (n - 1) sum_ck o_ck d_ck / sum_ck n_c n_k d_ck

For the three metrics d_ck used here the double sums reduce to per-unit sums:

* nominal, d_ck = [c != k]: sum o d = sum_u (m_u^2 - sum_c n_uc^2) / (m_u - 1),
  sum n_c n_k d = n^2 - sum_c n_c^2.
* interval, d_ck = (v_c - v_k)^2, and ordinal, whose metric
  d_ck = (sum_{g=c..k} n_g - (n_c + n_k)/2)^2 equals (r_k - r_c)^2 for the mid-ranks
  r_c = sum_{g<c} n_g + n_c/2: with scores r (values, or mid-ranks),
  sum o d = 2 sum_u (m_u S2_u - S1_u^2) / (m_u - 1) with S1_u = sum_c n_uc r_c, S2_u = sum_c n_uc r_c^2,
  sum n_c n_k d = 2 (n T2 - T1^2) with T1 = sum_c n_c r_c, T2 = sum_c n_c r_c^2.

Every term is a sum over units of per-unit quantities, so a bootstrap resample of units (a
multiset; a unit drawn twice counts twice) is a count-weighted sum, and a regrouping of coders
(a permutation of participants between conditions) is a sum of per-coder per-unit features.
Both are matrix products over precomputed features (:class:`AlphaFeatures`); so are the leave-one-unit-,
-coder- and -value-out alphas of the jackknife (:func:`alpha_jackknife`).

Testing a difference (Table 4)
------------------------------
:func:`alpha_difference_jackknife` is a crossed-jackknife t test of alpha(audio) - alpha(text) (units shared by
the conditions, coders not; the value-level jackknife removes the noise both one-way jackknifes count). Its
variance is close to unbiased under equal alphas (mean V / E[D^2] 0.90-1.26 at 40 prompts x 20 raters x 10 trials,
benchmarks/out/alpha_difference_null.md), but its t is heavier-tailed than Student's t for the continuous alpha
and lighter for the nominal one (whose first-order variance vanishes near alpha = 0), so :func:`alpha_table`
refers the t to the t of random reassignments of the participants (a studentized permutation test, Janssen 1997;
Chung & Romano 2013); the permutation of the difference itself (the paper's) tests exchangeable conditions
instead and over-rejects when only the alphas are equal (8.4 / 8.4 % for the continuous / ordinal alpha there).
Measured sizes: benchmarks/out/alpha_difference_null.md.

Results equal ``krippendorff.alpha(reliability_data, level_of_measurement=...)`` (v0.8/0.9) to
~1e-15 (tests: 1e-12), including the package's rule that units with fewer than two values do not
enter ``n_c``. Differences: a data set whose pairable values are all equal gives ``nan`` (the
package raises when the value domain has one value and returns nan otherwise); ordinal and nominal
need numeric codes (map labels to numbers first, as :func:`preference_codes` does).

Preference codings (paper section 4.2 / Table 4)
------------------------------------------------
* continuous alpha: interval metric on the 1-100 ratings; **units = clips** (``clip_id``), coders =
  participants; computed on the raw ratings without covariate adjustment.
* ordinal alpha: A/Tie/B *recoded relative to presentation order*, i.e. order-corrected so that a
  code names the response, not the screen position: 0 = response 0 preferred, 1 = tie, 2 =
  response 1 preferred (ordered 0 < tie < 1, adjacent disagreements weigh less); **units = prompts**.
* nominal alpha: the *raw* A/Tie/B labels without order correction: "A" = the response the rater
  was shown first (``first_clip``), "B" = the one shown second, labelled by screen position as
  the rater saw them; **units = prompts**. Presentation order is counterbalanced across raters, so
  two raters who prefer the same response but saw it in opposite orders record opposite labels
  (A vs B): agreement on the response becomes disagreement on the label, which drives nominal
  alpha to ~0 (the paper: .010 audio, .031 text).
See :func:`preference_codes` (``frame="response"`` / ``"position"``).

References:
    Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. Departmental Papers (ASC) 43.
    Krippendorff, K. (2004). Content Analysis: An Introduction to Its Methodology (2nd ed.), ch. 11.
    Hayes, A. F. & Krippendorff, K. (2007). Answering the call for a standard reliability measure
    for coding data. Communication Methods and Measures 1(1), 77-89.
    Janssen, A. (1997). Studentized permutation tests for non-i.i.d. hypotheses and the generalized
    Behrens-Fisher problem. Statistics & Probability Letters 36(1), 9-21.
    Chung, E. & Romano, J. P. (2013). Exact and asymptotically robust permutation tests. Ann. Statist.
    41(2), 484-507.
    McCullagh, P. (2000). Resampling and exchangeable arrays. Bernoulli 6(2), 285-301.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats

from modprefs.io_tables import as_bool_column
from modprefs.stats.reliability.icc import analysable_ratings
from modprefs.stats.reliability.resampling import jackknife_variance
from modprefs.study.terms import ATTENTION_PROMPT, CONDITIONS

Level = Literal["nominal", "ordinal", "interval"]
LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval")
PreferenceFrame = Literal["response", "position"]

#: numeric codes of the three preference outcomes (both frames): first < tie < second.
PREFERENCE_DOMAIN: tuple[float, float, float] = (0.0, 1.0, 2.0)
#: preference coding -> (level of measurement, frame) per section 4.2.
PREFERENCE_ALPHAS: dict[str, tuple[Level, PreferenceFrame]] = {
    "ordinal": ("ordinal", "response"),
    "nominal": ("nominal", "position"),
}

# Largest number of float64 cells in one batched intermediate (about 64 MB).
_MAX_CELLS = 8_000_000


# ---------------------------------------------------------------------------------------------
# input: coders x units matrices
# ---------------------------------------------------------------------------------------------


def reliability_matrix(
    df: pd.DataFrame,
    coder_col: str,
    unit_col: str,
    value_col: str,
    units: list | None = None,
    coders: list | None = None,
) -> pd.DataFrame:
    """Coders x units matrix (NaN = missing) from a long table, one row per (coder, unit) value.

    Args:
        df: long table with at least ``coder_col``, ``unit_col`` and a numeric ``value_col``.
        coder_col, unit_col, value_col: column names; coders become the ROWS, units the COLUMNS.
        units: optional column order (units absent from ``df`` become all-NaN columns); values for
            units not listed raise. Default: sorted unique units of ``df``.
        coders: optional row order, likewise. Default: sorted unique coders.

    Returns:
        DataFrame (n_coders, n_units), float, index named ``coder_col``, columns named ``unit_col``;
        ``.to_numpy()`` is the ``reliability_data`` orientation of the ``krippendorff`` package.

    Raises:
        ValueError: a missing column, a (coder, unit) pair with two values, a non-numeric or
            infinite value, or a coder/unit outside the given ``coders``/``units``.
    """
    missing = [c for c in (coder_col, unit_col, value_col) if c not in df.columns]
    if missing:
        raise ValueError(f"reliability_matrix: missing column(s) {missing}")
    long = pd.DataFrame(
        {
            "coder": df[coder_col].astype(str),
            "unit": df[unit_col].astype(str),
            "value": pd.to_numeric(df[value_col], errors="coerce"),
        }
    )
    bad = df[value_col].notna() & long["value"].isna()
    if bad.any():
        raise ValueError(
            f"reliability_matrix: non-numeric {value_col!r} values, e.g. {df.loc[bad, value_col].iloc[0]!r}"
        )
    long = long[long["value"].notna()]
    if not np.isfinite(long["value"].to_numpy(float)).all():
        raise ValueError(f"reliability_matrix: infinite {value_col!r} values")
    dup = long.duplicated(["coder", "unit"], keep=False)
    if dup.any():
        first = long[dup].iloc[0]
        raise ValueError(
            f"reliability_matrix: coder {first['coder']!r} has {int(dup.sum())} duplicate "
            f"value(s), e.g. for unit {first['unit']!r}; one value per (coder, unit) is required"
        )
    unit_order = sorted(long["unit"].unique()) if units is None else [str(u) for u in units]
    coder_order = sorted(long["coder"].unique()) if coders is None else [str(c) for c in coders]
    for name, given, present in (("unit", unit_order, long["unit"]), ("coder", coder_order, long["coder"])):
        extra = set(present) - set(given)
        if extra:
            raise ValueError(f"reliability_matrix: {name}(s) not in the given order: {sorted(extra)[:5]}")
    wide = long.pivot(index="coder", columns="unit", values="value")
    wide = wide.reindex(index=coder_order, columns=unit_order).astype(float)
    wide.index.name, wide.columns.name = coder_col, unit_col
    return wide


def as_coder_unit_array(
    data: np.ndarray | pd.DataFrame, n_units: int | None = None, n_coders: int | None = None
) -> np.ndarray:
    """Validated float (n_coders, n_units) array; NaN = missing.

    ``n_units`` / ``n_coders``, when given, must match ``data.shape[1]`` / ``data.shape[0]``; the
    error then names the likely cause (a transposed, units x coders, matrix).
    """
    arr = np.asarray(data.to_numpy() if isinstance(data, pd.DataFrame) else data)
    if arr.ndim != 2:
        raise ValueError(f"reliability data must be 2-D (coders x units), got shape {arr.shape}")
    try:
        arr = arr.astype(float)
    except (TypeError, ValueError) as exc:
        raise ValueError("reliability data must be numeric (map labels to numeric codes first)") from exc
    for axis, expected, name in ((1, n_units, "units"), (0, n_coders, "coders")):
        if expected is not None and arr.shape[axis] != expected:
            hint = " — is the matrix transposed (units x coders)?" if arr.shape[1 - axis] == expected else ""
            raise ValueError(
                f"reliability data has shape {arr.shape}; expected {expected} {name} along axis "
                f"{axis} (coders x units){hint}"
            )
    if np.isinf(arr).any():
        raise ValueError("reliability data contains infinite values (use NaN for missing)")
    return arr


# ---------------------------------------------------------------------------------------------
# features
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AlphaFeatures:
    """Per-coder, per-unit features from which alpha of any coder subset / unit multiset follows.

    Attributes:
        level: ``nominal``, ``ordinal`` or ``interval``.
        features: (C, U, K) float. Nominal/ordinal: K = V one-hot value counts (coder c gave value
            ``values[k]`` to unit u). Interval: K = 3, (present, x - center, (x - center)^2).
        values: (V,) the value domain in its order (nominal/ordinal); (0,) for interval.
        center: the constant subtracted from interval values (their mean; alpha is shift invariant).
    """

    level: Level
    features: np.ndarray
    values: np.ndarray
    center: float = 0.0

    @property
    def n_coders(self) -> int:
        return int(self.features.shape[0])

    @property
    def n_units(self) -> int:
        return int(self.features.shape[1])

    def unit_features(self, coders: np.ndarray | None = None) -> np.ndarray:
        """(U, K) per-unit sums over all coders, or over the boolean/index selection ``coders``."""
        f = self.features if coders is None else self.features[np.asarray(coders)]
        return f.sum(axis=0)


def _check_level(level: str) -> str:
    if level not in LEVELS:
        raise ValueError(f"level_of_measurement must be one of {LEVELS}, got {level!r}")
    return level


def _value_codes(arr: np.ndarray, value_domain: np.ndarray | Sequence[float] | None) -> tuple[np.ndarray, np.ndarray]:
    """(codes (C, U) int with -1 for missing, domain (V,)) for the non-NaN cells of ``arr``."""
    present = ~np.isnan(arr)
    observed = arr[present]
    if value_domain is None:
        domain, inverse = np.unique(observed, return_inverse=True)
        codes = np.full(arr.shape, -1, dtype=np.intp)
        codes[present] = inverse.reshape(-1)
        return codes, domain
    domain = np.asarray(value_domain, dtype=float).reshape(-1)
    if np.isnan(domain).any() or np.unique(domain).size != domain.size:
        raise ValueError("value_domain must hold distinct non-NaN values")
    sorter = np.argsort(domain, kind="stable")
    pos = np.searchsorted(domain, observed, sorter=sorter).clip(0, domain.size - 1)
    idx = sorter[pos]
    if observed.size and not np.array_equal(domain[idx], observed):
        bad = observed[domain[idx] != observed]
        raise ValueError(f"reliability data contains values outside value_domain, e.g. {bad[0]!r}")
    codes = np.full(arr.shape, -1, dtype=np.intp)
    codes[present] = idx
    return codes, domain


def alpha_features(
    data: np.ndarray | pd.DataFrame,
    level: Level,
    value_domain: np.ndarray | Sequence[float] | None = None,
    n_units: int | None = None,
) -> AlphaFeatures:
    """Precompute :class:`AlphaFeatures` of a coders x units matrix (NaN = missing).

    Args:
        data: (C, U) coders x units — NOT units x coders (see the module docstring).
        level: ``nominal``, ``ordinal`` or ``interval``.
        value_domain: (V,) possible values, in order for ordinal (default: sorted observed values).
            Values in the domain that nobody used do not change alpha. Ignored for interval except
            that every observed value must then lie in it.
        n_units: expected number of units (columns), checked.
    """
    _check_level(level)
    arr = as_coder_unit_array(data, n_units=n_units)
    C, U = arr.shape
    if level == "interval":
        present = ~np.isnan(arr)
        if value_domain is not None:
            _value_codes(arr, np.asarray(value_domain, float))  # validation only
        center = float(arr[present].mean()) if present.any() else 0.0
        x = np.where(present, arr - center, 0.0)
        feats = np.stack([present.astype(float), x, x * x], axis=-1)
        return AlphaFeatures(level, feats, np.empty(0), center)
    codes, domain = _value_codes(arr, None if value_domain is None else np.asarray(value_domain))
    V = domain.size
    feats = np.zeros((C, U, V))
    cc, uu = np.nonzero(codes >= 0)
    feats[cc, uu, codes[cc, uu]] = 1.0
    return AlphaFeatures(level, feats, domain)


def unit_value_counts(
    data: np.ndarray | pd.DataFrame, value_domain: np.ndarray | Sequence[float] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(counts (U, V), domain (V,)): coders per unit and value — the package's ``value_counts``."""
    arr = as_coder_unit_array(data)
    codes, domain = _value_codes(arr, value_domain)
    U, V = arr.shape[1], domain.size
    uu = np.broadcast_to(np.arange(U), arr.shape)[codes >= 0]
    counts = np.bincount(uu * V + codes[codes >= 0], minlength=U * V).reshape(U, V).astype(float)
    return counts, domain


# ---------------------------------------------------------------------------------------------
# alpha from per-unit sums
# ---------------------------------------------------------------------------------------------


def _pairable(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mask m >= 2, 1/(m - 1) where pairable else 0), elementwise."""
    pair = m >= 2
    inv = np.zeros_like(m, dtype=float)
    np.divide(1.0, m - 1.0, out=inv, where=pair)
    return pair, inv


def _wsum(w: np.ndarray, per_unit: np.ndarray) -> np.ndarray:
    """sum_u w_u x_u over the last axis; ``w`` (..., U) broadcasts against ``per_unit`` (..., U)."""
    if per_unit.ndim == 1 and w.ndim >= 1:
        return w @ per_unit
    return (w * per_unit).sum(axis=-1)


def _unit_weights(pair: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """Weights of the pairable units: the multiplicities (or 1) where m_u >= 2, else 0."""
    return pair.astype(float) if weights is None else weights * pair


def _finish(n: np.ndarray, do: np.ndarray, de: np.ndarray) -> np.ndarray:
    """alpha = 1 - (n - 1) Do / De, NaN where undefined (n < 2 or De = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 1.0 - (n - 1.0) * do / de
    return np.where((n >= 2) & (de > 0), out, np.nan)


def _alpha_nominal(counts: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    m = counts.sum(axis=-1)
    pair, inv = _pairable(m)
    w = _unit_weights(pair, weights)
    n_c = np.matmul(w[..., None, :], counts)[..., 0, :]  # (..., V)
    n = n_c.sum(axis=-1)
    do = _wsum(w, (m * m - (counts * counts).sum(axis=-1)) * inv)
    de = n * n - (n_c * n_c).sum(axis=-1)
    return _finish(n, do, de)


def _alpha_scores(m: np.ndarray, s1: np.ndarray, s2: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """Interval-type alpha from per-unit (m_u, S1_u, S2_u), shapes (..., U) broadcasting with weights."""
    pair, inv = _pairable(m)
    w = _unit_weights(pair, weights)
    n, t1, t2 = _wsum(w, m), _wsum(w, s1), _wsum(w, s2)
    do = _wsum(w, (m * s2 - s1 * s1) * inv)
    de = n * t2 - t1 * t1
    return _finish(n, do, de)


def _alpha_interval(feats: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    return _alpha_scores(feats[..., 0], feats[..., 1], feats[..., 2], weights)


def _alpha_ordinal(counts: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    m = counts.sum(axis=-1)
    pair, _ = _pairable(m)
    w = _unit_weights(pair, weights)
    n_c = np.matmul(w[..., None, :], counts)[..., 0, :]  # (..., V)
    n = n_c.sum(axis=-1, keepdims=True)
    r = np.cumsum(n_c, axis=-1) - 0.5 * n_c - 0.5 * n  # centred mid-ranks
    if counts.ndim == 2 and r.ndim == 2:  # fixed units, many resamples
        s1, s2 = r @ counts.T, (r * r) @ counts.T
    else:
        s1 = np.matmul(counts, r[..., :, None])[..., 0]
        s2 = np.matmul(counts, (r * r)[..., :, None])[..., 0]
    return _alpha_scores(m, s1, s2, weights)


_ALPHA = {"nominal": _alpha_nominal, "ordinal": _alpha_ordinal, "interval": _alpha_interval}


def alpha_from_unit_features(unit_features: np.ndarray, level: Level, weights: np.ndarray | None = None) -> np.ndarray:
    """Alpha from per-unit features, batched over leading axes and/or unit weights.

    Args:
        unit_features: (..., U, K) per-unit sums of :attr:`AlphaFeatures.features` (value counts
            for nominal/ordinal, (m, S1, S2) for interval).
        level: the metric the features were built for.
        weights: optional (B, U) (or (..., U)) unit multiplicities, e.g. bootstrap draw counts: a
            unit with weight 2 enters as two identical units. Broadcasts with the leading axes.

    Returns:
        Array of the broadcast leading shape (a 0-d array for one (U, K) input and no weights);
        NaN where alpha is undefined (no pairable unit, or no variation among pairable values).
    """
    f = np.asarray(unit_features, dtype=float)
    w = None if weights is None else np.asarray(weights, dtype=float)
    if f.ndim < 2:
        raise ValueError(f"unit_features must be (..., U, K), got shape {f.shape}")
    if w is not None and w.shape[-1] != f.shape[-2]:
        raise ValueError(f"weights have {w.shape[-1]} units, unit_features {f.shape[-2]}")
    return _ALPHA[_check_level(level)](f, w)


def krippendorff_alpha(
    data: np.ndarray | pd.DataFrame,
    level_of_measurement: Level = "interval",
    value_domain: np.ndarray | Sequence[float] | None = None,
    n_units: int | None = None,
) -> float:
    """Krippendorff's alpha of one coders x units matrix (NaN = missing).

    Equal to ``krippendorff.alpha(reliability_data=data, level_of_measurement=...,
    value_domain=...)`` for nominal, ordinal and interval. ``data`` MUST be coders x units; a
    transposed matrix gives a wrong value without any error (pass ``n_units`` to have it checked).

    Args:
        data: (C, U) numeric; a DataFrame from :func:`reliability_matrix` works as is.
        level_of_measurement: ``nominal``, ``ordinal`` or ``interval``.
        value_domain: optional (V,) value domain (ordered for ordinal); see :func:`alpha_features`.
        n_units: expected number of columns.

    Raises:
        ValueError: bad shape/values, or no unit with values from at least two coders.
    """
    _check_level(level_of_measurement)
    arr = as_coder_unit_array(data, n_units=n_units)
    present = ~np.isnan(arr)
    if not (present.sum(axis=0) >= 2).any():
        raise ValueError("there has to be at least one unit with values assigned by at least two coders")
    if level_of_measurement == "interval":
        if value_domain is not None:
            _value_codes(arr, np.asarray(value_domain, float))
        x = np.where(present, arr - arr[present].mean(), 0.0)
        m = present.sum(axis=0).astype(float)
        return float(_alpha_scores(m, x.sum(axis=0), (x * x).sum(axis=0), None))
    counts, _ = unit_value_counts(arr, value_domain)
    return float(alpha_from_unit_features(counts, level_of_measurement))


def bootstrap_alpha(features: AlphaFeatures, weights: np.ndarray, coders: np.ndarray | None = None) -> np.ndarray:
    """Alpha of each unit resample: ``weights`` (B, U) draw counts -> (B,) alphas.

    Units drawn twice enter twice (count weights); coders are all of ``features`` (or the
    ``coders`` selection). Chunked so intermediates stay below ~64 MB.
    """
    uf = features.unit_features(coders)
    w = np.asarray(weights, float)
    if w.ndim != 2 or w.shape[1] != uf.shape[0]:
        raise ValueError(f"weights must be (B, {uf.shape[0]}), got {w.shape}")
    step = max(1, _MAX_CELLS // max(1, uf.shape[0] * max(1, uf.shape[1] if features.level == "ordinal" else 1)))
    return (
        np.concatenate(
            [alpha_from_unit_features(uf, features.level, w[i : i + step]) for i in range(0, w.shape[0], step)]
        )
        if w.shape[0]
        else np.empty(0)
    )


def group_alphas(features: AlphaFeatures, in_first: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Alphas of the two coder groups of each split: ``in_first`` (P, C) bool -> ((P,), (P,)).

    Row p puts coder c in the first group where ``in_first[p, c]`` and in the second otherwise
    (a permutation of participants between conditions). Units are all of ``features``' units.
    """
    mask = np.atleast_2d(np.asarray(in_first, dtype=float))
    C, U, K = features.features.shape
    if mask.shape[1] != C:
        raise ValueError(f"in_first must be (P, {C}), got {mask.shape}")
    flat = features.features.reshape(C, U * K)
    total = flat.sum(axis=0)
    step = max(1, _MAX_CELLS // (U * K))
    first, second = [], []
    for i in range(0, mask.shape[0], step):
        g1 = mask[i : i + step] @ flat
        g2 = total - g1
        first.append(alpha_from_unit_features(g1.reshape(-1, U, K), features.level))
        second.append(alpha_from_unit_features(g2.reshape(-1, U, K), features.level))
    return np.concatenate(first), np.concatenate(second)


def group_alpha_difference(features: AlphaFeatures, in_first: np.ndarray) -> np.ndarray:
    """alpha(first group) - alpha(second group) per row of ``in_first`` (P, C) -> (P,)."""
    a, b = group_alphas(features, in_first)
    return a - b


# ---------------------------------------------------------------------------------------------
# study data -> matrices (section 4.2)
# ---------------------------------------------------------------------------------------------


def _passed(participants: pd.DataFrame) -> set[str]:
    return set(participants.loc[as_bool_column(participants["passed_attention"]), "participant_id"].astype(str))


def _normalise_preference(values: pd.Series) -> pd.Series:
    """'0'/'1'/'tie' (also 0, 1, 0.0, 'Tie') -> '0'/'1'/'tie'; anything else -> NA."""
    text = values.astype("string").str.strip().str.lower()
    text = text.replace({"0.0": "0", "1.0": "1"})
    return text.where(text.isin(["0", "1", "tie"]))


def preference_codes(trials: pd.DataFrame, assignments: pd.DataFrame, frame: PreferenceFrame) -> pd.DataFrame:
    """Numeric A/Tie/B codes of the preferences, in one of two frames.

    ``trials.preference`` is the preferred RESPONSE INDEX ('0', '1') or 'tie';
    ``assignments.first_clip`` is the response index shown first in that trial.

    * ``frame="response"`` — order-corrected ("recoded relative to presentation order"; the
      ORDINAL alpha): 0 = response 0 preferred, 1 = tie, 2 = response 1 preferred. Two raters who
      prefer the same response get the same code whatever order they saw.
    * ``frame="position"`` — raw screen labels without order correction (the NOMINAL alpha):
      0 = "A" = the response presented first (as the rater saw it), 1 = tie, 2 = "B" = the
      response presented second; "A" iff ``preference == first_clip``. Under counterbalanced order
      raters who agree on the response disagree on the label about half the time.

    Returns:
        The merged rows (participant_id, condition, prompt_id, trial, first_clip, preference,
        code) for every trial with a valid preference and a matching assignment.

    Raises:
        ValueError: a trial without its assignment (participant_id, prompt_id, trial).
    """
    if frame not in ("response", "position"):
        raise ValueError(f"frame must be 'response' or 'position', got {frame!r}")
    t = trials[["participant_id", "prompt_id", "trial", "preference"]].copy()
    a = assignments[["participant_id", "condition", "prompt_id", "trial", "first_clip"]].copy()
    for df in (t, a):
        df["participant_id"] = df["participant_id"].astype(str)
        df["prompt_id"] = df["prompt_id"].astype(str)
        df["trial"] = pd.to_numeric(df["trial"]).astype(int)
    merged = t.merge(a, on=["participant_id", "prompt_id", "trial"], how="left", validate="one_to_one")
    if merged["first_clip"].isna().any():
        row = merged[merged["first_clip"].isna()].iloc[0]
        raise ValueError(
            f"trial without assignment: participant {row['participant_id']}, prompt "
            f"{row['prompt_id']}, trial {row['trial']}"
        )
    merged["preference"] = _normalise_preference(merged["preference"])
    merged = merged[merged["preference"].notna()].reset_index(drop=True)
    first = pd.to_numeric(merged["first_clip"]).astype(int).to_numpy()
    pref = merged["preference"].to_numpy(dtype=object)
    tie = pref == "tie"
    idx = np.where(tie, -1, pd.to_numeric(pd.Series(np.where(tie, "0", pref))).to_numpy(int))
    if frame == "response":
        code = np.where(tie, 1.0, 2.0 * idx)
    else:
        code = np.where(tie, 1.0, np.where(idx == first, 0.0, 2.0))
    merged["first_clip"] = first
    merged["code"] = code
    return merged


def preference_matrix(
    trials: pd.DataFrame,
    assignments: pd.DataFrame,
    participants: pd.DataFrame,
    condition: str | None,
    frame: PreferenceFrame,
) -> pd.DataFrame:
    """Participants x prompts matrix of preference codes (:func:`preference_codes`) of a condition.

    Units = prompts; coders = participants who passed the attention check; trial 0 / prompt
    ``attn`` dropped. ``condition=None`` pools both conditions (for the permutation test).
    Values in :data:`PREFERENCE_DOMAIN`.
    """
    codes = preference_codes(trials, assignments, frame)
    keep = (
        codes["participant_id"].isin(_passed(participants))
        & (codes["trial"] >= 1)
        & (codes["prompt_id"] != ATTENTION_PROMPT)
    )
    if condition is not None:
        keep &= codes["condition"].astype(str) == condition
    return reliability_matrix(codes[keep], "participant_id", "prompt_id", "code")


# ---------------------------------------------------------------------------------------------
# Table 4: alpha per condition, stimulus-bootstrap CIs, permutation p-values
# ---------------------------------------------------------------------------------------------

#: Table 4's alpha rows: name -> (level, frame or None for the ratings, unit column).
ALPHA_METRICS: dict[str, tuple[Level, PreferenceFrame | None, str]] = {
    "continuous": ("interval", None, "clip_id"),
    "ordinal": ("ordinal", "response", "prompt_id"),
    "nominal": ("nominal", "position", "prompt_id"),
}


def _pooled_matrix(
    metric: str,
    ratings: pd.DataFrame,
    trials: pd.DataFrame,
    assignments: pd.DataFrame,
    participants: pd.DataFrame,
    conditions: tuple[str, ...],
    stimuli: pd.DataFrame | None,
) -> tuple[pd.DataFrame, np.ndarray]:
    """(participants x units matrix of both conditions, (C,) condition per row)."""
    level, frame, _ = ALPHA_METRICS[metric]
    if frame is None:
        df = pd.concat([analysable_ratings(ratings, participants, c, stimuli) for c in conditions])
        mat = reliability_matrix(df, "participant_id", "clip_id", "rating")
        cond = df.drop_duplicates("participant_id").set_index("participant_id")["condition"].astype(str)
    else:
        mat = preference_matrix(trials, assignments, participants, None, frame)
        codes = preference_codes(trials, assignments, frame)
        cond = codes.drop_duplicates("participant_id").set_index("participant_id")["condition"].astype(str)
        mat = mat.loc[[p for p in mat.index if cond.get(p) in conditions]]
    return mat, cond.reindex(mat.index.astype(str)).to_numpy(dtype=str)


def _condition_alpha(
    sub: pd.DataFrame,
    c: str,
    level: Level,
    domain: np.ndarray | Sequence[float] | None,
    n_boot: int,
    rng: np.random.Generator,
    ci_level: float,
) -> dict[str, Any]:
    """One condition's columns of an :func:`alpha_table` row: counts, alpha and its bootstrap interval."""
    from modprefs.stats.reliability.resampling import stimulus_bootstrap  # noqa: PLC0415

    sub = sub.loc[:, sub.notna().any(axis=0)]
    m = sub.notna().sum(axis=0).to_numpy()
    row: dict[str, Any] = {
        f"n_coders_{c}": int(sub.shape[0]),
        f"n_units_{c}": int(sub.shape[1]),
        f"n_pairable_units_{c}": int((m >= 2).sum()),
        f"coders_per_unit_{c}": float(m.mean()) if m.size else np.nan,
    }
    if (m >= 2).any():
        feats = alpha_features(sub, level, domain)
        row[f"alpha_{c}"] = float(alpha_from_unit_features(feats.unit_features(), level))
        boot = stimulus_bootstrap(sub.shape[1], functools.partial(bootstrap_alpha, feats), n_boot, rng)
        lo, hi = boot.ci(ci_level) if n_boot else (np.nan, np.nan)
        row.update({f"lo_{c}": lo, f"hi_{c}": hi, f"n_boot_failed_{c}": boot.n_failed})
    else:
        row.update({f"alpha_{c}": np.nan, f"lo_{c}": np.nan, f"hi_{c}": np.nan, f"n_boot_failed_{c}": 0})
    return row


#: the alpha-difference tests of :func:`alpha_table`: the studentized permutation (default) and the paper's
ALPHA_TESTS = {
    "studentized": "studentized participant permutation of the crossed-jackknife t (Janssen 1997; Chung & Romano 2013)",
    "permutation": "participant permutation of the difference (the paper's)",
}


def _difference_test(
    mat: pd.DataFrame,
    cond: np.ndarray,
    level: Level,
    domain: Sequence[float] | None,
    n_perm: int,
    rng: np.random.Generator,
    conditions: tuple[str, str],
    test: str,
) -> dict[str, Any]:
    """One alpha row's difference and test (:func:`alpha_table`): diff, t, df, p_value, n_perm_valid, null_sd."""
    from modprefs.stats.reliability.resampling import permutation_test_between_groups  # noqa: PLC0415

    out: dict[str, Any] = {"test": ALPHA_TESTS[test], "diff": np.nan, "t": np.nan, "df": np.nan, "p_value": np.nan}
    out |= {"n_perm_valid": 0, "null_sd": np.nan}
    if not (mat.shape[0] and (mat.notna().sum(axis=0) >= 2).any()):
        return out
    pooled = alpha_features(mat, level, domain)
    statistic: Callable[[np.ndarray], Any]
    if test == "permutation":
        statistic, vectorised = functools.partial(group_alpha_difference, pooled), True
    else:
        jk = alpha_difference_jackknife(*split_features(pooled, cond == conditions[0]))
        out.update(diff=jk["diff"], t=jk["t"], df=jk["df"])
        statistic, vectorised = functools.partial(split_t, pooled), False
    perm = permutation_test_between_groups(cond, statistic, n_perm, rng, groups=conditions, vectorised=vectorised)
    if test == "permutation":
        out["diff"] = perm.observed
    return out | {"p_value": perm.p_value, "n_perm_valid": perm.n_valid, "null_sd": perm.null_sd}


def alpha_table(
    ratings: pd.DataFrame,
    trials: pd.DataFrame,
    assignments: pd.DataFrame,
    participants: pd.DataFrame,
    n_boot: int = 5000,
    n_perm: int = 5000,
    seed: int = 0,
    ci_level: float = 0.95,
    stimuli: pd.DataFrame | None = None,
    conditions: tuple[str, str] = CONDITIONS,
    metrics: tuple[str, ...] | None = None,
    test: str = "studentized",
) -> pd.DataFrame:
    """Krippendorff's alpha rows of Table 4: per condition, bootstrap CI, the test of the difference.

    ``metrics``: the rows to compute (keys of :data:`ALPHA_METRICS`; default all). Each metric keeps its own
    random stream, so a row is the same whichever others are computed.

    One row per metric in :data:`ALPHA_METRICS` (continuous: interval on ratings, units = clips;
    ordinal: order-corrected A/Tie/B, units = prompts; nominal: raw screen-position A/Tie/B,
    units = prompts). Coders = participants who passed the attention check; trial 0 dropped.

    * ``alpha_<cond>``: alpha of that condition's coders x units matrix.
    * ``lo_/hi_<cond>``: percentile interval of ``n_boot`` stimulus-bootstrap resamples of that
      condition's units (units drawn twice count twice).
    * ``diff`` = alpha(conditions[0]) - alpha(conditions[1]); ``p_value`` two-sided, by ``test``
      (:data:`ALPHA_TESTS`, named in the ``test`` column): ``studentized`` (default) = the crossed-jackknife t
      of the difference (:func:`alpha_difference_jackknife`: ``t``, ``df``) referred to its distribution over
      ``n_perm`` reassignments of the participants of both conditions to groups of the original sizes,
      (1 + #{|t*| >= |t|}) / (1 + n_valid); ``permutation`` = the paper's, the same reassignments of the
      difference itself, (1 + #{|d*| >= |d|}) / (1 + n_valid). ``null_sd``: the SD of t* (of d* for
      ``permutation``). The permutation of the difference tests exchangeable conditions, not equal alphas: with
      equal alphas but conditions that differ otherwise it need not hold its size; the studentized one is
      asymptotically valid whether or not they are exchangeable (Janssen 1997; Chung & Romano 2013) and
      corrects the jackknife's own bias with it. Measured at 40 prompts x 20 raters per condition x 10 trials
      and at 100 x 53 x 20 (benchmarks/out/alpha_difference_null.md, 500 equal-alpha studies in each of 4-5
      generating models at each size): rejection at .05 continuous 5.7 / 5.5 %, ordinal 5.0 / 5.0 %, nominal
      4.3 / 4.5 % pooled, every cell within 5 % +/- 2 MC SE (the paper's permutation: 8.4 / 12.4, 8.4 / 10.1,
      4.0 / 5.0 %).

    Seeds: ``SeedSequence(seed).spawn(3)`` one per metric (in :data:`ALPHA_METRICS` order), each
    spawning (bootstrap of conditions[0], bootstrap of conditions[1], permutations).
    """
    from modprefs.stats.reliability.resampling import make_rng  # noqa: PLC0415

    if test not in ALPHA_TESTS:
        raise ValueError(f"unknown alpha test {test!r}; expected one of {tuple(ALPHA_TESTS)}")
    if not 0 < ci_level < 1:
        raise ValueError(f"ci_level must be in (0, 1), got {ci_level}")
    rows = []
    for (metric, (level, frame, unit)), stream in zip(
        ALPHA_METRICS.items(), np.random.SeedSequence(seed).spawn(len(ALPHA_METRICS))
    ):
        if metrics is not None and metric not in metrics:
            continue
        rng_a, rng_b, rng_p = (make_rng(s) for s in stream.spawn(3))
        domain = None if level == "interval" else PREFERENCE_DOMAIN
        mat, cond = _pooled_matrix(metric, ratings, trials, assignments, participants, conditions, stimuli)
        row: dict = {
            "metric": metric,
            "level": level,
            "units": unit,
            "frame": frame or "",
            "n_boot": n_boot,
            "n_perm": n_perm,
            "ci_level": ci_level,
        }
        for c, rng in zip(conditions, (rng_a, rng_b)):
            row.update(_condition_alpha(mat[cond == c], c, level, domain, n_boot, rng, ci_level))
        row.update(_difference_test(mat, cond, level, domain, n_perm, rng_p, conditions, test))
        row["note"] = _alpha_note(row, conditions)
        rows.append(row)
    return pd.DataFrame(rows)


def _alpha_note(row: dict, conditions: tuple[str, ...]) -> str:
    """Why a row of :func:`alpha_table` holds NaN ("" when it does not)."""
    notes = []
    for c in conditions:
        if row[f"n_pairable_units_{c}"] == 0:
            notes.append(f"{c}: no unit has two or more values, alpha undefined")
        elif not np.isfinite(row[f"alpha_{c}"]):
            notes.append(f"{c}: every pairable value is the same (expected disagreement 0), alpha undefined")
        elif row["n_boot"] and not (np.isfinite(row[f"lo_{c}"]) and np.isfinite(row[f"hi_{c}"])):
            notes.append(f"{c}: alpha undefined in too many bootstrap resamples for a CI")
    if not np.isfinite(row["p_value"]) and row["n_perm"]:
        notes.append(
            "difference test undefined (alpha or its jackknife undefined in a condition or in every permutation)"
        )
    return "; ".join(notes)


# ---------------------------------------------------------------------------------------------
# Table 4: the crossed-jackknife test of an alpha difference
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AlphaJackknife:
    """One condition's alpha and its leave-one-out values: ``units`` (U,) leaving each unit (column) out,
    ``coders`` (C,) each coder with a value, ``cells`` (n,) each value (coder, unit) alone; NaN where undefined."""

    estimate: float
    units: np.ndarray
    coders: np.ndarray
    cells: np.ndarray


def alpha_jackknife(features: AlphaFeatures) -> AlphaJackknife:
    """Leave-one-unit-, -coder- and -value-out alphas of one coders x units matrix's features, without refitting
    anything: each is alpha of the per-unit sums less the left-out part (:func:`alpha_from_unit_features`; the
    values in closed form, :func:`_value_loo`)."""
    level, feats = features.level, features.features
    uf = features.unit_features()
    U = uf.shape[0]
    estimate = float(alpha_from_unit_features(uf, level))
    units = alpha_from_unit_features(uf, level, weights=1.0 - np.eye(U)) if U else np.empty(0)
    present = _present(features)
    active = present.any(axis=1)
    coders = alpha_from_unit_features(uf[None] - feats[active], level) if active.any() else np.empty(0)
    return AlphaJackknife(estimate, units, coders, _value_loo(features, present))


def _present(features: AlphaFeatures) -> np.ndarray:
    """(C, U) bool: coder c gave unit u a value."""
    f = features.features
    return f[..., 0] > 0 if features.level == "interval" else f.sum(axis=-1) > 0


def _value_loo(features: AlphaFeatures, present: np.ndarray) -> np.ndarray:
    """Alpha without each single value (coder, unit), in closed form: only that unit's terms and the totals change
    (a unit left with one value leaves the pairable set, and its other value with it). Equal to
    :func:`alpha_from_unit_features` of the reduced sums (tests: 1e-12)."""
    cc, uu = np.nonzero(present)
    uf = features.unit_features()
    if features.level == "interval":
        return _value_loo_interval(uf, features.features[cc, uu], uu)
    return _value_loo_counts(uf, features.features[cc, uu].argmax(axis=1), uu, features.level)


def _value_loo_interval(uf: np.ndarray, x: np.ndarray, uu: np.ndarray) -> np.ndarray:
    m, s1, s2 = uf[:, 0], uf[:, 1], uf[:, 2]
    pair, inv = _pairable(m)
    term = (m * s2 - s1 * s1) * inv
    n, t1, t2, do = m @ pair, s1 @ pair, s2 @ pair, term.sum()
    mu, was = m[uu], pair[uu]
    still = mu - 1 >= 2
    s1n, s2n = s1[uu] - x[:, 1], s2[uu] - x[:, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        new = np.where(still, ((mu - 1) * s2n - s1n * s1n) / (mu - 2), 0.0)
    do_ = np.where(was, do - term[uu] + new, do)
    n_ = np.where(was, np.where(still, n - 1, n - mu), n)
    t1_ = np.where(was, np.where(still, t1 - x[:, 1], t1 - s1[uu]), t1)
    t2_ = np.where(was, np.where(still, t2 - x[:, 2], t2 - s2[uu]), t2)
    return _finish(n_, do_, n_ * t2_ - t1_ * t1_)


def _value_loo_counts(counts: np.ndarray, v: np.ndarray, uu: np.ndarray, level: str) -> np.ndarray:
    m = counts.sum(axis=1)
    pair, inv = _pairable(m)
    V = counts.shape[1]
    one = np.eye(V)[v]
    cu = counts[uu]
    was, still = pair[uu], m[uu] - 1 >= 2
    cn = cu - one  # the unit's counts without the value
    n_c = pair @ counts
    n_c_ = n_c - np.where(was[:, None], np.where(still[:, None], one, cu), 0.0)
    n_ = n_c_.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_new = np.where(still, 1.0 / (m[uu] - 2), 0.0)
    if level == "nominal":
        term = (m * m - (counts * counts).sum(axis=1)) * inv
        new = ((m[uu] - 1) ** 2 - (cn * cn).sum(axis=1)) * inv_new
        do_ = np.where(was, term.sum() - term[uu] + new, term.sum())
        return _finish(n_, do_, n_ * n_ - (n_c_ * n_c_).sum(axis=1))
    # ordinal: Do = r'A r with A = sum over pairable units of (m diag(c) - c c') / (m - 1), ranks r from n_c
    A_units = (m[:, None, None] * (counts[:, :, None] * np.eye(V)) - counts[:, :, None] * counts[:, None, :]) * inv[
        :, None, None
    ]
    A = A_units.sum(axis=0)
    A_new = ((m[uu] - 1)[:, None, None] * (cn[:, :, None] * np.eye(V)) - cn[:, :, None] * cn[:, None, :]) * inv_new[
        :, None, None
    ]
    A_ = np.where(was[:, None, None], A - A_units[uu] + A_new, A)
    r = np.cumsum(n_c_, axis=1) - 0.5 * n_c_ - 0.5 * n_[:, None]
    do_ = np.einsum("ni,nij,nj->n", r, A_, r)
    t1, t2 = (n_c_ * r).sum(axis=1), (n_c_ * r * r).sum(axis=1)
    return _finish(n_, do_, n_ * t2 - t1 * t1)


def _values_per_unit(features: AlphaFeatures) -> np.ndarray:
    """(U,) number of values of each unit."""
    uf = features.unit_features()
    return uf[:, 0] if features.level == "interval" else uf.sum(axis=1)


def alpha_difference_jackknife(first: AlphaFeatures, second: AlphaFeatures) -> dict[str, float]:
    """Crossed-jackknife t test of alpha(first) - alpha(second); the two coder sets are disjoint and their units
    (columns, in the same order) shared, as Table 4's conditions.

    V = V_unit(D) + V_coder,1 + V_coder,2 - V_value,1 - V_value,2: leaving a unit out of both conditions gives the
    unit part of D's variance (covariance included), each condition's leave-one-coder-out jackknife its coder part;
    both carry each value's own noise, which the leave-one-value-out jackknife estimates and which is subtracted
    once (the crossed-array argument of McCullagh 2000 and Owen 2007). Only where that sum is not positive (3-6 %
    of studies for the nominal alpha, whose first-order variance vanishes near 0; none for the others in
    benchmarks/out/alpha_difference_null.md) is V the larger of V_unit(D) and V_coder,1 + V_coder,2, a conservative
    bound (``variance_floored`` is then True). An earlier version used that bound always: it applied in 76-100 % of
    equal-alpha studies and inflated V 1.1-3x (mean V / E[D^2]), where the unbounded V is 0.82-1.33x.
    t = D / sqrt(V) with Satterthwaite df over the unit and coder parts; two-sided p from Student's t.
    Returns diff, variance, variance_floored, var_unit, var_coder (and per condition), var_value, df, t, p_value,
    n_unit, n_coder_first, n_coder_second (NaN where undefined).
    """
    a, b = alpha_jackknife(first), alpha_jackknife(second)
    diff = a.estimate - b.estimate
    out = {"diff": diff, "variance": np.nan, "var_unit": np.nan, "var_coder": np.nan, "var_value": np.nan}
    out |= {"df": np.nan, "t": np.nan, "p_value": np.nan}
    if not (np.isfinite(diff) and a.units.size == b.units.size):
        return out
    loo_a = np.where(np.isfinite(a.units), a.units, a.estimate)
    loo_b = np.where(np.isfinite(b.units), b.units, b.estimate)
    rated = (_values_per_unit(first) >= 2) | (_values_per_unit(second) >= 2)  # the units alpha counts
    v_unit, n_unit = jackknife_variance((loo_a - loo_b)[rated])
    (v_a, n_a), (v_b, n_b) = jackknife_variance(a.coders), jackknife_variance(b.coders)
    v_value = sum(jackknife_variance(x.cells)[0] for x in (a, b))
    if not all(np.isfinite([v_unit, v_a, v_b, v_value])):
        return out
    coder = v_a + v_b
    floored = not v_unit + coder - v_value > 0
    variance = max(v_unit, coder) if floored else v_unit + coder - v_value
    denom = v_unit**2 / (n_unit - 1) + v_a**2 / (n_a - 1) + v_b**2 / (n_b - 1)
    df = variance**2 / denom if denom > 0 else float("inf")
    t = diff / np.sqrt(variance) if variance > 0 else (np.sign(diff) * np.inf if diff else 0.0)
    p = float(2.0 * (stats.t.sf(abs(t), df) if np.isfinite(df) else stats.norm.sf(abs(t))))
    out.update(variance=variance, var_unit=v_unit, var_coder=coder, var_value=v_value, df=df, t=float(t), p_value=p)
    out.update(var_coder_first=v_a, var_coder_second=v_b, n_unit=n_unit, n_coder_first=n_a, n_coder_second=n_b)
    out["variance_floored"] = floored
    return out


def split_features(features: AlphaFeatures, in_first: np.ndarray) -> tuple[AlphaFeatures, AlphaFeatures]:
    """The coders ``in_first`` (C,) bool and the others, as two feature sets over the same units."""
    mask = np.asarray(in_first, dtype=bool)
    f = features.features
    return (
        AlphaFeatures(features.level, f[mask], features.values, features.center),
        AlphaFeatures(features.level, f[~mask], features.values, features.center),
    )


def split_t(features: AlphaFeatures, in_first: np.ndarray) -> float:
    """The crossed-jackknife t of alpha(first) - alpha(second) for one split of the coders (NaN if undefined)."""
    return float(alpha_difference_jackknife(*split_features(features, in_first))["t"])

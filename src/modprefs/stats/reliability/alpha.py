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

Results equal ``krippendorff.alpha(reliability_data, level_of_measurement=...)`` (v0.8/0.9) to
~1e-15 (tests: 1e-12), including the package's rule that units with fewer than two values do not
enter ``n_c``. Differences: a data set whose pairable values are all equal gives ``nan`` (the
package raises when the value domain has one value and returns nan otherwise); ordinal and nominal
need numeric codes (map labels to numbers first, as
:func:`~modprefs.stats.tables.reliability_alpha.preference_codes` does).

Where the rest lives: the crossed-jackknife test of a difference in
:mod:`modprefs.stats.reliability.alpha_difference`; the preference codings, the study's coders x units matrices
and Table 4's alpha rows (:func:`~modprefs.stats.tables.reliability_alpha.alpha_table`) in
:mod:`modprefs.stats.tables.reliability_alpha`.

References:
    Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. Departmental Papers (ASC) 43.
    Krippendorff, K. (2004). Content Analysis: An Introduction to Its Methodology (2nd ed.), ch. 11.
    Hayes, A. F. & Krippendorff, K. (2007). Answering the call for a standard reliability measure
    for coding data. Communication Methods and Measures 1(1), 77-89.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

Level = Literal["nominal", "ordinal", "interval"]
LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval")


# Largest number of float64 cells in one batched intermediate (about 64 MB).
_MAX_CELLS = 8_000_000


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


def pairable(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def finish_alpha(n: np.ndarray, do: np.ndarray, de: np.ndarray) -> np.ndarray:
    """alpha = 1 - (n - 1) Do / De, NaN where undefined (n < 2 or De = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 1.0 - (n - 1.0) * do / de
    return np.where((n >= 2) & (de > 0), out, np.nan)


def _alpha_nominal(counts: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    m = counts.sum(axis=-1)
    pair, inv = pairable(m)
    w = _unit_weights(pair, weights)
    n_c = np.matmul(w[..., None, :], counts)[..., 0, :]  # (..., V)
    n = n_c.sum(axis=-1)
    do = _wsum(w, (m * m - (counts * counts).sum(axis=-1)) * inv)
    de = n * n - (n_c * n_c).sum(axis=-1)
    return finish_alpha(n, do, de)


def _alpha_scores(m: np.ndarray, s1: np.ndarray, s2: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """Interval-type alpha from per-unit (m_u, S1_u, S2_u), shapes (..., U) broadcasting with weights."""
    pair, inv = pairable(m)
    w = _unit_weights(pair, weights)
    n, t1, t2 = _wsum(w, m), _wsum(w, s1), _wsum(w, s2)
    do = _wsum(w, (m * s2 - s1 * s1) * inv)
    de = n * t2 - t1 * t1
    return finish_alpha(n, do, de)


def _alpha_interval(feats: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    return _alpha_scores(feats[..., 0], feats[..., 1], feats[..., 2], weights)


def _alpha_ordinal(counts: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    m = counts.sum(axis=-1)
    pair, _ = pairable(m)
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

    Examples
    --------
    Three coders, ten units (NaN: a coder did not code the unit), beside the ``krippendorff`` package:

    >>> import numpy as np, krippendorff
    >>> from modprefs.stats.reliability.alpha import krippendorff_alpha
    >>> data = np.array([[1, 2, 3, 3, 2, 1, 4, 1, 2, np.nan],
    ...                  [1, 2, 3, 3, 2, 2, 4, 1, 2, 5],
    ...                  [np.nan, 3, 3, 3, 2, 3, 4, 2, 2, 5]])
    >>> round(krippendorff_alpha(data, "interval"), 4), round(krippendorff_alpha(data, "nominal"), 4)
    (0.8621, 0.6753)
    >>> round(float(krippendorff.alpha(reliability_data=data, level_of_measurement="interval")), 4)
    0.8621
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

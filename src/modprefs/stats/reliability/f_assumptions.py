"""Checks of the F-based ICC interval's assumptions on a complete (targets x raters) table of ratings.

McGraw & Wong's interval (:mod:`modprefs.stats.reliability.icc_f_interval`) is exact when ratings are additive
(clip effect + rater effect + noise), with Gaussian effects and noise of one variance, and the targets independent.
Each check below tests one of those assumptions against the ratings themselves; all are exact tests under the
Gaussian additive model, because the interaction residuals of such a table are a fixed linear map of the noise (the
effects cancel) and every statistic here is scale-free:

* :func:`rater_slopes_test` -- raters using the scale differently (one rater's ratings spread twice as wide as
  another's): Mandel's (1961) column-regression test, each rater's residuals regressed on the targets' mean
  ratings (k - 1 df; Tukey's one-df test for non-additivity is its special case of one common slope).
* :func:`noise_shape_test` -- heavy-tailed noise or noise whose variance differs between raters: the residuals'
  kurtosis and the spread of the raters' log residual variances, each referred to its null distribution simulated
  from Gaussian tables of the same shape (seeded: the same table always gives the same p value).
* :func:`shared_prompt_test` -- a pairwise design's two clips sharing their prompt's effect (then a prompt's clips
  are not independent targets): the one-way F test of the clip means between prompts against within prompts.

References:
    Mandel, J. (1961). Non-additivity in two-way analysis of variance. JASA 56(296), 878-888.
    Tukey, J. W. (1949). One degree of freedom for non-additivity. Biometrics 5(3), 232-242.
    McGraw, K. O. & Wong, S. P. (1996). Forming inferences about some intraclass correlation coefficients.
    Psychological Methods 1(1), 30-46.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import stats

#: Gaussian tables simulated per (targets, raters) shape for the null distributions of :func:`noise_shape_test`
NULL_TABLES = 400


def interaction_residuals(table: np.ndarray) -> np.ndarray:
    """(n, k) residuals y - row mean - column mean + grand mean of a complete (n targets, k raters) table."""
    x = np.asarray(table, float)
    return x - x.mean(axis=1, keepdims=True) - x.mean(axis=0, keepdims=True) + x.mean()


def rater_slopes_test(table: np.ndarray) -> tuple[float, float]:
    """(F, p) of Mandel's column-regression test: do the raters' ratings follow the targets with different slopes?

    Rater j's residuals regressed on the centred target means a_i give slope deviations whose sum of squares
    sum_j (sum_i r_ij a_i)^2 / sum_i a_i^2 has k - 1 df; against the rest of the residual sum of squares
    ((n - 2)(k - 1) df) it is F-distributed under additivity. NaN where undefined (n < 3, constant targets).
    """
    x = np.asarray(table, float)
    n, k = x.shape
    a = x.mean(axis=1) - x.mean()
    saa = float(a @ a)
    r = interaction_residuals(x)
    sse = float((r * r).sum())
    df_rest = (n - 2) * (k - 1)
    if n < 3 or k < 2 or saa <= 0 or sse <= 0 or df_rest < 1:
        return math.nan, math.nan
    ss_slopes = float(((a @ r) ** 2).sum() / saa)
    rest = max(sse - ss_slopes, 1e-300)
    f = (ss_slopes / (k - 1)) / (rest / df_rest)
    return float(f), float(stats.f.sf(f, k - 1, df_rest))


def _shape_statistics(r: np.ndarray) -> tuple[float, float]:
    """(kurtosis m4 / m2^2 of all residuals, variance of the raters' log mean squared residuals) of (n, k) residuals."""
    m2 = float(np.mean(r * r))
    kurt = float(np.mean(r**4)) / (m2 * m2) if m2 > 0 else math.nan
    col = np.mean(r * r, axis=0)
    spread = float(np.var(np.log(col))) if (col > 0).all() else math.inf
    return kurt, spread


@lru_cache(maxsize=64)
def _null_shape_statistics(n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted null draws of :func:`_shape_statistics` from :data:`NULL_TABLES` Gaussian (n, k) tables (seeded by
    the shape, so deterministic)."""
    rng = np.random.default_rng([n, k, 0xF0A5])
    draws = np.array(
        [_shape_statistics(interaction_residuals(rng.standard_normal((n, k)))) for _ in range(NULL_TABLES)]
    )
    return np.sort(draws[:, 0]), np.sort(draws[:, 1])


def _upper_p(value: float, null: np.ndarray) -> float:
    """Monte-Carlo upper-tail p value (1 + #null >= value) / (1 + #null)."""
    if not math.isfinite(value):
        return 1.0 / (1 + null.size) if value > 0 else math.nan
    return float((1 + null.size - np.searchsorted(null, value, side="left")) / (1 + null.size))


def noise_shape_test(table: np.ndarray) -> tuple[float, float]:
    """(p of heavy tails, p of unequal rater noise) of a complete (n targets, k raters) table.

    Upper-tail Monte-Carlo p values of the residuals' kurtosis and of the variance of the raters' log mean squared
    residuals, against :data:`NULL_TABLES` Gaussian additive tables of the same shape. NaN for n or k < 2.
    """
    x = np.asarray(table, float)
    n, k = x.shape
    if n < 2 or k < 2:
        return math.nan, math.nan
    kurt, spread = _shape_statistics(interaction_residuals(x))
    null_kurt, null_spread = _null_shape_statistics(n, k)
    return _upper_p(kurt, null_kurt), _upper_p(spread, null_spread)


def prompt_sums_of_squares(clip_means: np.ndarray, prompt: np.ndarray) -> tuple[float, int, float, int]:
    """(SS between prompts, its df P - 1, SS of clips within prompts, its df C - P) of the clips' mean ratings
    (``clip_means`` (C,)) grouped by their prompt codes (``prompt`` (C,)); the one-way ANOVA's split."""
    m = np.asarray(clip_means, float)
    codes = np.unique(np.asarray(prompt), return_inverse=True)[1]
    counts = np.bincount(codes)
    means = np.bincount(codes, m) / counts
    ss_between = float((counts * (means - m.mean()) ** 2).sum())
    ss_within = float(((m - means[codes]) ** 2).sum())
    return ss_between, counts.size - 1, ss_within, m.size - counts.size


def shared_prompt_test(clip_means: np.ndarray, prompt: np.ndarray) -> tuple[float, float]:
    """(F, p) of the clips' mean ratings between prompts against within prompts (one-way ANOVA, upper tail).

    ``clip_means`` (n_clips,): each clip's mean rating over the raters; ``prompt`` (n_clips,): its prompt code.
    Under independent clips F ~ F(P - 1, C - P) (P prompts, C clips); a large F says a prompt's clips share an
    effect. NaN where no prompt has two clips or there are fewer than 2 prompts.
    """
    if np.asarray(clip_means).size == 0:
        return math.nan, math.nan
    ss_between, df_between, ss_within, df_within = prompt_sums_of_squares(clip_means, prompt)
    if df_between < 1 or df_within < 1:
        return math.nan, math.nan
    if ss_within <= 0:
        return math.inf, 0.0
    f = (ss_between / df_between) / (ss_within / df_within)
    return float(f), float(stats.f.sf(f, df_between, df_within))


def failed_checks(table: np.ndarray, prompt: np.ndarray | None, alpha: float) -> list[str]:
    """The checks above that reject at ``alpha`` on a complete (n, k) table, each as a short reason.

    ``prompt``: the prompt code of each row (target) where a prompt has several clips, else None.
    """
    x = np.asarray(table, float)
    reasons = []
    p_slopes = rater_slopes_test(x)[1]
    if p_slopes < alpha:
        reasons.append(f"raters use the scale with different slopes (Mandel's test p = {p_slopes:.3g})")
    p_tails, p_spread = noise_shape_test(x)
    if p_tails < alpha:
        reasons.append(f"heavy-tailed residuals (kurtosis p = {p_tails:.3g})")
    if p_spread < alpha:
        reasons.append(f"the raters' noise differs in spread (p = {p_spread:.3g})")
    if prompt is not None:
        p_prompt = shared_prompt_test(x.mean(axis=1), prompt)[1]
        if p_prompt < alpha:
            reasons.append(f"a prompt's clips share an effect (F test p = {p_prompt:.3g})")
    return reasons

"""How the raters of one condition differ beyond their mean: each rater's slope on the clip effects and residual scale.

The ``raters`` null world of the ICC-difference test's calibration
(:func:`modprefs.stats.reliability.icc_difference.null_world`) draws its simulated raters from these profiles, so
that its null studies have raters who compress or stretch the scale, and raters noisier or steadier than others, as
the study's do. Both are estimated per rater from a crossed-intercepts fit and shrunk by empirical Bayes, so that
raters who differ no more than their sampling noise get profiles of 1.

References:
    Morris, C. N. (1983). Parametric empirical Bayes inference: theory and applications. JASA 78(381), 47-55.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from modprefs.stats.mixed.reml import CrossedFit
from modprefs.stats.reliability.icc import ConditionDesign
from modprefs.stats.reliability.icc_resampling import crossed_blups


@dataclass(frozen=True)
class RaterProfiles:
    """How one condition's raters differ beyond their mean (:func:`rater_profiles`), for the ``raters`` null world.

    slopes: (J,) each rater's slope on the clip effects, mean 1 (a rater who compresses the slider follows the
    clips at a slope below 1, one who stretches it above); scales: (J,) each rater's residual scale, mean square 1;
    noise_factor: the null world's residual SD multiplier that leaves room for the slopes' rater x clip variance,
    so that the residual variance (and the ICC) stays the fit's (set by :func:`null_world`; 1 before).
    """

    slopes: np.ndarray
    scales: np.ndarray
    noise_factor: float = 1.0


def _shrunk(estimates: np.ndarray, noise: np.ndarray, centre: float) -> np.ndarray:
    """Empirical-Bayes shrinkage of noisy per-rater ``estimates`` (sampling variances ``noise``) toward ``centre``:
    the true spread tau^2 = var(estimates) - mean(noise), floored at 0, and each estimate moved toward the centre by
    the share noise / (tau^2 + noise) (Morris 1983). All at the centre when the raters differ no more than noise."""
    tau2 = max(float(np.var(estimates, ddof=1)) - float(np.mean(noise)), 0.0)
    if tau2 <= 0:
        return np.full(estimates.shape, centre)
    return centre + tau2 / (tau2 + noise) * (estimates - centre)


def rater_profiles(design: ConditionDesign, fit: CrossedFit) -> RaterProfiles:
    """Each rater's slope on the clip effects and residual scale, estimated from the fit and shrunk (empirical Bayes).

    With u the clip BLUPs and r = y - X beta - v (the ratings less the fixed effects and the rater's own mean): rater
    j's slope b_j is the regression of r on u over their ratings (the BLUPs are conditional means, so the slope is
    not attenuated by their shrinkage), with sampling variance s_j^2 / sum u^2; the slopes are shrunk toward their
    mean and divided by it. The residual scale comes from e = r - b_j u: rater j's mean square m_j relative to the
    pooled one; log m_j has sampling variance about (kurtosis - 1) / n_j (the delta method for a mean of squares,
    the kurtosis of the residuals each standardised by their own rater's scale), and is shrunk on the log scale.
    Slopes and scales are all 1 when the raters do not differ beyond noise (or there are fewer than 3).
    """
    n_raters = design.n_participants
    ones = np.ones(n_raters)
    if n_raters < 3 or fit.var_resid <= 0:
        return RaterProfiles(ones, ones)
    u, v, _ = crossed_blups(design, fit)
    p = design.participant
    n_j = np.maximum(np.bincount(p, minlength=n_raters).astype(float), 1.0)
    uc = u[design.clip]
    r = design.y - design.X @ fit.beta - v[p]
    suu = np.bincount(p, uc * uc, n_raters)
    slopes, centre = ones, 1.0
    if fit.var_g1 > 0 and np.all(suu > 0):
        b_hat = np.bincount(p, uc * r, n_raters) / suu
        rss = np.bincount(p, (r - b_hat[p] * uc) ** 2, n_raters)
        centre = float(np.mean(b_hat))
        if centre > 0:
            slopes = _shrunk(b_hat, rss / np.maximum(n_j - 1.0, 1.0) / suu, centre) / centre
        else:
            centre = 1.0
    e = r - centre * slopes[p] * uc
    pooled = float(np.mean(e * e))
    if pooled <= 0:
        return RaterProfiles(slopes, ones)
    m_j = np.bincount(p, e * e, n_raters) / n_j / pooled
    z = e / np.sqrt(np.maximum(m_j[p], 1e-12) * pooled)
    noise = (float(np.mean(z**4)) - 1.0) / n_j
    log_m = np.log(np.maximum(m_j, 1e-6))
    scale2 = np.exp(_shrunk(log_m, noise, float(np.mean(log_m))))
    return RaterProfiles(slopes, np.sqrt(scale2 / np.mean(scale2)))

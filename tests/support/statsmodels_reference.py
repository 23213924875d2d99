"""Reference fits from statsmodels' MixedLM for the crossed random-intercepts model (tests and benchmarks).

An independent implementation to check :func:`modprefs.stats.mixed.reml.fit_crossed_intercepts` against,
beside R's lme4 (lme4_reference.py).
"""

from __future__ import annotations

import numpy as np
import statsmodels.api as sm
from statsmodels.regression.mixed_linear_model import VCSpec


def fit_crossed_intercepts_statsmodels(
    y: np.ndarray, X: np.ndarray, g1: np.ndarray, g2: np.ndarray, reml: bool = True
) -> dict:
    """Cross-check fit with statsmodels MixedLM (variance components in one all-data group).

    Slow (seconds per fit) and, at statsmodels' default tolerances, accurate to about 1e-3
    relative. Shapes as :func:`modprefs.stats.mixed.reml.fit_crossed_intercepts`.
    Returns a dict with ``beta`` (p,), ``var_g1``, ``var_g2``, ``var_resid``, ``converged``.
    """
    y = np.asarray(y, float)
    _, c1 = np.unique(np.asarray(g1), return_inverse=True)
    _, c2 = np.unique(np.asarray(g2), return_inverse=True)
    Z1 = np.zeros((y.size, c1.max() + 1))
    Z1[np.arange(y.size), c1] = 1.0
    Z2 = np.zeros((y.size, c2.max() + 1))
    Z2[np.arange(y.size), c2] = 1.0
    vcs = VCSpec(["g1", "g2"], [[list(range(Z1.shape[1]))], [list(range(Z2.shape[1]))]], [[Z1], [Z2]])
    model = sm.MixedLM(y, np.asarray(X, float), groups=np.zeros(y.size), exog_vc=vcs)
    res = model.fit(reml=reml)
    vc = dict(zip(vcs.names, np.asarray(res.vcomp)))
    return {
        "beta": np.asarray(res.fe_params),
        "var_g1": float(vc["g1"]),
        "var_g2": float(vc["g2"]),
        "var_resid": float(res.scale),
        "converged": bool(res.converged),
    }

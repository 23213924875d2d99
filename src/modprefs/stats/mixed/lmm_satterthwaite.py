"""Satterthwaite's denominator degrees of freedom for a mixed model's fixed effects, as lmerTest's ``summary()``.

    df_j = 2 Var(beta_j)^2 / (g_j' A g_j),   g_j = d Var(beta_j) / d phi,   A = 2 H^+,

with phi = (theta, sigma), H the Hessian of the (RE)ML deviance in phi (beta profiled, sigma not; a central
difference of the analytic gradient) and H^+ its Moore-Penrose inverse over eigenvalues > 1e-8 (lmerTest's rule).
The model and the fit: :mod:`modprefs.stats.mixed.lmm`.
"""

from __future__ import annotations

import numpy as np

from modprefs.stats.mixed.criterion import Evaluation, ProfiledLmm
from modprefs.stats.mixed.lmm_optimise import deviance_nu

#: lmerTest's tolerance for the eigenvalues of the deviance Hessian (``as_lmerModLT(tol = 1e-8)``).
HESSIAN_EIGEN_TOL = 1e-8


def _grads(ev: Evaluation) -> tuple[np.ndarray, np.ndarray]:
    """(dlogdet, dr2) of an evaluation made with ``grad=True``."""
    assert ev.dlogdet is not None and ev.dr2 is not None
    return ev.dlogdet, ev.dr2


def _deviance_hessian(
    model: ProfiledLmm, reml: bool, theta: np.ndarray, sigma: float, scale: float, ev: Evaluation
) -> np.ndarray:
    """Hessian of the (RE)ML deviance in phi = (theta, sigma), beta profiled (lmerTest's ``devfun_vp``).

    dev(theta, sigma) = logdet(theta) + r2(theta) / sigma^2 + nu log(2 pi sigma^2), r2 in y-units.
    The theta block is a central difference of the analytic gradients of logdet and r2.
    """
    k = model.n_theta
    nu = deviance_nu(model, reml)
    s2 = scale * scale
    r2 = ev.r2 * s2
    H = np.empty((k + 1, k + 1))
    for j in range(k):
        h = 1e-4 * max(abs(theta[j]), 0.1)
        up, dn = theta.copy(), theta.copy()
        up[j] += h
        dn[j] -= h
        (up_logdet, up_r2), (dn_logdet, dn_r2) = (
            _grads(model.evaluate(up, reml, grad=True)),
            _grads(model.evaluate(dn, reml, grad=True)),
        )
        H[:k, j] = ((up_logdet - dn_logdet) + s2 * (up_r2 - dn_r2) / sigma**2) / (2 * h)
    H[:k, :k] = 0.5 * (H[:k, :k] + H[:k, :k].T)
    H[:k, k] = H[k, :k] = -2.0 * s2 * _grads(ev)[1] / sigma**3
    H[k, k] = 6.0 * r2 / sigma**4 - 2.0 * nu / sigma**2
    return H


def _pinv_eigen(H: np.ndarray, tol: float = HESSIAN_EIGEN_TOL) -> np.ndarray:
    """Moore-Penrose inverse over eigenvalues > tol, as lmerTest's ``as_lmerModLT``."""
    vals, vecs = np.linalg.eigh(H)
    pos = vals > tol
    return (vecs[:, pos] / vals[pos]) @ vecs[:, pos].T


def satterthwaite_df(
    vcov_beta: np.ndarray, jac: np.ndarray, vcov_varpar: np.ndarray, L: np.ndarray | None = None
) -> np.ndarray:
    """Satterthwaite df for contrasts (lmerTest ``contest1D``): 2 (L'V L)^2 / (g' A g).

    Args:
        vcov_beta: (p, p) vcov of beta.
        jac: (k, p, p) derivatives of vcov_beta in the variance parameters phi.
        vcov_varpar: (k, k) A = asymptotic covariance of phi.
        L: (c, p) contrast rows; default the identity (one df per coefficient).
    Returns:
        (c,) df.
    """
    L = np.eye(vcov_beta.shape[0]) if L is None else np.atleast_2d(L)
    var = np.einsum("ci,ij,cj->c", L, vcov_beta, L)
    grad = np.einsum("ci,kij,cj->ck", L, jac, L)
    denom = np.einsum("ck,kl,cl->c", grad, vcov_varpar, grad)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom > 0, 2.0 * var**2 / denom, np.nan)


def fixed_effect_dfs(
    model: ProfiledLmm,
    reml: bool,
    theta: np.ndarray,
    sigma2: float,
    scale: float,
    ev: Evaluation,
    vcov: np.ndarray,
) -> tuple[np.ndarray, np.ndarray | None, str]:
    """(df, vcov_varpar, failure): Satterthwaite df of the fixed effects, or NaN df and the message's addition."""
    df = np.full(vcov.shape[0], np.nan)
    sigma = float(np.sqrt(sigma2))
    try:
        H = _deviance_hessian(model, reml, theta, sigma, scale, ev)
    except np.linalg.LinAlgError as err:
        return df, None, f"; Satterthwaite df not available: deviance Hessian failed ({err})"
    vcov_varpar = 2.0 * _pinv_eigen(H)
    assert ev.dainv_beta is not None  # evaluated with vcov_jac=satterthwaite
    jac = np.concatenate([sigma2 * ev.dainv_beta, (2.0 * sigma * ev.ainv_beta)[None]], axis=0)
    return satterthwaite_df(vcov, jac, vcov_varpar), vcov_varpar, ""

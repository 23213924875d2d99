"""General linear mixed models (crossed intercepts and correlated random slopes), REML or ML, as lme4/lmerTest.

Model (n observations, p fixed effects, K random-effects terms)::

    y = X beta + sum_k Z_k b_k + e,   b_k[level] ~ N(0, Sigma_k) iid over levels,   e ~ N(0, sigma^2 I_n)

Each term is ``(1 | g)`` (Z_k = ones, r_k = 1) or ``(1 + x | g)`` (Z_k = [ones, x], r_k = 2, correlated
intercept and slope), or any other (n, r_k) column set; terms may be crossed or nested. Fitting
follows lme4 (Bates, Maechler, Bolker & Walker 2015, J. Stat. Softw. 67(1)): Sigma_k = sigma^2 T_k T_k'
with T_k lower triangular, theta = the T_k's lower triangles (column-major, diagonal >= 0),
beta and sigma^2 profiled out, and the profiled REML criterion or ML deviance minimised over theta
(:mod:`modprefs.stats.mixed.criterion` evaluates it with an analytic gradient, eliminating the
largest term's block-diagonal block exactly). The optimiser is L-BFGS-B followed by Newton steps
on a finite-difference Hessian of the analytic gradient, which lands on the optimum that lme4
reaches with tight tolerances (nloptwrap, xtol/ftol 1e-14).

Inference, as lmerTest's ``summary()`` (Kuznetsova, Brockhoff & Christensen 2017, "lmerTest
package: tests in linear mixed effects models", J. Stat. Softw. 82(13)): Satterthwaite's (1946)
denominator degrees of freedom for each fixed effect,

    df_j = 2 Var(beta_j)^2 / (g_j' A g_j),   g_j = d Var(beta_j) / d phi,   A = 2 H^+,

with phi = (theta, sigma), H the Hessian of the (RE)ML deviance in phi (beta profiled, sigma not),
H^+ its Moore-Penrose inverse over eigenvalues > 1e-8 (lmerTest's rule). Here H is a central
difference of the analytic gradient (lmerTest: numDeriv's Richardson Hessian) and g_j is analytic
(lmerTest: numDeriv's Jacobian); p-values are two-sided t tests with df_j.

Confidence intervals: ``ci_t`` = beta +/- t_{df_j, .975} SE (lmerTest's ``confint(contest(...))``
and what a Satterthwaite table reports); ``ci_z`` = beta +/- z_.975 SE (lme4's
``confint(fit, method = "Wald")``); :meth:`LmmFit.confint` and :meth:`LmmFit.coef_table` give both
at any level.

Random slopes, correlated ``(1 + x | g)`` or uncorrelated ``(1 + x || g)`` (formula syntax:
:mod:`modprefs.stats.mixed.formula`); :mod:`modprefs.stats.mixed.maximal` simplifies a slope structure
the data do not support down a fixed ladder, and :func:`with_satterthwaite` adds the df to a fit made
without them.

Likelihood-ratio tests (:func:`lrt`, :func:`anova_refit_ml`) compare ML deviances, refitting REML
fits with ML first, as lme4's ``anova()`` does.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.optimize
import scipy.stats

from modprefs.errors import InsufficientDataError
from modprefs.stats.mixed.criterion import Evaluation, ProfiledLmm
from modprefs.stats.mixed.factors import encode_factor
from modprefs.stats.mixed.formula import build_design

#: lme4's ``isSingular`` default: a diagonal theta below this is "on the boundary".
SINGULAR_TOL = 1e-4
#: lmerTest's tolerance for the eigenvalues of the deviance Hessian (``as_lmerModLT(tol = 1e-8)``).
HESSIAN_EIGEN_TOL = 1e-8


@dataclass(frozen=True)
class RandomTerm:
    """One random-effects term ``(Z columns | group)``.

    Attributes:
        group: (n,) grouping labels (any sortable labels; unused levels are ignored).
        Z: (n, r) or (n,) columns of the term, e.g. ``np.ones(n)`` for ``(1 | g)`` or
            ``np.column_stack([np.ones(n), x])`` for ``(1 + x | g)``.
        name: the grouping factor's name (for output and messages).
        coef_names: r names of the columns; default "(Intercept)", "z1", ...
    """

    group: np.ndarray
    Z: np.ndarray
    name: str = "g"
    coef_names: tuple[str, ...] | None = None


@dataclass(frozen=True)
class RandomEffect:
    """Estimated covariance of one random-effects term (y-units).

    Attributes:
        group: grouping factor name.
        coef_names: r coefficient names.
        n_levels: number of levels.
        cov: (r, r) covariance matrix Sigma_k.
        sd: (r,) standard deviations.
        corr: (r, r) correlation matrix (NaN where an SD is 0).
        levels: (q,) the level labels in the order of ``modes``' rows.
        modes: (q, r) conditional modes (BLUPs) of the random effects, lme4's ``ranef``.
    """

    group: str
    coef_names: tuple[str, ...]
    n_levels: int
    cov: np.ndarray
    sd: np.ndarray
    corr: np.ndarray
    levels: np.ndarray
    modes: np.ndarray


@dataclass(frozen=True)
class _Spec:
    """What is needed to refit a model (e.g. with ML for a likelihood-ratio test)."""

    y: np.ndarray
    X: np.ndarray
    terms: tuple[RandomTerm, ...]
    x_names: tuple[str, ...]


@dataclass(frozen=True)
class LmmFit:
    """Result of :func:`fit_lmm`; variances in squared y-units.

    Attributes:
        beta: (p,) fixed effects (X's column order), lme4's ``fixef``.
        beta_se: (p,) standard errors, sqrt(diag(vcov_beta)).
        vcov_beta: (p, p) sigma^2 (R_X'R_X)^-1, lme4's ``vcov``.
        x_names: p fixed-effect names.
        df: (p,) Satterthwaite denominator df (lmerTest ``summary()``); NaN if not computed.
        t_value: (p,) beta / beta_se.
        p_value: (p,) two-sided p from t(df); NaN if df not computed.
        ci_t: (p, 2) 95 % Wald CI with t(df) quantiles (lmerTest style).
        ci_z: (p, 2) 95 % Wald CI with normal quantiles (lme4 ``confint(method = "Wald")``).
        theta: (n_theta,) relative Cholesky factors, term by term in the caller's term order
            (lme4 orders terms by decreasing number of levels; within a term the order is lme4's).
        random_effects: per term, a :class:`RandomEffect`.
        sigma2: residual variance; sigma = sqrt(sigma2).
        objective: REML criterion (lme4 ``REMLcrit``) or ML deviance (``deviance``).
        loglik: -objective / 2 (lme4 ``logLik``).
        reml: whether REML was used.
        n_obs: n.
        npar: p + n_theta + 1 (lme4's parameter count for anova's Df).
        vcov_varpar: (n_theta+1, n_theta+1) asymptotic covariance of (theta, sigma), lmerTest's
            ``vcov_varpar`` (2 H^+); None if not computed.
        converged: the optimiser succeeded and the solution is a verified local minimum.
        singular: a diagonal theta is below :data:`SINGULAR_TOL` (a variance at 0 or a correlation at +/-1).
        n_iter: criterion evaluations used by the optimiser.
        message: optimiser / diagnostic messages.
    """

    beta: np.ndarray
    beta_se: np.ndarray
    vcov_beta: np.ndarray
    x_names: list[str]
    df: np.ndarray
    t_value: np.ndarray
    p_value: np.ndarray
    ci_t: np.ndarray
    ci_z: np.ndarray
    theta: np.ndarray
    random_effects: list[RandomEffect]
    sigma2: float
    objective: float
    loglik: float
    reml: bool
    n_obs: int
    npar: int
    vcov_varpar: np.ndarray | None
    converged: bool
    singular: bool
    n_iter: int
    message: str
    spec: _Spec = field(repr=False, compare=False)

    @property
    def sigma(self) -> float:
        return float(np.sqrt(self.sigma2))

    def confint(self, level: float = 0.95, method: str = "t") -> np.ndarray:
        """(p, 2) two-sided Wald intervals at ``level``: ``"t"`` with t(df_j) quantiles (lmerTest's
        ``contest(..., confint = TRUE, level = level)``; NaN where df is NaN), ``"z"`` with normal ones
        (lme4's ``confint(fit, method = "Wald", level = level)``)."""
        if not 0 < level < 1:
            raise ValueError(f"confidence level must be in (0, 1), got {level}")
        if method == "t":
            q = scipy.stats.t.ppf(0.5 + level / 2.0, self.df)
        elif method == "z":
            q = np.full(self.beta.size, scipy.stats.norm.ppf(0.5 + level / 2.0))
        else:
            raise ValueError(f"confint method must be 't' or 'z', got {method!r}")
        return np.column_stack([self.beta - q * self.beta_se, self.beta + q * self.beta_se])

    def coef_table(self, level: float = 0.95) -> pd.DataFrame:
        """lmerTest-like coefficient table: estimate, SE, df, t, p, and both Wald CIs at ``level`` (default 95 %)."""
        ci_t, ci_z = (self.ci_t, self.ci_z) if level == 0.95 else (self.confint(level), self.confint(level, "z"))
        return pd.DataFrame(
            {
                "term": self.x_names,
                "estimate": self.beta,
                "se": self.beta_se,
                "df": self.df,
                "t": self.t_value,
                "p": self.p_value,
                "ci_t_lo": ci_t[:, 0],
                "ci_t_hi": ci_t[:, 1],
                "ci_z_lo": ci_z[:, 0],
                "ci_z_hi": ci_z[:, 1],
            }
        )

    def variance_table(self) -> pd.DataFrame:
        """lme4 ``as.data.frame(VarCorr(fit))``-like: one row per variance, covariance and the residual."""
        rows = []
        for re_ in self.random_effects:
            r = len(re_.coef_names)
            for j in range(r):
                rows.append(
                    {
                        "group": re_.group,
                        "var1": re_.coef_names[j],
                        "var2": None,
                        "vcov": re_.cov[j, j],
                        "sdcor": re_.sd[j],
                    }
                )
            for j in range(r):
                for i in range(j + 1, r):
                    rows.append(
                        {
                            "group": re_.group,
                            "var1": re_.coef_names[j],
                            "var2": re_.coef_names[i],
                            "vcov": re_.cov[i, j],
                            "sdcor": re_.corr[i, j],
                        }
                    )
        rows.append({"group": "Residual", "var1": None, "var2": None, "vcov": self.sigma2, "sdcor": self.sigma})
        return pd.DataFrame(rows)


@dataclass(frozen=True)
class LrtResult:
    """Likelihood-ratio test of nested ML fits, lme4 ``anova(small, big)``.

    Attributes: chi2 = deviance(small) - deviance(big); df = npar(big) - npar(small);
    p = P(chi2_df > chi2); the two ML fits actually compared.
    """

    chi2: float
    df: int
    p: float
    small: LmmFit
    big: LmmFit


# --- input checks -----------------------------------------------------------------------------


def _check_inputs(
    y: np.ndarray, X: np.ndarray, re_terms: list[RandomTerm]
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Validate shapes and values; return per-term codes, levels and (n, r) Z. Raises ValueError."""
    if y.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {y.shape}")
    n = y.shape[0]
    if X.ndim != 2 or X.shape[0] != n:
        raise ValueError(f"X must be (n, p) with n = len(y) = {n}, got shape {X.shape}")
    p = X.shape[1]
    if not np.isfinite(y).all():
        raise ValueError("y contains NaN or infinite values")
    if not np.isfinite(X).all():
        raise ValueError("X contains NaN or infinite values")
    if not re_terms:
        raise ValueError("at least one random-effects term is needed (use OLS otherwise)")
    if p == 0 or n <= p + 1:
        raise InsufficientDataError(f"need at least one fixed effect and n > p + 1 (n = {n}, p = {p})")
    rank = np.linalg.matrix_rank(X)
    if rank < p:
        raise InsufficientDataError(f"X is rank deficient (rank {rank} < {p} columns)")
    codes, levels, Zs = [], [], []
    for t in re_terms:
        Z = np.asarray(t.Z, dtype=float)
        Z = Z[:, None] if Z.ndim == 1 else Z
        if Z.ndim != 2 or Z.shape[0] != n or Z.shape[1] < 1:
            raise ValueError(f"Z of term {t.name!r} must be (n, r) with n = {n}, got {np.shape(t.Z)}")
        if not np.isfinite(Z).all():
            raise ValueError(f"Z of term {t.name!r} contains NaN or infinite values")
        group = np.asarray(t.group)
        if group.ndim != 1 or group.shape[0] != n:
            raise ValueError(f"group of term {t.name!r} must have shape ({n},), got {group.shape}")
        c, lev = encode_factor(group, f"group of term {t.name!r}")
        q = lev.size
        if q < 2:
            raise InsufficientDataError(f"grouping factor {t.name!r} has {q} level(s); it needs at least 2")
        if q >= n or q * Z.shape[1] >= n:
            raise InsufficientDataError(
                f"term {t.name!r} has {q * Z.shape[1]} random effects ({q} levels) for {n} "
                "observations; the model is unidentifiable (lme4 stops here too)"
            )
        if t.coef_names is not None and len(t.coef_names) != Z.shape[1]:
            raise ValueError(f"term {t.name!r}: {len(t.coef_names)} coef_names for {Z.shape[1]} columns")
        codes.append(c)
        levels.append(lev)
        Zs.append(Z)
    return codes, levels, Zs


# --- optimisation -----------------------------------------------------------------------------


def _fg(theta: np.ndarray, model: ProfiledLmm, reml: bool) -> tuple[float, np.ndarray]:
    """Criterion and gradient for the optimiser; a huge value where the system breaks down."""
    try:
        ev = model.evaluate(theta, reml, grad=True)
    except np.linalg.LinAlgError:
        return 1e300, np.zeros(model.n_theta)
    return ev.f, ev.grad(_nu(model, reml))


def _nu(model: ProfiledLmm, reml: bool) -> float:
    return float(model.n - model.p if reml else model.n)


def _diag_mask(model: ProfiledLmm) -> np.ndarray:
    """(n_theta,) True where theta is a diagonal element of some T_k (bounded below by 0)."""
    mask = np.zeros(model.n_theta, dtype=bool)
    for t in model.terms:
        rows, cols = t.lower
        mask[t.theta_start + np.flatnonzero(rows == cols)] = True
    return mask


def _start(model: ProfiledLmm) -> np.ndarray:
    """lme4's default start: 1 on the diagonals, 0 off them."""
    return _diag_mask(model).astype(float)


#: L-BFGS-B gets close; the Newton polish takes the last digits far more cheaply.
_LBFGS_OPTIONS = {"ftol": 1e-10, "gtol": 1e-6, "maxiter": 2000, "maxls": 50}


def _canonical(model: ProfiledLmm, theta: np.ndarray) -> np.ndarray:
    """Flip the sign of every column of T_k whose diagonal is negative (T_k T_k' is unchanged)."""
    theta = theta.copy()
    for t in model.terms:
        rows, cols = t.lower
        seg = theta[t.theta_start : t.theta_start + t.n_theta]
        for j in range(t.r):
            if seg[(rows == j) & (cols == j)][0] < 0:
                seg[cols == j] *= -1.0
        theta[t.theta_start : t.theta_start + t.n_theta] = seg
    return theta


def _hessian_fd(model: ProfiledLmm, reml: bool, theta: np.ndarray, g0: np.ndarray) -> np.ndarray:
    """Forward-difference Hessian of the profiled criterion from its analytic gradient (k evaluations)."""
    nu = _nu(model, reml)
    k = theta.size
    hess = np.empty((k, k))
    for j in range(k):
        h = 1e-6 * max(abs(theta[j]), 1e-2)
        probe = theta.copy()
        probe[j] += h
        hess[:, j] = (model.evaluate(probe, reml, grad=True).grad(nu) - g0) / h
    return 0.5 * (hess + hess.T)


def _newton_polish(
    model: ProfiledLmm,
    reml: bool,
    theta: np.ndarray,
    max_steps: int = 8,
    fg0: tuple[float, np.ndarray] | None = None,
) -> tuple[np.ndarray, float, np.ndarray, np.ndarray | None, int]:
    """Chord-Newton steps (one FD Hessian) from ``theta``; stops when a step no longer lowers f.

    L-BFGS-B stops where its relative-decrease test fires; the REML surface is flat enough there
    that the variance components can still be ~1e-5 off; two or three Newton steps fix that.
    ``fg0``: the criterion and gradient at ``theta`` when already known. Returns (theta, f, gradient,
    Hessian or None, evaluations used).
    """
    f0, g0 = fg0 if fg0 is not None else _fg(theta, model, reml)
    try:
        hess = _hessian_fd(model, reml, theta, g0)
    except np.linalg.LinAlgError:
        return theta, f0, g0, None, int(fg0 is None)
    n_eval = int(fg0 is None) + theta.size
    evals = np.linalg.eigvalsh(hess)
    if not np.all(evals > 1e-8 * max(1.0, float(np.max(np.abs(evals))))):
        return theta, f0, g0, hess, n_eval
    for _ in range(max_steps):
        new = theta - np.linalg.solve(hess, g0)
        f1, g1 = _fg(new, model, reml)
        n_eval += 1
        if not f1 <= f0 + 1e-13 * max(1.0, abs(f0)):
            break
        moved = float(np.max(np.abs(new - theta) / np.maximum(np.abs(theta), 1e-8)))
        theta, f0, g0 = new, f1, g1
        if moved < 1e-12:
            break
    return theta, f0, g0, hess, n_eval


def _snap_to_bound(model: ProfiledLmm, reml: bool, theta: np.ndarray, f: float) -> tuple[np.ndarray, int]:
    """Set diagonal thetas below 1e-6 to exactly 0 when that does not raise the criterion."""
    diag = _diag_mask(model)
    n_eval = 0
    for j in np.flatnonzero(diag & (np.abs(theta) < 1e-6) & (theta != 0)):
        trial = theta.copy()
        trial[j] = 0.0
        f_trial = _fg(trial, model, reml)[0]
        n_eval += 1
        if f_trial <= f + 1e-12 * max(1.0, abs(f)):
            theta, f = trial, f_trial
    return theta, n_eval


def _optimise(model: ProfiledLmm, reml: bool, theta0: np.ndarray) -> tuple[np.ndarray, bool, int, str]:
    """Minimise the profiled criterion over theta. Returns (theta, converged, evaluations, message).

    The criterion depends on theta only through the T_k T_k', which do not change when a column of
    T_k changes sign, so it is minimised without bounds and the columns are then flipped to
    non-negative diagonals (lme4's constraint). A variance on its zero bound is then an ordinary
    minimum of a function even in that coordinate (no bound for L-BFGS to get stuck on).
    """
    res = scipy.optimize.minimize(_fg, theta0, args=(model, reml), jac=True, method="L-BFGS-B", options=_LBFGS_OPTIONS)
    n_eval = int(res.nfev)
    message = str(res.message)
    ok = bool(res.success) or "ABNORMAL" in message  # line search stalls at machine precision
    x = np.asarray(res.x, float)
    start = _canonical(model, x)
    known = (float(res.fun), np.asarray(res.jac, float)) if np.array_equal(start, x) else None
    theta, f, g, hess, used = _newton_polish(model, reml, start, fg0=known)
    n_eval += used
    theta = _canonical(model, theta)
    theta, used = _snap_to_bound(model, reml, theta, f)
    n_eval += used
    if hess is not None:
        evals = np.linalg.eigvalsh(hess)
        top = max(1.0, float(np.max(np.abs(evals))))
        if np.any(evals < -1e-6 * top):
            ok = False
            message += "; Hessian at the solution has a negative eigenvalue (saddle point)"
        elif not np.all(evals > 1e-8 * top):
            message += "; Hessian at the solution is singular (parameters not identified, e.g. at a boundary)"
    if np.max(np.abs(g) * np.maximum(np.abs(theta), 1.0)) > 1e-3:
        ok = False
        message += f"; gradient not small at the solution ({g.tolist()})"
    return theta, ok, n_eval, message


# --- Satterthwaite ------------------------------------------------------------------------------


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
    nu = _nu(model, reml)
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


# --- the fit ----------------------------------------------------------------------------------


def _random_effects(
    model: ProfiledLmm,
    theta: np.ndarray,
    sigma2: float,
    scale: float,
    ev: Evaluation,
    re_terms: list[RandomTerm],
    levels: list[np.ndarray],
) -> list[RandomEffect]:
    out = []
    for k, (T, t) in enumerate(zip(model.factors(theta), re_terms)):
        cov = sigma2 * T @ T.T
        sd = np.sqrt(np.diag(cov))
        with np.errstate(divide="ignore", invalid="ignore"):
            corr = cov / np.outer(sd, sd)
        np.fill_diagonal(corr, 1.0)
        r = T.shape[0]
        names = (
            tuple(t.coef_names) if t.coef_names is not None else ("(Intercept)",) + tuple(f"z{j}" for j in range(1, r))
        )
        out.append(
            RandomEffect(
                group=t.name,
                coef_names=names,
                n_levels=int(levels[k].size),
                cov=cov,
                sd=sd,
                corr=corr,
                levels=levels[k],
                modes=scale * ev.u[k] @ T.T,
            )
        )
    return out


def _x_names(x_names: list[str] | None, p: int) -> list[str]:
    """The names of X's ``p`` columns: ``x_names`` checked, or "x0", "x1", ..."""
    if x_names is None:
        x_names = [f"x{j}" for j in range(p)]
    if len(x_names) != p:
        raise ValueError(f"{len(x_names)} x_names for {p} columns of X")
    return x_names


def _start_theta(model: ProfiledLmm, theta0: np.ndarray | None, diag: np.ndarray) -> np.ndarray:
    """The optimiser's start: ``theta0`` or lme4's, with diagonal entries at least 1e-3."""
    start = _start(model) if theta0 is None else np.asarray(theta0, dtype=float).reshape(model.n_theta)
    start = start.copy()
    start[diag] = np.maximum(start[diag], 1e-3)  # theta_j = 0 is stationary for intercepts; start off it
    return start


def _ols_scale(y: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """(b0, resid0, scale): the OLS fit, its residuals and residual SD; ``ValueError`` when y has no variance."""
    n, p = X.shape
    b0, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid0 = y - X @ b0
    scale = float(np.sqrt(resid0 @ resid0 / (n - p)))
    if not scale > 1e-12 * max(1.0, float(np.max(np.abs(y)))):
        raise ValueError("y is constant (or an exact linear function of X): no variance to partition")
    return b0, resid0, scale


def _satterthwaite(
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


def fit_lmm(
    y: np.ndarray,
    X: np.ndarray,
    re_terms: list[RandomTerm],
    reml: bool = True,
    x_names: list[str] | None = None,
    satterthwaite: bool = True,
    theta0: np.ndarray | None = None,
) -> LmmFit:
    """Fit ``y ~ X + re_terms`` by REML (default) or ML, as ``lme4::lmer`` (+ lmerTest's Satterthwaite df).

    Args:
        y: (n,) response.
        X: (n, p) full-rank fixed-effects design (include the intercept column yourself).
        re_terms: random-effects terms (:class:`RandomTerm`); any number, crossed or nested.
        reml: REML criterion (True) or ML deviance (False).
        x_names: p names of X's columns (default "x0", "x1", ...).
        satterthwaite: compute Satterthwaite df / p-values / t-CIs and vcov_varpar (a few extra
            gradient evaluations); False leaves them NaN (e.g. inside a bootstrap).
        theta0: (n_theta,) start (default lme4's: 1 on diagonals, 0 off); a warm start saves time.

    Returns:
        :class:`LmmFit`.

    Raises:
        ValueError: mismatched shapes, NaN/inf, a grouping factor with < 2 levels or as many random
            effects as observations, rank-deficient X, constant y (or y exactly in X's column space).

    The response is centred on its OLS fit and scaled to unit residual SD before fitting (exactly
    equivalent; better conditioned); everything is reported on the original scale.
    """
    y = np.asarray(y, dtype=float)
    X = np.asarray(X, dtype=float)
    codes, levels, Zs = _check_inputs(y, X, re_terms)
    n, p = X.shape
    x_names = _x_names(x_names, p)
    b0, resid0, scale = _ols_scale(y, X)
    model = ProfiledLmm(resid0 / scale, X, codes, [lev.size for lev in levels], Zs)
    diag = _diag_mask(model)
    theta, ok, n_eval, message = _optimise(model, reml, _start_theta(model, theta0, diag))
    ev = model.evaluate(theta, reml, grad=True, vcov_jac=satterthwaite)
    nu = _nu(model, reml)
    sigma2 = ev.r2 / nu * scale * scale
    beta = b0 + scale * ev.beta
    vcov = sigma2 * ev.ainv_beta
    se = np.sqrt(np.diag(vcov))
    tval = beta / se
    z = scipy.stats.norm.ppf(0.975)
    no_df: tuple[np.ndarray, np.ndarray | None, str] = (np.full(p, np.nan), None, "")
    df, vcov_varpar, failure = _satterthwaite(model, reml, theta, sigma2, scale, ev, vcov) if satterthwaite else no_df
    message += failure
    pval = 2.0 * scipy.stats.t.sf(np.abs(tval), df)
    tq = scipy.stats.t.ppf(0.975, df)
    objective = ev.f + nu * np.log(scale * scale)
    return LmmFit(
        beta=beta,
        beta_se=se,
        vcov_beta=vcov,
        x_names=list(x_names),
        df=df,
        t_value=tval,
        p_value=pval,
        ci_t=np.column_stack([beta - tq * se, beta + tq * se]),
        ci_z=np.column_stack([beta - z * se, beta + z * se]),
        theta=theta,
        random_effects=_random_effects(model, theta, sigma2, scale, ev, re_terms, levels),
        sigma2=float(sigma2),
        objective=float(objective),
        loglik=float(-objective / 2),
        reml=reml,
        n_obs=n,
        npar=p + model.n_theta + 1,
        vcov_varpar=vcov_varpar,
        converged=ok,
        singular=bool(np.any(theta[diag] < SINGULAR_TOL)),
        n_iter=n_eval,
        message=message,
        spec=_Spec(y=y, X=X, terms=tuple(re_terms), x_names=tuple(x_names)),
    )


def with_satterthwaite(fit: LmmFit) -> LmmFit:
    """``fit`` with its Satterthwaite df, p-values, t-CIs and ``vcov_varpar`` computed at its estimates.

    For a fit made with ``satterthwaite=False`` (e.g. a candidate that a fallback ladder may still
    reject): the same numbers as fitting with ``satterthwaite=True``, without optimising again.
    A fit that already has them is returned as it is.
    """
    if fit.vcov_varpar is not None:
        return fit
    s = fit.spec
    codes, levels, Zs = _check_inputs(s.y, s.X, list(s.terms))
    _, resid0, scale = _ols_scale(s.y, s.X)
    model = ProfiledLmm(resid0 / scale, s.X, codes, [lev.size for lev in levels], Zs)
    ev = model.evaluate(fit.theta, fit.reml, grad=True, vcov_jac=True)
    df, vcov_varpar, failure = _satterthwaite(model, fit.reml, fit.theta, fit.sigma2, scale, ev, fit.vcov_beta)
    pval = 2.0 * scipy.stats.t.sf(np.abs(fit.t_value), df)
    tq = scipy.stats.t.ppf(0.975, df)
    ci_t = np.column_stack([fit.beta - tq * fit.beta_se, fit.beta + tq * fit.beta_se])
    return dataclasses.replace(
        fit, df=df, p_value=pval, ci_t=ci_t, vcov_varpar=vcov_varpar, message=fit.message + failure
    )


def fit_formula(
    df: pd.DataFrame,
    formula: str,
    reml: bool = True,
    satterthwaite: bool = True,
    theta0: np.ndarray | None = None,
) -> LmmFit:
    """Fit an lme4-style formula, e.g. ``"score ~ modality + (1 + modality | prompt) + (1 | participant)"``.

    See :mod:`modprefs.stats.mixed.formula` for the supported syntax (numeric columns; other columns are
    treatment-coded; ``||`` for uncorrelated terms). Rows are used as given (drop missing values first).
    ``satterthwaite`` and ``theta0`` as in :func:`fit_lmm`.
    """
    d = build_design(df, formula)
    terms = [
        RandomTerm(group=g, Z=Z, name=gn, coef_names=tuple(cn))
        for g, Z, gn, cn in zip(d.groups, d.Zs, d.group_names, d.coef_names)
    ]
    return fit_lmm(d.y, d.X, terms, reml=reml, x_names=d.x_names, satterthwaite=satterthwaite, theta0=theta0)


# --- likelihood-ratio tests ---------------------------------------------------------------------


def _as_ml(fit: LmmFit) -> LmmFit:
    """The ML fit of the same model (``fit`` itself when it is already ML)."""
    if not fit.reml:
        return fit
    s = fit.spec
    return fit_lmm(s.y, s.X, list(s.terms), reml=False, x_names=list(s.x_names), satterthwaite=False)


def _nested_lrt(a: LmmFit, b: LmmFit) -> LrtResult:
    """chi2 = objective(smaller) - objective(larger) of two comparable fits, ordered by parameter count as anova
    does; df = the difference in npar (ValueError when 0)."""
    if a.npar > b.npar:
        a, b = b, a
    df = b.npar - a.npar
    if df <= 0:
        raise ValueError("the models have the same number of parameters: not nested")
    chi2 = a.objective - b.objective
    return LrtResult(chi2=float(chi2), df=int(df), p=float(scipy.stats.chi2.sf(max(chi2, 0.0), df)), small=a, big=b)


def lrt(fit_small: LmmFit, fit_big: LmmFit, refit: bool = True) -> LrtResult:
    """Likelihood-ratio test of two nested models on the same data, as lme4's ``anova(small, big)``.

    REML fits are refitted with ML first (``refit=True``, lme4's default); with ``refit=False`` both
    fits must already be ML (ValueError otherwise). The models are ordered by parameter count as
    anova does; nesting itself is the caller's responsibility. Returns :class:`LrtResult` with
    chi2 = deviance(small) - deviance(big), df = difference in npar, p = upper chi2 tail.
    """
    a, b = fit_small, fit_big
    if a.n_obs != b.n_obs or not np.array_equal(a.spec.y, b.spec.y):
        raise ValueError("the two fits are not on the same observations")
    if not refit and (a.reml or b.reml):
        raise ValueError("refit=False needs two ML fits (REML criteria of different fixed effects are not comparable)")
    return _nested_lrt(_as_ml(a), _as_ml(b))


def reml_lrt(fit_small: LmmFit, fit_big: LmmFit) -> LrtResult:
    """Likelihood-ratio test of two REML fits with the same fixed effects that differ in their random effects
    (lme4's ``anova(small, big, refit = FALSE)``): chi2 = REMLcrit(small) - REMLcrit(big), df = difference in
    covariance parameters, p = upper chi2 tail (the naive reference distribution, conservative for a variance on
    its boundary; Stram & Lee 1994). ValueError when the fits are not REML or differ in y or X."""
    a, b = fit_small, fit_big
    if not (a.reml and b.reml):
        raise ValueError("reml_lrt needs two REML fits")
    if a.n_obs != b.n_obs or not np.array_equal(a.spec.y, b.spec.y) or not np.array_equal(a.spec.X, b.spec.X):
        raise ValueError("REML criteria are comparable only on the same observations and fixed effects")
    return _nested_lrt(a, b)


def anova_refit_ml(fit_small: LmmFit, fit_big: LmmFit) -> LrtResult:
    """lme4's ``anova(small, big)``: refit REML fits with ML, then :func:`lrt`."""
    return lrt(fit_small, fit_big, refit=True)

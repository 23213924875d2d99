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

Confidence intervals: ``ci_t`` = beta +/- ``t_{df_j, .975}`` SE (lmerTest's ``confint(contest(...))``
and what a Satterthwaite table reports); ``ci_z`` = beta +/- ``z_.975`` SE (lme4's
``confint(fit, method = "Wald")``); :meth:`LmmFit.confint` and :meth:`LmmFit.coef_table` give both
at any level.

Random slopes, correlated ``(1 + x | g)`` or uncorrelated ``(1 + x || g)`` (formula syntax:
:mod:`modprefs.stats.mixed.formula`); :mod:`modprefs.stats.mixed.maximal` simplifies a slope structure
the data do not support down a fixed ladder, and :func:`with_satterthwaite` adds the df to a fit made
without them.

The optimiser is in :mod:`modprefs.stats.mixed.lmm_optimise`, the Satterthwaite df in
:mod:`modprefs.stats.mixed.lmm_satterthwaite`; here the model's inputs, the fit and its results.

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
from modprefs.stats.mixed.lmm_optimise import default_start, deviance_nu, diagonal_mask, optimise_theta
from modprefs.stats.mixed.lmm_satterthwaite import fixed_effect_dfs

#: lme4's ``isSingular`` default: a diagonal theta below this is "on the boundary".
SINGULAR_TOL = 1e-4


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
    start = default_start(model) if theta0 is None else np.asarray(theta0, dtype=float).reshape(model.n_theta)
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
    diag = diagonal_mask(model)
    theta, ok, n_eval, message = optimise_theta(model, reml, _start_theta(model, theta0, diag))
    ev = model.evaluate(theta, reml, grad=True, vcov_jac=satterthwaite)
    nu = deviance_nu(model, reml)
    sigma2 = ev.r2 / nu * scale * scale
    beta = b0 + scale * ev.beta
    vcov = sigma2 * ev.ainv_beta
    se = np.sqrt(np.diag(vcov))
    tval = beta / se
    z = scipy.stats.norm.ppf(0.975)
    no_df: tuple[np.ndarray, np.ndarray | None, str] = (np.full(p, np.nan), None, "")
    df, vcov_varpar, failure = fixed_effect_dfs(model, reml, theta, sigma2, scale, ev, vcov) if satterthwaite else no_df
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
    df, vcov_varpar, failure = fixed_effect_dfs(model, fit.reml, fit.theta, fit.sigma2, scale, ev, fit.vcov_beta)
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

    Examples
    --------
    A balanced one-way random-intercept model, where REML equals the ANOVA estimators: residual variance = MSW,
    group variance = (MSB - MSW) / n per group:

    >>> import pandas as pd
    >>> from modprefs.stats.mixed.lmm import fit_formula
    >>> df = pd.DataFrame({"y": [4.0, 5, 6, 8, 9, 10, 1, 2, 3, 6, 6, 9], "g": list("aaabbbcccddd")})
    >>> fit = fit_formula(df, "y ~ 1 + (1 | g)")
    >>> round(fit.sigma2, 4), round(float(fit.random_effects[0].cov[0, 0]), 4), round(float(fit.beta[0]), 4)
    (1.5, 8.4167, 5.75)
    """
    d = build_design(df, formula)
    terms = [
        RandomTerm(group=g, Z=Z, name=gn, coef_names=tuple(cn))
        for g, Z, gn, cn in zip(d.groups, d.Zs, d.group_names, d.coef_names)
    ]
    return fit_lmm(d.y, d.X, terms, reml=reml, x_names=d.x_names, satterthwaite=satterthwaite, theta0=theta0)


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

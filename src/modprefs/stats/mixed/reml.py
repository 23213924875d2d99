"""Linear mixed model with two crossed random intercepts, fitted by (RE)ML as lme4 does.

Model (n observations, p fixed effects, q1 and q2 levels)::

    y = X b + Z1 u1 + Z2 u2 + e,   u1 ~ N(0, s1 I_q1),  u2 ~ N(0, s2 I_q2),  e ~ N(0, s I_n)

which is lme4's ``lmer(y ~ X + (1|g1) + (1|g2), REML=...)``. The parameterisation follows lme4
(Bates, Maechler, Bolker & Walker 2015, "Fitting linear mixed-effects models using lme4", J. Stat.
Softw. 67(1), section 3): theta = (sqrt(s1/s), sqrt(s2/s)) are relative standard deviations,
b and s are profiled out, and the profiled criterion is

    ML:   log|L|^2 + n (1 + log(2 pi r2 / n))
    REML: log|L|^2 + log|R_X|^2 + (n - p) (1 + log(2 pi r2 / (n - p)))

with L L' = Lambda' Z'Z Lambda + I, R_X the Cholesky factor of the fixed-effects Schur complement
and r2 the penalised residual sum of squares.

Speed comes from the structure: Z1'Z1 is diagonal, so the g1 block of the (q1+q2+p) system is
eliminated exactly and only the dense (q2+p) Schur complement is factorised. The criterion's
gradient in theta is analytic (trace identities on the eliminated system plus the envelope
theorem for r2), the optimiser is L-BFGS-B with theta >= 0, and a few Newton steps on a
finite-difference Hessian of the analytic gradient polish the optimum to the precision of lme4 run
with tight tolerances. After the O(n) cross-tabulation, g1 levels with equal counts are pooled, so
an evaluation costs O(V (q2+p)^2 + (q2+p)^3) with V <= sqrt(2n) distinct counts, independent of n and q1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg.lapack
import scipy.optimize

from modprefs.stats.mixed.factors import encode_factor

#: lme4's ``isSingular`` default: a relative SD below this is "on the boundary".
SINGULAR_TOL = 1e-4


@dataclass(frozen=True)
class CrossedFit:
    """Result of :func:`fit_crossed_intercepts`.

    Attributes (units are those of ``y``; variances in y-units squared):
        beta: (p,) fixed effects, in the column order of ``X``.
        beta_se: (p,) their standard errors, sigma^2 (R_X'R_X)^-1 as lme4's ``vcov``.
        var_g1, var_g2: random-intercept variances of the first and second grouping factor.
        var_resid: residual variance (lme4's ``sigma(fit)^2``).
        theta: (2,) relative SDs (sqrt(var_g1/var_resid), sqrt(var_g2/var_resid)) as lme4's theta.
        objective: lme4's REML criterion (``REMLcrit``) or ML deviance, i.e. -2 log-likelihood.
        loglik: -objective / 2 (lme4's ``logLik``; the restricted log-likelihood when REML).
        reml: whether the REML criterion was optimised.
        n_obs: n.
        n_levels: (q1, q2).
        converged: optimiser success and a verified local minimum.
        n_iter: number of criterion evaluations.
        singular: some theta below :data:`SINGULAR_TOL` (a variance on its zero bound).
        message: optimiser / check message.
    """

    beta: np.ndarray
    beta_se: np.ndarray
    var_g1: float
    var_g2: float
    var_resid: float
    theta: np.ndarray
    objective: float
    loglik: float
    reml: bool
    n_obs: int
    n_levels: tuple[int, int]
    converged: bool
    n_iter: int
    singular: bool
    message: str


@dataclass(frozen=True)
class SufficientStats:
    """Sufficient statistics (cross-products) of the model; g1 is the eliminated factor.

    Every g1-level term of the criterion depends on theta only through D_a = t1^2 n1_a + 1, so
    levels with equal counts n1_a are pooled: with H = [N12, Z1X] (q1, m), the products
    H' diag(w) H needed per evaluation are sums of V precomputed (m, m) matrices, V = number of
    distinct counts (<= sqrt(2n), about 15 in the study) instead of q1 rank-one updates.
    """

    n: int
    p: int
    q1: int
    q2: int
    n1: np.ndarray  # (q1,)   rows per g1 level = diag(Z1'Z1)
    n2: np.ndarray  # (q2,)   rows per g2 level = diag(Z2'Z2)
    N12: np.ndarray  # (q1,q2) Z1'Z2 (cell counts)
    Z1X: np.ndarray  # (q1,p)
    Z2X: np.ndarray  # (q2,p)
    XtX: np.ndarray  # (p,p)
    Z1y: np.ndarray  # (q1,)
    Z2y: np.ndarray  # (q2,)
    Xty: np.ndarray  # (p,)
    yty: float
    H: np.ndarray  # (q1, m) [N12, Z1X]
    counts: np.ndarray  # (V,) distinct values of n1
    group: np.ndarray  # (q1,) index into counts of each g1 level
    group_size: np.ndarray  # (V,) levels per distinct count
    HH: np.ndarray | None  # (V, m, m) sum over the group's levels of H_a' H_a (None: too large, go per level)
    Hy: np.ndarray  # (V, m) sum of H_a Z1y_a
    yy1: np.ndarray  # (V,) sum of Z1y_a^2

    def cross(self, w: np.ndarray) -> np.ndarray:
        """H' diag(w[group]) H, (m, m), for per-group weights w (V,)."""
        if self.HH is not None:
            m = self.H.shape[1]
            return (w @ self.HH.reshape(w.size, m * m)).reshape(m, m)
        return (self.H * w[self.group][:, None]).T @ self.H


#: Largest pooled cross-product stack kept in memory (float64 elements).
_MAX_STACK = 2**24


@dataclass
class CriterionEvaluation:
    """Everything one evaluation of the criterion at theta produces."""

    f: float
    grad: np.ndarray | None
    r2: float
    x: np.ndarray  # (q2+p,) solution [u2, beta] of the reduced system
    Sinv_beta: np.ndarray  # (p,p) (R_X'R_X)^-1
    logdet_L: float


def _column_sums(codes: np.ndarray, q: int, M: np.ndarray) -> np.ndarray:
    """Z'M for the indicator matrix Z of ``codes``: (q, k) sums of M's (n, k) rows per level."""
    return np.stack([np.bincount(codes, weights=M[:, j], minlength=q) for j in range(M.shape[1])], axis=1)


def sufficient_statistics(
    y: np.ndarray, X: np.ndarray, c1: np.ndarray, q1: int, c2: np.ndarray, q2: int
) -> SufficientStats:
    n, p = X.shape
    n1 = np.bincount(c1, minlength=q1).astype(float)
    N12 = np.bincount(c1 * q2 + c2, minlength=q1 * q2).astype(float).reshape(q1, q2)
    Z1X = _column_sums(c1, q1, X)
    Z1y = np.bincount(c1, weights=y, minlength=q1)
    H = np.hstack([N12, Z1X])
    counts, group = np.unique(n1, return_inverse=True)
    group = group.reshape(-1)
    V, m = counts.size, H.shape[1]
    onehot = np.zeros((q1, V))
    onehot[np.arange(q1), group] = 1.0
    HH = None
    if V * m * m <= _MAX_STACK:
        order = np.argsort(group, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(np.bincount(group, minlength=V))])
        HH = np.empty((V, m, m))
        for v in range(V):  # V <= sqrt(2n) groups, not rows
            block = H[order[bounds[v] : bounds[v + 1]]]
            HH[v] = block.T @ block
    return SufficientStats(
        n=n,
        p=p,
        q1=q1,
        q2=q2,
        n1=n1,
        n2=np.bincount(c2, minlength=q2).astype(float),
        N12=N12,
        Z1X=Z1X,
        Z2X=_column_sums(c2, q2, X),
        XtX=X.T @ X,
        Z1y=Z1y,
        Z2y=np.bincount(c2, weights=y, minlength=q2),
        Xty=X.T @ y,
        yty=float(y @ y),
        H=H,
        counts=counts,
        group=group,
        group_size=onehot.sum(axis=0),
        HH=HH,
        Hy=onehot.T @ (H * Z1y[:, None]),
        yy1=onehot.T @ (Z1y * Z1y),
    )


_potrf = scipy.linalg.lapack.dpotrf
_potri = scipy.linalg.lapack.dpotri


def _cho_inverse(L: np.ndarray) -> np.ndarray:
    """Full symmetric inverse of L L' from its lower Cholesky factor (LAPACK potri)."""
    inv, info = _potri(L, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError("singular Cholesky factor")
    return np.tril(inv) + np.tril(inv, -1).T


def evaluate_criterion(theta: np.ndarray, s: SufficientStats, reml: bool, grad: bool = True) -> CriterionEvaluation:
    """Profiled criterion (lme4's, up to the y-scaling constant) and its gradient at ``theta``.

    The full system matrix is M = [[D, C], [C', B]] over (u1 | u2, beta) with D = t1^2 diag(n1) + I;
    S is the Schur complement B - C'D^-1 C, of size m = q2 + p. With C = t1 G, G = H diag(t2 1_q2, 1_p)::

        d log|M| / d t1 = 2 t1 (sum(n1 / D) - tr(S^-1 G'D^-2 G))
        d log|M| / d t2 = 2 sum_{a < q2} (S^-1 T2)[a, a],  T2 = [t2 diag(n2); X'Z2] - t1^2 G'D^-1 N12
        d r2 / d t_j    = -2 (Z_j' resid) . u_j               (envelope theorem)

    (d log|M| / d t_j = tr(M^-1 dM/dt_j), written so that nothing divides by t_j.) For ML the same
    identities apply to the u-only system, the leading q2 block of S.
    """
    t1, t2 = float(theta[0]), float(theta[1])
    q2, p = s.q2, s.p
    m = q2 + p
    t1sq = t1 * t1
    w = 1.0 / (t1sq * s.counts + 1.0)  # (V,) D^-1 per distinct count
    scale = np.ones(m)
    scale[:q2] = t2
    P = s.cross(w)  # H'D^-1 H
    S = -t1sq * (P * scale[:, None] * scale[None, :])
    S[:q2, :q2] += np.diag(t2 * t2 * s.n2 + 1.0)
    S[:q2, q2:] += t2 * s.Z2X
    S[q2:, :q2] += t2 * s.Z2X.T
    S[q2:, q2:] += s.XtX
    c = np.empty(m)
    c[:q2] = t2 * s.Z2y
    c[q2:] = s.Xty
    c -= t1sq * scale * (w @ s.Hy)
    yy = s.yty - t1sq * float(w @ s.yy1)
    L, info = _potrf(S, lower=1, clean=1)
    if info != 0:
        raise np.linalg.LinAlgError("Schur complement is not positive definite")
    Sinv = _cho_inverse(L)
    x = Sinv @ c
    r2 = yy - float(c @ x)
    if not r2 > 0:
        raise np.linalg.LinAlgError("non-positive penalised residual sum of squares")
    logdiag = np.log(np.diag(L))
    sum_log_D = -float(s.group_size @ np.log(w))
    logdet_L = sum_log_D + 2.0 * float(logdiag[:q2].sum())
    if reml:
        nu = s.n - p
        f = sum_log_D + 2.0 * float(logdiag.sum()) + nu * (1.0 + np.log(2.0 * np.pi * r2 / nu))
    else:
        nu = s.n
        f = logdet_L + nu * (1.0 + np.log(2.0 * np.pi * r2 / nu))
    g = None
    if grad:
        u2, beta = x[:q2], x[q2:]
        Gx = s.H @ (scale * x)
        Dinv = w[s.group]
        u1 = t1 * Dinv * (s.Z1y - Gx)
        z1r = s.Z1y - t1 * s.n1 * u1 - Gx
        z2r = s.Z2y - t1 * (s.N12.T @ u1) - t2 * s.n2 * u2 - s.Z2X @ beta
        dr2 = np.array([-2.0 * float(z1r @ u1), -2.0 * float(z2r @ u2)])
        T2 = -t1sq * (scale[:, None] * P[:, :q2])  # (m, q2)
        T2[:q2] += np.diag(t2 * s.n2)
        T2[q2:] += s.Z2X.T
        Q = s.cross(w * w) * scale[:, None] * scale[None, :]  # G'D^-2 G
        if reml:
            Si, Qk, T2k = Sinv, Q, T2
        else:
            Si = _cho_inverse(np.ascontiguousarray(L[:q2, :q2]))
            Qk, T2k = Q[:q2, :q2], T2[:q2]
        n_over_D = float(s.group_size @ (s.counts * w))
        dlogdet = np.array([2.0 * t1 * (n_over_D - float(np.sum(Si * Qk))), 2.0 * float(np.sum(Si[:q2] * T2k.T))])
        g = dlogdet + nu * dr2 / r2
    return CriterionEvaluation(f=float(f), grad=g, r2=r2, x=x, Sinv_beta=Sinv[q2:, q2:], logdet_L=logdet_L)


def _safe_fg(theta: np.ndarray, s: SufficientStats, reml: bool) -> tuple[float, np.ndarray]:
    try:
        ev = evaluate_criterion(theta, s, reml)
    except np.linalg.LinAlgError:
        return 1e300, np.zeros(2)
    assert ev.grad is not None  # evaluate_criterion computes the gradient by default
    return ev.f, ev.grad


def _newton_polish(
    theta: np.ndarray, s: SufficientStats, reml: bool, max_steps: int = 10
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, int]:
    """Newton steps on the free (non-zero) coordinates with a forward-difference Hessian.

    L-BFGS-B stops where its relative-decrease test fires; the REML surface is flat enough there
    that the variance components can still be ~1e-5 off. From that point Newton with one Hessian
    (a chord method) converges in two or three steps. Returns (theta, gradient there,
    free-coordinate Hessian or None, evaluations used).
    """
    f0, g0 = _safe_fg(theta, s, reml)
    free = np.flatnonzero(theta > 0)
    if free.size == 0:
        return theta, g0, None, 1
    hess = np.empty((free.size, free.size))
    for a, j in enumerate(free):
        h = 1e-6 * max(theta[j], 1e-2)
        probe = theta.copy()
        probe[j] += h
        hess[:, a] = (_safe_fg(probe, s, reml)[1][free] - g0[free]) / h
    hess = 0.5 * (hess + hess.T)
    n_eval = 1 + free.size
    if not np.all(np.linalg.eigvalsh(hess) > 0):
        return theta, g0, hess, n_eval
    for _ in range(max_steps):
        new = theta.copy()
        new[free] = theta[free] - np.linalg.solve(hess, g0[free])
        clipped = bool(np.any(new[free] <= 0))
        new = np.maximum(new, 0.0)
        f1, g1 = _safe_fg(new, s, reml)
        n_eval += 1
        if not f1 <= f0 + 1e-13 * max(1.0, abs(f0)):
            break
        moved = float(np.max(np.abs(new - theta) / np.maximum(theta, 1e-8)))
        theta, f0, g0 = new, f1, g1
        if clipped or moved < 1e-12:
            break
    return theta, g0, hess, n_eval


#: L-BFGS-B gets close; beyond a relative decrease of 1e-10 its line search only probes the float
#: noise of f. The Newton polish in :func:`_newton_polish` takes the last digits far more cheaply.
_LBFGSB_OPTIONS = {"ftol": 1e-10, "gtol": 1e-7, "maxiter": 1000, "maxls": 50}


def _optimise(s: SufficientStats, reml: bool, theta0: np.ndarray) -> tuple[np.ndarray, bool, int, str]:
    res = scipy.optimize.minimize(
        _safe_fg,
        theta0,
        args=(s, reml),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, None)] * 2,
        options=_LBFGSB_OPTIONS,
    )
    theta = np.maximum(np.asarray(res.x, float), 0.0)
    n_eval = int(res.nfev)
    message = str(res.message)
    ok = bool(res.success) or "ABNORMAL" in message  # line search stalls at machine precision
    for _restart in range(2):
        # The criterion is even in each theta_j, so theta_j = 0 is always stationary: snap
        # near-zero values to 0 when that is no worse, then verify 0 is a minimum and not a saddle.
        f_cur = _safe_fg(theta, s, reml)[0]
        n_eval += 1
        for j in range(2):
            if 0 < theta[j] < SINGULAR_TOL:
                trial = theta.copy()
                trial[j] = 0.0
                f_trial = _safe_fg(trial, s, reml)[0]
                n_eval += 1
                if f_trial <= f_cur:
                    theta, f_cur = trial, f_trial
        escape = None
        for k in np.flatnonzero(theta == 0):
            probe = theta.copy()
            probe[k] = 1e-2
            n_eval += 1
            if _safe_fg(probe, s, reml)[0] < f_cur:
                escape = probe
        if escape is None:
            break
        res = scipy.optimize.minimize(
            _safe_fg,
            escape,
            args=(s, reml),
            jac=True,
            method="L-BFGS-B",
            bounds=[(0.0, None)] * 2,
            options=_LBFGSB_OPTIONS,
        )
        theta = np.maximum(np.asarray(res.x, float), 0.0)
        n_eval += int(res.nfev)
        message += f"; restarted off a zero bound: {res.message}"
    theta, g, hess, used = _newton_polish(theta, s, reml)
    n_eval += used
    if hess is not None and not np.all(np.linalg.eigvalsh(hess) > 0):
        ok = False
        message += "; Hessian at the solution is not positive definite"
    free = theta > 0
    if free.any() and np.max(np.abs(g[free]) * np.maximum(theta[free], 1.0)) > 1e-3:
        ok = False
        message += f"; gradient not small at the solution ({g.tolist()})"
    return theta, ok, n_eval, message


def _checked_design(
    y: np.ndarray, X: np.ndarray, g1: np.ndarray, g2: np.ndarray, names: tuple[str, str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, np.ndarray, int]:
    """(y, X) as float arrays and (codes, levels) of g1 and g2, after every input check of the fit."""
    y = np.asarray(y, dtype=float)
    X = np.asarray(X, dtype=float)
    if y.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {y.shape}")
    if X.ndim != 2 or X.shape[0] != y.shape[0]:
        raise ValueError(f"X must be (n, p) with n = len(y) = {y.shape[0]}, got shape {X.shape}")
    n, p = X.shape
    if len(g1) != n or len(g2) != n:
        raise ValueError(f"g1 and g2 must have length n = {n}, got {len(g1)} and {len(g2)}")
    if not np.isfinite(y).all():
        raise ValueError("y contains NaN or infinite values")
    if not np.isfinite(X).all():
        raise ValueError("X contains NaN or infinite values")
    (c1, levels1), (c2, levels2) = encode_factor(g1, names[0]), encode_factor(g2, names[1])
    q1, q2 = levels1.size, levels2.size
    for name, q in ((names[0], q1), (names[1], q2)):
        if q < 2:
            raise ValueError(f"grouping factor {name} has {q} level(s); a random intercept needs at least 2")
    for name, q in ((names[0], q1), (names[1], q2)):
        if q >= n:
            raise ValueError(
                f"grouping factor {name} has {q} levels for {n} observations; "
                "it must have fewer levels than observations"
            )
    if p == 0 or n <= p + 1:
        raise ValueError(f"need at least one fixed effect and n > p + 1 (n = {n}, p = {p})")
    if np.linalg.matrix_rank(X) < p:
        raise ValueError(f"X is rank deficient (rank {np.linalg.matrix_rank(X)} < {p} columns)")
    return y, X, c1, q1, c2, q2


def _ols_centred_scaled(y: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
    """(b0, scale, ys): the OLS fit b0, the residual SD scale and the scaled residuals (y - X b0) / scale."""
    n, p = X.shape
    b0, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid0 = y - X @ b0
    scale = float(np.sqrt(resid0 @ resid0 / (n - p)))
    if not scale > 1e-12 * max(1.0, float(np.max(np.abs(y)))):
        raise ValueError("y is constant (or an exact linear function of X): no variance to partition")
    ys = resid0 / scale
    return b0, scale, ys


def fit_crossed_intercepts(
    y: np.ndarray,
    X: np.ndarray,
    g1: np.ndarray,
    g2: np.ndarray,
    reml: bool = True,
    theta0: tuple[float, float] | np.ndarray | None = None,
    names: tuple[str, str] = ("g1", "g2"),
) -> CrossedFit:
    """Fit ``y ~ X + (1|g1) + (1|g2)`` by REML (default) or ML, as lme4's ``lmer``.

    Args:
        y: (n,) response.
        X: (n, p) fixed-effects design, including the intercept column if one is wanted;
            must have full column rank.
        g1, g2: (n,) labels of the two crossed grouping factors (integer codes or any sortable
            labels; unused levels are ignored). Each needs at least 2 levels and fewer than n.
        reml: optimise the REML criterion (True) or the ML deviance (False).
        theta0: starting relative SDs (sqrt(var_g1/var_resid), sqrt(var_g2/var_resid));
            lme4's (1, 1) by default. A warm start (e.g. the full-data fit in a bootstrap) saves time.
        names: what to call g1 and g2 in error messages.

    Returns:
        :class:`CrossedFit`; variances in squared y-units, objective = lme4's REML criterion / deviance.

    Raises:
        ValueError: mismatched shapes, NaN/inf, fewer than 2 levels in a factor (or as many
            levels as observations), constant y (or y exactly in X's column space), rank-deficient X.

    The result does not depend on the order of (g1, g2): the factor with more levels is the one
    eliminated internally. The response is centred on its OLS fit and scaled before fitting
    (exactly equivalent, better conditioned); the objective is reported on the original scale.
    """
    y, X, c1, q1, c2, q2 = _checked_design(y, X, g1, g2, names)
    n, p = X.shape
    b0, scale, ys = _ols_centred_scaled(y, X)

    swap = q2 > q1
    if swap:
        c1, q1, c2, q2 = c2, q2, c1, q1
    s = sufficient_statistics(ys, X, c1, q1, c2, q2)
    start = np.array([1.0, 1.0]) if theta0 is None else np.asarray(theta0, dtype=float).reshape(2)
    if swap:
        start = start[::-1].copy()
    start = np.maximum(start, 1e-3)  # theta_j = 0 is stationary; start off the bound
    theta, ok, n_eval, message = _optimise(s, reml, start)
    ev = evaluate_criterion(theta, s, reml, grad=False)

    nu = n - p if reml else n
    sigma2 = ev.r2 / nu * scale * scale
    beta = b0 + scale * ev.x[q2:]
    beta_se = np.sqrt(np.diag(ev.Sinv_beta) * sigma2)
    objective = ev.f + nu * np.log(scale * scale)
    if swap:
        theta = theta[::-1].copy()
    return CrossedFit(
        beta=beta,
        beta_se=beta_se,
        var_g1=float(sigma2 * theta[0] ** 2),
        var_g2=float(sigma2 * theta[1] ** 2),
        var_resid=float(sigma2),
        theta=theta,
        objective=float(objective),
        loglik=float(-objective / 2),
        reml=reml,
        n_obs=n,
        n_levels=(q2, q1) if swap else (q1, q2),
        converged=ok,
        n_iter=n_eval,
        singular=bool(np.any(theta < SINGULAR_TOL)),
        message=message,
    )

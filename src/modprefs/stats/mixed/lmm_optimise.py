"""Minimising the profiled (RE)ML criterion over theta for :func:`modprefs.stats.mixed.lmm.fit_lmm`.

L-BFGS-B from lme4's start (1 on the diagonals of the T_k, 0 off them), with the diagonals bounded below by 0,
followed by Newton steps on a finite-difference Hessian of the analytic gradient
(:mod:`modprefs.stats.mixed.criterion`) and a snap of near-zero diagonals to the bound: this lands on the
optimum that lme4 reaches with tight tolerances (nloptwrap, xtol/ftol 1e-14).
"""

from __future__ import annotations

import numpy as np
import scipy.optimize
import scipy.stats

from modprefs.stats.mixed.criterion import ProfiledLmm


def _fg(theta: np.ndarray, model: ProfiledLmm, reml: bool) -> tuple[float, np.ndarray]:
    """Criterion and gradient for the optimiser; a huge value where the system breaks down."""
    try:
        ev = model.evaluate(theta, reml, grad=True)
    except np.linalg.LinAlgError:
        return 1e300, np.zeros(model.n_theta)
    return ev.f, ev.grad(deviance_nu(model, reml))


def deviance_nu(model: ProfiledLmm, reml: bool) -> float:
    return float(model.n - model.p if reml else model.n)


def diagonal_mask(model: ProfiledLmm) -> np.ndarray:
    """(n_theta,) True where theta is a diagonal element of some T_k (bounded below by 0)."""
    mask = np.zeros(model.n_theta, dtype=bool)
    for t in model.terms:
        rows, cols = t.lower
        mask[t.theta_start + np.flatnonzero(rows == cols)] = True
    return mask


def default_start(model: ProfiledLmm) -> np.ndarray:
    """lme4's default start: 1 on the diagonals, 0 off them."""
    return diagonal_mask(model).astype(float)


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
    nu = deviance_nu(model, reml)
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
    diag = diagonal_mask(model)
    n_eval = 0
    for j in np.flatnonzero(diag & (np.abs(theta) < 1e-6) & (theta != 0)):
        trial = theta.copy()
        trial[j] = 0.0
        f_trial = _fg(trial, model, reml)[0]
        n_eval += 1
        if f_trial <= f + 1e-12 * max(1.0, abs(f)):
            theta, f = trial, f_trial
    return theta, n_eval


def optimise_theta(model: ProfiledLmm, reml: bool, theta0: np.ndarray) -> tuple[np.ndarray, bool, int, str]:
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

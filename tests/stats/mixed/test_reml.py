"""The crossed random-intercepts fitter: against lme4 (tight tolerances), a dense-formula check, invariances."""

from __future__ import annotations

import numpy as np
import pytest

from modprefs.stats.mixed import reml as R
from modprefs.stats.mixed.reml import fit_crossed_intercepts
from support.lme4_reference import lme4_fit, require_lme4


def simulate_study(
    seed: int,
    n_prompts: int = 100,
    n_raters: int = 47,
    per_rater: int = 20,
    sd_clip: float = 8.0,
    sd_rater: float = 6.0,
    sd_resid: float = 15.0,
    drop: float = 0.03,
    remove_rater_means: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A study-like incomplete crossed design: each rater rates both clips of ``per_rater`` random prompts.

    Ratings are on a 0-100-like scale with order and trial-position effects; a share ``drop`` of
    ratings is missing at random. ``remove_rater_means`` subtracts each rater's mean noise, which
    puts the rater variance estimate on its zero bound (with ``sd_rater=0``).
    Returns y (n,), X (n, 3) = [1, presented_first, trial_z], clip codes (n,), rater codes (n,).
    """
    rng = np.random.default_rng(seed)
    prompt = np.concatenate([rng.choice(n_prompts, per_rater, replace=False) for _ in range(n_raters)])
    rater = np.repeat(np.arange(n_raters), per_rater)
    trial = np.tile(np.arange(1, per_rater + 1), n_raters)
    first = rng.integers(0, 2, prompt.size)
    clip = np.concatenate([2 * prompt + first, 2 * prompt + 1 - first])
    rater, trial = np.tile(rater, 2), np.tile(trial, 2)
    presented_first = np.repeat([1.0, 0.0], prompt.size)
    keep = rng.random(clip.size) >= drop
    clip, rater, trial, presented_first = clip[keep], rater[keep], trial[keep], presented_first[keep]
    noise = rng.normal(0.0, sd_resid, clip.size)
    if remove_rater_means:
        noise -= (np.bincount(rater, noise) / np.bincount(rater))[rater]
    y = (
        60.0
        + 2.0 * presented_first
        - 0.3 * trial
        + rng.normal(0.0, sd_clip, 2 * n_prompts)[clip]
        + rng.normal(0.0, sd_rater, n_raters)[rater]
        + noise
    )
    X = np.column_stack([np.ones(clip.size), presented_first, (trial - trial.mean()) / trial.std(ddof=1)])
    return y, X, clip, rater


def dense_criterion(y, X, g1, g2, v1, v2, v, reml=True) -> float:
    """-2 (restricted) log-likelihood from the marginal covariance V, the textbook way (small n only)."""
    n, p = X.shape
    Z1 = np.eye(g1.max() + 1)[g1]
    Z2 = np.eye(g2.max() + 1)[g2]
    V = v1 * Z1 @ Z1.T + v2 * Z2 @ Z2.T + v * np.eye(n)
    Vi = np.linalg.inv(V)
    XtViX = X.T @ Vi @ X
    r = y - X @ np.linalg.solve(XtViX, X.T @ Vi @ y)
    value = np.linalg.slogdet(V)[1] + r @ Vi @ r
    if reml:
        return value + (n - p) * np.log(2 * np.pi) + np.linalg.slogdet(XtViX)[1]
    return value + n * np.log(2 * np.pi)


@pytest.fixture(scope="module")
def small():
    return simulate_study(5, n_prompts=20, n_raters=12, per_rater=8)


# --- independent of R ---------------------------------------------------------------------------


@pytest.mark.parametrize("reml", [True, False])
@pytest.mark.parametrize("theta", [(0.7, 0.4), (0.0, 0.3), (1.5, 0.0), (2.0, 3.0)])
def test_analytic_gradient_matches_finite_differences(small, reml, theta):
    y, X, g1, g2 = small
    s = R.sufficient_statistics((y - y.mean()) / y.std(), X, g1, g1.max() + 1, g2, g2.max() + 1)
    th = np.array(theta)
    grad = R.evaluate_criterion(th, s, reml).grad
    h = 1e-6
    fd = [
        (R.evaluate_criterion(th + h * e, s, reml).f - R.evaluate_criterion(th - h * e, s, reml).f) / (2 * h)
        for e in np.eye(2)
    ]
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("reml", [True, False])
def test_objective_equals_dense_likelihood_and_is_a_minimum(small, reml):
    y, X, g1, g2 = small
    fit = fit_crossed_intercepts(y, X, g1, g2, reml=reml)
    assert fit.converged, fit.message
    best = dense_criterion(y, X, g1, g2, fit.var_g1, fit.var_g2, fit.var_resid, reml)
    assert fit.objective == pytest.approx(best, abs=1e-8)
    assert fit.loglik == pytest.approx(-best / 2, abs=1e-8)
    for factors in [(1.01, 1, 1), (0.99, 1, 1), (1, 1.01, 1), (1, 0.99, 1), (1, 1, 1.01), (1, 1, 0.99)]:
        moved = dense_criterion(
            y, X, g1, g2, fit.var_g1 * factors[0], fit.var_g2 * factors[1], fit.var_resid * factors[2], reml
        )
        assert moved > best


def test_fixed_effects_and_se_equal_gls_at_the_estimates(small):
    y, X, g1, g2 = small
    fit = fit_crossed_intercepts(y, X, g1, g2)
    Z1, Z2 = np.eye(g1.max() + 1)[g1], np.eye(g2.max() + 1)[g2]
    V = fit.var_g1 * Z1 @ Z1.T + fit.var_g2 * Z2 @ Z2.T + fit.var_resid * np.eye(y.size)
    Vi = np.linalg.inv(V)
    cov = np.linalg.inv(X.T @ Vi @ X)
    np.testing.assert_allclose(fit.beta, cov @ X.T @ Vi @ y, rtol=1e-9)
    np.testing.assert_allclose(fit.beta_se, np.sqrt(np.diag(cov)), rtol=1e-9)


def test_result_does_not_depend_on_factor_order_or_labels():
    y, X, clip, rater = simulate_study(11, n_prompts=15, n_raters=40, per_rater=6)  # more raters than clips
    a = fit_crossed_intercepts(y, X, clip, rater)
    b = fit_crossed_intercepts(y, X, rater, clip)
    relabel = np.random.default_rng(0).permutation(clip.max() + 1)
    c = fit_crossed_intercepts(y, X, np.array([f"c{v}" for v in relabel[clip]]), rater + 1000)
    for other, swap in ((b, True), (c, False)):
        v_other = (other.var_g2, other.var_g1) if swap else (other.var_g1, other.var_g2)
        np.testing.assert_allclose((a.var_g1, a.var_g2), v_other, rtol=1e-7)
        assert other.var_resid == pytest.approx(a.var_resid, rel=1e-8)
        assert other.objective == pytest.approx(a.objective, abs=1e-8)
        np.testing.assert_allclose(other.beta, a.beta, rtol=1e-8)
    assert a.n_levels == (b.n_levels[1], b.n_levels[0]) == (clip.max() + 1, 40)


def test_boundary_fit_is_flagged_and_exactly_zero():
    y, X, clip, rater = simulate_study(2, sd_rater=0.0, remove_rater_means=True)
    fit = fit_crossed_intercepts(y, X, clip, rater)
    assert fit.singular and fit.var_g2 == 0.0 and fit.var_g1 > 1.0
    assert fit.converged, fit.message
    # starting on the zero bound must not trap the optimiser when the optimum is interior
    y, X, clip, rater = simulate_study(1)
    free = fit_crossed_intercepts(y, X, clip, rater)
    trapped = fit_crossed_intercepts(y, X, clip, rater, theta0=(0.0, 0.0))
    assert not free.singular
    assert trapped.var_g2 == pytest.approx(free.var_g2, rel=1e-6)


def test_pooled_and_per_level_cross_products_agree(small, monkeypatch):
    y, X, g1, g2 = small
    pooled = fit_crossed_intercepts(y, X, g1, g2)
    monkeypatch.setattr(R, "_MAX_STACK", 0)  # forces H' diag(w) H level by level
    per_level = fit_crossed_intercepts(y, X, g1, g2)
    np.testing.assert_allclose(
        [per_level.var_g1, per_level.var_g2, per_level.var_resid],
        [pooled.var_g1, pooled.var_g2, pooled.var_resid],
        rtol=1e-7,
    )
    assert per_level.objective == pytest.approx(pooled.objective, abs=1e-8)


def test_scale_and_shift_equivariance():
    y, X, clip, rater = simulate_study(4, n_prompts=30, n_raters=20, per_rater=10)
    a = fit_crossed_intercepts(y, X, clip, rater)
    b = fit_crossed_intercepts(1000.0 + 0.01 * y, X, clip, rater)
    np.testing.assert_allclose(
        np.array([b.var_g1, b.var_g2, b.var_resid]) / 1e-4, [a.var_g1, a.var_g2, a.var_resid], rtol=1e-7
    )
    assert b.objective == pytest.approx(a.objective + (y.size - X.shape[1]) * np.log(1e-4), abs=1e-6)


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda y, X, g1, g2: (y, X, np.zeros_like(g1), g2), "at least 2"),
        (lambda y, X, g1, g2: (y, X, g1, np.zeros_like(g2)), "at least 2"),
        (lambda y, X, g1, g2: (np.full_like(y, 50.0), X, g1, g2), "constant"),
        (lambda y, X, g1, g2: (y, np.column_stack([X, 2 * X[:, 1]]), g1, g2), "rank deficient"),
        (lambda y, X, g1, g2: (np.where(np.arange(y.size) == 3, np.nan, y), X, g1, g2), "NaN"),
        (lambda y, X, g1, g2: (y, np.where(np.arange(y.size)[:, None] == 3, np.nan, X), g1, g2), "NaN"),
        (lambda y, X, g1, g2: (y[:-1], X, g1, g2), "X must be"),
        (lambda y, X, g1, g2: (y, X, np.arange(y.size), g2), "fewer levels than observations"),
    ],
)
def test_degenerate_inputs_raise_value_error(small, mutate, match):
    with pytest.raises(ValueError, match=match):
        fit_crossed_intercepts(*mutate(*small))


# --- against lme4 ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lme4():
    require_lme4()


def _close(ours: float, ref: float) -> bool:
    if abs(ref) < 1e-2:
        return abs(ours - ref) <= 1e-6
    return abs(ours - ref) <= 1e-4 * abs(ref)


LME4_CASES = {
    "study_unbalanced_reml": (dict(seed=1), True),
    "boundary_rater_variance_reml": (dict(seed=2, sd_rater=0.0, remove_rater_means=True), True),
    "study_unbalanced_ml": (dict(seed=3), False),
    "more_raters_than_clips_reml": (dict(seed=7, n_prompts=15, n_raters=60, per_rater=5, sd_clip=2.0), True),
    "tiny_clip_variance_ml": (dict(seed=8, n_prompts=40, n_raters=25, per_rater=10, sd_clip=0.5), False),
}


@pytest.mark.r
@pytest.mark.parametrize("case", sorted(LME4_CASES))
def test_matches_lme4_with_tight_tolerances(lme4, case):
    kwargs, reml = LME4_CASES[case]
    y, X, clip, rater = simulate_study(**kwargs)
    ref = lme4_fit(y, X, clip, rater, reml=reml)
    fit = fit_crossed_intercepts(y, X, clip, rater, reml=reml)
    assert fit.converged, fit.message
    for name in ("var_g1", "var_g2", "var_resid"):
        assert _close(getattr(fit, name), ref[name]), (name, getattr(fit, name), ref[name])
    for ours, theirs in zip(fit.beta, ref["beta"]):
        assert _close(ours, theirs), (fit.beta, ref["beta"])
    np.testing.assert_allclose(fit.beta_se, ref["beta_se"], rtol=1e-4)
    assert fit.objective == pytest.approx(ref["objective"], abs=1e-6)
    assert fit.loglik == pytest.approx(ref["loglik"], abs=1e-6)
    # a gradient-based optimum is at least as good as lme4's derivative-free one
    assert fit.objective <= ref["objective"] + 1e-9
    assert fit.singular == ref["singular"]

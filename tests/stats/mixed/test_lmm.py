"""The general LMM engine: derivatives, dense-likelihood identity, invariances, errors, formula parsing,
cross-checks with the crossed-intercepts engine and statsmodels, and (``-m r``) lme4 / lmerTest."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from modprefs.stats.mixed.criterion import ProfiledLmm
from modprefs.stats.mixed.formula import build_design, parse_formula
from modprefs.stats.mixed.lmm import RandomTerm, anova_refit_ml, fit_formula, fit_lmm, lrt, reml_lrt
from modprefs.stats.mixed.lmm_satterthwaite import satterthwaite_df
from modprefs.stats.mixed.reml import fit_crossed_intercepts
from support.lmm_simulate import simulate_ratings, simulate_trials, trials_from_ratings

SLOPE = "score ~ modality + (1 + modality | prompt) + (1 | participant)"
NO_SLOPE = "score ~ modality + (1 | prompt) + (1 | participant)"
OMNIBUS = "rating ~ presented_first*modality + len_z*modality + trial_z*modality + (1|participant) + (1|clip)"
#: Table 2's default random structure: the stimulus is a clip in a modality
#: (modprefs.stats.tables.modality.TABLE2_RANDOM)
OMNIBUS_CLIP_MODALITY = OMNIBUS + " + (1|clip:modality)"
#: Table 2's participant_slopes structure (modprefs.stats.tables.modality.TABLE2_RANDOM) and its ladder's next steps
_OMNIBUS_FIXED = OMNIBUS.split(" + (1|participant)")[0]
OMNIBUS_SLOPES = [
    f"{_OMNIBUS_FIXED} + (1 + presented_first + trial_z | participant) + (1|clip) + (1|clip:modality)",
    f"{_OMNIBUS_FIXED} + (1 + presented_first + trial_z || participant) + (1|clip) + (1|clip:modality)",
    f"{_OMNIBUS_FIXED} + (1 + presented_first || participant) + (1|clip) + (1|clip:modality)",
]
OMNIBUS_NAMES = [
    "(Intercept)",
    "presented_first",
    "modality",
    "len_z",
    "trial_z",
    "presented_first:modality",
    "modality:len_z",
    "modality:trial_z",
]


def small_three_term(seed: int = 0, q: int = 25, h: int = 15, per: int = 14) -> pd.DataFrame:
    """(1 + x + z | g) with crossed (1 | h): a term with r = 3 next to an intercept term."""
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(q), per)
    n = g.size
    hh = rng.integers(0, h, n)
    x, z = rng.normal(size=n), rng.integers(0, 2, n).astype(float)
    cov = np.array([[4.0, 1.0, -0.5], [1.0, 2.0, 0.3], [-0.5, 0.3, 1.0]])
    b = rng.multivariate_normal(np.zeros(3), cov, q)
    y = 1 + 0.5 * x - 0.3 * z + b[g, 0] + b[g, 1] * x + b[g, 2] * z + rng.normal(0, 1.0, h)[hh] + rng.normal(0, 1.5, n)
    return pd.DataFrame({"y": y, "x": x, "z": z, "g": g, "h": hh})


def singular_trials() -> pd.DataFrame:
    """No participant signal at all (participant means removed) and no slope: variances on the zero bound."""
    df = simulate_trials(9, n_prompts=40, n_raters=30, trials=10, sd_participant=0.0, sd_slope=0.0)
    df["score"] -= df.groupby("participant").score.transform("mean") - df.score.mean()
    return df


def _model(df: pd.DataFrame, formula: str) -> ProfiledLmm:
    d = build_design(df, formula)
    codes = [np.unique(g, return_inverse=True)[1].reshape(-1) for g in d.groups]
    return ProfiledLmm((d.y - d.y.mean()) / d.y.std(), d.X, codes, [int(c.max()) + 1 for c in codes], d.Zs)


def _dense_criterion(df: pd.DataFrame, formula: str, fit) -> float:
    """-2 (restricted) log-likelihood from the marginal covariance V at the fit's estimates (small n)."""
    d = build_design(df, formula)
    n, p = d.X.shape
    V = fit.sigma2 * np.eye(n)
    for g, Z, re_ in zip(d.groups, d.Zs, fit.random_effects):
        codes = np.unique(g, return_inverse=True)[1].reshape(-1)
        Zfull = np.zeros((n, re_.n_levels * Z.shape[1]))
        for j in range(Z.shape[1]):
            Zfull[np.arange(n), codes * Z.shape[1] + j] = Z[:, j]
        V += Zfull @ np.kron(np.eye(re_.n_levels), re_.cov) @ Zfull.T
    Vi = np.linalg.inv(V)
    XtViX = d.X.T @ Vi @ d.X
    r = d.y - d.X @ np.linalg.solve(XtViX, d.X.T @ Vi @ d.y)
    value = np.linalg.slogdet(V)[1] + r @ Vi @ r
    if fit.reml:
        return value + (n - p) * np.log(2 * np.pi) + np.linalg.slogdet(XtViX)[1]
    return value + n * np.log(2 * np.pi)


@pytest.fixture(scope="module")
def trials_small() -> pd.DataFrame:
    return simulate_trials(5, n_prompts=30, n_raters=24, trials=10)


# --- derivatives and the criterion --------------------------------------------------------------


@pytest.mark.parametrize("reml", [True, False])
@pytest.mark.parametrize("case", ["slope", "three", "intercepts"])
def test_analytic_derivatives_match_finite_differences(trials_small, reml, case):
    if case == "slope":
        m, theta = _model(trials_small, SLOPE), np.array([0.7, -0.2, 0.4, 0.3])
    elif case == "three":
        m, theta = (
            _model(small_three_term(), "y ~ x + z + (1 + x + z | g) + (1 | h)"),
            np.array([1.1, 0.3, -0.2, 0.8, 0.1, 0.6, 0.5]),
        )
    else:
        m, theta = _model(trials_small, NO_SLOPE), np.array([0.6, 0.0])
    ev = m.evaluate(theta, reml, grad=True, vcov_jac=True)
    h = 1e-6
    for j, e in enumerate(np.eye(theta.size)):
        up, dn = m.evaluate(theta + h * e, reml), m.evaluate(theta - h * e, reml)
        assert ev.dlogdet[j] == pytest.approx((up.logdet - dn.logdet) / (2 * h), rel=1e-6, abs=1e-6)
        assert ev.dr2[j] == pytest.approx((up.r2 - dn.r2) / (2 * h), rel=1e-6, abs=1e-6)
        np.testing.assert_allclose(ev.dainv_beta[j], (up.ainv_beta - dn.ainv_beta) / (2 * h), rtol=1e-5, atol=1e-9)


SMALL_FORMULAS = [
    "y ~ x + (1 | g)",
    "y ~ x + z + (1 | g) + (1 | g:h)",
    "y ~ x + (1 + x | g)",
    "y ~ x + (1 + x + z | g)",
]


@pytest.mark.parametrize("reml", [True, False])
@pytest.mark.parametrize("formula", SMALL_FORMULAS)
def test_single_nested_and_wide_terms_equal_dense_likelihood(reml, formula):
    data = small_three_term(1)
    fit = fit_formula(data, formula, reml=reml)
    assert fit.converged, fit.message
    assert fit.objective == pytest.approx(_dense_criterion(data, formula, fit), abs=1e-7)


@pytest.mark.parametrize("reml", [True, False])
def test_objective_equals_dense_likelihood_and_is_a_minimum(trials_small, reml):
    fit = fit_formula(trials_small, SLOPE, reml=reml)
    assert fit.converged, fit.message
    best = _dense_criterion(trials_small, SLOPE, fit)
    assert fit.objective == pytest.approx(best, abs=1e-7)
    assert fit.loglik == pytest.approx(-best / 2, abs=1e-7)
    for j in range(fit.theta.size):
        for step in (-1e-3, 1e-3):
            moved = fit.theta.copy()
            moved[j] += step
            assert (
                _model(trials_small, SLOPE).evaluate(moved, reml).f
                > _model(trials_small, SLOPE).evaluate(fit.theta, reml).f
            )


def test_fixed_effects_and_se_equal_gls_at_the_estimates(trials_small):
    fit = fit_formula(trials_small, SLOPE)
    d = build_design(trials_small, SLOPE)
    n = d.y.size
    codes = np.unique(d.groups[0], return_inverse=True)[1].reshape(-1)
    Z = np.zeros((n, 2 * codes.max() + 2))
    Z[np.arange(n), 2 * codes], Z[np.arange(n), 2 * codes + 1] = 1.0, d.Zs[0][:, 1]
    P = np.eye(np.unique(d.groups[1]).size)[np.unique(d.groups[1], return_inverse=True)[1].reshape(-1)]
    V = (
        Z @ np.kron(np.eye(codes.max() + 1), fit.random_effects[0].cov) @ Z.T
        + fit.random_effects[1].cov[0, 0] * P @ P.T
        + fit.sigma2 * np.eye(n)
    )
    Vi = np.linalg.inv(V)
    cov = np.linalg.inv(d.X.T @ Vi @ d.X)
    np.testing.assert_allclose(fit.beta, cov @ d.X.T @ Vi @ d.y, rtol=1e-9)
    np.testing.assert_allclose(fit.vcov_beta, cov, rtol=1e-9)


# --- cross-checks without R ---------------------------------------------------------------------


@pytest.mark.parametrize("reml", [True, False])
def test_two_crossed_intercepts_equal_the_dedicated_engine(reml):
    ratings = simulate_ratings(3, n_prompts=40, n_raters=30, trials=10)
    fit = fit_formula(ratings, OMNIBUS, reml=reml)
    d = build_design(ratings, OMNIBUS)
    ref = fit_crossed_intercepts(d.y, d.X, d.groups[1], d.groups[0], reml=reml)
    assert fit.converged and ref.converged
    np.testing.assert_allclose(
        [fit.random_effects[1].cov[0, 0], fit.random_effects[0].cov[0, 0], fit.sigma2],
        [ref.var_g1, ref.var_g2, ref.var_resid],
        rtol=1e-6,
    )
    np.testing.assert_allclose(fit.beta, ref.beta, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(fit.beta_se, ref.beta_se, rtol=1e-6)
    assert fit.objective == pytest.approx(ref.objective, abs=1e-7)


@pytest.mark.parametrize("slope", [False, True])
def test_single_grouping_matches_statsmodels(slope):
    """statsmodels MixedLM fits one grouping factor (with a correlated random slope): same REML optimum."""
    import statsmodels.api as sm

    rng = np.random.default_rng(3)
    g = np.repeat(np.arange(40), 12)
    n = g.size
    x = rng.normal(size=n)
    b = rng.multivariate_normal([0, 0], [[4, 1], [1, 2]], 40)
    y = 1 + 0.5 * x + b[g, 0] + b[g, 1] * x + rng.normal(0, 1.5, n)
    X = np.column_stack([np.ones(n), x])
    Z = np.column_stack([np.ones(n), x]) if slope else np.ones((n, 1))
    fit = fit_lmm(y, X, [RandomTerm(g, Z, "g")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sm.MixedLM(y, X, groups=g, exog_re=Z).fit(reml=True, method="bfgs", gtol=1e-12, maxiter=5000)
    np.testing.assert_allclose(fit.random_effects[0].cov, np.asarray(res.cov_re), rtol=1e-6)
    assert fit.sigma2 == pytest.approx(res.scale, rel=1e-6)
    np.testing.assert_allclose(fit.beta, np.asarray(res.fe_params), rtol=1e-8)
    assert fit.loglik == pytest.approx(res.llf, abs=1e-6)
    # statsmodels' SEs come from its joint Hessian, not (X'V^-1 X)^-1: close, not identical
    np.testing.assert_allclose(fit.beta_se, np.asarray(res.bse_fe), rtol=1e-3)


def test_satterthwaite_df_is_q_minus_1_for_the_mean_of_a_balanced_one_way_design():
    rng = np.random.default_rng(4)
    q, per = 12, 6
    g = np.repeat(np.arange(q), per)
    y = 5 + rng.normal(0, 2, q)[g] + rng.normal(0, 1, g.size)
    fit = fit_lmm(y, np.ones((g.size, 1)), [RandomTerm(g, np.ones(g.size), "g")], x_names=["(Intercept)"])
    assert fit.df[0] == pytest.approx(q - 1, rel=1e-6)
    assert fit.p_value[0] == pytest.approx(2 * scipy.stats.t.sf(abs(fit.t_value[0]), q - 1), rel=1e-6)
    tq = scipy.stats.t.ppf(0.975, q - 1)
    np.testing.assert_allclose(fit.ci_t[0], fit.beta[0] + np.array([-tq, tq]) * fit.beta_se[0], rtol=1e-6)
    z = scipy.stats.norm.ppf(0.975)
    np.testing.assert_allclose(fit.ci_z[0], fit.beta[0] + np.array([-z, z]) * fit.beta_se[0], rtol=1e-12)


def test_satterthwaite_df_for_contrasts_matches_single_coefficients(trials_small):
    fit = fit_formula(trials_small, SLOPE)
    assert fit.vcov_varpar is not None and fit.vcov_varpar.shape == (5, 5)
    m = _model(trials_small, SLOPE)
    # rebuild the Jacobian on the original scale from the fit and compare the identity contrasts
    ev = m.evaluate(fit.theta, True, vcov_jac=True)
    jac = np.concatenate([fit.sigma2 * ev.dainv_beta, (2 * fit.sigma * ev.ainv_beta)[None]])
    np.testing.assert_allclose(satterthwaite_df(fit.vcov_beta, jac, fit.vcov_varpar), fit.df, rtol=1e-8)


# --- invariances, boundaries, LRT -------------------------------------------------------------


def test_term_order_labels_and_scale_do_not_matter(trials_small):
    a = fit_formula(trials_small, SLOPE)
    b = fit_formula(trials_small, "score ~ modality + (1 | participant) + (1 + modality | prompt)")
    relabelled = trials_small.assign(prompt="p" + trials_small.prompt.astype(str), score=10 + 3 * trials_small.score)
    c = fit_formula(relabelled, SLOPE)
    np.testing.assert_allclose(b.random_effects[1].cov, a.random_effects[0].cov, rtol=1e-6)
    assert b.objective == pytest.approx(a.objective, abs=1e-8)
    np.testing.assert_allclose(b.df, a.df, rtol=1e-6)
    np.testing.assert_allclose(c.random_effects[0].cov, 9 * a.random_effects[0].cov, rtol=1e-6)
    np.testing.assert_allclose(c.beta_se, 3 * a.beta_se, rtol=1e-7)
    np.testing.assert_allclose(c.df, a.df, rtol=1e-6)
    assert c.objective == pytest.approx(a.objective + (a.n_obs - 2) * np.log(9), abs=1e-6)


def test_zero_variances_are_flagged_singular_and_converge():
    fit = fit_formula(singular_trials(), SLOPE)
    assert fit.converged, fit.message
    assert fit.singular
    assert fit.random_effects[1].cov[0, 0] == pytest.approx(0.0, abs=1e-8)
    assert np.isfinite(fit.beta_se).all()


def test_start_on_the_bound_reaches_the_interior_optimum(trials_small):
    free = fit_formula(trials_small, SLOPE)
    d = build_design(trials_small, SLOPE)
    terms = [RandomTerm(g, Z, n) for g, Z, n in zip(d.groups, d.Zs, d.group_names)]
    trapped = fit_lmm(d.y, d.X, terms, theta0=np.zeros(4))
    assert trapped.objective == pytest.approx(free.objective, abs=1e-8)
    np.testing.assert_allclose(trapped.random_effects[0].cov, free.random_effects[0].cov, rtol=1e-6)


def test_lrt_refits_with_ml_as_anova_does(trials_small):
    small, big = fit_formula(trials_small, NO_SLOPE), fit_formula(trials_small, SLOPE)
    res = anova_refit_ml(small, big)
    ml_small = fit_formula(trials_small, NO_SLOPE, reml=False)
    ml_big = fit_formula(trials_small, SLOPE, reml=False)
    assert res.df == 2 and not res.small.reml and not res.big.reml
    assert res.chi2 == pytest.approx(ml_small.objective - ml_big.objective, abs=1e-9)
    assert res.p == pytest.approx(scipy.stats.chi2.sf(res.chi2, 2), rel=1e-9)
    assert lrt(big, small).chi2 == pytest.approx(res.chi2, abs=1e-9)  # ordered by npar
    assert lrt(ml_small, ml_big, refit=False).chi2 == pytest.approx(res.chi2, abs=1e-9)
    with pytest.raises(ValueError, match="ML"):
        lrt(small, big, refit=False)
    other = fit_formula(trials_small.assign(score=trials_small.score + 1.0), SLOPE)
    with pytest.raises(ValueError, match="same observations"):
        lrt(small, other)


def test_tables(trials_small):
    fit = fit_formula(trials_small, SLOPE)
    coef = fit.coef_table()
    assert list(coef.term) == ["(Intercept)", "modality"]
    assert {"estimate", "se", "df", "t", "p", "ci_t_lo", "ci_z_hi"} <= set(coef.columns)
    vt = fit.variance_table()
    assert list(vt.group) == ["prompt", "prompt", "prompt", "participant", "Residual"]
    assert vt.sdcor.iloc[2] == pytest.approx(fit.random_effects[0].corr[1, 0])
    assert fit.random_effects[0].modes.shape == (30, 2)


# --- errors -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def arrays(trials_small):
    d = build_design(trials_small, SLOPE)
    return d.y, d.X, [RandomTerm(g, Z, n) for g, Z, n in zip(d.groups, d.Zs, d.group_names)]


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda y, X, t: (np.where(np.arange(y.size) == 3, np.nan, y), X, t), "NaN"),
        (lambda y, X, t: (y[:-1], X, t), "X must be"),
        (lambda y, X, t: (y, np.column_stack([X, 2 * X[:, 1]]), t), "rank deficient"),
        (lambda y, X, t: (np.full_like(y, 3.0), X, t), "constant"),
        (lambda y, X, t: (y, X, [RandomTerm(np.zeros(y.size), np.ones(y.size), "one")]), "at least 2"),
        (lambda y, X, t: (y, X, [RandomTerm(np.arange(y.size), np.ones(y.size), "each")]), "unidentifiable"),
        (lambda y, X, t: (y, X, [RandomTerm(t[0].group, t[0].Z[:-1], "short")]), "Z of term"),
        (lambda y, X, t: (y, X, [RandomTerm(t[0].group, np.where(t[0].Z > 0, np.inf, 0.0), "inf")]), "NaN or inf"),
        (lambda y, X, t: (y, X, []), "at least one random"),
    ],
)
def test_degenerate_inputs_raise_value_error(arrays, mutate, match):
    with pytest.raises(ValueError, match=match):
        fit_lmm(*mutate(*arrays))


@pytest.mark.parametrize(
    "formula, match",
    [
        ("score ~ modality", "no random-effects"),
        ("score ~ nope + (1 | prompt)", "not in the data"),
        ("score ~ modality + (1 | nope)", "not in the data"),
        ("score ~ log(modality) + (1 | prompt)", "cannot parse"),
        ("score modality (1 | prompt)", "exactly one '~'"),
    ],
)
def test_formula_errors(trials_small, formula, match):
    with pytest.raises(ValueError, match=match):
        fit_formula(trials_small, formula)


# --- formula parsing ----------------------------------------------------------------------------


def test_formula_orders_terms_and_names_like_r():
    parsed = parse_formula(OMNIBUS)
    assert parsed.intercept and parsed.response == "rating"
    names = [":".join(t) for t in parsed.fixed]
    assert ["(Intercept)"] + names == OMNIBUS_NAMES
    assert parsed.random == ((True, (), ("participant",)), (True, (), ("clip",)))
    p = parse_formula("y ~ 0 + a*b*c + (x | g) + (0 + x | h) + (1 | g:h)")
    assert not p.intercept
    assert [":".join(t) for t in p.fixed] == ["a", "b", "c", "a:b", "a:c", "b:c", "a:b:c"]
    assert p.random == ((True, (("x",),), ("g",)), (False, (("x",),), ("h",)), (True, (), ("g", "h")))
    assert not parse_formula("y ~ a - 1 + (1 | g)").intercept


def test_formula_design_with_factors_and_combined_groups():
    df = pd.DataFrame(
        {
            "y": np.arange(12.0) ** 1.3,
            "cond": ["text", "audio", "video"] * 4,
            "flag": [True, False] * 6,
            "x": np.linspace(-1, 1, 12),
            "g": list("aabbccaabbcc"),
            "h": [1, 2] * 6,
        }
    )
    d = build_design(df, "y ~ cond*x + flag + (1 + x | g) + (1 | g:h)")
    assert d.x_names == ["(Intercept)", "condtext", "condvideo", "x", "flagTRUE", "condtext:x", "condvideo:x"]
    np.testing.assert_array_equal(d.X[:, 1], (df.cond == "text").astype(float))
    np.testing.assert_allclose(d.X[:, 6], (df.cond == "video") * df.x)
    assert d.coef_names == [["(Intercept)", "x"], ["(Intercept)"]]
    assert d.group_names == ["g", "g:h"] and len(set(d.groups[1])) == 6


def test_formula_fit_equals_array_fit(trials_small):
    a = fit_formula(trials_small, SLOPE)
    n = len(trials_small)
    mod = trials_small.modality.to_numpy(float)
    b = fit_lmm(
        trials_small.score.to_numpy(float),
        np.column_stack([np.ones(n), mod]),
        [
            RandomTerm(trials_small.prompt.to_numpy(), np.column_stack([np.ones(n), mod]), "prompt"),
            RandomTerm(trials_small.participant.to_numpy(), np.ones(n), "participant"),
        ],
    )
    np.testing.assert_allclose(a.beta, b.beta, rtol=1e-12)
    assert a.x_names == ["(Intercept)", "modality"] and a.random_effects[0].coef_names == ("(Intercept)", "modality")


# --- against lme4 + lmerTest (tight tolerances) --------------------------------------------------


def _close(ours, ref, rel: float = 1e-4, small: float = 1e-2, abs_small: float = 1e-6) -> None:
    """Relative agreement, absolute where |ref| < ``small`` (the brief: 1e-4 rel, 1e-6 abs below 1e-2)."""
    ours, ref = np.atleast_1d(np.asarray(ours, float)), np.atleast_1d(np.asarray(ref, float))
    assert ours.shape == ref.shape
    tiny = np.abs(ref) < small
    bad = np.where(tiny, np.abs(ours - ref) > abs_small, np.abs(ours - ref) > rel * np.abs(ref))
    assert not bad.any(), (ours[bad], ref[bad])


def _varcorr(fit) -> pd.DataFrame:
    vt = fit.variance_table()
    vt["var1"], vt["var2"] = vt["var1"].fillna(""), vt["var2"].fillna("")
    return vt.set_index(["group", "var1", "var2"])


def _r_group(name: str) -> str:
    """lme4's VarCorr name of a group as ours: ``||`` terms are ``g``, ``g.1``, ``g.2`` and ``g1:g2`` is ``g1.g2``."""
    return re.sub(r"\.\d+$", "", name).replace(".", ":")


def compare_with_reference(fit, ref: dict) -> None:
    """Every quantity lme4/lmerTest report, to the brief's tolerances."""
    assert fit.converged, fit.message
    assert fit.x_names == ref["names"]
    ours = _varcorr(fit)
    theirs = ref["varcorr"].rename(columns={"grp": "group"}).assign(group=lambda v: v["group"].map(_r_group))
    theirs = theirs.set_index(["group", "var1", "var2"])
    theirs = theirs.loc[ours.index]
    is_cov = ours.index.get_level_values("var2") != ""
    _close(ours.vcov[~is_cov], theirs.vcov[~is_cov])
    # a covariance to 1e-4 of the SDs it is made of (its correlation, in sdcor, is held to 1e-4 / 1e-6 abs):
    # relative to itself, a near-zero covariance between large variances would ask for more digits than the
    # variances themselves have
    for (group, var1, var2), cov in ours.vcov[is_cov].items():
        scale = np.sqrt(ours.vcov[(group, var1, "")] * ours.vcov[(group, var2, "")])
        assert abs(cov - theirs.vcov[(group, var1, var2)]) <= 1e-4 * scale, (group, var1, var2)
    _close(ours.sdcor, theirs.sdcor)
    _close(fit.beta, ref["estimate"])
    _close(fit.beta_se, ref["se"])
    np.testing.assert_allclose(fit.vcov_beta, ref["vcov"], rtol=1e-4, atol=1e-8)
    assert fit.objective == pytest.approx(ref["objective"], abs=1e-6)
    assert fit.loglik == pytest.approx(ref["loglik"], abs=1e-6)
    assert fit.singular == ref["singular"]
    np.testing.assert_allclose(fit.df, ref["df"], rtol=1e-3)
    _close(fit.t_value, ref["t"])
    _close(fit.p_value, ref["p"], rel=1e-3, small=1e-6, abs_small=1e-9)
    # a CI bound to 1e-4 relative, or to 1e-4 of its SE where the bound is near 0 (b + t SE is then a difference of
    # two numbers each known to 1e-4 relative: its own relative error is unbounded)
    for ours_bound, key in ((fit.ci_t[:, 0], "ci_t_lo"), (fit.ci_t[:, 1], "ci_t_hi")) + (
        (fit.ci_z[:, 0], "ci_z_lo"),
        (fit.ci_z[:, 1], "ci_z_hi"),
    ):
        err = np.abs(ours_bound - ref[key])
        assert np.all(err <= 1e-4 * np.maximum(np.abs(ref[key]), ref["se"])), (key, err)


@pytest.fixture(scope="module")
def r_available():
    from support.lmertest_reference import require_lmertest

    require_lmertest()


#: name -> (data, formulas, factors, anova pairs); every case is fitted with REML and with ML.
def _r_cases() -> dict:
    ratings = simulate_ratings(12)
    return {
        "slope_trials": (simulate_trials(11), [SLOPE, NO_SLOPE], ["prompt", "participant"], [(1, 0)]),
        "omnibus_ratings": (ratings, [OMNIBUS], ["clip", "participant"], []),
        "omnibus_clip_modality": (ratings, [OMNIBUS_CLIP_MODALITY, OMNIBUS], ["clip", "participant"], [(1, 0)]),
        "slope_from_ratings": (trials_from_ratings(ratings), [SLOPE, NO_SLOPE], ["prompt", "participant"], [(1, 0)]),
        "three_coefficient_term": (small_three_term(), ["y ~ x + z + (1 + x + z | g) + (1 | h)"], ["g", "h"], []),
        # 1,440 ratings (60 prompts, 60 raters x 12 trials), raters with their own primacy (SD 8) and drift (SD 4)
        "omnibus_participant_slopes": (
            simulate_ratings(3, n_prompts=60, n_raters=60, trials=12, sd_primacy=8.0, sd_drift=4.0),
            OMNIBUS_SLOPES,
            ["clip", "participant"],
            [(1, 0), (2, 1)],
        ),
        "single_and_nested_terms": (small_three_term(1), SMALL_FORMULAS, ["g", "h"], [(0, 1)]),
        "omnibus_categorical": (
            ratings.assign(modality=np.where(ratings.modality > 0, "text", "audio")),
            [OMNIBUS],
            ["clip", "participant"],
            [],
        ),
        "singular_participant": (singular_trials(), [SLOPE], ["prompt", "participant"], []),
        "correlation_at_bound": (
            simulate_trials(4, n_prompts=30, n_raters=20, trials=10, sd_slope=0.0, sd_participant=3.0),
            [SLOPE],
            ["prompt", "participant"],
            [],
        ),
        "correlation_and_variance_at_bound": (
            simulate_trials(0, n_prompts=30, n_raters=20, trials=10, sd_slope=0.0, sd_participant=3.0),
            [SLOPE],
            ["prompt", "participant"],
            [],
        ),
    }


R_CASES = _r_cases()


@pytest.fixture(scope="module")
def r_refs(r_available):
    from support.lmertest_reference import lmertest_run

    cache: dict = {}

    def get(case: str, reml: bool) -> dict:
        if (case, reml) not in cache:
            data, formulas, factors, pairs = R_CASES[case]
            cache[(case, reml)] = lmertest_run(data, formulas, factors, reml=reml, pairs=pairs)
        return cache[(case, reml)]

    return get


@pytest.mark.r
@pytest.mark.parametrize("reml", [True, False], ids=["REML", "ML"])
@pytest.mark.parametrize(
    "case",
    [
        "slope_trials",
        "omnibus_ratings",
        "omnibus_clip_modality",
        "slope_from_ratings",
        "three_coefficient_term",
        "omnibus_participant_slopes",
        "single_and_nested_terms",
    ],
)
def test_matches_lme4_and_lmertest(r_refs, case, reml):
    data, formulas, _, pairs = R_CASES[case]
    ref = r_refs(case, reml)
    fits = [fit_formula(data, f, reml=reml) for f in formulas]
    for fit, r in zip(fits, ref["fits"]):
        compare_with_reference(fit, r)
    for (i, j), a in zip(pairs, ref["anova"]):
        res = lrt(fits[i], fits[j])
        assert res.df == a["df"]
        assert res.chi2 == pytest.approx(a["chi2"], abs=1e-3)
        assert res.p == pytest.approx(a["p"], rel=1e-3)


@pytest.mark.r
def test_reml_lrt_equals_anova_without_refit(r_available):
    """The slopes' test of Table 2's ladder (``reml_lrt``) is lme4's ``anova(small, big, refit = FALSE)``: REML
    criteria compared, df = covariance parameters added (correlated -> uncorrelated: 3; uncorrelated -> intercept
    + one slope: 1; correlated against the intercept: 5)."""
    from support.lmertest_reference import lmertest_run

    data = R_CASES["omnibus_participant_slopes"][0]
    intercept = OMNIBUS_SLOPES[0].replace("(1 + presented_first + trial_z | participant)", "(1 | participant)")
    formulas = [*OMNIBUS_SLOPES, intercept]
    pairs = [(1, 0), (2, 1), (3, 0), (3, 2)]
    ref = lmertest_run(data, formulas, ["clip", "participant"], reml=True, pairs=pairs, refit=False)
    fits = [fit_formula(data, f) for f in formulas]
    for (i, j), a in zip(pairs, ref["anova"]):
        res = reml_lrt(fits[i], fits[j])
        assert res.small.reml and res.big.reml and res.df == a["df"]
        assert res.chi2 == pytest.approx(a["chi2"], abs=1e-4)
        assert res.p == pytest.approx(a["p"], rel=1e-4, abs=1e-12)
    assert [a["df"] for a in ref["anova"]] == [3, 1, 5, 1]


def test_reml_lrt_needs_reml_fits_with_the_same_fixed_effects(trials_small):
    small, big = fit_formula(trials_small, NO_SLOPE), fit_formula(trials_small, SLOPE)
    res = reml_lrt(small, big)
    assert res.df == 2 and res.small is small and res.big is big
    assert res.chi2 == pytest.approx(small.objective - big.objective, abs=1e-12)
    assert res.p == pytest.approx(scipy.stats.chi2.sf(max(res.chi2, 0.0), 2), rel=1e-12)
    with pytest.raises(ValueError, match="REML"):
        reml_lrt(fit_formula(trials_small, NO_SLOPE, reml=False), big)
    with pytest.raises(ValueError, match="fixed effects"):
        reml_lrt(fit_formula(trials_small, "score ~ 1 + (1 | prompt) + (1 | participant)"), big)


@pytest.mark.r
def test_categorical_columns_are_treatment_coded_like_r(r_refs):
    data, formulas, _, _ = R_CASES["omnibus_categorical"]
    ref = r_refs("omnibus_categorical", True)["fits"][0]
    fit = fit_formula(data, formulas[0])
    assert fit.x_names == [n.replace("modality", "modalitytext") for n in OMNIBUS_NAMES]
    compare_with_reference(fit, ref)


@pytest.mark.r
def test_paper_models_at_paper_scale(r_refs):
    """The paper's two models on 1,880 trials / 3,760 ratings: the slope LRT is chi2(2) as in section 4.3."""
    ref = r_refs("slope_trials", True)
    data = R_CASES["slope_trials"][0]
    assert len(data) == 1880 and len(R_CASES["omnibus_ratings"][0]) == 3760
    res = anova_refit_ml(fit_formula(data, NO_SLOPE), fit_formula(data, SLOPE))
    assert res.df == 2 and res.p < 0.01
    assert res.chi2 == pytest.approx(ref["anova"][0]["chi2"], abs=1e-3)
    omni = fit_formula(R_CASES["omnibus_ratings"][0], OMNIBUS)
    assert omni.x_names == OMNIBUS_NAMES


@pytest.mark.r
@pytest.mark.parametrize("reml", [True, False], ids=["REML", "ML"])
@pytest.mark.parametrize("case", ["singular_participant", "correlation_at_bound", "correlation_and_variance_at_bound"])
def test_boundary_fits_match_lme4(r_refs, case, reml):
    """A variance at 0 and/or a slope-intercept correlation at +/-1: flagged singular, still equal to lme4/lmerTest."""
    data, formulas, _, _ = R_CASES[case]
    ref = r_refs(case, reml)["fits"][0]
    fit = fit_formula(data, formulas[0], reml=reml)
    assert fit.singular and ref["singular"]
    if case != "singular_participant":
        assert abs(fit.random_effects[0].corr[1, 0]) == pytest.approx(1.0, abs=1e-12)
    compare_with_reference(fit, ref)

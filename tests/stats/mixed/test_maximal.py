"""The by-participant slopes ladder (:mod:`modprefs.stats.mixed.maximal`): each step is reached when the richer ones
are singular or not estimable, slopes the ratings do not support (LRT p > ``slope_alpha``) are dropped, the chosen
fit equals fitting its formula directly (Satterthwaite df included), and ``||`` expands as lme4 expands it. The
lme4 / lmerTest comparison of the slope models and of their LRT is in test_lmm.py (``-m r``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from modprefs.errors import InsufficientDataError
from modprefs.stats.mixed.formula import build_design, parse_formula
from modprefs.stats.mixed.lmm import fit_formula, reml_lrt, with_satterthwaite
from modprefs.stats.mixed.maximal import fit_maximal, positive_slopes, singular_in, slope_terms
from support.lmm_simulate import simulate_ratings

FIXED = "rating ~ presented_first*modality + len_z*modality + trial_z*modality"
SLOPES = ("presented_first", "trial_z")
OTHER = "(1|clip) + (1|clip:modality)"


def ratings(seed: int, sd_primacy: float, sd_drift: float) -> pd.DataFrame:
    """800 ratings (40 prompts, 40 raters x 10 trials) with rater-specific primacy and drift."""
    return simulate_ratings(seed, n_prompts=40, n_raters=40, trials=10, sd_primacy=sd_primacy, sd_drift=sd_drift)


def no_slope_signal(seed: int = 0) -> pd.DataFrame:
    """Every rater's own OLS order and trial slopes replaced by the common ones: both slope variances estimate 0."""
    d = ratings(seed, 0.0, 0.0)
    X = np.column_stack([np.ones(len(d)), d.presented_first, d.trial_z])
    common = np.linalg.lstsq(X, d.rating.to_numpy(float), rcond=None)[0]
    y = d.rating.to_numpy(float).copy()
    for _, idx in d.groupby("participant").indices.items():
        own = np.linalg.lstsq(X[idx], y[idx], rcond=None)[0]
        y[idx] -= X[idx, 1:] @ (own[1:] - common[1:])
    return d.assign(rating=y)


def _same_fit(a, b, rel: float = 1e-6) -> None:
    np.testing.assert_allclose(a.beta, b.beta, rtol=rel)
    np.testing.assert_allclose(a.beta_se, b.beta_se, rtol=rel)
    np.testing.assert_allclose(a.df, b.df, rtol=1e-5)
    np.testing.assert_allclose(a.p_value, b.p_value, rtol=1e-5, atol=1e-12)
    assert a.objective == pytest.approx(b.objective, abs=1e-8)


def test_double_bar_expands_like_lme4():
    p = parse_formula("y ~ x + (1 + x + z || g) + (0 + x || h) + (1 | k)")
    assert p.random == (
        (True, (), ("g",)),
        (False, (("x",),), ("g",)),
        (False, (("z",),), ("g",)),
        (False, (("x",),), ("h",)),
        (True, (), ("k",)),
    )
    d = build_design(ratings(0, 0.0, 0.0), f"{FIXED} + (1 + presented_first + trial_z || participant) + {OTHER}")
    assert d.group_names == ["participant"] * 3 + ["clip", "clip:modality"]
    assert d.coef_names[:3] == [["(Intercept)"], ["presented_first"], ["trial_z"]]


def test_slope_terms_per_step():
    assert slope_terms("g", SLOPES, "correlated") == "(1 + presented_first + trial_z | g)"
    assert slope_terms("g", SLOPES, "uncorrelated") == "(1 + presented_first + trial_z || g)"
    assert slope_terms("g", SLOPES, "reduced", ["trial_z"]) == "(1 + trial_z || g)"
    assert slope_terms("g", SLOPES, "intercept") == "(1 | g)"


def test_correlated_slopes_when_the_fit_is_regular():
    d = ratings(0, 8.0, 4.0)
    ladder = fit_maximal(d, FIXED, "participant", SLOPES, OTHER)
    assert ladder.step == "correlated" and ladder.rejected == () and ladder.note == ""
    assert ladder.random == f"(1 + presented_first + trial_z | participant) + {OTHER}"
    assert not ladder.fit.singular and ladder.fit.converged
    _same_fit(ladder.fit, fit_formula(d, ladder.formula))


def test_singular_correlations_fall_back_to_uncorrelated_slopes():
    d = ratings(1, 4.0, 2.0)
    ladder = fit_maximal(d, FIXED, "participant", SLOPES, OTHER)
    assert ladder.step == "uncorrelated" and [r[0] for r in ladder.rejected] == ["correlated"]
    assert ladder.note.startswith("fell back to uncorrelated: correlated singular (a participant variance at 0")
    assert ladder.random == f"(1 + presented_first + trial_z || participant) + {OTHER}"
    correlated = fit_formula(d, f"{FIXED} + {ladder.rejected[0][1]}")
    assert singular_in(correlated, "participant") and not singular_in(ladder.fit, "participant")
    # the candidate was fitted without Satterthwaite and warm-started: the same numbers as fitting it directly
    _same_fit(ladder.fit, fit_formula(d, ladder.formula))


def test_a_zero_variance_slope_is_dropped():
    d = ratings(0, 3.0, 0.0)  # no drift
    ladder = fit_maximal(d, FIXED, "participant", SLOPES, OTHER)
    assert ladder.step == "reduced" and [r[0] for r in ladder.rejected] == ["correlated", "uncorrelated"]
    assert ladder.random == f"(1 + presented_first || participant) + {OTHER}"
    uncorrelated = fit_formula(d, f"{FIXED} + {ladder.rejected[1][1]}")
    assert positive_slopes(uncorrelated, "participant", SLOPES) == ["presented_first"]
    _same_fit(ladder.fit, fit_formula(d, ladder.formula))


def test_no_slope_variance_ends_with_the_intercept():
    d = no_slope_signal()
    ladder = fit_maximal(d, FIXED, "participant", SLOPES, OTHER)
    assert ladder.step == "intercept" and [r[0] for r in ladder.rejected] == ["correlated", "uncorrelated"]
    assert ladder.random == f"(1 | participant) + {OTHER}"
    assert "fell back to intercept" in ladder.note
    _same_fit(ladder.fit, fit_formula(d, ladder.formula))


def test_unestimable_steps_are_skipped_and_the_last_raises():
    rng = np.random.default_rng(0)
    n_raters = 12
    d = pd.DataFrame(
        {
            "y": rng.normal(size=2 * n_raters),
            "x": np.tile([0.0, 1.0], n_raters),
            "t": rng.normal(size=2 * n_raters),
            "g": np.repeat(np.arange(n_raters), 2),
        }
    )
    ladder = fit_maximal(d, "y ~ x + t", "g", ("x", "t"))  # 36 correlated random effects for 24 ratings
    assert ladder.rejected[0][0] == "correlated" and "not estimable" in ladder.rejected[0][2]
    assert ladder.step in ("uncorrelated", "reduced", "intercept")
    with pytest.raises(InsufficientDataError):
        fit_maximal(d.iloc[:3].assign(g=[0, 1, 2]), "y ~ x", "g", ())


def test_no_slopes_is_the_intercept_model():
    d = ratings(0, 0.0, 0.0)
    ladder = fit_maximal(d, FIXED, "participant", (), OTHER)
    assert ladder.step == "intercept" and ladder.random == f"(1 | participant) + {OTHER}"


def test_with_satterthwaite_equals_the_direct_fit():
    d = ratings(2, 6.0, 3.0)
    formula = f"{FIXED} + (1 + presented_first + trial_z || participant) + {OTHER}"
    bare = fit_formula(d, formula, satterthwaite=False)
    assert bare.vcov_varpar is None and np.isnan(bare.df).all()
    full = with_satterthwaite(bare)
    _same_fit(full, fit_formula(d, formula), rel=1e-12)
    assert with_satterthwaite(full) is full


def test_confint_level_and_method():
    fit = fit_formula(ratings(0, 0.0, 0.0), f"{FIXED} + (1|participant) + {OTHER}")
    np.testing.assert_allclose(fit.confint(0.95), fit.ci_t, rtol=1e-12)
    np.testing.assert_allclose(fit.confint(0.95, "z"), fit.ci_z, rtol=1e-12)
    narrow = fit.confint(0.9)
    assert np.all(narrow[:, 0] > fit.ci_t[:, 0]) and np.all(narrow[:, 1] < fit.ci_t[:, 1])
    t90 = fit.coef_table(0.9)
    np.testing.assert_allclose(t90[["ci_t_lo", "ci_t_hi"]].to_numpy(), narrow, rtol=1e-12)
    with pytest.raises(ValueError, match="level"):
        fit.confint(1.0)
    with pytest.raises(ValueError, match="method"):
        fit.confint(0.9, "wald")


@pytest.mark.parametrize(("seed", "ladder_step"), [(3, "correlated"), (4, "reduced")])
def test_slopes_the_ratings_do_not_support_are_dropped(seed, ladder_step):
    """Raters who share one primacy and one drift: the ladder alone keeps a regular slope fit, the LRT against
    (1 | participant) does not support it (p > .2) and the intercept step is used, with the test in the note."""
    d = ratings(seed, 0.0, 0.0)
    alone = fit_maximal(d, FIXED, "participant", SLOPES, OTHER)
    assert alone.step == ladder_step and alone.slope_test is None
    ladder = fit_maximal(d, FIXED, "participant", SLOPES, OTHER, slope_alpha=0.2)
    assert ladder.step == "intercept" and ladder.random == f"(1 | participant) + {OTHER}"
    assert ladder.rejected[-1][:2] == (ladder_step, alone.random)
    direct = reml_lrt(fit_formula(d, ladder.formula), fit_formula(d, alone.formula))
    assert ladder.slope_test.p == pytest.approx(direct.p, rel=1e-6) and direct.p > 0.2
    assert ladder.slope_test.df == {"correlated": 5, "reduced": 1}[ladder_step]
    assert f"{ladder_step} not supported by the ratings" in ladder.note and f"p = {direct.p:.3f} > 0.2" in ladder.note
    _same_fit(ladder.fit, fit_formula(d, ladder.formula))


def test_supported_slopes_are_kept():
    for d, step in ((ratings(0, 8.0, 4.0), "correlated"), (ratings(0, 0.0, 0.0), "reduced")):
        alone = fit_maximal(d, FIXED, "participant", SLOPES, OTHER)
        ladder = fit_maximal(d, FIXED, "participant", SLOPES, OTHER, slope_alpha=0.2)
        assert ladder.step == alone.step == step and ladder.formula == alone.formula
        assert ladder.rejected == alone.rejected and ladder.slope_test.p <= 0.2
        _same_fit(ladder.fit, alone.fit, rel=1e-12)
    assert fit_maximal(d, FIXED, "participant", SLOPES, OTHER, slope_alpha=0.01).step == "intercept"  # p .053


@pytest.mark.parametrize("alpha", [0.0, -0.1, 1.5])
def test_slope_alpha_outside_0_1_is_refused(alpha):
    with pytest.raises(ValueError, match="slope_alpha"):
        fit_maximal(ratings(0, 0.0, 0.0), FIXED, "participant", SLOPES, OTHER, slope_alpha=alpha)

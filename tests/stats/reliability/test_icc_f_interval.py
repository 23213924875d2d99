"""The F-based ICC interval (McGraw & Wong 1996), ``auto``'s choice of method, and ICC(2,k)'s effective k.

* On pingouin's own ``icc`` example (8 wines x 4 judges, complete and balanced, no covariates) the interval
  equals ``pingouin.intraclass_corr``'s ICC(A,1) / ICC(A,k) CI to 1e-6 and ``auto`` chooses it (labelled).
* ``auto`` falls back to the crossed jackknife when a rating is missing or duplicated or the model has a
  covariate; ``f_based`` asked for explicitly on such a design, or on a prompt's pair of clips (not independent
  targets), gives NaN bounds and says why. On a complete pairwise design ``auto`` takes the clips as items (MSR's
  df those of prompts and clips within them) and keeps the F interval only where neither the checks of its
  assumptions (a prompt effect the clips share among them) nor the crossed jackknife contradict it.
* On complete designs ``auto`` keeps the F interval for Gaussian ratings but reports the crossed jackknife's for
  heavy-tailed noise whose spread differs by rater, clipped at a ceiling, saying why.
* The effective k (harmonic mean of ratings per clip) predicts the reliability of the clip means when k varies
  per clip (1-15); the arithmetic mean overstates it.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from modprefs.stats.reliability.icc import ConditionDesign, effective_k, fit_iccs, icc_from_components, model_formula
from modprefs.stats.reliability.icc_ci import (
    F_PAIRS_NOTE,
    JK_FISHER_Z_NOTE,
    ROBUST_F_LABEL,
    auto_method,
    ci_method_label,
    f_interval_holds,
    f_width_limit,
    icc_ci_for_design,
)
from modprefs.stats.reliability.icc_f_interval import (
    F_LABEL,
    complete_table,
    f_interval,
    icc_a1_interval,
    mean_squares,
    per_prompt_intervals,
)
from modprefs.stats.reliability.icc_jackknife import fisher_z, fisher_z_inverse, jackknife_interval
from modprefs.stats.reliability.icc_resampling import jackknife_iccs, residual_bootstrap_iccs


def _design(clip: np.ndarray, participant: np.ndarray, y: np.ndarray, X: np.ndarray | None = None) -> ConditionDesign:
    X = np.ones((y.size, 1)) if X is None else X
    terms = tuple(f"x{j}" for j in range(1, X.shape[1]))
    _, c = np.unique(clip, return_inverse=True)
    _, p = np.unique(participant, return_inverse=True)
    return ConditionDesign(
        y=np.asarray(y, float),
        X=X,
        clip=c.astype(np.intp),
        participant=p.astype(np.intp),
        n_clips=int(c.max()) + 1,
        n_participants=int(p.max()) + 1,
        terms=terms,
        formula=model_formula(terms),
        prompt=c.astype(np.intp),
        n_prompts=int(c.max()) + 1,
    )


@pytest.fixture(scope="module")
def wine():
    pg = pytest.importorskip("pingouin")
    df = pg.read_dataset("icc")
    design = _design(df["Wine"].to_numpy(), df["Judge"].to_numpy(), df["Scores"].to_numpy(float))
    from pingouin.config import _no_rounding

    with _no_rounding():  # pingouin rounds its CI95 column to 2 decimals unless told not to
        ref = pg.intraclass_corr(df, targets="Wine", raters="Judge", ratings="Scores").set_index("Type")
    ref = ref.rename({"ICC2": "ICC(A,1)", "ICC2k": "ICC(A,k)"})  # pingouin < 0.7 used Shrout & Fleiss' names
    return design, ref


def test_f_interval_equals_pingouin_on_its_icc_example(wine):
    design, ref = wine
    (lo1, hi1), (lok, hik), reason = f_interval(design, 0.95)
    assert reason == ""
    print(f"F interval ICC(A,1) [{lo1:.6f}, {hi1:.6f}] vs pingouin {list(ref.loc['ICC(A,1)', 'CI95'])}")
    np.testing.assert_allclose([lo1, hi1], ref.loc["ICC(A,1)", "CI95"], atol=1e-6)
    np.testing.assert_allclose([lok, hik], ref.loc["ICC(A,k)", "CI95"], atol=1e-6)
    assert (round(lo1, 2), round(hi1, 2)) == (0.43, 0.93)
    # the default chooses it, labelled, around the REML estimate (= pingouin's ICC here)
    row = icc_ci_for_design("text", design, "auto", 50, np.random.default_rng(0))
    assert row["ci_method"] == f"auto: {F_LABEL}" and row["n_boot"] == 0 and row["note"] == ""
    assert row["icc_2_1"] == pytest.approx(ref.loc["ICC(A,1)", "ICC"], abs=1e-9)
    assert row["icc_2_k"] == pytest.approx(ref.loc["ICC(A,k)", "ICC"], abs=1e-9)
    np.testing.assert_allclose([row["icc_2_1_lo"], row["icc_2_1_hi"]], [lo1, hi1], rtol=0, atol=1e-12)
    np.testing.assert_allclose([row["icc_2_k_lo"], row["icc_2_k_hi"]], [lok, hik], rtol=0, atol=1e-12)
    assert row["k_effective"] == row["k_mean_raters"] == 4
    # the crossed jackknife, the default before, is much wider on 4 raters
    jk = icc_ci_for_design("text", design, "jackknife", 50, np.random.default_rng(0))
    assert jk["icc_2_1_hi"] - jk["icc_2_1_lo"] > 1.3 * (hi1 - lo1)


def test_f_interval_formula_and_level(wine):
    """McGraw & Wong's case 2A written independently (their a, b form of the Satterthwaite df), at 90 %."""
    design, _ = wine
    table, _ = complete_table(design)
    assert table is not None
    ms = mean_squares(table)
    n, k = table.shape
    rho = ms.icc_a1
    a, b = k * rho / (n * (1 - rho)), 1 + k * rho * (n - 1) / (n * (1 - rho))
    v = (a * ms.msc + b * ms.mse) ** 2 / ((a * ms.msc) ** 2 / (k - 1) + (b * ms.mse) ** 2 / ((n - 1) * (k - 1)))
    fs, fi = stats.f.ppf(0.95, n - 1, v), stats.f.ppf(0.95, v, n - 1)
    c = k * ms.msc + (k * n - k - n) * ms.mse
    lo, hi, df = icc_a1_interval(ms, 0.90)
    assert df == pytest.approx(v, rel=1e-12)
    assert lo == pytest.approx(n * (ms.msr - fs * ms.mse) / (fs * c + n * ms.msr), rel=1e-12)
    assert hi == pytest.approx(n * (fi * ms.msr - ms.mse) / (c + n * fi * ms.msr), rel=1e-12)
    lo95, hi95, _ = icc_a1_interval(ms, 0.95)
    assert lo95 < lo < rho < hi < hi95


def _balanced(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    clip, part = np.repeat(np.arange(n), k), np.tile(np.arange(k), n)
    y = rng.normal(0, 3, n)[clip] + rng.normal(0, 2, k)[part] + rng.normal(0, 4, n * k)
    return clip, part, y


def test_auto_falls_back_to_the_jackknife_off_complete_balanced_designs():
    clip, part, y = _balanced(12, 5, 2)
    assert auto_method(_design(clip, part, y)) == "f_based"
    missing = _design(clip[1:], part[1:], y[1:])  # one rating missing
    twice = _design(np.r_[clip, 0], np.r_[part, 0], np.r_[y, 1.0])  # a rater rated a clip twice
    covariate = _design(clip, part, y, np.column_stack([np.ones(y.size), np.arange(y.size) % 2]))
    cases = [(missing, "not every rater"), (twice, "not every rater"), (covariate, "covariates")]
    for design, why in cases:
        assert auto_method(design) == "jackknife"
        row = icc_ci_for_design("audio", design, "auto", 10, np.random.default_rng(0))
        assert row["ci_method"] == f"auto: {ci_method_label('jackknife')}"
        assert 0 < row["icc_2_1_lo"] < row["icc_2_1"] < row["icc_2_1_hi"] < 1
        explicit = icc_ci_for_design("audio", design, "f_based", 10, np.random.default_rng(0))
        assert math.isnan(explicit["icc_2_1_lo"]) and why in explicit["note"] and explicit["ci_method"] == F_LABEL
    row = icc_ci_for_design("audio", _design(clip, part, y), "f_based", 10, np.random.default_rng(0), 0.9)
    assert row["ci_level"] == 0.9 and row["icc_2_1_lo"] < row["icc_2_1"] < row["icc_2_1_hi"]


def _pairs(n_prompts: int, k: int, prompt_sd: float, seed: int) -> ConditionDesign:
    """A complete pairwise design: n_prompts x 2 clips x k raters, the two clips of a prompt sharing an effect of
    SD ``prompt_sd`` beside their own (SD 1); rater SD 0.6, noise SD 1.6."""
    rng = np.random.default_rng(seed)
    n = 2 * n_prompts
    clip, part = np.repeat(np.arange(n), k), np.tile(np.arange(k), n)
    effect = prompt_sd * rng.normal(0, 1, n_prompts)[np.arange(n) // 2] + rng.normal(0, 1, n)
    y = effect[clip] + rng.normal(0, 0.6, k)[part] + rng.normal(0, 1.6, n * k)
    return dataclasses.replace(
        _design(clip, part, y), prompt=(np.arange(n) // 2)[clip].astype(np.intp), n_prompts=n_prompts
    )


@pytest.mark.slow  # 24 studies with F and jackknife intervals: ~10 s
def test_auto_takes_a_pairs_clips_as_items_only_where_the_jackknife_agrees():
    """Pairwise designs (a prompt's two clips rated by every rater): ``f_based`` asked for explicitly refuses them
    (the clips are not independent items); ``auto`` computes the F interval with the clips as items and keeps it,
    labelled and noted as such, where neither the checks of its assumptions (among them an F test of a prompt effect
    the clips share) nor the crossed jackknife (prompts left out) contradict it: every study whose clips do not
    share a prompt effect (12 of 12), none whose clips are nearly copies of each other (prompt SD 3 vs clip SD 1).
    30 prompts x 10 raters."""
    kept: dict[float, int] = {0.0: 0, 3.0: 0}
    for seed in range(12):
        for prompt_sd in kept:
            design = _pairs(30, 10, prompt_sd, seed)
            assert auto_method(design) == "f_based"
            explicit = icc_ci_for_design("audio", design, "f_based", 19, np.random.default_rng(seed))
            assert math.isnan(explicit["icc_2_1_lo"]) and "nested" in explicit["note"]
            row = icc_ci_for_design("audio", design, "auto", 19, np.random.default_rng(seed))
            assert row["icc_2_1_lo"] < row["icc_2_1"] < row["icc_2_1_hi"]
            if row["ci_method"] == f"auto: {ROBUST_F_LABEL}":
                kept[prompt_sd] += 1
                assert F_PAIRS_NOTE in row["note"] and row["n_boot"] == 0
            else:
                assert row["ci_method"] == f"auto: {ci_method_label('jackknife')}" and row["n_boot"] == 19
                assert "F-based interval not used: " in row["note"]
    print(kept)
    assert kept[0.0] >= 10 and kept[3.0] <= 2  # 12 / 12 and 0 / 12


def _slider_like(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Complete n x k ratings on 0..100 with t(3) noise whose spread differs by rater (lognormal, CV ~1.2), clipped."""
    rng = np.random.default_rng(seed)
    clip, part = np.repeat(np.arange(n), k), np.tile(np.arange(k), n)
    spread = rng.lognormal(-0.44, 0.94, k)  # E[spread^2] ~ 1, CV of the spread ~ 1.2
    noise = 14 * spread[part] * rng.standard_t(3, n * k)
    y = np.clip(60 + rng.normal(0, 12, n)[clip] + rng.normal(0, 6, k)[part] + noise, 0, 100)
    return clip, part, y


@pytest.mark.slow  # 24 studies, each with F and jackknife intervals: ~7 s
def test_auto_keeps_the_f_interval_only_where_the_jackknife_agrees_with_it():
    """30 clips x 10 raters, 12 studies each: Gaussian ratings keep the F interval in most studies here (5 exact,
    2 with a df shrunk by chance, labelled as such; the other 5 rejected by a check at .05 or a wide jackknife);
    slider-like ratings (heavy tails, rater-specific spread, ceiling), where the F interval under-covers, make
    ``auto`` report the jackknife in every one (12 of 12), labelled and with the reason in ``note``. The rates over
    500 studies per cell are in benchmarks/out/icc_interval_width.md."""
    assert f_width_limit(4) == pytest.approx(2.0) and f_width_limit(10) == pytest.approx(1.4)
    assert f_interval_holds((0.4, 0.6), (0.25, 0.75), 4) == (False, f_interval_holds((0.4, 0.6), (0.25, 0.75), 4)[1])
    assert f_interval_holds((0.4, 0.6), (0.35, 0.65), 4) == (True, "")
    assert f_interval_holds((0.4, 0.6), (math.nan, math.nan), 4) == (True, "")
    chosen: dict[str, list[str]] = {"gaussian": [], "slider": []}
    for seed in range(12):
        for kind, make in (("gaussian", _balanced), ("slider", _slider_like)):
            clip, part, y = make(30, 10, seed)
            design = _design(clip, part, y)
            assert auto_method(design) == "f_based"  # eligible: complete, balanced, no covariates
            row = icc_ci_for_design("audio", design, "auto", 19, np.random.default_rng(seed))
            if row["ci_method"] in (f"auto: {F_LABEL}", f"auto: {ROBUST_F_LABEL}"):
                chosen[kind].append("f" if row["ci_method"] == f"auto: {F_LABEL}" else "robust f")
                assert row["n_boot"] == 0
            else:
                assert row["ci_method"] == f"auto: {ci_method_label('jackknife')}" and row["n_boot"] == 19
                assert "F-based interval not used: " in row["note"]
                chosen[kind].append("jk")
    print(chosen)
    assert chosen["gaussian"].count("f") + chosen["gaussian"].count("robust f") >= 6
    assert chosen["gaussian"].count("f") >= 4 and chosen["slider"].count("jk") >= 11


def test_per_prompt_intervals_are_the_f_interval_of_each_block():
    rng = np.random.default_rng(4)
    rows = []
    for prompt in ("p1", "p2"):
        for cond in ("audio", "text"):
            for r in range(6):
                for response in (0, 1):
                    rows.append((prompt, cond, f"{cond}{r}", response, rng.normal(50 + 10 * response, 8)))
    frame = pd.DataFrame(rows, columns=["prompt_id", "condition", "participant_id", "response", "rating"])
    frame = frame.iloc[1:]  # audio rater 0 of p1 lacks response 0: left out of that block, as per_prompt_icc does
    out = per_prompt_intervals(frame, 0.9).set_index(["prompt_id", "condition"])
    block = frame[(frame.prompt_id == "p1") & (frame.condition == "audio")]
    wide = block.pivot_table(index="response", columns="participant_id", values="rating").dropna(axis=1)
    assert wide.shape == (2, 5)
    lo, hi, _ = icc_a1_interval(mean_squares(wide.to_numpy()), 0.9)
    assert (out.loc[("p1", "audio"), "icc_2_1_lo"], out.loc[("p1", "audio"), "icc_2_1_hi"]) == (lo, hi)
    assert len(out) == 4 and out[["icc_2_1_lo", "icc_2_1_hi"]].notna().all().all()


def test_effective_k_predicts_the_reliability_of_clip_means_when_k_varies_per_clip():
    """Crossed Gaussian studies, 150 clips each rated by 1-15 of 40 raters (uniform): the reliability of the clip
    means, var(true clip effects) / var(clip means around the true mean) pooled over 20 studies, is what
    ICC(2,k) should report. At the effective (harmonic) k the estimated ICC(2,k) matches it; at the arithmetic
    mean k it is far too high."""
    var_clip, var_rater, var_resid = 30.0, 20.0, 50.0  # ICC(2,1) = .30
    true_num = true_den = 0.0
    at_eff, at_mean, k_eff, k_mean = [], [], [], []
    for seed in range(20):
        rng = np.random.default_rng([seed, 27])
        n_per = rng.integers(1, 16, size=150)
        clip = np.repeat(np.arange(150), n_per)
        part = np.concatenate([rng.choice(40, size=n, replace=False) for n in n_per])
        u = rng.normal(0, math.sqrt(var_clip), 150)
        y = (
            60
            + u[clip]
            + rng.normal(0, math.sqrt(var_rater), 40)[part]
            + rng.normal(0, math.sqrt(var_resid), clip.size)
        )
        means = np.bincount(clip, y) / n_per
        true_num += float(np.sum(u**2))
        true_den += float(np.sum((means - 60) ** 2))
        fit, k, icc1, icck = fit_iccs(_design(clip, part, y))
        assert k == pytest.approx(effective_k(clip)) == pytest.approx(150 / np.sum(1 / n_per))
        at_eff.append(icck)
        at_mean.append(icc_from_components(fit.var_g1, fit.var_g2, fit.var_resid, clip.size / 150)[1])
        k_eff.append(k)
        k_mean.append(clip.size / 150)
    reliability = true_num / true_den
    print(
        f"reliability of clip means {reliability:.3f}; ICC(2,k) at effective k {np.mean(k_eff):.2f}: "
        f"{np.mean(at_eff):.3f}, at mean k {np.mean(k_mean):.2f}: {np.mean(at_mean):.3f}"
    )
    assert abs(np.mean(at_eff) - reliability) < 0.03
    assert np.mean(at_mean) - reliability > 0.08
    assert abs(np.mean(at_eff) - reliability) < abs(np.mean(at_mean) - reliability) / 3


def test_fisher_z_is_finite_at_zero_and_is_atanh_for_two_raters():
    rho = np.array([0.0, 0.1, 0.37, 0.9])
    np.testing.assert_allclose(fisher_z(rho, 2.0), np.arctanh(rho), atol=1e-15)  # Fisher's z of a correlation
    for k in (2.0, 4.0, 7.3):
        np.testing.assert_allclose(fisher_z_inverse(fisher_z(rho, k), k), rho, atol=1e-12)
    assert fisher_z(0.0, 4.0) == 0.0 and fisher_z_inverse(-0.3, 4.0) == 0.0  # floored at ICC 0


def test_jackknife_at_an_icc_estimate_of_zero_is_formed_on_fishers_z():
    """16 clips x 4 raters with no clip variance: REML puts ICC(2,1) at 0, where the logit is -inf. The jackknife
    interval is then formed on Fisher's z (finite at 0) from the same leave-one-out and residual refits, lower bound
    0, and says so; a table whose leave-one-out estimates are all 0 (variance 0) gets no interval at all."""
    got = {}
    for seed in (2, 3, 14):  # ICC(2,1) = 0 in all three; in seed 14 every leave-one-out estimate is 0 too
        rng = np.random.default_rng(seed)
        clip, part = np.repeat(np.arange(16), 4), np.tile(np.arange(4), 16)
        design = _design(clip, part, rng.normal(0, 1, 4)[part] + rng.normal(0, 4, 64))
        fit, k, icc1, _ = fit_iccs(design)
        assert icc1 == 0.0 and k == 4.0
        jk = jackknife_interval(design, fit, icc1, 19, np.random.default_rng(0))
        jp = fisher_z(jackknife_iccs(design, fit, "prompt")[:, 0], k)
        jr = fisher_z(jackknife_iccs(design, fit, "participant")[:, 0], k)
        noise = fisher_z(residual_bootstrap_iccs(design, fit, 19, np.random.default_rng(0))[:, 0], k)
        var = max(
            15 / 16 * np.sum((jp - jp.mean()) ** 2) + 3 / 4 * np.sum((jr - jr.mean()) ** 2) - np.var(noise, ddof=1),
            15 / 16 * np.sum((jp - jp.mean()) ** 2),
            3 / 4 * np.sum((jr - jr.mean()) ** 2),
        )
        row = icc_ci_for_design("audio", design, "jackknife", 19, np.random.default_rng(0))
        got[seed] = (jk, var, row)
        if var > 0:
            hi = fisher_z_inverse(stats.t.ppf(0.975, 18) * math.sqrt(var), k)
            assert jk.scale == "fisher_z" and jk.lo == 0.0 and jk.hi == pytest.approx(hi, rel=1e-9) and jk.hi > 0
            assert row["icc_2_1_lo"] == 0.0 and row["icc_2_1_hi"] == pytest.approx(hi)
            assert JK_FISHER_Z_NOTE in row["note"]
        else:
            assert math.isnan(jk.lo) and math.isnan(row["icc_2_1_hi"]) and "undefined" in row["note"]
    assert got[2][1] > 0 and got[3][1] > 0 and got[14][1] == 0

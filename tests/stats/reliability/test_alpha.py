"""Krippendorff's alpha (modprefs.stats.reliability.alpha) against the krippendorff package and published values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

krippendorff = pytest.importorskip("krippendorff")

from modprefs.ratings.simulate import simulate_ratings  # noqa: E402
from modprefs.stats.reliability.alpha import (
    LEVELS,
    alpha_features,
    alpha_from_unit_features,
    bootstrap_alpha,
    group_alphas,
    krippendorff_alpha,
    reliability_matrix,
    unit_value_counts,
)
from modprefs.stats.reliability.alpha_difference import (
    ALPHA_TESTS,
    alpha_difference_jackknife,
    alpha_jackknife,
    split_features,
)
from modprefs.stats.reliability.resampling import draw_counts, draw_units  # noqa: E402
from modprefs.stats.tables.reliability_alpha import PREFERENCE_DOMAIN, alpha_table, preference_codes, preference_matrix
from support.ratings_helpers import make_assignments, make_stimuli  # noqa: E402

NAN = np.nan
#: Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C: 4 observers x 12
#: units, values 1-5, missing data. Published: nominal .743, ordinal .815, interval .849.
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
)
PUBLISHED = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849}


def package_alpha(x: np.ndarray, level: str, domain=None) -> float:
    kw = {} if domain is None else {"value_domain": domain}
    return float(krippendorff.alpha(reliability_data=x, level_of_measurement=level, **kw))


def random_matrix(
    rng: np.random.Generator, n_coders: int, n_units: int, n_values: int, p_missing: float, continuous: bool = False
) -> np.ndarray:
    unit_effect = rng.normal(0, 1, n_units)
    if continuous:
        x = 50 + 15 * unit_effect + rng.normal(0, 12, (n_coders, n_units))
    else:
        x = np.clip(np.round((n_values + 1) / 2 + unit_effect + rng.normal(0, 1, (n_coders, n_units))), 1, n_values)
    x[rng.random(x.shape) < p_missing] = np.nan
    return x


@pytest.mark.parametrize("level", LEVELS)
def test_published_example(level: str) -> None:
    ours = krippendorff_alpha(KRIPPENDORFF_2011, level, value_domain=[1, 2, 3, 4, 5])
    assert round(ours, 3) == PUBLISHED[level]
    assert ours == pytest.approx(package_alpha(KRIPPENDORFF_2011, level, [1, 2, 3, 4, 5]), abs=1e-12)


@pytest.mark.parametrize("level", LEVELS)
def test_equals_package_on_random_matrices(level: str) -> None:
    rng = np.random.default_rng(20240611)
    checked = 0
    for i in range(60):
        continuous = level == "interval" and i % 4 == 0  # float values: the package is slow on these
        n_coders = int(rng.integers(2, 12 if continuous else 30))
        n_units = int(rng.integers(2, 30 if continuous else 120))
        n_values = int(rng.integers(2, 9)) if i % 3 else 100
        x = random_matrix(rng, n_coders, n_units, n_values, float(rng.uniform(0, 0.85)), continuous=continuous)
        if not ((~np.isnan(x)).sum(axis=0) >= 2).any() or np.unique(x[~np.isnan(x)]).size < 2:
            continue
        domain = np.arange(1, n_values + 1) if level == "ordinal" and i % 4 != 0 else None
        with np.errstate(invalid="ignore"):
            ref = package_alpha(x, level, domain)
        if np.isnan(ref):  # all pairable values equal: 0/0 in the package, NaN here too
            assert np.isnan(krippendorff_alpha(x, level, value_domain=domain))
            continue
        assert krippendorff_alpha(x, level, value_domain=domain) == pytest.approx(ref, abs=1e-12)
        feats = alpha_features(x, level, domain)
        assert float(alpha_from_unit_features(feats.unit_features(), level)) == pytest.approx(ref, abs=1e-12)
        checked += 1
    assert checked >= 50


def test_paper_scale_matrix_equals_package() -> None:
    rng = np.random.default_rng(7)
    x = np.clip(np.round(random_matrix(rng, 46, 200, 0, 0.8, continuous=True)), 1, 100)
    for level in LEVELS:
        assert krippendorff_alpha(x, level) == pytest.approx(package_alpha(x, level), abs=1e-12)


def test_value_counts_match_package_input() -> None:
    counts, domain = unit_value_counts(KRIPPENDORFF_2011)
    assert counts.shape == (12, 5) and np.array_equal(domain, [1, 2, 3, 4, 5])
    for level in ("nominal", "ordinal"):  # interval features are (m, S1, S2), not counts
        ref = krippendorff.alpha(value_counts=counts, value_domain=domain, level_of_measurement=level)
        assert float(alpha_from_unit_features(counts, level)) == pytest.approx(float(ref), abs=1e-12)


def test_ordinal_ignores_unused_domain_values_and_respects_domain_order() -> None:
    x = KRIPPENDORFF_2011
    wide = krippendorff_alpha(x, "ordinal", value_domain=[0, 1, 2, 3, 4, 5, 6])
    assert wide == pytest.approx(krippendorff_alpha(x, "ordinal"), abs=1e-15)
    reordered = [5, 4, 3, 2, 1]  # reversed order: ordinal alpha is invariant under reversal
    assert krippendorff_alpha(x, "ordinal", value_domain=reordered) == pytest.approx(wide, abs=1e-12)
    scrambled = [3, 1, 5, 2, 4]
    assert krippendorff_alpha(x, "ordinal", value_domain=scrambled) == pytest.approx(
        package_alpha(x, "ordinal", scrambled), abs=1e-12
    )


def test_transposed_matrix_gives_a_different_value_and_n_units_catches_it() -> None:
    x = KRIPPENDORFF_2011
    right = krippendorff_alpha(x, "interval")
    wrong = krippendorff_alpha(x.T, "interval")  # silently accepted: that is why n_units exists
    assert abs(right - wrong) > 0.1
    assert krippendorff_alpha(x, "interval", n_units=12) == right
    with pytest.raises(ValueError, match="transposed"):
        krippendorff_alpha(x.T, "interval", n_units=12)


def test_reliability_matrix_orientation_and_validation() -> None:
    coders, units = np.nonzero(~np.isnan(KRIPPENDORFF_2011))
    long = pd.DataFrame(
        {
            "rater": [f"c{c}" for c in coders],
            "item": [f"u{u:02d}" for u in units],
            "value": KRIPPENDORFF_2011[coders, units],
        }
    ).sample(frac=1, random_state=0)
    mat = reliability_matrix(long, "rater", "item", "value")
    assert mat.shape == (4, 12) and mat.index.name == "rater" and mat.columns.name == "item"
    np.testing.assert_array_equal(mat.to_numpy(), KRIPPENDORFF_2011)
    assert krippendorff_alpha(mat, "nominal") == pytest.approx(0.743, abs=5e-4)
    wider = reliability_matrix(long, "rater", "item", "value", units=[f"u{u:02d}" for u in range(13)])
    assert wider.shape == (4, 13) and wider["u12"].isna().all()
    with pytest.raises(ValueError, match="duplicate"):
        reliability_matrix(pd.concat([long, long.iloc[:1]]), "rater", "item", "value")
    with pytest.raises(ValueError, match="non-numeric"):
        reliability_matrix(long.assign(value="x"), "rater", "item", "value")
    with pytest.raises(ValueError, match="not in the given order"):
        reliability_matrix(long, "rater", "item", "value", units=["u00"])


def test_input_validation() -> None:
    with pytest.raises(ValueError, match="2-D"):
        krippendorff_alpha(np.ones(5), "interval")
    with pytest.raises(ValueError, match="level_of_measurement"):
        krippendorff_alpha(KRIPPENDORFF_2011, "ratio")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least two coders"):
        krippendorff_alpha(np.array([[1.0, NAN], [NAN, 2.0]]), "nominal")
    with pytest.raises(ValueError, match="outside value_domain"):
        krippendorff_alpha(KRIPPENDORFF_2011, "ordinal", value_domain=[1, 2, 3])
    with pytest.raises(ValueError, match="infinite"):
        krippendorff_alpha(np.array([[1.0, np.inf], [1.0, 2.0]]), "interval")
    assert np.isnan(krippendorff_alpha(np.array([[3.0, 3.0], [3.0, NAN]]), "interval"))  # no variation


@pytest.mark.parametrize("level", LEVELS)
def test_bootstrap_weights_equal_package_on_duplicated_columns(level: str) -> None:
    """A resample = the matrix with the drawn columns (a unit drawn twice appears twice)."""
    rng = np.random.default_rng(3)
    x = random_matrix(rng, 12, 40, 5, 0.5)
    domain = [1, 2, 3, 4, 5] if level != "interval" else None
    feats = alpha_features(x, level, domain)
    draws = draw_units(40, 25, np.random.default_rng(11))
    boot = bootstrap_alpha(feats, draw_counts(draws, 40))
    ref = [package_alpha(x[:, d], level, domain) for d in draws]
    np.testing.assert_allclose(boot, ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("level", LEVELS)
def test_group_alphas_equal_alpha_of_each_subset(level: str) -> None:
    rng = np.random.default_rng(5)
    x = random_matrix(rng, 20, 30, 4, 0.4)
    domain = [1, 2, 3, 4] if level != "interval" else None
    feats = alpha_features(x, level, domain)
    masks = np.array([rng.permutation(np.arange(20) < 9) for _ in range(6)])
    first, second = group_alphas(feats, masks)
    for m, a, b in zip(masks, first, second):
        assert a == pytest.approx(krippendorff_alpha(x[m], level, domain), abs=1e-12)
        assert b == pytest.approx(krippendorff_alpha(x[~m], level, domain), abs=1e-12)


# ---- preference codings (section 4.2) ----------------------------------------------------------


def _toy_preferences() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """4 raters x 3 prompts, every rater prefers response 0 of p0 and p1 and ties p2; orders alternate."""
    trials, asg = [], []
    for i in range(4):
        pid = f"P{i}"
        for t, (prompt, pref) in enumerate([("p0", "0"), ("p1", "0"), ("p2", "tie")], start=1):
            first = (i + t) % 2
            asg.append((pid, "text", t, prompt, first))
            trials.append((pid, prompt, t, pref))
        asg.append((pid, "text", 0, "attn", 0))
        trials.append((pid, "attn", 0, "0"))
    trials_df = pd.DataFrame(trials, columns=["participant_id", "prompt_id", "trial", "preference"])
    asg_df = pd.DataFrame(asg, columns=["participant_id", "condition", "trial", "prompt_id", "first_clip"])
    parts = pd.DataFrame({"participant_id": [f"P{i}" for i in range(4)], "passed_attention": True})
    return trials_df, asg_df, parts


def test_preference_codes_frames() -> None:
    trials, asg, _ = _toy_preferences()
    resp = preference_codes(trials, asg, "response").set_index(["participant_id", "prompt_id"])
    pos = preference_codes(trials, asg, "position").set_index(["participant_id", "prompt_id"])
    assert (resp.loc[(slice(None), "p0"), "code"] == 0).all()  # response 0 preferred
    assert (resp.loc[(slice(None), "p2"), "code"] == 1).all()  # tie
    # position frame: "A" (0) iff the preferred response was shown first
    expected = np.where(pos["first_clip"] == 0, 0.0, 2.0)
    not_tie = pos["preference"] != "tie"
    np.testing.assert_array_equal(pos.loc[not_tie, "code"], expected[not_tie.to_numpy()])
    assert set(pos.loc[(slice(None), "p0"), "code"]) == {0.0, 2.0}  # counterbalanced: A and B


def test_counterbalancing_drives_raw_label_agreement_down() -> None:
    trials, asg, parts = _toy_preferences()
    resp = preference_matrix(trials, asg, parts, "text", "response")
    pos = preference_matrix(trials, asg, parts, "text", "position")
    assert list(resp.columns) == ["p0", "p1", "p2"] and resp.shape == (4, 3)  # attn dropped
    assert krippendorff_alpha(resp, "ordinal", PREFERENCE_DOMAIN) == pytest.approx(1.0)
    # every rater prefers response 0 of p0 and p1, but half saw it first ("A"), half second ("B")
    assert krippendorff_alpha(pos[["p0", "p1"]], "nominal", PREFERENCE_DOMAIN) < 0
    assert krippendorff_alpha(pos, "nominal", PREFERENCE_DOMAIN) < 0.5  # only the unanimous tie agrees


def test_preference_codes_reject_unassigned_trials() -> None:
    trials, asg, _ = _toy_preferences()
    with pytest.raises(ValueError, match="without assignment"):
        preference_codes(trials, asg.iloc[1:], "response")


def test_preference_codes_accept_csv_types() -> None:
    trials, asg, _ = _toy_preferences()
    mixed = trials.assign(preference=trials["preference"].map({"0": 0, "1": 1.0, "tie": "Tie"}))
    a = preference_codes(trials, asg, "position")["code"].to_numpy()
    b = preference_codes(mixed, asg, "position")["code"].to_numpy()
    np.testing.assert_array_equal(a, b)


def test_alpha_table_on_simulated_study() -> None:
    stim = make_stimuli(12, seed=1)
    asg = make_assignments(stim, raters_per_condition=8, trials=6, seed=2)
    ratings, trials, participants, _ = simulate_ratings(stim, asg, seed=3)
    tab = alpha_table(ratings, trials, asg, participants, n_boot=200, n_perm=199, seed=4)
    again = alpha_table(ratings, trials, asg, participants, n_boot=200, n_perm=199, seed=4)
    pd.testing.assert_frame_equal(tab, again)
    assert list(tab["metric"]) == ["continuous", "ordinal", "nominal"]
    assert list(tab["units"]) == ["clip_id", "prompt_id", "prompt_id"]
    for c in ("audio", "text"):
        direct = krippendorff_alpha(
            preference_matrix(trials, asg, participants, c, "response"), "ordinal", PREFERENCE_DOMAIN
        )
        assert tab.loc[1, f"alpha_{c}"] == pytest.approx(direct, abs=1e-12)
        assert (tab[f"lo_{c}"] <= tab[f"alpha_{c}"] + 0.2).all() and (tab[f"lo_{c}"] <= tab[f"hi_{c}"]).all()
    assert tab["diff"].to_numpy() == pytest.approx((tab["alpha_audio"] - tab["alpha_text"]).to_numpy(), abs=1e-12)
    assert ((tab["p_value"] > 0) & (tab["p_value"] <= 1)).all()


def _sparse(seed: int, coders: int = 9, units: int = 14, levels: int = 5) -> np.ndarray:
    """Coders x units codes with units of 0, 1, 2 and more values, so every leave-one-out path is taken."""
    rng = np.random.default_rng(seed)
    data = rng.integers(0, levels, size=(coders, units)).astype(float)
    data[rng.random(data.shape) < 0.45] = np.nan
    data[:, 0] = np.nan  # no value
    data[1:, 1] = np.nan  # one value
    data[2:, 2] = np.nan  # two values: leaving one out makes the unit unpairable
    data[0, 1] = data[0, 2] = data[1, 2] = 1.0
    return data


@pytest.mark.parametrize("level", LEVELS)
def test_leave_one_out_alphas_are_the_alphas_of_the_smaller_data(level):
    """alpha_jackknife's unit, coder and value leave-one-outs equal krippendorff's alpha of the data without them."""
    data = _sparse(1)
    domain = np.arange(5.0) if level != "interval" else None
    jk = alpha_jackknife(alpha_features(data, level, domain))

    def alpha_of(arr):
        try:
            return krippendorff_alpha(arr, level, domain)
        except ValueError:
            return np.nan

    assert jk.estimate == pytest.approx(alpha_of(data), abs=1e-12)
    units = [alpha_of(np.delete(data, u, axis=1)) for u in range(data.shape[1])]
    np.testing.assert_allclose(jk.units, units, atol=1e-12)
    coders = [alpha_of(np.delete(data, c, axis=0)) for c in range(data.shape[0]) if np.isfinite(data[c]).any()]
    np.testing.assert_allclose(jk.coders, coders, atol=1e-12)
    cells = []
    for c, u in zip(*np.nonzero(np.isfinite(data)), strict=True):
        less = data.copy()
        less[c, u] = np.nan
        cells.append(alpha_of(less))
    np.testing.assert_allclose(jk.cells, cells, atol=1e-12)


def test_alpha_difference_jackknife_is_antisymmetric_and_scale_free():
    a, b = alpha_features(_sparse(2, coders=12), "interval"), alpha_features(_sparse(3, coders=10), "interval")
    ab, ba = alpha_difference_jackknife(a, b), alpha_difference_jackknife(b, a)
    assert ab["diff"] == pytest.approx(-ba["diff"]) and ab["variance"] == pytest.approx(ba["variance"])
    assert 0 < ab["p_value"] <= 1 and ab["df"] > 1 and ab["var_value"] > 0
    scaled = alpha_features(2.5 * _sparse(3, coders=10) + 7.0, "interval")
    assert alpha_difference_jackknife(a, scaled)["t"] == pytest.approx(ab["t"], rel=1e-9)


@pytest.mark.parametrize("level", LEVELS)
def test_alpha_difference_variance_is_the_crossed_sum_and_bounded_only_when_not_positive(level):
    """V = V_unit + V_coder,1 + V_coder,2 - V_value whenever that is positive (no max() with its parts, which
    inflated V 1.1-3x under equal alphas); the parts are the leave-one-unit/coder/value-out jackknife variances."""
    domain = np.arange(5.0) if level != "interval" else None
    rng = np.random.default_rng(5)
    clip = rng.integers(0, 5, 30)
    first, second = (
        np.clip(clip + rng.integers(-1, 2, (n, 30)), 0, 4).astype(float) for n in (14, 11)
    )  # shared unit effects: a positive unit part
    first[rng.random(first.shape) < 0.3] = np.nan
    second[rng.random(second.shape) < 0.3] = np.nan
    a, b = alpha_features(first, level, domain), alpha_features(second, level, domain)
    res = alpha_difference_jackknife(a, b)
    raw = res["var_unit"] + res["var_coder_first"] + res["var_coder_second"] - res["var_value"]
    assert raw > 0 and not res["variance_floored"]
    assert res["variance"] == pytest.approx(raw, rel=1e-12)
    if level != "nominal":  # here the noise part exceeds the smaller of the others: the old bound would apply
        assert res["variance"] < max(res["var_unit"], res["var_coder"])
    ja = alpha_jackknife(a)
    n_a = np.isfinite(ja.coders).sum()
    v_a = (n_a - 1) / n_a * np.nansum((ja.coders - np.nanmean(ja.coders)) ** 2)
    assert res["var_coder_first"] == pytest.approx(v_a, rel=1e-12)
    assert res["t"] == pytest.approx(res["diff"] / np.sqrt(raw), rel=1e-12)


def test_alpha_table_tests_by_studentized_permutation_unless_told_otherwise():
    stim = make_stimuli(12, seed=1)
    asg = make_assignments(stim, raters_per_condition=8, trials=6, seed=2)
    ratings, trials, participants, _ = simulate_ratings(stim, asg, seed=3)
    tab = alpha_table(ratings, trials, asg, participants, n_boot=0, n_perm=39, seed=4)
    assert (tab["test"] == ALPHA_TESTS["studentized"]).all() and np.isfinite(tab["t"]).all()
    assert ((tab["p_value"] > 0) & (tab["p_value"] <= 1)).all() and (tab["n_perm_valid"] > 30).all()
    paper = alpha_table(ratings, trials, asg, participants, n_boot=0, n_perm=39, seed=4, test="permutation")
    assert (paper["test"] == ALPHA_TESTS["permutation"]).all() and paper["t"].isna().all()
    np.testing.assert_allclose(paper["diff"], tab["diff"], atol=1e-12)
    with pytest.raises(ValueError, match="alpha test"):
        alpha_table(ratings, trials, asg, participants, n_boot=0, n_perm=3, test="bootstrap")


def test_split_features_keeps_units_and_coders():
    f = alpha_features(_sparse(4), "ordinal", np.arange(5.0))
    mask = np.arange(f.n_coders) % 2 == 0
    first, second = split_features(f, mask)
    assert first.n_coders + second.n_coders == f.n_coders and first.n_units == second.n_units == f.n_units

"""ICC per condition: closed forms, filtering, the stimulus bootstrap, degenerate inputs, the Snakemake adapter."""

from __future__ import annotations

import math
import runpy
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from modprefs.stats.mixed.reml import fit_crossed_intercepts
from modprefs.stats.reliability.icc import (
    CI_METHOD,
    ICC_COLUMNS,
    analysable_ratings,
    condition_design,
    icc_from_components,
    resample_clips,
)
from modprefs.stats.reliability.icc_ci import icc_by_condition, icc_with_ci
from support.statsmodels_reference import fit_crossed_intercepts_statsmodels

ROOT = Path(__file__).resolve().parents[3]


def simulate_tables(
    seed: int = 0,
    n_prompts: int = 20,
    n_per_condition: int = 14,
    trials: int = 8,
    sd_clip: dict | None = None,
    failed: tuple[str, ...] = ("P0003",),
):
    """ratings.csv, participants.csv and stimuli.csv as the contracts describe them (attention check included)."""
    rng = np.random.default_rng(seed)
    sd_clip = sd_clip or {"audio": 6.0, "text": 10.0}
    clip_quality = rng.normal(0.0, 1.0, 2 * n_prompts)
    stimuli = pd.DataFrame(
        {
            "prompt_id": [f"p{i:02d}" for i in range(n_prompts) for _ in (0, 1)],
            "clip_id": [f"p{i:02d}_{r}" for i in range(n_prompts) for r in (0, 1)],
            "response": [r for _ in range(n_prompts) for r in (0, 1)],
        }
    )
    rows, people = [], []
    pid = 0
    for condition in ("audio", "text"):
        for _ in range(n_per_condition):
            pid += 1
            participant = f"P{pid:04d}"
            people.append(
                {
                    "participant_id": participant,
                    "condition": condition,
                    "passed_attention": participant not in failed,
                    "completed": True,
                }
            )
            bias = rng.normal(0.0, 5.0)
            for r, first in ((0, True), (1, False)):  # attention check, trial 0
                rows.append((participant, condition, "attn", f"attn_{r}", 0, first, 90 if r == 0 else 5))
            for trial, prompt in enumerate(rng.choice(n_prompts, trials, replace=False), start=1):
                shown_first = int(rng.integers(0, 2))
                for r in (0, 1):
                    clip = 2 * prompt + r
                    rating = (
                        55
                        + sd_clip[condition] * clip_quality[clip]
                        + bias
                        + rng.normal(0, 12)
                        + (2.0 if r == shown_first else 0.0)
                        - 0.2 * trial
                    )
                    rows.append(
                        (
                            participant,
                            condition,
                            f"p{prompt:02d}",
                            f"p{prompt:02d}_{r}",
                            trial,
                            r == shown_first,
                            int(np.clip(round(rating), 1, 100)),
                        )
                    )
    ratings = pd.DataFrame(
        rows, columns=["participant_id", "condition", "prompt_id", "clip_id", "trial", "presented_first", "rating"]
    )
    ratings["source"] = "simulated"
    return ratings, pd.DataFrame(people), stimuli


@pytest.fixture(scope="module")
def tables():
    return simulate_tables()


def test_icc_closed_form():
    one, k = icc_from_components(4.0, 1.0, 5.0, 10)
    assert one == pytest.approx(0.4)
    assert k == pytest.approx(4.0 / (4.0 + 6.0 / 10))
    assert icc_from_components(4.0, 1.0, 5.0, 1) == pytest.approx((0.4, 0.4))
    # Spearman-Brown: ICC(2,k) = k r / (1 + (k - 1) r) with r = ICC(2,1)
    assert k == pytest.approx(10 * one / (1 + 9 * one))
    assert icc_from_components(0.0, 2.0, 3.0, 5) == (0.0, 0.0)
    assert all(math.isnan(v) for v in icc_from_components(0.0, 0.0, 0.0, 5))
    assert all(math.isnan(v) for v in icc_from_components(1.0, 1.0, 1.0, 0))


def test_filtering_drops_attention_trials_and_failed_participants(tables):
    ratings, participants, stimuli = tables
    kept = analysable_ratings(ratings, participants, "audio", stimuli)
    assert (kept["trial"] >= 1).all() and not kept["prompt_id"].eq("attn").any()
    assert "P0003" not in set(kept["participant_id"])
    assert len(kept) == 13 * 8 * 2
    # passed_attention read from CSV as strings behaves the same
    as_text = participants.assign(passed_attention=participants["passed_attention"].map({True: "True", False: "False"}))
    assert len(analysable_ratings(ratings, as_text, "audio", stimuli)) == len(kept)


def test_table_columns_and_point_estimates_match_the_fitter(tables):
    ratings, participants, stimuli = tables
    table = icc_by_condition(ratings, participants, n_boot=40, seed=3, stimuli=stimuli)
    assert list(table.columns) == ICC_COLUMNS
    assert list(table["condition"]) == ["audio", "text"]
    for row in table.itertuples():
        design = condition_design(analysable_ratings(ratings, participants, row.condition, stimuli))
        fit = fit_crossed_intercepts(design.y, design.X, design.clip, design.participant)
        assert row.var_clip == fit.var_g1 and row.var_participant == fit.var_g2 and row.var_resid == fit.var_resid
        assert row.k_mean_raters == pytest.approx(design.y.size / design.n_clips)
        per_clip = np.bincount(design.clip)
        assert row.k_effective == pytest.approx(len(per_clip) / np.sum(1 / per_clip))
        assert row.k_effective <= row.k_mean_raters
        assert (row.icc_2_1, row.icc_2_k) == icc_from_components(fit.var_g1, fit.var_g2, fit.var_resid, row.k_effective)
        assert row.ci_level == 0.95
        assert row.icc_2_1_lo <= row.icc_2_1 <= row.icc_2_1_hi
        assert row.icc_2_k_lo <= row.icc_2_k <= row.icc_2_k_hi
        assert row.n_boot == 40 and row.n_boot_failed == 0 and row.ci_method == CI_METHOD
        assert row.model == "rating ~ presented_first + trial_z + (1|clip_id) + (1|participant_id)"
        assert row.n_participants == (13 if row.condition == "audio" else 14)


def test_bootstrap_is_deterministic_per_seed(tables):
    ratings, participants, stimuli = tables
    a = icc_by_condition(ratings, participants, n_boot=30, seed=11, stimuli=stimuli)
    b = icc_by_condition(ratings, participants, n_boot=30, seed=11, stimuli=stimuli)
    c = icc_by_condition(ratings, participants, n_boot=30, seed=12, stimuli=stimuli)
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a["icc_2_1_lo"], c["icc_2_1_lo"])
    np.testing.assert_array_equal(a["icc_2_1"], c["icc_2_1"])  # the point estimate does not use the seed
    wide = icc_by_condition(ratings, participants, n_boot=30, seed=11, ci_level=0.99, stimuli=stimuli)
    assert (wide["icc_2_1_lo"] <= a["icc_2_1_lo"]).all() and (wide["icc_2_1_hi"] >= a["icc_2_1_hi"]).all()


def test_resampled_duplicate_clips_become_distinct_levels():
    clip = np.repeat(np.arange(6), [3, 1, 4, 2, 2, 5])
    rng = np.random.default_rng(0)
    for _ in range(20):
        state = rng.bit_generator.state
        rows, new_clip = resample_clips(clip, 6, rng)
        rng2 = np.random.default_rng()
        rng2.bit_generator.state = state
        drawn = rng2.integers(0, 6, size=6)
        assert np.array_equal(np.unique(new_clip), np.arange(6))  # one level per draw, duplicates included
        for pos, original in enumerate(drawn):
            level_rows = rows[new_clip == pos]
            assert (clip[level_rows] == original).all()
            assert level_rows.size == (clip == original).sum()
        if len(set(drawn.tolist())) < 6:
            duplicated = next(v for v in drawn if (drawn == v).sum() > 1)
            assert len(set(new_clip[clip[rows] == duplicated].tolist())) == (drawn == duplicated).sum()


def test_bootstrap_fit_sees_every_draw_as_its_own_clip(tables):
    ratings, participants, stimuli = tables
    design = condition_design(analysable_ratings(ratings, participants, "text", stimuli))
    rows, new_clip = resample_clips(design.clip, design.n_clips, np.random.default_rng(1))
    assert np.unique(design.clip[rows]).size < design.n_clips  # the draw has duplicates
    fit = fit_crossed_intercepts(design.y[rows], design.X[rows], new_clip, design.participant[rows])
    assert fit.n_levels[0] == design.n_clips


def test_degenerate_conditions_give_nan_rows_with_notes(tables):
    ratings, participants, stimuli = tables
    one_text = ratings[(ratings["condition"] == "audio") | (ratings["participant_id"] == "P0015")]
    table = icc_by_condition(one_text, participants, n_boot=5, seed=0, stimuli=stimuli)
    text = table.set_index("condition").loc["text"]
    assert text["n_participants"] == 1 and math.isnan(text["icc_2_1"]) and math.isnan(text["icc_2_k_hi"])
    assert "at least 2" in text["note"]
    assert not math.isnan(table.set_index("condition").loc["audio", "icc_2_1"])

    only_audio = ratings[ratings["condition"] == "audio"]
    row = icc_by_condition(only_audio, participants, n_boot=5, seed=0).set_index("condition").loc["text"]
    assert row["n_ratings"] == 0 and "no analysable ratings" in row["note"] and math.isnan(row["var_clip"])

    flat = ratings.assign(rating=50)
    for _, r in icc_by_condition(flat, participants, n_boot=5, seed=0).iterrows():
        assert math.isnan(r["icc_2_1"]) and "constant" in r["note"]


def test_constant_covariate_is_dropped_from_the_model(tables):
    ratings, participants, stimuli = tables
    one_trial = ratings[ratings["trial"] <= 1]
    design = condition_design(analysable_ratings(one_trial, participants, "audio"))
    assert design.terms == ("presented_first",) and design.X.shape[1] == 2
    assert "trial_z" not in design.formula


def test_statsmodels_agrees_loosely(tables):
    ratings, participants, stimuli = tables
    design = condition_design(analysable_ratings(ratings, participants, "text", stimuli))
    ours = fit_crossed_intercepts(design.y, design.X, design.clip, design.participant)
    sm = fit_crossed_intercepts_statsmodels(design.y, design.X, design.clip, design.participant)
    for name in ("var_g1", "var_g2", "var_resid"):
        assert sm[name] == pytest.approx(getattr(ours, name), rel=1e-2), name
    np.testing.assert_allclose(sm["beta"], ours.beta, rtol=1e-2)


def test_snakemake_adapter_writes_csv_md_and_log(tables, tmp_path):
    ratings, participants, stimuli = tables
    paths = {name: tmp_path / f"{name}.csv" for name in ("ratings", "participants", "stimuli")}
    ratings.to_csv(paths["ratings"], index=False)
    participants.to_csv(paths["participants"], index=False)
    stimuli.to_csv(paths["stimuli"], index=False)
    out_csv, out_md, log = tmp_path / "out" / "icc.csv", tmp_path / "out" / "icc.md", tmp_path / "icc.log"
    snakemake = SimpleNamespace(
        input=SimpleNamespace(**{k: str(v) for k, v in paths.items()}),
        params=SimpleNamespace(n_boot=20, ci_level=0.9, seed=5, ci_method="two_way"),
        output=SimpleNamespace(csv=str(out_csv), md=str(out_md)),
        log=[str(log)],
    )
    runpy.run_path(
        str(ROOT / "workflow" / "scripts" / "icc_table.py"), init_globals={"snakemake": snakemake}, run_name="__main__"
    )
    written = pd.read_csv(out_csv, keep_default_na=True)
    direct = icc_with_ci(ratings, participants, method="two_way", n_boot=20, seed=5, ci_level=0.9, stimuli=stimuli)
    np.testing.assert_array_equal(written["icc_2_1_hi"].to_numpy(), direct["icc_2_1_hi"].to_numpy())
    assert "| audio" in out_md.read_text() and "icc_2_k" in out_md.read_text()
    assert "ICC" in log.read_text()

"""The simulated rater panel: determinism, invariants, config handling, schema consistency."""

from __future__ import annotations

import math
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest
import yaml

from modprefs.ratings.ingest import validate_as_collected, validate_ratings_dir
from modprefs.ratings.justification_text import aspect_weights
from modprefs.ratings.schema import load_table_schema
from modprefs.ratings.simulate import simulate_ratings
from modprefs.ratings.simulation.params import SimulationParams
from modprefs.scale import PAPER_SCALE
from support.ratings_helpers import make_assignments, make_stimuli, write_tables

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def design():
    stim = make_stimuli(16)
    asg = make_assignments(stim, raters_per_condition=12, trials=8)
    return stim, asg


@pytest.fixture(scope="module")
def sim(design):
    stim, asg = design
    # raise failure/dropout rates so every branch appears
    params = SimulationParams(
        p_fail_attention_audio=0.3, p_fail_attention_text=0.3, p_incomplete_audio=0.3, p_incomplete_text=0.3
    )
    return simulate_ratings(stim, asg, params, seed=11)


def test_same_seed_identical_different_seed_differs(design):
    stim, asg = design
    a = simulate_ratings(stim, asg, SimulationParams(), seed=5)
    b = simulate_ratings(stim, asg, SimulationParams(), seed=5)
    c = simulate_ratings(stim, asg, SimulationParams(), seed=6)
    for x, y in zip(a, b):
        pd.testing.assert_frame_equal(x, y)
    assert not a[0]["rating"].equals(c[0]["rating"]) or not a[0].shape == c[0].shape


def test_clip_seed_shares_a_studys_clips_with_other_raters(design):
    """clip_seed: the clip effects of the study with that seed, the raters and their ratings from ``seed``."""
    stim, asg = design
    *_, truth_3 = simulate_ratings(stim, asg, SimulationParams(), seed=3)
    ratings_9, *_, truth_9 = simulate_ratings(stim, asg, SimulationParams(), seed=9)
    ratings_held, *_, truth_held = simulate_ratings(stim, asg, SimulationParams(), seed=9, clip_seed=3)
    clips = ["kind", "clip_id", "effect"]
    held = truth_held[truth_held["kind"] == "clip"][clips].reset_index(drop=True)
    pd.testing.assert_frame_equal(held, truth_3[truth_3["kind"] == "clip"][clips].reset_index(drop=True))
    assert not held["effect"].equals(truth_9[truth_9["kind"] == "clip"]["effect"].reset_index(drop=True))
    raters = ["kind", "participant_id", "effect"]
    pd.testing.assert_frame_equal(
        truth_held[truth_held["kind"] != "clip"][raters].reset_index(drop=True),
        truth_9[truth_9["kind"] != "clip"][raters].reset_index(drop=True),
    )
    assert not ratings_held["rating"].equals(ratings_9["rating"])


def test_round_trip_through_ingest(sim, design, tmp_path):
    stim, _ = design
    ratings, trials, parts, _ = sim
    write_tables(tmp_path, ratings, trials, parts)
    tables = validate_ratings_dir(tmp_path, stim, scale=PAPER_SCALE)
    assert len(tables["ratings"]) == len(ratings)
    validate_as_collected(
        {"ratings": ratings, "trials": trials, "participants": parts}, stim, scale=PAPER_SCALE
    )  # the adapter's check
    with pytest.raises(Exception, match="rating"):
        validate_as_collected(
            {"ratings": ratings.assign(rating=1000), "trials": trials, "participants": parts}, stim, scale=PAPER_SCALE
        )


def test_ratings_are_integers_in_range_and_audio_quality_audio_only(sim):
    ratings = sim[0]
    assert pd.api.types.is_integer_dtype(ratings["rating"])
    assert ratings["rating"].between(1, 100).all()
    audio = ratings["condition"] == "audio"
    assert ratings.loc[audio, "audio_quality"].notna().all()
    assert ratings.loc[audio, "audio_quality"].between(1, 100).all()
    assert ratings.loc[~audio, "audio_quality"].isna().all()
    assert (ratings["source"] == "simulated").all()


def test_failed_attention_only_trial_zero(sim):
    ratings, trials, parts, _ = sim
    failed = set(parts.loc[~parts["passed_attention"], "participant_id"])
    assert failed, "the fixture should produce failures"
    assert (ratings.loc[ratings["participant_id"].isin(failed), "trial"] == 0).all()
    ft = trials[trials["participant_id"].isin(failed)]
    assert (ft["trial"] == 0).all() and (ft["preference"] == "1").all()
    assert not parts.loc[~parts["passed_attention"], "completed"].any()
    passed = trials[~trials["participant_id"].isin(failed) & (trials["trial"] == 0)]
    assert (passed["preference"] == "0").all()


def test_incomplete_participants_stop_early(sim, design):
    _, asg = design
    ratings, trials, parts, _ = sim
    n_assigned = asg[asg["trial"] > 0].groupby("participant_id").size()
    done = trials[trials["trial"] > 0].groupby("participant_id").size().reindex(parts["participant_id"]).fillna(0)
    comp = parts.set_index("participant_id")["completed"]
    for pid, n in done.items():
        assert (n == n_assigned[pid]) == bool(comp[pid])
    assert parts.loc[~parts["completed"], "difficulty"].isna().all()
    assert parts.loc[parts["completed"], "difficulty"].between(1, 5).all()


def test_each_trial_has_two_ratings_and_order_matches_assignments(sim, design):
    _, asg = design
    ratings, trials, _, _ = sim
    counts = ratings.groupby(["participant_id", "trial"]).size()
    assert (counts == 2).all() and len(counts) == len(trials)
    first = ratings[ratings["presented_first"]].copy()
    first["resp"] = first["clip_id"].str.rsplit("_", n=1).str[1].astype(int)
    merged = first.merge(asg, on=["participant_id", "trial"])
    assert len(merged) == len(first)
    assert (merged["resp"] == merged["first_clip"]).all()
    assert (merged["prompt_id_x"] == merged["prompt_id_y"]).all()


def test_preference_consistent_with_ratings(sim):
    ratings, trials, _, _ = sim
    w = (
        ratings[ratings["trial"] > 0]
        .assign(resp=lambda d: d["clip_id"].str[-1])
        .pivot_table(index=["participant_id", "trial"], columns="resp", values="rating")
        .reset_index()
    )
    m = trials[trials["trial"] > 0].merge(w, on=["participant_id", "trial"])
    dec = m[m["preference"] != "tie"]
    assert ((dec["preference"] == "0") == (dec["0"] > dec["1"])).all()
    assert (dec["0"] != dec["1"]).all()
    ties = m[m["preference"] == "tie"]
    assert (ties["0"] - ties["1"]).abs().mean() < 10


def test_audio_only_trial_measures(sim):
    _, trials, parts, _ = sim
    cond = trials["participant_id"].map(parts.set_index("participant_id")["condition"])
    text = cond == "text"
    for col in ("deliberation_time_s", "replays_0", "replays_1", "relistened_first"):
        assert trials.loc[text, col].isna().all(), col
        assert trials.loc[~text, col].notna().all(), col
    assert (trials["decision_time_s"] > 0).all()


def test_truth_table(sim, design):
    stim, _ = design
    _, _, parts, truth = sim
    clips = truth[truth["kind"] == "clip"]
    assert len(clips) == 2 * len(stim) and set(clips["condition"]) == {"audio", "text"}
    assert clips["expected_rating"].notna().all()
    assert set(truth.loc[truth["kind"] == "participant", "participant_id"]) == set(parts["participant_id"])


def test_unclipped_mode_and_recovery_of_fixed_effects(design):
    stim, _ = design
    asg = make_assignments(stim, raters_per_condition=40, trials=16, seed=1)
    p = SimulationParams(
        clip_ratings=False,
        tie_mode="threshold",
        p_fail_attention_audio=0,
        p_fail_attention_text=0,
        p_incomplete_audio=0,
        p_incomplete_text=0,
        resid_df=math.inf,
        resid_scale_cv=0.0,
    )
    r = simulate_ratings(stim, asg, p, seed=2)[0]
    r = r[r["trial"] > 0]
    assert r["rating"].max() > 100 or r["rating"].min() < 1
    # within-trial contrast: first minus second, averaged, recovers b_first (+ b_first_text in text)
    w = r.pivot_table(
        index=["participant_id", "trial", "condition"], columns="presented_first", values="rating"
    ).reset_index()
    # length is balanced across positions only on average; allow a generous band
    d = (w[True] - w[False]).groupby(w["condition"]).mean()
    assert abs(d["audio"] - p.b_first) < 6 and abs(d["text"] - (p.b_first + p.b_first_text)) < 8


def test_from_config_rejects_unknown_keys():
    with pytest.raises(ValueError, match="'not_a_param'"):
        SimulationParams.from_config({"intercept": 70, "not_a_param": 1})
    p = SimulationParams.from_config({"intercept": 70, "resid_df": "inf"})
    assert p.intercept == 70 and math.isinf(p.resid_df)


def test_simulation_schema_matches_params():
    schema = yaml.safe_load((ROOT / "workflow/schemas/simulation.schema.yaml").read_text())
    defaults = SimulationParams().to_dict()
    assert set(schema["properties"]) == set(defaults)
    jsonschema.validate(defaults, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"bogus": 1}, schema)


def test_config_yaml_simulation_block_is_valid():
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    block = cfg["ratings"].get("simulation", {})
    schema = yaml.safe_load((ROOT / "workflow/schemas/simulation.schema.yaml").read_text())
    jsonschema.validate(block, schema)
    got, want = SimulationParams.from_config(block).to_dict(), SimulationParams().to_dict()
    assert set(block) == set(want), "config.yaml should list every simulation parameter"
    for k, v in want.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            assert math.isclose(got[k], v, rel_tol=1e-4), k
        else:
            assert got[k] == v or np.allclose(got[k], v), k


def test_table_schemas_accept_simulated_rows(sim):
    for frame, table in zip(sim[:3], ("ratings", "trials", "participants")):
        schema = load_table_schema(table)
        rows = frame.astype(object).where(frame.notna(), None).to_dict("records")
        for row in rows[:200]:
            row = {
                k: (bool(v) if isinstance(v, (np.bool_,)) else v.item() if isinstance(v, np.generic) else v)
                for k, v in row.items()
            }
            jsonschema.validate(row, schema)


def test_justification_strength_zero_is_a_null():
    assert aspect_weights("audio", 0.0) == aspect_weights("text", 0.0)
    wa, wt = aspect_weights("audio", 1.0), aspect_weights("text", 1.0)
    assert wa["user"] > wt["user"] and wa["help"] > wt["help"]
    assert all(wa[k] < wt[k] for k in ("response", "detail", "give"))


def test_justification_words_differ_by_condition(design):
    stim, _ = design
    asg = make_assignments(stim, raters_per_condition=40, trials=16, seed=3)
    t, parts = simulate_ratings(stim, asg, SimulationParams(), seed=4)[1:3]
    t = t[t["justification"].fillna("") != ""]
    cond = t["participant_id"].map(parts.set_index("participant_id")["condition"])
    user = t["justification"].str.contains("user")
    detail = t["justification"].str.contains("detail")
    assert user[cond == "audio"].mean() > user[cond == "text"].mean()
    assert detail[cond == "text"].mean() > detail[cond == "audio"].mean()


# ---- mechanisms added for the paper calibration (issue #12 item 4) ----------------------------------
def test_clip_effect_correlations_match_parameters():
    """u = prompt part + clip deviation: within-prompt, cross-modality and cross-clip correlations."""
    from modprefs.ratings.simulation.latent import draw_clip_effects

    n = 6000
    stim = pd.DataFrame({"prompt_id": np.repeat([f"p{i}" for i in range(n)], 2), "response": np.tile([0, 1], n)})
    p = SimulationParams(
        var_clip_audio=400.0,
        var_clip_text=900.0,
        rho_clip_within_prompt_audio=0.6,
        rho_clip_within_prompt_text=0.3,
        rho_prompt_modality=0.8,
        rho_clip_modality=0.2,
        clip_df=math.inf,
    )
    u = draw_clip_effects(stim, p, np.random.default_rng(0))
    u0, u1 = u[0::2], u[1::2]  # (prompt, [audio, text]) for response 0 and 1
    assert u0[:, 0].var() == pytest.approx(400, rel=0.06) and u0[:, 1].var() == pytest.approx(900, rel=0.06)
    corr = lambda a, b: float(np.corrcoef(a, b)[0, 1])  # noqa: E731
    assert corr(u0[:, 0], u1[:, 0]) == pytest.approx(0.6, abs=0.03)  # within prompt, audio
    assert corr(u0[:, 1], u1[:, 1]) == pytest.approx(0.3, abs=0.03)  # within prompt, text
    shared = 0.8 * math.sqrt(0.6 * 0.3)
    assert corr(u0[:, 0], u1[:, 1]) == pytest.approx(shared, abs=0.03)  # other clip, other modality
    assert corr(u0[:, 0], u0[:, 1]) == pytest.approx(shared + 0.2 * math.sqrt(0.4 * 0.7), abs=0.03)  # same clip
    # the within-prompt gap carries only the deviations: Var(u0 - u1) = 2 (1 - rho_w) var_clip
    assert (u0[:, 0] - u1[:, 0]).var() == pytest.approx(2 * 0.4 * 400, rel=0.06)
    with pytest.raises(ValueError, match="rho_clip_within_prompt_audio"):
        SimulationParams(rho_clip_within_prompt_audio=-0.1)


@pytest.fixture(scope="module")
def big_panel():
    """Many raters on paper-like stimuli (clips ~25 s), so participant-level moments can be checked."""
    from modprefs.study.design import make_assignments as design_assignments
    from support.recovery_model import paper_stimuli

    stim = paper_stimuli(2)
    return stim, design_assignments(list(dict.fromkeys(stim["prompt_id"])), 700, 20, seed=2)


def test_trial_time_moments_over_participants(big_panel):
    """Table 3's trial duration M (SD) are over participants' mean trial times: solved exactly (audio:
    as long as listening takes less than 3/4 of M, see ``_other_time_params``)."""
    stim, asg = big_panel
    p = SimulationParams(incomplete_speed_effect=0.0)
    _, trials, parts, _ = simulate_ratings(stim, asg, p, seed=3)
    cond = trials["participant_id"].map(parts.set_index("participant_id")["condition"])
    rated = trials[trials["trial"] > 0]
    for c in ("text", "audio"):
        pm = rated[cond[rated.index] == c].groupby("participant_id")["decision_time_s"].mean()
        m, sd = p.by_condition("trial_time_mean", c), p.by_condition("trial_time_sd", c)
        assert pm.mean() == pytest.approx(m, abs=3.5 * sd / math.sqrt(len(pm))), c
        assert pm.std() == pytest.approx(sd, rel=0.12), c


def test_slow_raters_drop_out_more(big_panel):
    stim, asg = big_panel
    slow_mean = {}
    for beta in (0.0, 1.5):
        p = SimulationParams(
            incomplete_speed_effect=beta,
            p_incomplete_audio=0.2,
            p_incomplete_text=0.2,
            p_fail_attention_audio=0.0,
            p_fail_attention_text=0.0,
        )
        _, _, parts, truth = simulate_ratings(stim, asg, p, seed=4)
        slowness = truth[truth["kind"] == "participant"].set_index("participant_id")["time_effect"]
        dropped = parts.loc[~parts["completed"], "participant_id"]
        assert 0.15 < len(dropped) / len(parts) < 0.25  # the tilt keeps the expected dropout rate
        slow_mean[beta] = float(slowness[dropped].mean())
    assert abs(slow_mean[0.0]) < 0.2 and slow_mean[1.5] > 0.9


def test_session_overhead_and_attention_time(design):
    stim, asg = design
    base = dict(
        p_fail_attention_audio=0.0,
        p_fail_attention_text=0.0,
        p_incomplete_audio=0.0,
        p_incomplete_text=0.0,
        session_overhead_cv=0.0,
    )
    _, trials, parts, _ = simulate_ratings(
        stim, asg, SimulationParams(session_overhead_min_audio=7.0, session_overhead_min_text=2.0, **base), seed=5
    )
    trial_min = trials.groupby("participant_id")["decision_time_s"].sum() / 60
    extra = parts.set_index("participant_id")["session_minutes"] - trial_min
    by_cond = extra.groupby(parts.set_index("participant_id")["condition"])
    assert by_cond.min()["audio"] == pytest.approx(7.0, abs=0.01)
    assert by_cond.max()["text"] == pytest.approx(2.0, abs=0.01)
    # the attention check's non-listening time scales with attention_time_factor (same seed, same draws)
    t1 = simulate_ratings(stim, asg, SimulationParams(attention_time_factor=1.0, **base), seed=6)[1]
    t2 = simulate_ratings(stim, asg, SimulationParams(attention_time_factor=0.25, **base), seed=6)[1]
    text = t1["participant_id"].map(parts.set_index("participant_id")["condition"]) == "text"
    attn = (t1["trial"] == 0) & text
    np.testing.assert_allclose(t2.loc[attn, "decision_time_s"], 0.25 * t1.loc[attn, "decision_time_s"], atol=0.011)
    rated = t1["trial"] > 0
    pd.testing.assert_series_equal(t1.loc[rated, "decision_time_s"], t2.loc[rated, "decision_time_s"])

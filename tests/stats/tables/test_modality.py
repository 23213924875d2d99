"""Table 2 and the modality follow-ups on simulated studies with known truth; per-prompt ICC vs pingouin."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from modprefs.ratings.simulate import SimulationParams, simulate_ratings
from modprefs.stats.tables import modality as M
from modprefs.study.design import make_assignments
from test_recovery import paper_stimuli


@pytest.fixture(scope="module")
def latent_study():
    """Paper-size study, clipping off and ties that never move sliders: a pure crossed LMM."""
    params = dataclasses.replace(
        SimulationParams(),
        clip_ratings=False,
        tie_mode="threshold",
        clip_df=float("inf"),
        resid_df=float("inf"),
        resid_scale_cv=0.0,
        rho_clip_within_prompt_audio=0.0,
    )
    stimuli = paper_stimuli(11)
    a = make_assignments(list(dict.fromkeys(stimuli.prompt_id)), 53, 20, seed=11)
    ratings, trials, participants, _ = simulate_ratings(stimuli, a, params, seed=11)
    return params, stimuli, ratings, trials, participants


def test_rating_frame_covariates(latent_study):
    _, stimuli, ratings, _, participants = latent_study
    f = M.rating_frame(ratings, participants, stimuli)
    assert set(f.condition) == {"audio", "text"} and (f.trial >= 1).all()
    z = (stimuli.n_chars - stimuli.n_chars.mean()) / stimuli.n_chars.std(ddof=1)
    assert f.set_index("clip_id")["len_z"].groupby(level=0).first().sort_index().to_numpy() == pytest.approx(
        z.set_axis(stimuli.clip_id).sort_index().to_numpy()
    )
    assert f.trial_z.mean() == pytest.approx(0, abs=1e-12) and f.trial_z.std(ddof=1) == pytest.approx(1)


def test_table2_recovers_the_generating_effects(latent_study):
    params, stimuli, ratings, _, participants = latent_study
    t = M.table2(M.rating_frame(ratings, participants, stimuli))
    omni = t[t.model.str.startswith("omnibus")].set_index("term")
    truth = {
        "Presented first": params.b_first,
        "Modality (text)": params.b_text,
        "Character length (z)": params.b_len,
        "Presented first x Modality": params.b_first_text,
        "Modality x Char. length": params.b_len_text,
    }
    for term, value in truth.items():
        row = omni.loc[term]
        assert abs(row.b - value) < 3.5 * row.se, (term, row.b, value, row.se)
        assert row.ci_lo < row.b < row.ci_hi and 0 <= row.p <= 1
    simple = t[t.model.str.startswith("simple")].set_index(["model", "term"])
    text_len = simple.loc[("simple: text", "Character length (z)")]
    assert abs(text_len.b - (params.b_len + params.b_len_text)) < 3.5 * text_len.se


def test_table2_random_structures(latent_study):
    """Default: a clip x modality intercept; ``paper``: the paper's literal model. Same fixed terms, and the
    modality x length SE is larger when clip-specific modality deviations have their own variance."""
    _, stimuli, ratings, _, participants = latent_study
    frame = M.rating_frame(ratings, participants, stimuli)
    default, paper = M.table2(frame), M.table2(frame, "paper")
    assert default.model.iloc[0] == "omnibus (random: (1 | participant_id) + (1 | clip_id) + (1 | clip_id:modality))"
    assert paper.model.iloc[0] == "omnibus (random: (1 | participant_id) + (1 | clip_id))"
    d = default[default.model.str.startswith("omnibus")].set_index("term")
    q = paper[paper.model.str.startswith("omnibus")].set_index("term")
    assert list(d.index) == list(q.index)
    # the simulated clip effects are independent across modalities: a large clip x modality variance
    assert d.loc["Modality x Char. length", "se"] > 1.3 * q.loc["Modality x Char. length", "se"]
    # order varies within clips: its interaction's SE barely moves
    assert d.loc["Presented first x Modality", "se"] == pytest.approx(
        q.loc["Presented first x Modality", "se"], rel=0.2
    )
    # the simple-effects models do not depend on the choice
    pd.testing.assert_frame_equal(
        default[~default.model.str.startswith("omnibus")].reset_index(drop=True),
        paper[~paper.model.str.startswith("omnibus")].reset_index(drop=True),
    )
    with pytest.raises(ValueError, match="table2_random"):
        M.table2(frame, "nested")


def test_random_slope_detects_prompt_specific_effects(latent_study):
    _, stimuli, ratings, _, participants = latent_study
    res = M.random_slope_test(M.rating_frame(ratings, participants, stimuli)).iloc[0]
    # the simulator's clip effects are independent across modalities: the by-prompt slope is real
    assert res.lrt_df == 2 and res.chi2 > 20 and res.lrt_p < 1e-4 and res.slope_sd > 5


def test_random_slope_absent_when_modalities_share_clip_effects():
    # equal residual variances too: a text residual 4x the audio one (the simulator's default) alone makes
    # the by-prompt slope "significant" (chi2 ~8-17 on 40 raters) although the clip effects are shared
    params = dataclasses.replace(
        SimulationParams(),
        clip_ratings=False,
        tie_mode="threshold",
        rho_clip_modality=0.999,
        var_clip_text=SimulationParams().var_clip_audio,
        clip_df=float("inf"),
        var_resid_text=SimulationParams().var_resid_audio,
        resid_df=float("inf"),
        resid_scale_cv=0.0,
        b_len_text=0.0,
        rho_clip_within_prompt_audio=0.0,
        rho_clip_within_prompt_text=0.0,
    )
    stimuli = paper_stimuli(12)
    a = make_assignments(list(dict.fromkeys(stimuli.prompt_id)), 40, 20, seed=12)
    ratings, _, participants, _ = simulate_ratings(stimuli, a, params, seed=12)
    res = M.random_slope_test(M.rating_frame(ratings, participants, stimuli)).iloc[0]
    assert res.lrt_p > 0.001


def test_practice_effects_sign(latent_study):
    params, _, _, trials, participants = latent_study
    pe = M.practice_effects(trials, participants).set_index(["model", "term"])
    audio = pe.loc[("log duration: audio", "Trial number (z)")]
    text = pe.loc[("log duration: text", "Trial number (z)")]
    assert audio.b < 0 and text.b < audio.b  # text speeds up more (the paper: -0.17 vs -0.09)


def test_per_prompt_icc_equals_pingouin():
    pg = pytest.importorskip("pingouin")
    rng = np.random.default_rng(3)
    rows = []
    for r in range(9):
        for resp, mu in ((0, 70.0), (1, 50.0)):
            rows.append(
                {
                    "prompt_id": "p1",
                    "condition": "audio",
                    "clip_id": f"p1_{resp}",
                    "participant_id": f"r{r}",
                    "rating": mu + rng.normal(0, 5) + r,
                }
            )
    f = pd.DataFrame(rows)
    ours = M.per_prompt_icc(f).iloc[0]
    ref = pg.intraclass_corr(f, targets="clip_id", raters="participant_id", ratings="rating")
    icc2 = ref[ref["Type"].isin(["ICC2", "ICC(A,1)"])]["ICC"].iloc[0]
    assert ours.icc_2_1 == pytest.approx(icc2, abs=1e-10) and ours.n_raters == 9


def test_audio_quality_analysis(latent_study):
    _, stimuli, ratings, _, participants = latent_study
    aq = M.audio_quality_analysis(M.rating_frame(ratings, participants, stimuli)).set_index("statistic")
    assert 1 <= aq.loc["mean", "value"] <= 100
    assert aq.loc["r(audio quality, rating), per rating", "value"] > 0  # the simulator links them weakly

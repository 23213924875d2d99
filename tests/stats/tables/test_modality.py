"""Table 2 and the modality follow-ups on simulated studies with known truth; per-prompt ICC vs pingouin."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from modprefs.ratings.simulate import simulate_ratings
from modprefs.ratings.simulation.params import SimulationParams
from modprefs.stats.tables import modality as M
from modprefs.study.design import make_assignments
from support.recovery_model import paper_stimuli


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


@pytest.fixture(scope="module")
def latent_table2(latent_study):
    """Table 2 (default structure) of the latent study."""
    _, stimuli, ratings, _, participants = latent_study
    return M.table2(M.rating_frame(ratings, participants, stimuli))


def test_table2_recovers_the_generating_effects(latent_study, latent_table2):
    params = latent_study[0]
    t = latent_table2
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
    """``stimulus_modality``: a clip x modality intercept; ``paper``: the paper's literal model. Same fixed terms,
    and the modality x length SE is larger when clip-specific modality deviations have their own variance."""
    _, stimuli, ratings, _, participants = latent_study
    frame = M.rating_frame(ratings, participants, stimuli)
    default, paper = M.table2(frame, "stimulus_modality"), M.table2(frame, "paper")
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


@pytest.fixture(scope="module")
def heterogeneous_raters(latent_study):
    """The latent study with raters who each have their own primacy (SD 30 points) and drift (SD 15 per SD of trial;
    its residual SD is 63-126): no modality difference in either, so the modality x order and x trial interactions
    stay null."""
    params, stimuli, ratings, trials, participants = latent_study
    rng = np.random.default_rng(27)
    people = sorted(set(ratings.participant_id))
    primacy = dict(zip(people, rng.normal(0, 30.0, len(people))))
    drift = dict(zip(people, rng.normal(0, 15.0, len(people))))
    frame = M.rating_frame(ratings, participants, stimuli)
    who = frame.participant_id.astype(str)
    frame["rating"] = (frame.rating + who.map(primacy) * frame.presented_first + who.map(drift) * frame.trial_z).astype(
        float
    )
    return frame, M.table2(frame), M.table2(frame, "stimulus_modality")


def _omnibus(table: pd.DataFrame) -> pd.DataFrame:
    return table[table.model.str.startswith("omnibus")].set_index("term")


def test_default_structure_has_participant_slopes(heterogeneous_raters):
    """Rater-specific primacy and drift: the default model gives each participant an order and a trial slope, so the
    modality x order and x trial interactions are tested against the between-rater spread of those slopes (larger
    SEs, df near the number of raters); the clip-level terms barely move."""
    frame, slopes, intercept = heterogeneous_raters
    assert M.DEFAULT_TABLE2_RANDOM == "participant_slopes"
    s, i = _omnibus(slopes), _omnibus(intercept)
    used = s["random"].iloc[0]
    assert used.endswith("| participant_id) + (1 | clip_id) + (1 | clip_id:modality)")
    assert "presented_first" in used and "trial_z" in used  # both slopes survive the ladder here
    assert s.model.iloc[0] == f"omnibus (random: {used})"
    n_raters = frame.participant_id.nunique()
    for term in ("Presented first x Modality", "Modality x Trial number"):
        assert s.loc[term, "se"] > 1.2 * i.loc[term, "se"], term
        assert s.loc[term, "df"] < 2 * n_raters < i.loc[term, "df"], term
    assert s.loc["Modality x Char. length", "se"] == pytest.approx(i.loc["Modality x Char. length", "se"], rel=0.05)
    simple = slopes[slopes.model.str.startswith("simple")]
    assert simple.random.str.contains("presented_first").all() and (simple.ci.str.startswith("95 % CI")).all()
    title = M.table2_title("participant_slopes", slopes)
    assert "95 % CI: Wald, t(Satterthwaite df) quantiles" in title
    assert f"omnibus random effects: {used} (stats.table2_random: participant_slopes" in title


def test_table2_fallback_is_reported(latent_table2):
    """No rater differs in primacy or drift (the simulator's raters share them, under a residual SD of 63-126): the
    slopes' variances go to 0, the ladder falls back to (1 | participant_id), and the table's note and title say
    from what and why."""
    t = latent_table2
    omni = t[t.model.str.startswith("omnibus")]
    assert (omni.random == M.TABLE2_RANDOM["stimulus_modality"]).all()
    assert omni.model.iloc[0] == f"omnibus (random: {M.TABLE2_RANDOM['stimulus_modality']})"
    note = omni.note.iloc[0]
    assert (omni.note == note).all()
    assert note.startswith("fell back to intercept: correlated singular (a participant_id variance at 0")
    assert "; uncorrelated singular" in note
    assert note in M.table2_title("participant_slopes", t)


def test_ci_level_reaches_table2_and_practice_and_their_titles(heterogeneous_raters, latent_study):
    frame, wide, _ = heterogeneous_raters
    narrow = M.table2(frame, ci_level=0.9)
    pd.testing.assert_series_equal(wide.b, narrow.b)
    pd.testing.assert_series_equal(wide.se, narrow.se)
    assert ((narrow.ci_hi - narrow.ci_lo) < (wide.ci_hi - wide.ci_lo)).all()
    assert (narrow.ci == "90 % CI: Wald, t(Satterthwaite df) quantiles").all()
    assert "90 % CI" in M.table2_title("participant_slopes", narrow, 0.9)
    _, _, _, trials, participants = latent_study
    p95 = M.practice_effects(trials, participants)
    p90 = M.practice_effects(trials, participants, ci_level=0.9)
    assert ((p90.ci_hi - p90.ci_lo) < (p95.ci_hi - p95.ci_lo)).all()
    assert p90.model.iloc[0] == "log duration: omnibus" and p90.random.str.contains("participant_id").all()
    assert "90 % CI: Wald" in M.practice_title("participant_slopes", p90, 0.9)
    assert "95 % CI: Wald" in M.practice_title("participant_slopes", p95)


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


def test_analysis_unit_passes_ci_level_and_structure_to_the_titles(latent_study):
    from modprefs.stats.tables.analyses import table2 as table2_unit

    _, stimuli, ratings, trials, participants = latent_study
    tables = {"ratings": ratings, "trials": trials, "participants": participants, "stimuli": stimuli}
    params = {"_outputs": {"practice_effects"}, "ci_level": 0.9, "table2_random": "stimulus_modality"}
    result = table2_unit(tables, params)
    assert set(result.tables) == {"practice_effects"}
    assert (result.tables["practice_effects"].ci.str.startswith("90 % CI")).all()
    assert "90 % CI: Wald, t(Satterthwaite df) quantiles" in result.titles["practice_effects"]
    assert "omnibus random effects: (1 | participant_id) + (1 | prompt_id)" in result.titles["practice_effects"]
    assert result.titles["table2_lmm"].endswith("(stats.table2_random: stimulus_modality)")
    assert "90 % CI" in result.titles["table2_lmm"]


def test_slopes_the_ratings_do_not_support_are_dropped_and_said(latent_study):
    """Raters with their own primacy (SD 10 points) under a residual SD of 63-126: the ladder alone keeps a primacy
    slope (its variance estimate is above 0), but its LRT against (1 | participant_id) gives p = .98, so the default
    (stats.table2_slope_alpha .2) fits (1 | participant_id) and the note and title say why; 1 keeps the slope, and
    the analysis unit passes the option through."""
    from modprefs.stats.tables.analyses import table2 as table2_unit

    _, stimuli, ratings, trials, participants = latent_study
    frame = M.rating_frame(ratings, participants, stimuli)
    people = sorted(set(ratings.participant_id))
    primacy = dict(zip(people, np.random.default_rng(27).normal(0, 10.0, len(people))))
    shifted = frame.rating + frame.participant_id.astype(str).map(primacy) * frame.presented_first
    frame = frame.assign(rating=shifted.astype(float))
    kept = _omnibus(M.table2(frame, slope_alpha=1.0))
    assert kept["random"].iloc[0].startswith("(1 + presented_first || participant_id)")
    default = M.table2(frame)
    omni = _omnibus(default)
    assert omni["random"].iloc[0] == M.TABLE2_RANDOM["stimulus_modality"]
    note = omni["note"].iloc[0]
    assert "reduced not supported by the ratings (LRT against (1 | participant_id): chi2(1) = " in note
    assert note.endswith("p = 0.981 > 0.2)") and note in M.table2_title("participant_slopes", default)
    ratings = ratings.assign(rating=ratings.rating.astype(float))
    ratings.loc[ratings.presented_first.astype(bool), "rating"] += ratings.participant_id.astype(str).map(primacy)
    tables = {"ratings": ratings, "trials": trials, "participants": participants, "stimuli": stimuli}
    unit = table2_unit(tables, {"_outputs": {"table2_lmm"}, "table2_slope_alpha": 1.0}).tables["table2_lmm"]
    assert _omnibus(unit)["random"].iloc[0] == kept["random"].iloc[0]
    assert _omnibus(table2_unit(tables, {"_outputs": {"table2_lmm"}}).tables["table2_lmm"])["note"].iloc[0] == note

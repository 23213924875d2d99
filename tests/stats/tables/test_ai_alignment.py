"""Tables 5 and 6 (§4.4, AI-human alignment): each statistic against an independent computation
(scipy, numpy least squares, closed-form Cook's D, lme4/lmerTest), a simulated study whose per-prompt
ICC is linked to the AI gap by a known slope, the registry's skip path and degenerate inputs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from modprefs.stats.tables import ai_alignment as A
from modprefs.stats.tables import ai_alignment_table6 as A6
from modprefs.stats.tables.analyses import ANALYSES
from support.ai_alignment_study import linked_study

# --- a study with a known link between AI gap and per-prompt ICC --------------------------------


@pytest.fixture(scope="module")
def study():
    return linked_study()


@pytest.fixture(scope="module")
def t6(study):
    ratings, participants, stimuli, judges, _ = study
    return A6.table6_from_inputs(judges, ratings, participants, stimuli)


def _get(table: pd.DataFrame, section: str, term: str) -> pd.Series:
    hit = table[(table.section == section) & (table.term == term)]
    assert len(hit) == 1, (section, term, table[["section", "term"]])
    return hit.iloc[0]


MAIN = "OLS: ICC ~ AI_diff x Modality (reference audio)"


# --- Table 6 ------------------------------------------------------------------------------------


def test_ai_differentiation_is_the_absolute_gap_of_the_sample_means(study):
    _, _, stimuli, judges, truth = study
    j = judges.copy()
    j.loc[(j["sample"] == 1) & (j.modality == "text"), "rating"] += 4.0  # sample means shift by 2
    diff = A6.ai_differentiation(A.ai_clip_means(A.select_judge_ratings(j), stimuli), stimuli)
    t = truth.set_index(["prompt_id", "modality"])["gap"]
    d = diff.set_index(["prompt_id", "modality"])
    assert np.allclose(d["ai_diff"], t.loc[d.index])  # +2 on both responses cancels
    assert np.allclose(
        d.loc[(slice(None), "text"), "ai_mean_0"].to_numpy(), 60 + 0.5 * t.loc[(slice(None), "text")].to_numpy() + 2
    )


@pytest.mark.slow  # over 5 s on 2 cores: not in `make test-fast`
def test_table6_recovers_the_known_slopes(t6):
    table, per_prompt = t6
    b1 = _get(table, MAIN, "AI Differentiation")
    b3 = _get(table, MAIN, "AI Diff x Modality")
    b2 = _get(table, MAIN, "Modality (Text)")
    assert b1.estimate == pytest.approx(0.014, abs=3 * b1.se) and b1.p < 1e-6
    assert b3.estimate == pytest.approx(-0.004, abs=3 * b3.se)
    assert b2.estimate == pytest.approx(0.0, abs=3 * b2.se)
    assert abs(b1.estimate - 0.014) < 0.003
    slope_text = _get(table, MAIN, "Simple slope: text (b1 + b3)")
    assert slope_text.estimate == pytest.approx(b1.estimate + b3.estimate)
    for m in ("audio", "text"):
        rho = _get(table, "Spearman", f"Spearman: {m}")
        assert rho.estimate > 0.5 and rho.p < 1e-6 and rho.n == 150
    assert b1.n == 300 and b1.paper_estimate_1_100 == 0.014 and b1.paper_p == "<.001"
    assert b1.paper_estimate_on_study_scale == 0.014  # the paper's scale: as printed
    assert per_prompt["usable"].all() and per_prompt["cooks_d"].notna().all()


def test_ols_equals_least_squares_and_closed_form_se(t6):
    table, per_prompt = t6
    X, names = A6.design_matrix(per_prompt)
    y = per_prompt["icc_2_1"].to_numpy(float)
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ beta
    n, p = X.shape
    s2 = resid @ resid / (n - p)
    se = np.sqrt(np.diag(s2 * np.linalg.inv(X.T @ X)))
    for j, term in enumerate(names):
        row = _get(table, MAIN, term)
        assert row.estimate == pytest.approx(beta[j], rel=1e-9, abs=1e-12)
        assert row.se == pytest.approx(se[j], rel=1e-9)
        assert row.df == n - p
        assert row.p == pytest.approx(2 * scipy.stats.t.sf(abs(beta[j] / se[j]), n - p), rel=1e-7)
    # Cook's D, closed form: e_i^2 / (p s^2) * h_ii / (1 - h_ii)^2
    h = np.einsum("ij,jk,ik->i", X, np.linalg.inv(X.T @ X), X)
    cooks = resid**2 / (p * s2) * h / (1 - h) ** 2
    assert np.allclose(per_prompt["cooks_d"].to_numpy(float), cooks, rtol=1e-9)
    assert (per_prompt["influential"] == (cooks > 4 / n)).all()


def test_spearman_and_robustness_refit(t6):
    table, per_prompt = t6
    for m in ("audio", "text"):
        d = per_prompt[per_prompt.modality == m]
        ref = scipy.stats.spearmanr(d.ai_diff, d.icc_2_1)
        row = _get(table, "Spearman", f"Spearman: {m}")
        assert row.estimate == pytest.approx(ref.statistic) and row.p == pytest.approx(ref.pvalue)
    kept = per_prompt[~per_prompt.influential.astype(bool)]
    X, names = A6.design_matrix(kept)
    beta, *_ = np.linalg.lstsq(X, kept.icc_2_1.to_numpy(float), rcond=None)
    section = [s for s in table.section.unique() if s.startswith("Robustness") and s.endswith(": OLS")][0]
    assert "4/n" in section
    for j, term in enumerate(names):
        row = _get(table, section, term)
        assert row.estimate == pytest.approx(beta[j], rel=1e-9, abs=1e-12) and row.n == len(kept)
    assert per_prompt.influential.sum() > 0
    assert f"removed {int(per_prompt.influential.sum())} of 300" in _get(table, section, "AI Differentiation").note


def test_no_link_gives_no_slope():
    ratings, participants, stimuli, judges, _ = linked_study(
        n_prompts=80, n_raters=30, b0={"audio": 0.3, "text": 0.3}, slope={"audio": 0.0, "text": 0.0}, seed=3
    )
    table, _ = A6.table6_from_inputs(judges, ratings, participants, stimuli)
    b1 = _get(table, MAIN, "AI Differentiation")
    assert abs(b1.estimate) < 3 * b1.se


def test_one_modality_only_fits_within_it():
    ratings, participants, stimuli, judges, _ = linked_study(n_prompts=60, n_raters=25, seed=4)
    table, per_prompt = A6.table6_from_inputs(judges[judges.modality == "text"], ratings, participants, stimuli)
    b1 = _get(table, MAIN, "AI Differentiation")
    assert "within text only" in b1.note and b1.n == 60
    assert math.isnan(_get(table, MAIN, "Modality (Text)").estimate)
    assert "needs both modalities" in _get(table, MAIN, "AI Diff x Modality").note
    assert set(per_prompt.modality) == {"text"}
    assert math.isnan(_get(table, "Spearman", "Spearman: audio").estimate)


@pytest.mark.slow  # over 5 s on 2 cores: not in `make test-fast`
def test_prompt_without_ai_rating_is_nan_with_reason(study):
    ratings, participants, stimuli, judges, _ = study
    j = judges[~((judges.clip_id == "p000_1") & (judges.modality == "audio"))]
    _, per_prompt = A6.table6_from_inputs(j, ratings, participants, stimuli)
    row = per_prompt[(per_prompt.prompt_id == "p000") & (per_prompt.modality == "audio")].iloc[0]
    assert math.isnan(row.ai_diff) and not row.usable and "no AI-audio rating of response(s) [1]" in row.note
    assert per_prompt.usable.sum() == 299


# --- Table 5 ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def t5(study):
    ratings, participants, stimuli, judges, _ = study
    return A.table5(judges, ratings, participants, stimuli)


def test_mae_and_clip_means(study, t5):
    ratings, participants, stimuli, judges, _ = study
    table, clips = t5
    for m in ("audio", "text"):
        h = ratings[ratings.condition == m].groupby("clip_id").rating.mean()
        a = judges[judges.modality == m].groupby("clip_id").rating.mean()
        c = clips.set_index("clip_id")
        assert np.allclose(c[f"human_{m}"], h.loc[c.index]) and np.allclose(c[f"ai_{m}"], a.loc[c.index])
        row = _get(table, "AI-Human absolute error", f"{m.capitalize()} MAE")
        assert row.estimate == pytest.approx((a - h).abs().mean()) and row.n == 300
    assert list(table.columns) == A.TABLE_COLUMNS
    audio = _get(table, "AI-Human absolute error", "Audio MAE")
    assert audio.paper_estimate_1_100 == audio.paper_estimate_on_study_scale == 12.27  # the paper's scale


def test_prism_paired_t_equals_scipy(t5):
    table, clips = t5
    for term, col in A.PRISM_GROUPS:
        ref = scipy.stats.ttest_rel(clips.prism_score, clips[col])
        row = _get(table, "PRISM vs external annotators", term)
        assert row.estimate == pytest.approx((clips.prism_score - clips[col]).mean())
        assert row.t == pytest.approx(ref.statistic) and row.p == pytest.approx(ref.pvalue)
        assert row.df == len(clips) - 1 == ref.df


def test_prism_t_with_missing_values_is_pairwise():
    rng = np.random.default_rng(1)
    clips = pd.DataFrame(
        {
            "prism_score": rng.uniform(1, 100, 30),
            "ai_text": rng.uniform(1, 100, 30),
            "ai_audio": np.nan,
            "human_text": rng.uniform(1, 100, 30),
            "human_audio": np.nan,
        }
    )
    clips.loc[[2, 5], "ai_text"] = np.nan
    clips.loc[7, "prism_score"] = np.nan
    rows = {r["term"]: r for r in A.prism_comparisons(clips)}
    keep = clips.prism_score.notna() & clips.ai_text.notna()
    ref = scipy.stats.ttest_rel(clips.prism_score[keep], clips.ai_text[keep])
    assert rows["vs. AI-Text"]["n"] == 27 and rows["vs. AI-Text"]["t"] == pytest.approx(ref.statistic)
    assert math.isnan(rows["vs. AI-Audio"]["estimate"]) and "needs >= 2 clips" in rows["vs. AI-Audio"]["note"]


def test_lmm_row_is_the_text_minus_audio_difference(t5):
    table, clips = t5
    long = A.abs_error_long(clips)
    row = _get(table, "AI-Human absolute error", "Text vs. Audio (LMM)")
    # every clip has both modalities: the fixed effect equals the mean paired difference
    means = long.groupby("condition").abs_error.mean()
    assert row.estimate == pytest.approx(means["text"] - means["audio"], rel=1e-6)
    assert row.n == 600 and "Satterthwaite" in row.note


@pytest.mark.r
def test_lmm_row_matches_lmertest(study):
    from support.lmertest_reference import lmertest_run, require_lmertest

    require_lmertest()
    ratings, participants, stimuli, judges, _ = study
    # unbalanced: drop some audio AI ratings so the clip effect matters
    j = judges[~(judges.clip_id.str[1:4].astype(int) % 3 == 0) | (judges.modality == "text")]
    table, clips = A.table5(j, ratings, participants, stimuli)
    long = A.abs_error_long(clips)
    ref = lmertest_run(long[["abs_error", "modality", "clip_id"]], [A.LMM_FORMULA], ["clip_id"])["fits"][0]
    i = ref["names"].index("modality")
    row = _get(table, "AI-Human absolute error", "Text vs. Audio (LMM)")
    assert row.estimate == pytest.approx(ref["estimate"][i], rel=1e-6)
    assert row.se == pytest.approx(ref["se"][i], rel=1e-4)
    assert row.df == pytest.approx(ref["df"][i], rel=1e-3)
    assert row.p == pytest.approx(ref["p"][i], rel=1e-3)


def test_one_modality_missing_gives_nan_lmm_with_reason(study):
    ratings, participants, stimuli, judges, _ = study
    table, clips = A.table5(judges[judges.modality == "text"], ratings, participants, stimuli)
    assert clips.ai_audio.isna().all()
    audio = _get(table, "AI-Human absolute error", "Audio MAE")
    assert math.isnan(audio.estimate) and "no clip has both an AI-audio" in audio.note
    lmm = _get(table, "AI-Human absolute error", "Text vs. Audio (LMM)")
    assert math.isnan(lmm.estimate) and "needs both modalities" in lmm.note
    assert math.isnan(_get(table, "PRISM vs external annotators", "vs. AI-Audio").estimate)
    assert np.isfinite(_get(table, "PRISM vs external annotators", "vs. Human-Audio").estimate)


# --- judge table handling -------------------------------------------------------------------------


def test_only_ok_response_quality_rows_enter(study):
    _, _, stimuli, judges, _ = study
    extra = judges.head(4).assign(kind="audio_quality", rating=1.0)
    failed = judges.head(4).assign(status="failed", rating=np.nan, reason="parse")
    attn = judges.head(2).assign(clip_id=["attn_0", "attn_1"], prompt_id="attn")
    ai = A.select_judge_ratings(pd.concat([judges, extra, failed, attn]))
    assert len(ai) == len(judges) + 2
    means = A.ai_clip_means(ai, stimuli)
    assert len(means) == 600 and (means.ai_n == 2).all()


def test_several_judges_need_a_choice(study):
    _, _, _, judges, _ = study
    two = pd.concat([judges, judges.assign(judge="smollm2", rating=50.0)])
    with pytest.raises(ValueError, match="several audio judges.*judge_by_modality"):
        A.select_judge_ratings(two)
    ai = A.select_judge_ratings(two, {"text": "smollm2", "audio": "openai:gpt-4o-audio@v1@abc"})
    assert set(ai.judge_id) == {"smollm2@v1@abc", "openai:gpt-4o-audio@v1@abc"}
    with pytest.raises(ValueError, match="matches none"):
        A.select_judge_ratings(two, {"text": "nope", "audio": "smollm2"})


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda j: j.drop(columns="status"), r"lacks column\(s\) \['status'\]"),
        (lambda j: j.drop(columns="prompt_version"), r"lacks column\(s\) \['prompt_version'\]"),
        (lambda j: j.assign(rating=[150.0] + [50.0] * (len(j) - 1)), "column 'rating' is missing or outside 1..100"),
        (lambda j: j.assign(modality="video"), "column 'modality' has unknown values"),
    ],
)
def test_bad_judge_tables_name_the_problem(study, mutate, match):
    with pytest.raises(ValueError, match=match):
        A.select_judge_ratings(mutate(study[3]))


def test_bad_stimuli_name_the_column(study):
    _, _, stimuli, judges, _ = study
    with pytest.raises(ValueError, match=r"stimuli lacks column\(s\) \['response'\]"):
        A.ai_clip_means(A.select_judge_ratings(judges), stimuli.drop(columns="response"))


# --- registry ---------------------------------------------------------------------------------------


def test_registry_skips_without_judges(study, tmp_path):
    ratings, participants, stimuli, judges, _ = study
    tables = {"ratings": ratings, "participants": participants, "stimuli": stimuli}
    for name, outs in (
        ("table5", ("table5_ai_human", "table5_clips")),
        ("table6", ("table6_ai_diff_icc", "table6_per_prompt")),
    ):
        res = ANALYSES[name](tables, {})
        assert set(res.tables) == set(outs)
        for t in res.tables.values():
            assert t.loc[0, "status"] == "skipped" and "judges stage disabled" in t.loc[0, "reason"]
        for fig_name, draw in res.figures.items():
            draw(tmp_path / f"{fig_name}.png")
            assert (tmp_path / f"{fig_name}.png").stat().st_size > 1000
    failed = judges.assign(status="failed", rating=np.nan, reason="transport: 503")
    res = ANALYSES["table5"]({**tables, "judges": failed}, {})
    assert "0 of 1200 rows" in res.tables["table5_ai_human"].loc[0, "reason"]
    assert "503" in res.tables["table5_ai_human"].loc[0, "reason"]


def test_registry_runs_both_tables(study, tmp_path):
    ratings, participants, stimuli, judges, _ = study
    tables = {"ratings": ratings, "participants": participants, "stimuli": stimuli, "judges": judges}
    r5 = ANALYSES["table5"](tables, {"judge_by_modality": None})
    r6 = ANALYSES["table6"](tables, {})
    assert len(r5.tables["table5_ai_human"]) == 7 and len(r5.tables["table5_clips"]) == 300
    assert set(r6.tables) == {"table6_ai_diff_icc", "table6_per_prompt"}
    for res in (r5, r6):
        for name, draw in res.figures.items():
            draw(tmp_path / f"{name}.png")
            assert (tmp_path / f"{name}.png").stat().st_size > 5000

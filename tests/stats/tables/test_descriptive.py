"""Table 1, Table 3 and behaviour: hand examples, scipy cross-checks, simulated invariants, degenerate input."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from modprefs.ratings.simulate import simulate_ratings
from modprefs.ratings.simulation.params import SimulationParams
from modprefs.stats.tables.behaviour import behaviour_table, first_clip_map
from modprefs.stats.tables.descriptive import (
    demographics_long,
    demographics_table,
    fisher_2x2,
    format_p,
    mann_whitney,
    participant_mean_trial_time,
    session_long,
    session_table,
)
from modprefs.study.design import make_assignments
from support.recovery_model import paper_stimuli


@pytest.fixture(scope="module")
def sim():
    stimuli = paper_stimuli()
    prompts = list(dict.fromkeys(stimuli.prompt_id))
    assignments = make_assignments(prompts, 53, 20, seed=11)
    ratings, trials, participants, _ = simulate_ratings(stimuli, assignments, SimulationParams(), seed=11)
    return dict(ratings=ratings, trials=trials, participants=participants, assignments=assignments)


def people(condition: str, n: int, failed: int = 0, dropouts: int = 0, start: int = 0, **cols) -> pd.DataFrame:
    """n participants: the first ``failed`` fail the check, the next ``dropouts`` pass but do not finish."""
    idx = np.arange(n)
    passed = idx >= failed
    completed = passed & (idx >= failed + dropouts)
    df = pd.DataFrame(
        {
            "participant_id": [f"{condition[0]}{start + i:03d}" for i in idx],
            "condition": condition,
            "passed_attention": passed,
            "completed": completed,
            "session_minutes": np.where(completed, 30.0, 5.0),
            "difficulty": pd.array(np.where(completed, 2, 0), dtype="Int64"),
        }
    )
    df.loc[~completed, "difficulty"] = pd.NA
    for k, v in cols.items():
        df[k] = v
    return df


# ---------------------------------------------------------------------------------------------------
# Mann–Whitney and rank-biserial: hand-computed
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, audio, u_text, r_rb",
    [
        ([1, 2, 3], [4, 5, 6], 0.0, -1.0),  # every audio value larger
        ([3, 5, 8], [1, 4, 6], 6.0, 1 / 3),  # pairs text > audio: 3>1; 5>1,4; 8>1,4,6 = 6 of 9
        ([2, 4, 6], [2, 3, 7], 4.5, 0.0),  # 2=2 (1/2), 4>2,3 (2), 6>2,3 (2) = 4.5 of 9
    ],
)
def test_mann_whitney_hand_computed_3x3(text, audio, u_text, r_rb):
    res = mann_whitney(text, audio)
    assert res["U_text"] == pytest.approx(u_text)
    assert res["U_audio"] == pytest.approx(9 - u_text)
    assert res["r_rb"] == pytest.approx(r_rb)
    assert res["r_rb"] == pytest.approx(1 - 2 * res["U_audio"] / 9)  # the paper's form
    ref = stats.mannwhitneyu(text, audio, alternative="two-sided")
    assert res["U_text"] == ref.statistic and res["p"] == pytest.approx(ref.pvalue)
    # scipy's U for x = audio is U_audio: the statistic the paper reports in §4.1
    assert stats.mannwhitneyu(audio, text).statistic == pytest.approx(res["U_audio"])


def test_rank_biserial_sign_matches_paper_convention():
    """Text larger -> positive r_rb, with U reported for audio small (paper decisive: U=150582, r=.303)."""
    rng = np.random.default_rng(0)
    text, audio = rng.normal(40, 10, 200), rng.normal(28, 10, 210)
    res = mann_whitney(text, audio)
    assert res["r_rb"] > 0 and res["U_audio"] < res["U_text"]
    # the paper's pairs imply n_a n_t = 2U/(1 - r): ~432k decisive pairs (two ~650-trial groups), ~61k tie pairs
    assert 2 * 150582 / (1 - 0.303) == pytest.approx(432_000, rel=0.01)
    assert 2 * 34092 / (1 + 0.113) == pytest.approx(61_260, rel=0.01)


def test_mann_whitney_degenerate():
    empty = mann_whitney([], [1.0, 2.0])
    assert math.isnan(empty["U_text"]) and math.isnan(empty["p"]) and "no observations in text" in empty["reason"]
    same = mann_whitney([3.0, 3.0], [3.0])
    assert math.isnan(same["p"]) and "identical" in same["reason"] and same["r_rb"] == 0.0
    nan_in = mann_whitney([1.0, np.nan], [2.0])
    assert nan_in["n_text"] == 1


def test_fisher_hand_computed_and_paper_counts():
    # [[3,0],[0,3]]: P = 1/C(6,3) = 0.05 for each extreme table -> two-sided 0.10
    assert fisher_2x2(3, 0, 0, 3)["p"] == pytest.approx(0.10)
    assert fisher_2x2(1, 0, 0, 1)["p"] == pytest.approx(1.0)
    # Table 3: completed 49/53 vs 51/53 -> .678; failed attention 5/53 vs 7/53 -> .761
    assert fisher_2x2(49, 4, 51, 2)["p"] == pytest.approx(0.678, abs=5e-4)
    assert fisher_2x2(5, 48, 7, 46)["p"] == pytest.approx(0.761, abs=5e-4)
    ref = stats.fisher_exact([[12, 5], [4, 9]])
    assert fisher_2x2(12, 5, 4, 9)["p"] == pytest.approx(ref.pvalue)
    assert "no participants" in fisher_2x2(0, 0, 3, 4)["reason"]


def test_format_p():
    assert format_p(0.678) == ".678" and format_p(0.0001) == "<.001" and format_p(float("nan")) == ""


# ---------------------------------------------------------------------------------------------------
# Table 3 on the paper's counts
# ---------------------------------------------------------------------------------------------------
def test_session_table_reproduces_paper_denominators():
    """Completed % is over all recruited; a non-completer is a passer who did not finish (49/53, 51/53)."""
    p = pd.concat([people("text", 53, failed=5, dropouts=4), people("audio", 53, failed=7, dropouts=2)])
    trials = pd.DataFrame(columns=["participant_id", "prompt_id", "trial", "decision_time_s"])
    long = session_long(p, trials).set_index("measure")
    comp = long.loc["completed_pct"]
    assert (comp.text_count, comp.n_text, comp.audio_count, comp.n_audio) == (49, 53, 51, 53)
    assert round(comp.text, 1) == 92.5 and round(comp.audio, 1) == 96.2
    assert comp.p == pytest.approx(0.678, abs=5e-4)
    fail = long.loc["failed_attention_pct"]
    assert round(fail.text, 1) == 9.4 and round(fail.audio, 1) == 13.2 and fail.p == pytest.approx(0.761, abs=5e-4)
    # session minutes and difficulty: completers only (53-5-4 = 44 text, 53-7-2 = 44 audio)
    assert (long.loc["session_min", "n_text"], long.loc["session_min", "n_audio"]) == (44, 44)
    assert (long.loc["difficulty", "n_text"], long.loc["difficulty", "n_audio"]) == (44, 44)
    # no trials -> trial duration NaN with a reason, not a crash
    assert math.isnan(long.loc["trial_s", "text"]) and "no observations" in long.loc["trial_s", "reason"]
    wide = session_table(p, trials)
    assert list(wide.columns[:5]) == ["row", "text", "audio", "p", "test"]
    assert wide.loc[0, "text"] == "92.5" and wide.loc[0, "p"] == ".678" and wide.loc[4, "p"] == ".761"


def test_trial_duration_is_over_participant_means():
    p = pd.concat([people("text", 3), people("audio", 2, start=10)])
    rows = [("t000", [10, 10, 10, 10]), ("t001", [40]), ("t002", [70, 50]), ("a010", [100, 120]), ("a011", [200])]
    trials = pd.DataFrame(
        [(pid, f"p{k}", k + 1, s) for pid, times in rows for k, s in enumerate(times)]
        + [("t000", "attn", 0, 999.0)],  # attention check ignored
        columns=["participant_id", "prompt_id", "trial", "decision_time_s"],
    )
    pm = participant_mean_trial_time(trials, p).set_index("participant_id")["mean_trial_s"]
    assert pm.to_dict() == {"a010": 110.0, "a011": 200.0, "t000": 10.0, "t001": 40.0, "t002": 60.0}
    row = session_long(p, trials).set_index("measure").loc["trial_s"]
    assert row.text == pytest.approx(np.mean([10, 40, 60]))
    assert row.text_sd == pytest.approx(np.std([10, 40, 60], ddof=1))
    ref = stats.mannwhitneyu([10, 40, 60], [110, 200], alternative="two-sided")
    assert row.U == ref.statistic == row.U_text and row.p == pytest.approx(ref.pvalue)
    assert row.U_audio == 6 - row.U_text and row.r_rb == -1.0


# ---------------------------------------------------------------------------------------------------
# Table 1
# ---------------------------------------------------------------------------------------------------
def test_demographics_hand_example():
    p = pd.concat(
        [
            people(
                "text",
                5,
                failed=1,
                age=[99, 20, 30, 40, 50],
                gender=["Woman", "Woman", "Man", " woman ", None],
                race=["White", "White", "Multiracial", "Asian", "White"],
                hispanic_latino=["true", "false", "false", "true", "false"],
                native_english=[True, True, False, True, True],
                education=[
                    "Bachelor's degree",
                    "Master's degree",
                    "High school diploma or GED",
                    None,
                    "Some college, no degree",
                ],
            ),
            people(
                "audio",
                2,
                start=10,
                age=[33, 35],
                gender=["Man", "Man"],
                race=["White", "White"],
                hispanic_latino=[False, False],
                native_english=[True, True],
                education=["Doctoral or professional degree", "Associate degree"],
            ),
        ]
    )
    long = demographics_long(p).set_index(["measure", "condition"])
    # text: the failed participant (age 99) is excluded -> ages 20, 30, 40, 50
    assert long.loc[("n", "text"), "value"] == 4
    assert long.loc[("age", "text"), "value"] == 35 and long.loc[("age", "text"), "sd"] == pytest.approx(
        np.std([20, 30, 40, 50], ddof=1)
    )
    # gender: Woman, Man, woman, missing -> 2 of 3 answers
    assert (long.loc[("woman_pct", "text"), "count"], long.loc[("woman_pct", "text"), "n"]) == (2, 3)
    assert long.loc[("white_pct", "text"), "value"] == pytest.approx(50.0)  # White, Multiracial, Asian, White
    assert long.loc[("hispanic_latino_pct", "text"), "value"] == pytest.approx(25.0)
    assert long.loc[("native_english_pct", "text"), "value"] == pytest.approx(75.0)
    assert (long.loc[("bachelor_plus_pct", "text"), "count"], long.loc[("bachelor_plus_pct", "text"), "n"]) == (1, 3)
    assert long.loc[("bachelor_plus_pct", "audio"), "value"] == pytest.approx(50.0)
    wide = demographics_table(p)
    assert list(wide.columns) == ["row", "text", "audio", "reason"]
    assert list(wide.row) == [
        "$n$",
        "Age",
        "Woman (%)",
        "White (%)",
        "Hispanic/Latino (%)",
        "Native English (%)",
        "Bachelor's+ (%)",
    ]
    assert wide.loc[1, "audio"] == "34.0 (1.4)" and wide.loc[2, "text"] == "66.7"


def test_demographics_degenerate_one_participant_and_empty_condition():
    p = people(
        "text",
        1,
        age=[30],
        gender=["Woman"],
        race=["White"],
        hispanic_latino=[False],
        native_english=[True],
        education=["Bachelor's degree"],
    )
    long = demographics_long(p).set_index(["measure", "condition"])
    assert long.loc[("age", "text"), "value"] == 30 and math.isnan(long.loc[("age", "text"), "sd"])
    assert "SD needs" in long.loc[("age", "text"), "reason"]
    assert long.loc[("n", "audio"), "value"] == 0 and "no analysed participants" in long.loc[("n", "audio"), "reason"]
    wide = demographics_table(p)
    assert wide.loc[1, "text"] == "30.0" and wide.loc[1, "audio"] == ""


# ---------------------------------------------------------------------------------------------------
# simulated data: invariants
# ---------------------------------------------------------------------------------------------------
def test_simulated_tables_add_up(sim):
    p, t = sim["participants"], sim["trials"]
    passed = p[p.passed_attention]
    t1 = demographics_long(p)
    n = t1[t1.measure == "n"].set_index("condition")["value"]
    assert n.sum() == len(passed) and n["text"] == (passed.condition == "text").sum()
    long = session_long(p, t).set_index("measure")
    assert long.loc["failed_attention_pct", "n_text"] + long.loc["failed_attention_pct", "n_audio"] == len(p)
    assert long.loc["failed_attention_pct", "text_count"] == (~p.passed_attention & (p.condition == "text")).sum()
    trial_s = long.loc["trial_s"]
    assert trial_s.n_text + trial_s.n_audio == passed.participant_id.isin(t[t.trial >= 1].participant_id).sum()
    assert trial_s.U_text + trial_s.U_audio == trial_s.n_text * trial_s.n_audio
    # calibrated: audio trials take longer (Table 3: 136 vs 79 s), so U_text is small and p tiny
    assert trial_s.audio > trial_s.text and trial_s.p < 1e-6 and trial_s.r_rb < -0.5
    assert long.loc["session_min", "audio"] > long.loc["session_min", "text"]
    table = session_table(p, t)
    assert len(table) == 5 and (table.reason == "").all()


def test_behaviour_on_simulated_data(sim):
    p, t, a, r = sim["participants"], sim["trials"], sim["assignments"], sim["ratings"]
    b = behaviour_table(t, p, assignments=a).set_index("measure")
    audio_passed = set(p[p.passed_attention & (p.condition == "audio")].participant_id)
    at = t[(t.trial >= 1) & t.participant_id.isin(audio_passed)]
    rel = b.loc["relisten_first_rate"]
    assert rel.n_audio == len(at) and rel.audio_count == at.relistened_first.astype(bool).sum()
    assert rel.audio == pytest.approx(100 * rel.audio_count / rel.n_audio)
    assert 10 < rel.audio < 40  # calibrated to 214/920 = 23.3 %
    assert math.isnan(rel.text) and "audio only" in rel.reason
    # presentation-order mapping: from assignments == from ratings' presented_first
    b2 = behaviour_table(t, p, ratings=r).set_index("measure")
    cols = ["audio", "audio_sd", "n_audio", "statistic", "p"]
    pd.testing.assert_frame_equal(b[cols], b2[cols])
    # relistened_first is "first-presented clip replayed": equals replays of the first clip >= 1
    fc = first_clip_map(assignments=a)
    m = at.merge(fc, on=["participant_id", "trial"])
    rep_first = np.where(m.first_clip == 0, m.replays_0, m.replays_1).astype(int)
    assert ((rep_first > 0) == m.relistened_first.astype(bool)).all()
    assert b.loc["replays_first", "audio"] > b.loc["replays_second", "audio"]
    assert b.loc["replays_first_minus_second", "audio"] == pytest.approx(
        b.loc["replays_first", "audio"] - b.loc["replays_second", "audio"]
    )
    rc = b.loc["rating_changes"]
    assert rc.n_text + rc.n_audio == len(p[p.passed_attention & p.participant_id.isin(t[t.trial >= 1].participant_id)])
    assert rc.U_text + rc.U_audio == rc.n_text * rc.n_audio and 0 <= rc.p <= 1
    assert b.loc["deliberation_s", "audio"] > 0 and math.isnan(b.loc["deliberation_s", "text"])


def test_behaviour_without_order_or_audio_is_nan_with_reason(sim):
    p, t = sim["participants"], sim["trials"]
    b = behaviour_table(t, p).set_index("measure")  # no assignments/ratings: order unknown
    assert (
        math.isnan(b.loc["replays_first", "audio"]) and "presentation order unknown" in b.loc["replays_first", "reason"]
    )
    assert np.isfinite(b.loc["relisten_first_rate", "audio"])  # relistened_first needs no order
    text_only = p[p.condition == "text"]
    b = behaviour_table(t, text_only, assignments=sim["assignments"]).set_index("measure")
    assert math.isnan(b.loc["relisten_first_rate", "audio"]) and b.loc["relisten_first_rate", "n_audio"] == 0
    assert math.isnan(b.loc["rating_changes", "p"]) and "no observations in audio" in b.loc["rating_changes", "reason"]


def test_one_participant_per_condition_does_not_crash(sim):
    p, t = sim["participants"], sim["trials"]
    keep = p[p.passed_attention & p.completed].groupby("condition").head(1)
    long = session_long(keep, t).set_index("measure")
    assert long.loc["trial_s", "n_text"] == 1 and math.isnan(long.loc["trial_s", "text_sd"])
    assert "SD needs at least 2" in long.loc["trial_s", "reason"]
    assert np.isfinite(long.loc["trial_s", "p"])  # a 1 x 1 Mann–Whitney is defined (p = 1)
    b = behaviour_table(t, keep, assignments=sim["assignments"])
    assert len(b) == 7
    assert demographics_table(keep).loc[0, "text"] == "1"


def test_csv_round_trip_gives_identical_tables(sim, tmp_path):
    """Tables read back from CSV (strings, floats with NaN for Int64, object booleans) give the same numbers."""
    back = {}
    for name in ("participants", "trials", "assignments"):
        sim[name].to_csv(tmp_path / f"{name}.csv", index=False)
        back[name] = pd.read_csv(tmp_path / f"{name}.csv")
    p, t, a = sim["participants"], sim["trials"], sim["assignments"]
    pd.testing.assert_frame_equal(demographics_table(p), demographics_table(back["participants"]))
    pd.testing.assert_frame_equal(
        session_long(p, t), session_long(back["participants"], back["trials"]), check_dtype=False
    )
    pd.testing.assert_frame_equal(
        behaviour_table(t, p, a),
        behaviour_table(back["trials"], back["participants"], back["assignments"]),
        check_dtype=False,
    )

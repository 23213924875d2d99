"""Decision thresholds (§4.1, §5.1) and Figure 2: hand examples, scipy checks, simulated invariants, edge cases."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from modprefs.ratings.simulate import simulate_ratings
from modprefs.ratings.simulation.params import SimulationParams
from modprefs.stats import figures
from modprefs.stats.figures import figure2_gap_cdf, save_png
from modprefs.stats.tables.thresholds import (
    GAP_TABLE_COLUMNS,
    THRESHOLD_COLUMNS,
    agreement_curve,
    describe_gaps,
    gap_table,
    prompt_mean_gaps,
    threshold_recommendations,
    trial_gaps,
)
from modprefs.study.design import make_assignments
from support.recovery_model import paper_stimuli


@pytest.fixture(scope="module")
def sim():
    stimuli = paper_stimuli()
    prompts = list(dict.fromkeys(stimuli.prompt_id))
    assignments = make_assignments(prompts, 53, 20, seed=5)
    ratings, trials, participants, _ = simulate_ratings(stimuli, assignments, SimulationParams(), seed=5)
    gaps = trial_gaps(ratings, trials, participants)
    return dict(ratings=ratings, trials=trials, participants=participants, gaps=gaps)


def make_tables(spec):
    """spec rows: (participant, condition, passed, trial, prompt, r0, r1, first, preference).

    Returns (ratings, trials, participants) as docs/CONTRACTS.md describes them.
    """
    ratings, trials, parts = [], [], {}
    for pid, cond, passed, trial, prompt, r0, r1, first, pref in spec:
        parts[pid] = (cond, passed)
        for resp, rating in ((0, r0), (1, r1)):
            ratings.append(
                dict(
                    participant_id=pid,
                    condition=cond,
                    prompt_id=prompt,
                    clip_id=f"{prompt}_{resp}",
                    trial=trial,
                    presented_first=resp == first,
                    rating=rating,
                )
            )
        trials.append(dict(participant_id=pid, prompt_id=prompt, trial=trial, preference=pref))
    participants = pd.DataFrame(
        [dict(participant_id=k, condition=c, passed_attention=ok, completed=ok) for k, (c, ok) in parts.items()]
    )
    return pd.DataFrame(ratings), pd.DataFrame(trials), participants


def gaps_frame(cond: str, diffs, prefs, pid: str = "P1") -> pd.DataFrame:
    diffs = np.asarray(diffs, dtype=float)
    return pd.DataFrame(
        dict(
            participant_id=pid,
            condition=cond,
            prompt_id=[f"q{i}" for i in range(len(diffs))],
            trial=np.arange(1, len(diffs) + 1),
            rating_0=50 + diffs,
            rating_1=50.0,
            diff=diffs,
            gap=np.abs(diffs),
            preference=list(prefs),
            kind=["tie" if p == "tie" else "decisive" for p in prefs],
        )
    )


# ---------------------------------------------------------------------------------------------------
# trial gaps
# ---------------------------------------------------------------------------------------------------
def test_trial_gaps_hand_example():
    ratings, trials, participants = make_tables(
        [
            ("A", "audio", True, 0, "attn", 90, 10, 0, "0"),  # attention check: dropped
            ("A", "audio", True, 1, "p_x", 30, 70, 1, "1"),  # response 1 shown first: gap still |30-70|
            ("A", "audio", True, 2, "p_y", 55, 52, 0, "tie"),
            ("T", "text", True, 1, "p_x", 80, 20, 0, "0"),
            ("F", "text", False, 1, "p_y", 10, 90, 0, "1"),  # failed the check: dropped
        ]
    )
    g = trial_gaps(ratings, trials, participants)
    assert len(g) == 3
    row = g[(g.participant_id == "A") & (g.trial == 1)].iloc[0]
    assert (row.rating_0, row.rating_1, row["diff"], row.gap, row.kind) == (30, 70, -40, 40, "decisive")
    assert g[(g.participant_id == "A") & (g.trial == 2)].iloc[0].kind == "tie"
    assert g[g.participant_id == "T"].iloc[0].gap == 60
    # a numeric preference column read from CSV ("0.0"/"1.0") is still understood
    trials2 = trials.assign(preference=trials.preference.replace({"0": 0.0, "1": 1.0}))
    assert trial_gaps(ratings, trials2, participants).kind.tolist() == g.kind.tolist()


def test_describe_gaps_t_interval_matches_scipy():
    x = np.array([3.0, 7.0, 8.0, 20.0, 41.0])
    d = describe_gaps(x)
    lo, hi = stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
    assert (d["ci_lo"], d["ci_hi"]) == (pytest.approx(lo), pytest.approx(hi))
    assert d["median"] == 8.0 and d["sd"] == pytest.approx(np.std(x, ddof=1))
    one = describe_gaps(np.array([4.0]))
    assert one["mean"] == 4.0 and math.isnan(one["ci_lo"]) and "only one" in one["reason"]
    assert describe_gaps(np.array([]))["reason"] == "no trials"


def test_gap_table_hand_example():
    """Decisive gaps text {30, 50, 70} vs audio {10, 20, 60}: U_text = 7 of 9 pairs, U_audio = 2, r_rb = 5/9."""
    g = pd.concat(
        [
            gaps_frame("text", [30, -50, 70, 2], ["0", "1", "0", "tie"]),
            gaps_frame("audio", [10, 20, -60, 0, 4], ["0", "0", "1", "tie", "tie"], pid="P2"),
        ]
    )
    t = gap_table(g).set_index("kind")
    dec = t.loc["decisive"]
    assert (dec.n_text, dec.n_audio, dec.mean_text, dec.median_audio) == (3, 3, 50.0, 20.0)
    assert dec.U == dec.U_audio == 2.0 and dec.U_text == 7.0 and dec.r_rb == pytest.approx(5 / 9)
    ref = stats.mannwhitneyu([10, 20, 60], [30, 50, 70], alternative="two-sided")
    assert dec.U == ref.statistic and dec.p == pytest.approx(ref.pvalue)
    tie = t.loc["tie"]
    assert tie.n_text == 1 and math.isnan(tie.ci_lo_text) and "only one of the tie trials" in tie.reason
    assert tie.U_audio == 1.0 and tie.r_rb == pytest.approx(0.0)  # 2 vs {0, 4}: one pair each way


def test_no_ties_in_a_condition_gives_nan_with_reason():
    g = pd.concat(
        [
            gaps_frame("text", [30, -50, 70], ["0", "1", "0"]),
            gaps_frame("audio", [10, 2, -60], ["0", "tie", "1"], pid="P2"),
        ]
    )
    t = gap_table(g).set_index("kind")
    assert list(gap_table(g).columns) == GAP_TABLE_COLUMNS
    tie = t.loc["tie"]
    assert tie.n_text == 0 and math.isnan(tie.mean_text) and math.isnan(tie.U) and math.isnan(tie.p)
    assert "text: no tie trials" in tie.reason and "Mann-Whitney: no observations in text" in tie.reason
    assert t.loc["decisive", "reason"] == ""
    recs = threshold_recommendations(g)
    assert list(recs.columns) == THRESHOLD_COLUMNS and len(recs) == 6


# ---------------------------------------------------------------------------------------------------
# thresholds
# ---------------------------------------------------------------------------------------------------
def test_threshold_rules_hand_example():
    # diffs 0, 2, 3, 10, -12, 20 with stated tie, tie, 0, 0, 1, 0
    g = pd.concat(
        [
            gaps_frame("text", [0, 2, 3, 10, -12, 20], ["tie", "tie", "0", "0", "1", "0"]),
            gaps_frame("audio", [0, 5, 6, -9], ["tie", "tie", "tie", "1"], pid="P2"),
        ]
    )
    curve = agreement_curve(g, "text").set_index("tau")
    assert curve.loc[0, "agreement"] == pytest.approx(5 / 6)  # only diff 0 called a tie; diff 2 mislabelled
    assert curve.loc[2, "agreement"] == 1.0 and curve.loc[3, "agreement"] == pytest.approx(5 / 6)
    assert curve.loc[0, "precision"] == pytest.approx(4 / 5) and curve.loc[0, "n_kept"] == 5
    assert curve.loc[20, "n_kept"] == 0 and math.isnan(curve.loc[20, "precision"])
    recs = threshold_recommendations(g).set_index(["condition", "rule"])
    assert recs.loc[("text", "max_agreement"), "threshold"] == 2.0
    assert recs.loc[("text", "precision_80"), "threshold"] == 0.0
    assert recs.loc[("text", "precision_90"), "threshold"] == 2.0
    assert recs.loc[("text", "precision_90"), "coverage"] == pytest.approx(4 / 6)
    # audio: ties up to 6, decisive at 9 -> smallest maximiser is 6 (agreement 1)
    assert recs.loc[("audio", "max_agreement"), "threshold"] == 6.0
    assert recs.loc[("audio", "max_agreement"), "other_condition_threshold"] == 2.0
    assert recs.loc[("audio", "max_agreement"), "agreement_at_other_threshold"] == pytest.approx(2 / 4)
    # text at audio's tau = 6: diffs 0, 2, 3 become ties (diff 3 was stated "0") -> 5 of 6
    assert recs.loc[("text", "max_agreement"), "agreement_at_other_threshold"] == pytest.approx(5 / 6)


def test_threshold_unreachable_precision_is_nan_with_reason():
    # every decisive-looking gap is a stated tie: precision is 0 at every tau
    g = gaps_frame("text", [5, 10, 15], ["tie", "tie", "tie"])
    recs = threshold_recommendations(g).set_index(["condition", "rule"])
    assert math.isnan(recs.loc[("text", "precision_80"), "threshold"])
    assert "reaches precision 80%" in recs.loc[("text", "precision_80"), "reason"]
    assert recs.loc[("audio", "max_agreement"), "reason"].startswith("no audio trials")


# ---------------------------------------------------------------------------------------------------
# simulated data
# ---------------------------------------------------------------------------------------------------
def test_simulated_gaps_invariants(sim):
    g, p, t = sim["gaps"], sim["participants"], sim["trials"]
    passed = set(p[p.passed_attention].participant_id)
    assert len(g) == len(t[(t.trial >= 1) & t.participant_id.isin(passed)])  # every response trial, once
    table = gap_table(g).set_index("kind")
    dec, tie = table.loc["decisive"], table.loc["tie"]
    assert dec.n_text + dec.n_audio + tie.n_text + tie.n_audio == len(g)
    # calibrated simulator (§4.1): decisive gaps larger in text (41.7 vs 27.9), ties small (3.3 / 3.9)
    assert dec.mean_text > dec.mean_audio and dec.median_text > dec.median_audio
    assert dec.r_rb > 0 and dec.p < 1e-3 and dec.U_audio < dec.U_text
    assert 30 < dec.mean_text < 55 and 20 < dec.mean_audio < 40
    assert tie.mean_text < 10 and tie.mean_audio < 10
    assert dec.ci_lo_text < dec.mean_text < dec.ci_hi_text
    # against scipy directly, in the paper's convention (U for audio as the first sample)
    a = g[(g.kind == "decisive") & (g.condition == "audio")].gap
    x = g[(g.kind == "decisive") & (g.condition == "text")].gap
    ref = stats.mannwhitneyu(a, x, alternative="two-sided")
    assert dec.U == ref.statistic and dec.p == pytest.approx(ref.pvalue)
    assert dec.r_rb == pytest.approx(1 - 2 * ref.statistic / (len(a) * len(x)))
    # tie share near the paper's ~28 %
    assert 0.15 < (g.kind == "tie").mean() < 0.40
    # per-prompt means (Figure 2): one per prompt with decisive trials, averages of the trial gaps
    pm = prompt_mean_gaps(g)
    assert pm.n_trials.sum() == dec.n_text + dec.n_audio
    one = pm.iloc[0]
    assert one.mean_gap == pytest.approx(
        g[(g.kind == "decisive") & (g.prompt_id == one.prompt_id) & (g.condition == one.condition)].gap.mean()
    )
    assert pm[pm.condition == "text"].mean_gap.mean() > pm[pm.condition == "audio"].mean_gap.mean()


def test_simulated_threshold_recommendations(sim):
    recs = threshold_recommendations(sim["gaps"], n_boot=20, seed=3)
    again = threshold_recommendations(sim["gaps"], n_boot=20, seed=3)
    pd.testing.assert_frame_equal(recs, again)
    r = recs.set_index(["condition", "rule"])
    for c in ("text", "audio"):
        assert 0 <= r.loc[(c, "max_agreement"), "threshold"] < 30
        assert r.loc[(c, "max_agreement"), "agreement"] >= r.loc[(c, "max_agreement"), "agreement_at_other_threshold"]
        assert r.loc[(c, "precision_90"), "precision"] >= 0.9
        assert r.loc[(c, "precision_90"), "threshold"] >= r.loc[(c, "precision_80"), "threshold"]
        lo, hi = r.loc[(c, "max_agreement"), ["threshold_lo", "threshold_hi"]]
        assert lo <= hi and r.loc[(c, "max_agreement"), "n_boot"] == 20
    # the only NaN with data: max_agreement has no precision target, and says so
    assert set(recs.reason) == {"", "max_agreement has no precision target"}
    assert (recs[recs.reason != ""].rule == "max_agreement").all()


def test_one_participant_does_not_crash(sim):
    g = sim["gaps"]
    one = g[g.participant_id == g[g.condition == "audio"].participant_id.iloc[0]]
    table = gap_table(one)
    assert table.loc[0, "n_text"] == 0 and "no decisive trials" in table.loc[0, "reason"]
    recs = threshold_recommendations(one, n_boot=5)
    assert len(recs) == 6


# ---------------------------------------------------------------------------------------------------
# Figure 2 and the atomic PNG writer
# ---------------------------------------------------------------------------------------------------
def test_figure2_writes_png(sim, tmp_path):
    target = tmp_path / "figs" / "figure2.png"
    fig = figure2_gap_cdf(sim["gaps"], target)
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in target.parent.iterdir()] == ["figure2.png"]  # no temporary file left
    assert len(fig.axes) == 2
    # a modality with no decisive trials is drawn as 'no data'
    figure2_gap_cdf(sim["gaps"][sim["gaps"].condition == "text"], tmp_path / "text_only.png")
    assert (tmp_path / "text_only.png").exists()


def test_save_png_is_atomic(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    fig = Figure()
    fig.subplots().plot([0, 1], [0, 1])
    target = tmp_path / "out.png"
    save_png(fig, target)
    before = target.read_bytes()

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(fig, "savefig", boom)
    with pytest.raises(RuntimeError):
        save_png(fig, target)
    assert target.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["out.png"]
    assert figures.COLOURS.keys() == {"text", "audio"}


def test_csv_round_trip_gives_identical_gaps(sim, tmp_path):
    back = {}
    for name in ("ratings", "trials", "participants"):
        sim[name].to_csv(tmp_path / f"{name}.csv", index=False)
        back[name] = pd.read_csv(tmp_path / f"{name}.csv")
    g = trial_gaps(back["ratings"], back["trials"], back["participants"])
    pd.testing.assert_frame_equal(gap_table(g), gap_table(sim["gaps"]))
    pd.testing.assert_frame_equal(threshold_recommendations(g), threshold_recommendations(sim["gaps"]))

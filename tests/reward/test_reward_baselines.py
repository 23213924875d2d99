"""Baselines beside every reward accuracy (length, position, majority, PRISM), prompt-clustered intervals, the
human agreement ceiling, and the report's statement of which pair types do not beat length-only."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from modprefs.reward.baselines import agreement_ceiling, baseline_credits, cluster_bootstrap, compare
from modprefs.reward.evaluate import accuracy_table, headline, not_beating_length, pair_type_table


def _scores(n_prompts: int = 30, seed: int = 0) -> pd.DataFrame:
    """Two label sets per prompt (shared responses); the longer response is chosen in 2 of 3 prompts, response 0 in
    half; a model that follows a hidden cue (always right) and a length-only model."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(n_prompts):
        long_wins = p % 3 != 2
        c_chars, r_chars = (300, 100) if long_wins else (100, 300)
        zero = p % 2 == 0
        for cat in ("human_text", "human_audio"):
            rows.append(
                {
                    "pair_id": f"{cat}:{p}",
                    "category": cat,
                    "source": "human",
                    "criterion": "quality",
                    "group": f"p{p}",
                    "split": "val" if p < n_prompts // 2 else "train",
                    "chosen_chars": c_chars,
                    "rejected_chars": r_chars,
                    "chosen_response": 0 if zero else 1,
                    "rejected_response": 1 if zero else 0,
                    "chosen_prism": 80.0,
                    "rejected_prism": 60.0 if p % 4 else 90.0,
                    "r_chosen": 1.0 + rng.random(),
                    "r_rejected": 0.0,
                }
            )
    return pd.DataFrame(rows)


def test_baseline_credits_per_pair() -> None:
    s = _scores(6)
    c = baseline_credits(s, (s["split"] == "train").to_numpy())
    assert c["length"].tolist() == [1.0 if p % 3 != 2 else 0.0 for p in range(6) for _ in range(2)]
    assert c["position"].tolist() == [1.0 if p % 2 == 0 else 0.0 for p in range(6) for _ in range(2)]
    assert c["prism"].tolist() == [1.0 if p % 4 else 0.0 for p in range(6) for _ in range(2)]
    # training pairs (prompts 3-5): response 1 won 2 of 3 -> the majority rule prefers response 1 everywhere
    assert c["majority"].tolist() == (1.0 - c["position"]).tolist()
    # equal lengths: the rule cannot choose (½); no lengths at all: no baseline (NaN)
    eq = baseline_credits(s.assign(rejected_chars=s["chosen_chars"]))
    assert (eq["length"] == 0.5).all()
    assert baseline_credits(s.drop(columns=["chosen_chars", "rejected_chars"]))["length"].isna().all()


def test_cluster_bootstrap_counts_prompts_not_pairs() -> None:
    rng = np.random.default_rng(1)
    per_prompt = rng.integers(0, 2, 20).astype(float)
    values = np.repeat(per_prompt, 4)  # four identical pairs per prompt
    by_prompt = cluster_bootstrap(values, np.repeat(np.arange(20), 4), seed=0)[0]
    by_pair = cluster_bootstrap(values, np.arange(80), seed=0)[0]
    assert by_prompt[0] <= values.mean() <= by_prompt[1]
    assert (by_prompt[1] - by_prompt[0]) > 1.6 * (by_pair[1] - by_pair[0])  # ~ sqrt(4) wider
    assert np.isnan(cluster_bootstrap(values, np.zeros(80), seed=0)).all()  # one prompt: no interval
    again = cluster_bootstrap(values, np.repeat(np.arange(20), 4), seed=0)[0]
    assert again.tolist() == by_prompt.tolist()  # seeded


def test_compare_says_when_a_model_does_not_beat_length() -> None:
    s = _scores(40)
    base = baseline_credits(s)
    length_model = base["length"].to_numpy()
    row = compare(length_model, base, s["group"].tolist(), seed=0)
    assert row["n_pairs"] == 80 and row["n_prompts"] == 40
    assert row["model"] == pytest.approx(row["length"]) and row["minus_length"] == pytest.approx(0.0)
    assert row["beats_length"] == "no" and row["minus_length_ci_low"] <= 0 <= row["minus_length_ci_high"]
    right = compare(np.ones(80), base, s["group"].tolist(), seed=0)
    assert right["beats_length"] == "yes" and right["minus_length_ci_low"] > 0
    assert right["ci_low"] == right["ci_high"] == 1.0


def test_accuracy_and_pair_type_tables_carry_baselines_and_n_prompts() -> None:
    s = _scores(30)
    acc = accuracy_table(s, seed=0)
    micro = acc[(acc["split"] == "val") & (acc["level"] == "micro")].iloc[0]
    assert micro["n"] == 30 and micro["n_prompts"] == 15 and micro["accuracy"] == 1.0
    assert micro["length"] == pytest.approx(10 / 15) and micro["position"] == pytest.approx(8 / 15)
    assert micro["beats_length"] == "yes" and micro["ci_low"] <= 1.0
    head = headline(acc)
    assert head["val_n_prompts"] == 15 and head["val_n_pairs"] == 30 and head["val_beats_length"] == "yes"
    assert head["val_length"] == pytest.approx(10 / 15) and head["val_minus_length_ci_low"] > 0
    # the same pairs scored by length alone: no pair type beats length
    by_length = s.assign(r_chosen=s["chosen_chars"] / 100.0, r_rejected=s["rejected_chars"] / 100.0)
    ceiling = {"ceiling": {"human_text": {"agreement": 0.61}}, "skipped": {"modality": "no corpus"}}
    types = pair_type_table({"cue": {"scores": s}, "length": {"scores": by_length}}, ceiling)
    t = types.set_index(["run", "pair_type"])
    assert t.loc[("cue", "human_text"), "beats_length"] == "yes"
    assert t.loc[("cue", "human_text"), "ceiling"] == 0.61 and np.isnan(t.loc[("cue", "human_audio"), "ceiling"])
    assert t.loc[("length", "human_text"), "val_n_prompts"] == 15
    assert not_beating_length(types, "length") == ["human_audio", "human_text"]
    assert not_beating_length(types, "cue") == []


def test_accuracy_rows_carry_the_ceiling_only_where_every_pair_has_human_labels() -> None:
    s = _scores(20)
    s = pd.concat([s, s[s["category"] == "human_text"].assign(category="noise", source="degradation")])
    s["pair_id"] = [f"x{i}" for i in range(len(s))]
    ceilings = {"human_text": {"agreement": 0.6}, "human_audio": {"agreement": 0.7}}
    acc = accuracy_table(s, seed=0, ceilings=ceilings).set_index(["split", "level", "key"])
    assert acc.loc[("val", "category", "human_text"), "ceiling"] == pytest.approx(0.6)
    assert acc.loc[("val", "category", "human_audio"), "ceiling"] == pytest.approx(0.7)
    assert acc.loc[("val", "source", "human"), "ceiling"] == pytest.approx(0.65)  # as many pairs of each type
    assert np.isnan(acc.loc[("val", "category", "noise"), "ceiling"])
    assert np.isnan(acc.loc[("val", "micro", "all"), "ceiling"])  # degradation pairs have no ceiling
    assert np.isnan(acc.loc[("val", "macro", "category"), "ceiling"])
    human = accuracy_table(s[s["source"] == "human"], seed=0, ceilings=ceilings)
    assert headline(human)["val_ceiling"] == pytest.approx(0.65)
    assert headline(accuracy_table(s, seed=0))["val_ceiling"] is None  # no ratings: no ceiling


def test_agreement_ceiling_single_rater_vs_the_others() -> None:
    stimuli = pd.DataFrame({"clip_id": ["a_0", "a_1", "b_0", "b_1"], "response": [0, 1, 0, 1]})
    rows = []
    # prompt a, text: raters 1-3 prefer response 0, rater 4 prefers response 1 -> 3 of 4 agree with the others
    for rater, (r0, r1) in enumerate([(80, 20), (70, 30), (60, 50), (40, 60)]):
        rows += [("text", "a", "a_0", rater, r0), ("text", "a", "a_1", rater, r1)]
    # prompt b, audio: two raters who disagree -> 0 of 2
    for rater, (r0, r1) in enumerate([(80, 20), (20, 80)]):
        rows += [("audio", "b", "b_0", rater, r0), ("audio", "b", "b_1", rater, r1)]
    ratings = pd.DataFrame(rows, columns=["condition", "prompt_id", "clip_id", "participant_id", "rating"])
    judges = pd.DataFrame(
        {
            "modality": "text",
            "kind": "response_quality",
            "status": "ok",
            "prompt_id": "a",
            "clip_id": ["a_0", "a_1"],
            "sample": 0,
            "rating": [20, 90],
        }
    )
    c = agreement_ceiling(ratings, stimuli, judges)
    assert c["human_text"]["agreement"] == 0.75 and c["human_text"]["n_ratings"] == 4
    assert c["human_audio"]["agreement"] == 0.0 and c["human_audio"]["n_prompts"] == 1
    assert c["judge_text"]["agreement"] == 0.0  # the judge prefers response 1, the humans' mean response 0


def test_report_says_which_pair_types_do_not_beat_length() -> None:
    from modprefs.report.study_report import reward_baseline_note

    s = _scores(30)
    by_length = s.assign(r_chosen=s["chosen_chars"] / 100.0, r_rejected=s["rejected_chars"] / 100.0)
    html = reward_baseline_note(pair_type_table({"main": {"scores": by_length}, "cue": {"scores": s}}))
    assert "<b>main</b>: does <b>not</b> beat length-only on human_audio, human_text; beats it on no pair" in html
    assert "<b>cue</b>: does <b>not</b> beat length-only on no pair type; beats it on human_audio, human_text" in html


def test_planted_cue_benchmark_model_beats_every_baseline(tmp_path) -> None:
    """benchmarks/validity/reward_planted_cue.py's cue scenario on 120 prompts (60 held out): labels follow a
    planted cue independent of length; the trained model's prompt-clustered interval lies above every baseline."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "validity" / "reward_planted_cue.py"
    spec = importlib.util.spec_from_file_location("reward_planted_cue", path)
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    pairs, xc, xr = bench.simulate(120, seed=3, length_weight=0.0)
    got = bench.run(pairs, xc, xr, "none", seed=3)["held_out"]
    assert got["n_prompts"] == 60 and got["n"] == 60
    assert got["ci_low"] > max(got[b] for b in ("length", "position", "majority", "prism")), got
    assert got["beats_length"] == "yes" and got["minus_length_ci_low"] > 0


def test_accuracy_figure_draws_a_pair_type_with_no_correct_pair() -> None:
    """0 of 3 held out: statsmodels' Wilson lower bound comes back as +5.6e-17, above the accuracy 0.0; the figure
    must still draw (the default run's report failed on it), with the length-only baseline beside it."""
    from modprefs.report.report_figures import reward_accuracy_figure

    table = pd.DataFrame(
        {
            "run": ["main", "main"],
            "label": ["noise", "human text"],
            "val_n": [3, 4],
            "val_accuracy": [0.0, 0.75],
            "val_length": [0.5, 0.75],
        }
    )
    png = reward_accuracy_figure(table)
    assert png is not None and png[:4] == b"\x89PNG"

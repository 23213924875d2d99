"""`modprefs stats`: the statistics on ratings collected elsewhere (round trip through CSV files)."""

from __future__ import annotations

import pandas as pd

from modprefs.cli import assignments_from_ratings, main
from modprefs.ratings.simulate import SimulationParams, simulate_ratings
from modprefs.study.design import make_assignments
from test_recovery import paper_stimuli


def _write_study(tmp_path):
    stimuli = paper_stimuli(5).head(40)
    a = make_assignments(list(dict.fromkeys(stimuli.prompt_id)), 12, 8, seed=5)
    ratings, trials, participants, _ = simulate_ratings(stimuli, a, SimulationParams(), seed=5)
    d = tmp_path / "collected"
    d.mkdir()
    ratings.to_csv(d / "ratings.csv", index=False)
    trials.to_csv(d / "trials.csv", index=False)
    participants.to_csv(d / "participants.csv", index=False)
    stimuli[["clip_id", "prompt_id", "n_chars"]].to_csv(tmp_path / "clips.csv", index=False)
    return d, stimuli, a, ratings


def test_assignments_recovered_from_ratings(tmp_path):
    _, stimuli, a, ratings = _write_study(tmp_path)
    derived = assignments_from_ratings(ratings, stimuli).set_index(["participant_id", "trial"])
    merged = a.set_index(["participant_id", "trial"]).join(derived.add_suffix("_d"), how="inner")
    assert len(merged) > 0 and (merged.first_clip == merged.first_clip_d).all()


def test_stats_command_writes_tables_figures_report(tmp_path, capsys):
    d, _, _, _ = _write_study(tmp_path)
    out = tmp_path / "out"
    rc = main(["stats", "--ratings", str(d), "--clips", str(tmp_path / "clips.csv"), "--out", str(out),
               "--n-boot", "30", "--n-perm", "20", "--n-boot-alpha", "50", "--n-perm-alpha", "50"])
    assert rc == 0, capsys.readouterr().err
    for name in ("icc", "table1_demographics", "table3_session", "table4_reliability", "thresholds_gaps",
                 "raters_needed", "cross_modality_agreement", "justifications"):
        assert (out / "tables" / f"{name}.csv").is_file(), name
    assert len(list((out / "figures").glob("*.png"))) == 3
    assert "Table 4" in (out / "report.html").read_text()


def test_stats_command_rejects_bad_ratings(tmp_path, capsys):
    d, _, _, _ = _write_study(tmp_path)
    r = pd.read_csv(d / "ratings.csv")
    r.loc[2, "rating"] = 0
    r.to_csv(d / "ratings.csv", index=False)
    rc = main(["stats", "--ratings", str(d), "--clips", str(tmp_path / "clips.csv"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and "ratings.csv" in err and "row 4" in err and "rating" in err
    assert not (tmp_path / "o").exists()


def test_stats_command_with_judge_ratings_adds_tables_5_and_6(tmp_path, capsys):
    d, stimuli, _, _ = _write_study(tmp_path)
    stimuli[["clip_id", "prompt_id", "n_chars", "prism_score"]].to_csv(tmp_path / "clips.csv", index=False)
    rows = []
    for i, clip in enumerate(stimuli.itertuples()):
        for modality in ("text", "audio"):
            for sample in range(2):
                rows.append({"judge": f"j-{modality}", "backend": "openai", "model": "m", "prompt_version": "v1",
                             "modality": modality, "kind": "response_quality", "prompt_id": clip.prompt_id,
                             "clip_id": clip.clip_id, "sample": sample, "rating": 20 + (7 * i + 3 * sample) % 70,
                             "status": "ok", "reason": ""})
    pd.DataFrame(rows).to_csv(tmp_path / "judges.csv", index=False)
    out = tmp_path / "out"
    rc = main(["stats", "--ratings", str(d), "--clips", str(tmp_path / "clips.csv"), "--out", str(out),
               "--judges", str(tmp_path / "judges.csv"), "--n-boot", "20", "--n-perm", "10", "--n-boot-alpha", "20",
               "--n-perm-alpha", "20"])
    assert rc == 0, capsys.readouterr().err
    t5 = pd.read_csv(out / "tables" / "table5_ai_human.csv")
    assert t5["estimate"].notna().sum() >= 4
    assert (out / "tables" / "table6_ai_diff_icc.csv").is_file()
    # without --judges the tables are skipped, with the reason
    main(["stats", "--ratings", str(d), "--clips", str(tmp_path / "clips.csv"), "--out", str(tmp_path / "o2"),
          "--n-boot", "0", "--n-perm", "0", "--n-boot-alpha", "0", "--n-perm-alpha", "0"])
    assert "table5, table6: no AI judge ratings" in capsys.readouterr().err

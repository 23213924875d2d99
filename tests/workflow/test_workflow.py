"""Integration: the workflow end to end on the embedded default.

One run of the default config, in a copy of the checkout, is shared by every check here and by
tests/workflow/test_dag_inputs.py (the ``default_run`` fixture in tests/conftest.py); rerun checks are dry runs on it,
checks that change files work on copies. Determinism (two runs of one config, byte-identical tables) is
checked by tests/workflow/test_resume.py, whose clean tiny run and killed-then-resumed tiny run must give the same
tables, and by test_dag_inputs.py's re-rendered WAVs for every engine.
"""

from __future__ import annotations

import html as html_module
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf

from modprefs.stats.tables.catalog import OUTPUTS
from support.workflow_runner import config_with, copy_run, planned_jobs, run_workflow

pytestmark = pytest.mark.slow

ARTIFACTS = [
    "results/data/conversations.parquet",
    "results/sampling/prompts.csv",
    "results/sampling/removals.csv",
    "results/sampling/final_prompts.csv",
    "results/audio/review.csv",
    "results/audio/manifest.csv",
    "results/audio/qc.csv",
    "results/study/stimuli.csv",
    "results/audio/engines/espeak-ng/manifest.csv",
    "results/study/assignments.csv",
    "results/ratings/ratings.csv",
    "results/ratings/trials.csv",
    "results/ratings/participants.csv",
    "results/stats/tables/icc.csv",
    "results/stats/tables/icc.md",
]

COLUMNS = {
    "results/sampling/prompts.csv": [
        "prompt_id",
        "conversation_id",
        "stratum",
        "chars_0",
        "chars_1",
        "abs_char_diff",
        "history_chars",
        "history_turns",
    ],
    "results/sampling/removals.csv": ["conversation_id", "stratum", "reason", "detail", "replaced_by"],
    "results/audio/review.csv": [
        "round",
        "prompt_id",
        "conversation_id",
        "stratum",
        "qc_pass",
        "detail",
        "action",
        "replaced_by",
    ],
    "results/audio/qc.csv": ["clip_id", "wer", "dnsmos_ovrl", "qc_pass", "qc_reasons", "round", "in_study"],
    "results/audio/manifest.csv": [
        "clip_id",
        "path",
        "sample_rate",
        "duration_s",
        "backend",
        "model",
        "voice",
        "spoken_text",
        "wer",
        "dnsmos_ovrl",
        "qc_pass",
        "qc_reasons",
    ],
    "results/study/stimuli.csv": [
        "prompt_id",
        "clip_id",
        "response",
        "stratum",
        "n_chars",
        "n_chars_spoken",
        "model_name",
        "prism_score",
        "history_chars",
        "history_turns",
    ],
    "results/study/assignments.csv": ["participant_id", "condition", "trial", "prompt_id", "first_clip"],
    "results/ratings/ratings.csv": [
        "participant_id",
        "condition",
        "prompt_id",
        "clip_id",
        "trial",
        "presented_first",
        "rating",
        "audio_quality",
        "source",
    ],
    "results/ratings/trials.csv": [
        "participant_id",
        "prompt_id",
        "trial",
        "preference",
        "justification",
        "decision_time_s",
        "deliberation_time_s",
        "rating_changes",
        "replays_0",
        "replays_1",
        "relistened_first",
        "source",
    ],
    "results/ratings/participants.csv": [
        "participant_id",
        "condition",
        "passed_attention",
        "completed",
        "session_minutes",
        "difficulty",
        "source",
    ],
    "results/stats/tables/icc.csv": [
        "condition",
        "icc_2_1",
        "icc_2_1_lo",
        "icc_2_1_hi",
        "icc_2_k",
        "icc_2_k_lo",
        "icc_2_k_hi",
        "k_mean_raters",
    ],
}


def _read(workdir: Path, rel: str) -> pd.DataFrame:
    return pd.read_csv(
        workdir / rel,
        dtype={"prompt_id": str, "clip_id": str, "conversation_id": str, "participant_id": str, "preference": str},
    )


def test_every_artifact_with_its_columns(default_run):
    for rel in ARTIFACTS:
        assert (default_run / rel).is_file(), rel
    for rel, cols in COLUMNS.items():
        missing = set(cols) - set(_read(default_run, rel).columns)
        assert not missing, f"{rel} lacks {missing}"
    conv = pd.read_parquet(default_run / "results/data/conversations.parquet")
    assert (conv["conversation_type"] == "unguided").all()
    assert {"history", "prompt", "text_0", "text_1", "score_0", "score_1", "model_name_0"} <= set(conv.columns)
    leftovers = list((default_run / "results").rglob("*.tmp*"))
    assert not leftovers, leftovers


def test_strata_and_screening(default_run):
    prompts = _read(default_run, "results/sampling/prompts.csv")
    removals = _read(default_run, "results/sampling/removals.csv")
    conv = pd.read_parquet(default_run / "results/data/conversations.parquet")
    n = len(prompts)
    assert n == 12 and prompts["prompt_id"].is_unique
    assert (prompts["stratum"] == "long_diff").sum() == int(np.floor(0.25 * n + 0.5))
    threshold = np.percentile(conv["abs_char_diff"], 90)
    long_ = prompts[prompts.stratum == "long_diff"]
    assert (long_.abs_char_diff >= threshold).all() and (
        prompts[prompts.stratum == "other"].abs_char_diff < threshold
    ).all()
    assert set(removals["reason"]) <= {"empty", "other_language", "harmful", "audio_quality"}
    final = _read(default_run, "results/sampling/final_prompts.csv")
    review = _read(default_run, "results/audio/review.csv")
    assert len(final) == n and not set(removals["conversation_id"]) & set(final["conversation_id"])
    # every removal names a same-stratum replacement that was drawn (and reviewed) after it
    reviewed = review.drop_duplicates("conversation_id").set_index("conversation_id")
    for rem in removals.itertuples():
        assert reviewed.loc[rem.replaced_by, "stratum"] == rem.stratum
    # every prompt replaced for audio quality failed QC in its round, every final prompt passed
    replaced = review[review["action"] == "replace"]
    assert set(replaced["conversation_id"]) == set(
        removals.loc[removals["reason"] == "audio_quality", "conversation_id"]
    )
    assert set(final["prompt_id"]) == set(review.loc[review["action"] == "keep", "prompt_id"])
    # the bundled sample's EMPTY STRING / non-English responses never reach the stimuli
    chosen = conv.set_index("conversation_id").loc[final.conversation_id]
    assert not (chosen[["text_0", "text_1"]] == "EMPTY STRING").any().any()


def test_every_prompt_has_two_real_wavs(default_run):
    stimuli = _read(default_run, "results/study/stimuli.csv")
    manifest = _read(default_run, "results/audio/manifest.csv").set_index("clip_id")
    assert len(stimuli) == 2 * stimuli.prompt_id.nunique()
    assert (stimuli.groupby("prompt_id")["response"].apply(sorted).apply(tuple) == (0, 1)).all()
    for clip in list(stimuli.clip_id) + ["attn_0", "attn_1"]:
        wav = default_run / "results/audio/clips" / f"{clip}.wav"
        audio, rate = sf.read(wav)
        assert rate == manifest.loc[clip, "sample_rate"] == 22050  # piper's joe voice
        assert len(audio) / rate == pytest.approx(manifest.loc[clip, "duration_s"], abs=1e-3)
        assert len(audio) > 0.5 * rate and np.sqrt(np.mean(audio**2)) > 0.01, clip
    # the round trip through ASR hears the words, and every clip of the final study passed QC
    assert (manifest.loc[stimuli.clip_id, "wer"] <= 0.15).mean() >= 0.75
    assert manifest.loc[list(stimuli.clip_id) + ["attn_0", "attn_1"], "qc_pass"].astype(str).eq("True").all()
    # longer texts give longer audio (speech, not noise of a fixed length)
    assert np.corrcoef(stimuli.n_chars_spoken, stimuli.duration_s)[0, 1] > 0.95


def test_other_engines_render_the_same_clips(default_run):
    study = _read(default_run, "results/audio/manifest.csv").set_index("clip_id")
    for engine in ("espeak-ng",):
        m = _read(default_run, f"results/audio/engines/{engine}/manifest.csv").set_index("clip_id")
        assert set(m.index) == set(study.index) and (m.backend == engine).all()
        assert (m.spoken_text == study.loc[m.index, "spoken_text"]).all()
        for clip in m.index[:3]:
            audio, sr = sf.read(default_run / m.loc[clip, "path"])
            assert sr == m.loc[clip, "sample_rate"] and len(audio) > 0.5 * sr


def test_design_balance(default_run):
    a = _read(default_run, "results/study/assignments.csv")
    rated = a[a.trial > 0]
    counts = rated.groupby(["condition", "prompt_id"]).size().unstack(0)
    assert (counts.max() - counts.min()).max() <= 1
    first = rated.groupby(["condition", "prompt_id"])["first_clip"].agg(["sum", "count"])
    assert ((first["count"] - 2 * first["sum"]).abs() <= 1).all()
    assert (a[a.trial == 0].prompt_id == "attn").all()


def test_ratings_follow_the_design(default_run):
    a = _read(default_run, "results/study/assignments.csv")
    r = _read(default_run, "results/ratings/ratings.csv")
    p = _read(default_run, "results/ratings/participants.csv")
    assert r.rating.between(1, 100).all() and (r.source == "simulated").all()
    merged = r.merge(a, on=["participant_id", "trial", "prompt_id"], suffixes=("", "_a"))
    assert len(merged) == len(r) and (merged.condition == merged.condition_a).all()
    first_clip = merged.prompt_id + "_" + merged.first_clip.astype(str)
    first_clip = first_clip.where(merged.prompt_id != "attn", "attn_" + merged.first_clip.astype(str))
    assert (merged.presented_first.astype(str).str.lower().eq("true") == (merged.clip_id == first_clip)).all()
    failed = set(p[~p.passed_attention.astype(str).str.lower().eq("true")].participant_id)
    assert (r[r.participant_id.isin(failed)].trial == 0).all()


def test_icc_table(default_run):
    icc = _read(default_run, "results/stats/tables/icc.csv").set_index("condition")
    assert set(icc.index) == {"audio", "text"}
    for c in ("audio", "text"):
        row = icc.loc[c]
        # two_way percentile intervals are not centred on the estimate (benchmarks/out/icc_coverage.json)
        assert 0 <= row.icc_2_1_lo < row.icc_2_1_hi <= 1 and 0 < row.icc_2_1 < 1
        assert row.icc_2_1 < row.icc_2_k and 0 <= row.icc_2_k_lo < row.icc_2_k_hi <= 1
        assert row.k_mean_raters > 1
    assert "ICC" in (default_run / "results/stats/tables/icc.md").read_text()


def test_nothing_to_do_after_a_run(default_run):
    assert planned_jobs(run_workflow(default_run, "-n")) == {}


def _dry_run_after_change(workdir: Path, tmp_path: Path, overrides: dict) -> dict[str, int]:
    cfg = config_with(workdir / "config.yaml", tmp_path / "changed", overrides)
    return planned_jobs(run_workflow(workdir, "-n", configfile=cfg))


def test_voice_change_reruns_speech_and_downstream_only(default_run, tmp_path):
    # piper installs one voice from PyPI; a lab adds another as a file (``<name>.onnx`` + ``.onnx.json``): here a copy
    from modprefs.speech.piper_backend import default_voice_files

    ((model, config),) = default_voice_files().values()
    voice = tmp_path / "voices" / "en_US-other-medium.onnx"
    voice.parent.mkdir()
    shutil.copy(model, voice), shutil.copy(config, f"{voice}.json")
    jobs = _dry_run_after_change(default_run, tmp_path, {"tts": {"voice": voice.stem, "model_path": str(voice)}})
    assert {
        "render_shard",
        "audio_qc",
        "audio_review",
        "final_sample",
        "audio_manifest",
        "stimuli",
        "icc_table",
        "judge_modality",
        "reward_pairs",
        "reward_train",
        "report",
    } <= set(jobs), jobs
    # the other engines render the final prompt set, which the new voice's QC may change: they rerun too
    assert not {"conversations", "sample_prompts"} & set(jobs), jobs


def test_editing_a_file_a_config_option_names_reruns_its_reader(default_run, tmp_path):
    """reward.pairs.colloquial.rewrites (a table a config option names; modprefs.config_paths): after the pairs are
    built with it, editing the table plans reward_pairs again, and nothing upstream of it."""
    work = copy_run(default_run, tmp_path / "run")
    clips = _read(default_run, "results/study/stimuli.csv")["clip_id"].astype(str).tolist()[:2]
    rewrites = tmp_path / "rewrites.csv"
    pd.DataFrame(
        {
            "item_id": clips,
            "written": ["The meeting is at three o'clock.", "Store the bread in a cool, dry place."],
            "spoken": ["So, uh, the meeting's at three.", "Just keep the bread somewhere cool and dry."],
        }
    ).to_csv(rewrites, index=False)
    cfg = config_with(
        default_run / "config.yaml",
        tmp_path / "cfg",
        {"reward": {"pairs": {"colloquial": {"rewriter": "table", "rewrites": str(rewrites)}}}},
    )
    proc = run_workflow(work, "results/reward/pairs/summary.json", configfile=cfg)
    assert proc.returncode == 0, proc.stderr[-3000:]
    before = planned_jobs(run_workflow(work, "-n", configfile=cfg))
    assert "reward_pairs" not in before, before
    rewrites.write_text(rewrites.read_text().replace("three", "four"))
    after = planned_jobs(run_workflow(work, "-n", configfile=cfg))
    assert "reward_pairs" in after and set(after) - set(before) == {"reward_pairs"}, (before, after)
    assert not {"conversations", "sample_prompts", "render_shard", "judge_modality"} & set(after), after


def test_n_boot_change_reruns_statistics_only(default_run, tmp_path):
    jobs = _dry_run_after_change(default_run, tmp_path, {"stats": {"n_boot": 99}})
    assert {"icc_table", "table4", "raters_needed"} <= set(jobs), jobs
    # run_config: results/config.yaml records the whole config the run used
    assert set(jobs) <= {"icc_table", "table4", "raters_needed", "report", "run_config", "all"}, jobs


#: every statistics table the workflow writes (modprefs.stats.tables.catalog declares them)
STATS_TABLES = ["results/stats/tables/icc.csv"] + [
    f"results/stats/tables/{table}.csv" for tables, _ in OUTPUTS.values() for table in tables
]


def test_ingesting_collected_ratings_runs_the_statistics(default_run, tmp_path):
    collected = tmp_path / "collected"
    collected.mkdir()
    for table in ("ratings", "trials", "participants"):
        df = _read(default_run, f"results/ratings/{table}.csv")
        df["source"] = "collected"
        df.to_csv(collected / f"{table}.csv", index=False)
    work = copy_run(default_run, tmp_path / "run", ("results/ratings", "results/stats"))
    # Table 4 with the crossed-jackknife test: its calibrated default (a minute of null studies) is the default run's
    # check; what matters here is that every analysis runs on ingested ratings
    overrides = {"ratings": {"source": str(collected)}, "stats": {"icc_test": "jackknife"}}
    cfg = config_with(default_run / "config.yaml", tmp_path / "cfg", overrides)
    # the statistics tables (every analysis' tables; the reward models and the report, which also read the ratings,
    # are the default run's checks)
    proc = run_workflow(work, *STATS_TABLES, configfile=cfg)
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs_ran = proc.stdout + proc.stderr
    assert "ingest_ratings" in jobs_ran and "render_shard" not in jobs_ran
    assert (_read(work, "results/ratings/ratings.csv").source == "collected").all()
    icc = _read(work, "results/stats/tables/icc.csv").set_index("condition")
    # ingest copies the same ratings: the statistics agree with the simulated run's exactly
    pd.testing.assert_frame_equal(icc, _read(default_run, "results/stats/tables/icc.csv").set_index("condition"))


def test_bad_collected_ratings_stop_with_file_row_column(default_run, tmp_path):
    collected = tmp_path / "collected"
    collected.mkdir()
    for table in ("ratings", "trials", "participants"):
        _read(default_run, f"results/ratings/{table}.csv").to_csv(collected / f"{table}.csv", index=False)
    ratings = pd.read_csv(collected / "ratings.csv")
    ratings.loc[4, "rating"] = 101
    ratings.to_csv(collected / "ratings.csv", index=False)
    work = copy_run(default_run, tmp_path / "run", ("results/ratings", "results/stats"))
    cfg = config_with(default_run / "config.yaml", tmp_path / "cfg", {"ratings": {"source": str(collected)}})
    proc = run_workflow(work, configfile=cfg)
    assert proc.returncode != 0
    log = (work / "results/logs/ratings/ingest_ratings.log").read_text() + proc.stdout + proc.stderr
    assert "ratings.csv" in log and "row 6" in log and "rating" in log
    assert not (work / "results/ratings").exists() or not any((work / "results/ratings").iterdir())
    assert not (work / "results/stats/tables/icc.csv").exists()


def test_every_analysis_is_in_the_report(default_run):
    tables = sorted((default_run / "results/stats/tables").glob("*.csv"))
    figures = sorted((default_run / "results/stats/figures").glob("*.png"))
    expected = {
        "icc",
        "table1_demographics",
        "table3_session",
        "behaviour",
        "thresholds_gaps",
        "thresholds_recommendations",
        "table4_reliability",
        "raters_needed",
        "cross_modality_agreement",
        "cross_modality_binomial",
        "justifications",
        "justifications_counts",
        "table2_lmm",
        "practice_effects",
        "random_slope",
        "audio_quality",
        "per_prompt_icc",
        "table5_ai_human",
        "table5_clips",
        "table6_ai_diff_icc",
        "table6_per_prompt",
    }
    assert expected <= {p.stem for p in tables}
    assert {"figure2_gap_cdf", "figure3_agreement", "figure4_icc_by_k", "figure_ai_human", "figure_ai_diff_icc"} <= {
        p.stem for p in figures
    }
    html = (default_run / "results/report/report.html").read_text()
    for p in tables:
        md = p.with_suffix(".md").read_text().splitlines()[0]
        title = md[2:].strip() if md.startswith("# ") else p.stem
        assert html_module.escape(title) in html, title
    # + the rater plan, the report's own decision-threshold and reward-accuracy figures, a reward training curve
    assert html.count("data:image/png;base64,") == len(figures) + 4
    assert html.count("<figcaption>") == html.count("<figure ")
    assert "Reward models: " in html and "Reward model main: accuracy" in html
    assert "SIMULATED" in html and "Software versions" in html
    # the interval method and Table 2's random structure are named, with the measured coverage / null rates
    assert "ICC confidence intervals: auto: F-based (McGraw &amp; Wong 1996)" in html  # stats.icc_ci_method auto
    assert "else logit-t, crossed jackknife" in html
    assert "stats.table2_random = participant_slopes" in html and "Table 2 false-positive rates" in html
    assert "CASCADE" in html and "gpt-4o-audio-preview" in html  # the offline AI-audio rows say what they are
    recs = _read(default_run, "results/stats/tables/thresholds_recommendations.csv")
    assert (recs["n_boot"] > 0).any() and recs["threshold_lo"].notna().any()  # stats.n_boot_threshold reaches the rule
    t4 = _read(default_run, "results/stats/tables/table4_reliability.csv").set_index("metric")
    assert {
        "ICC(2,1)",
        "ICC(2,k)",
        "Krippendorff's alpha (cont.)",
        "Krippendorff's alpha (ord.)",
        "Krippendorff's alpha (nom.)",
    } <= set(t4.index)
    assert t4.loc[["ICC(2,1)", "ICC(2,k)"], "p_value"].between(0, 1).all()


def test_snakemake_report_holds_every_figure_and_table(default_run, tmp_path):
    out = tmp_path / "snakemake_report.zip"
    proc = run_workflow(default_run, "--report", str(out), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    import zipfile

    with zipfile.ZipFile(out) as zf:
        names = zf.namelist()
    for fig in ("figure2_gap_cdf.png", "figure3_agreement.png", "figure4_icc_by_k.png"):
        assert any(n.endswith(fig) for n in names), fig
    for table in ("icc.csv", "table2_lmm.csv", "table4_reliability.csv"):
        assert any(n.endswith(table) for n in names), table


def test_offline_judges_rate_both_modalities_and_see_the_attention_check(default_run):
    judges = _read(default_run, "results/judges/ratings.csv")
    cols = [
        "judge",
        "backend",
        "model",
        "prompt_version",
        "modality",
        "kind",
        "prompt_id",
        "clip_id",
        "sample",
        "rating",
        "status",
        "reason",
    ]
    assert list(judges.columns) == cols
    stimuli = _read(default_run, "results/study/stimuli.csv")
    ok = judges[judges.status == "ok"]
    assert ok.rating.between(1, 100).all()
    for modality, kinds in (("text", {"response_quality"}), ("audio", {"response_quality", "audio_quality"})):
        sub = ok[ok.modality == modality]
        assert set(sub.kind) == kinds
        rated = set(sub[sub.kind == "response_quality"].clip_id)
        assert set(stimuli.clip_id) | {"attn_0", "attn_1"} <= rated, modality
    # what each row is: a small text model, a Whisper cascade for "audio" responses, DNSMOS for audio quality
    by = ok.groupby(["modality", "kind"])["backend"].agg(set)
    assert by[("text", "response_quality")] == {"local"}
    assert by[("audio", "response_quality")] == {"local-cascade"}
    assert by[("audio", "audio_quality")] == {"dnsmos"}
    # a real judge: the coherent attention-check response beats the nonsensical one (mean over samples)
    for modality in ("text", "audio"):
        rq = ok[(ok.modality == modality) & (ok.kind == "response_quality")].groupby("clip_id")["rating"].mean()
        assert rq["attn_0"] > rq["attn_1"], (modality, rq["attn_0"], rq["attn_1"])
    plan = _read(default_run, "results/judges/rater_plan.csv")
    assert set(plan.prompt_id) == set(stimuli.prompt_id) and (plan.raters_planned >= 2).all()


def test_reward_models_trained_and_evaluated(default_run):
    import json

    summary = json.loads((default_run / "results/reward/pairs/summary.json").read_text())
    assert summary, "pair summary is empty"
    runs = _read(default_run, "results/reward/summary/runs.csv")
    assert {"main", "no_centering", "text_labels", "audio_labels"} <= set(runs.iloc[:, 0].astype(str))
    transfer = _read(default_run, "results/reward/summary/transfer.csv")
    assert len(transfer) >= 2
    main = json.loads((default_run / "results/reward/main/metrics.json").read_text())
    flat = json.dumps(main)
    assert "accuracy" in flat and "mean_reward" in flat
    for table in ("accuracy", "ood", "drift", "length_bias"):
        assert len(_read(default_run, f"results/reward/main/eval/{table}.csv")) > 0, table
    ood = _read(default_run, "results/reward/main/eval/ood.csv")
    assert "espeak-ng" in set(ood.astype(str).stack())
    cfg = json.loads((default_run / "results/reward/main/config.json").read_text())
    assert cfg["backbone"]["name"] == "minilm-logmel" and cfg["pooling"] == "mean"
    assert cfg["backbone"]["condition"] == "cross"  # the default conditions on criterion and context
    # colloquial pairs are built offline (rule-based), trained on, and reported beside the other pair types
    assert summary["colloquial"]["pairs"] > 0 and summary["colloquial"]["rewriter"] == "rule-based"
    assert "human-speech corpus" in summary["skipped"]["modality"]
    assert main["n_pairs"] > summary["colloquial"]["pairs"] and "colloquialness" in main["criteria"]
    types = _read(default_run, "results/reward/summary/pair_types.csv")
    col = types[(types.run == "main") & (types.pair_type == "colloquial_rule_based")]
    assert len(col) == 1 and "RULE-BASED" in col.label.iloc[0] and col.all_n.iloc[0] > 0
    assert {"human_text", "noise"} <= set(types[types.run == "main"].pair_type)
    html = (default_run / "results/report/report.html").read_text()
    assert "RULE-BASED" in html and "Accuracy by pair type" in html
    # every accuracy beside its baselines, n in prompts, prompt-clustered intervals; the report says which
    # pair types do not beat length-only (#51)
    from modprefs.reward.evaluate import not_beating_length
    from modprefs.reward.pairs import contradictions, read_pairs

    for col in ("val_n_prompts", "val_length", "val_position", "val_majority", "val_prism", "beats_length", "ceiling"):
        assert col in types.columns, col
    human = types[(types.run == "main") & (types.pair_type == "human_text")].iloc[0]
    assert 0 < human.ceiling < 1 and human.val_n_prompts >= 1 and not np.isnan(human.val_length)
    fails = not_beating_length(types, "main")
    assert f"<b>main</b>: does <b>not</b> beat length-only on {', '.join(fails) or 'no pair type'};" in html
    for col in ("val_n_prompts", "val_length", "val_ci_low", "val_beats_length"):
        assert col in runs.columns, col
    acc = _read(default_run, "results/reward/main/eval/accuracy.csv")
    assert {"n_prompts", "length", "position", "majority", "prism", "ci_low", "beats_length"} <= set(acc.columns)
    # the human agreement ceiling beside the human-labelled accuracies of each run's own tables
    cat = acc[(acc.split == "all") & (acc.level == "category")].set_index("key")
    assert cat.loc["human_text", "ceiling"] == pytest.approx(summary["ceiling"]["human_text"]["agreement"])
    assert np.isnan(cat.loc["noise", "ceiling"])
    evaluated = json.loads((default_run / "results/reward/main/eval/eval.json").read_text())
    assert evaluated["ceiling"]["human_audio"] == pytest.approx(summary["ceiling"]["human_audio"]["agreement"])
    assert "val_ceiling" in evaluated and "val_ceiling" in runs.columns
    # no two pairs with identical inputs carry opposite labels (per-modality and per-source instructions)
    built = read_pairs(sorted((default_run / "results/reward/pairs").glob("*.parquet")))
    assert contradictions(built).empty and summary["contradictions"]["pairs"] == 0
    assert {"quality_text", "quality_audio"} <= set(built.criterion)
    # the evaluation reproduces the training run's own scores (batch-invariant scoring)
    own = _read(default_run, "results/reward/main/scores.csv").set_index("pair_id")
    ev = _read(default_run, "results/reward/main/eval/scores.csv").set_index("pair_id").loc[own.index]
    assert np.max(np.abs(own.r_chosen - ev.r_chosen)) <= 1e-5 and np.max(np.abs(own.r_rejected - ev.r_rejected)) <= 1e-5

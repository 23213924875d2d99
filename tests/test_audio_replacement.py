"""Integration: a clip forced to fail audio QC makes the workflow replace its prompt and render the new one.

The failure is injected with the documented fault-injection key ``audio_qc.inject_silence``: the
clip is rendered as digital silence, and the real QC (faster-whisper WER, DNSMOS, silence checks)
must catch it. The Snakemake checkpoint ``audio_review`` then replaces the prompt from its stratum,
and the DAG grows a second rendering round.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from workflow_runner import run_workflow, tiny_overrides, write_config

pytestmark = pytest.mark.slow
IDS = {"prompt_id": str, "clip_id": str, "conversation_id": str, "replaced_by": str}


def _read(workdir: Path, rel: str) -> pd.DataFrame:
    return pd.read_csv(workdir / rel, dtype=IDS, keep_default_na=False)


def test_silent_clip_is_replaced_from_its_stratum(tmp_path):
    work = tmp_path / "run"
    overrides = tiny_overrides()
    write_config(work, overrides)
    first = run_workflow(work, "results/sampling/prompts.csv", timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    drawn = _read(work, "results/sampling/prompts.csv")
    victim = drawn.iloc[1]
    silent_clip = f"{victim.prompt_id}_1"
    overrides["audio_qc"] = {"inject_silence": [silent_clip]}
    write_config(work, overrides)
    proc = run_workflow(work, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-4000:]

    # the silent clip was caught by QC and is not in the study
    qc = _read(work, "results/audio/qc.csv").set_index("clip_id")
    assert qc.loc[silent_clip, "qc_pass"] in ("False", False)
    assert "wer" in qc.loc[silent_clip, "qc_reasons"]
    assert qc.loc[silent_clip, "in_study"] in ("False", False)

    # the removal is logged with its reason and a same-stratum replacement
    removals = _read(work, "results/sampling/removals.csv")
    audio = removals[removals["reason"] == "audio_quality"]
    assert list(audio["conversation_id"]) == [victim.conversation_id]
    assert silent_clip in audio["detail"].iloc[0]
    final = _read(work, "results/sampling/final_prompts.csv")
    replacement = final.set_index("conversation_id").loc[audio["replaced_by"].iloc[0]]
    assert replacement.stratum == victim.stratum
    assert audio["replaced_by"].iloc[0] not in set(drawn["conversation_id"])

    # two rounds were rendered and reviewed; the second kept everything
    review = _read(work, "results/audio/review.csv")
    assert sorted(review["round"].astype(int).unique()) == [0, 1]
    assert review.loc[review["action"] == "replace", "prompt_id"].tolist() == [victim.prompt_id]
    assert set(review.loc[review["round"].astype(int) == 1, "action"]) == {"keep"}
    assert (work / "results/audio/rounds/1/shards/0.csv").is_file()

    # the final study: the configured number of prompts, each with two passing clips
    stimuli = _read(work, "results/study/stimuli.csv")
    manifest = _read(work, "results/audio/manifest.csv").set_index("clip_id")
    assert stimuli["prompt_id"].nunique() == overrides["sampling"]["n_prompts"]
    assert victim.prompt_id not in set(stimuli["prompt_id"])
    assert (stimuli.groupby("prompt_id")["clip_id"].count() == 2).all()
    assert manifest.loc[stimuli["clip_id"], "qc_pass"].isin(["True", True]).all()
    assert set(stimuli["prompt_id"]) == set(final["prompt_id"])
    log = (work / "results/logs/speech/audio_review_round0.log").read_text()
    assert f"replace {victim.prompt_id}" in log

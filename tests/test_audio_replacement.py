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
STUDY_TARGETS = [
    "results/study/stimuli.csv",
    "results/audio/manifest.csv",
    "results/audio/qc.csv",
    "results/audio/review.csv",
    "results/sampling/removals.csv",
    "results/sampling/final_prompts.csv",
]
IDS = {"prompt_id": str, "clip_id": str, "conversation_id": str, "replaced_by": str}


def _read(workdir: Path, rel: str) -> pd.DataFrame:
    return pd.read_csv(workdir / rel, dtype=IDS, keep_default_na=False)


def test_silent_clip_is_replaced_from_its_stratum(tmp_path):
    work = tmp_path / "run"
    overrides = tiny_overrides()
    overrides["tts"]["engines"] = []  # other engines are not part of this check
    write_config(work, overrides)
    first = run_workflow(work, "results/sampling/prompts.csv", timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    drawn = _read(work, "results/sampling/prompts.csv")
    victim = drawn.iloc[1]
    silent_clip = f"{victim.prompt_id}_1"
    overrides["audio_qc"] = {"inject_silence": [silent_clip]}
    write_config(work, overrides)
    # the speech stage and the study built on it: judges, ratings, statistics and reward models do not take
    # part in the replacement (the shared default run covers them)
    proc = run_workflow(work, *STUDY_TARGETS, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-4000:]

    # the silent clip was caught by QC and is not in the study
    qc = _read(work, "results/audio/qc.csv").set_index("clip_id")
    assert qc.loc[silent_clip, "qc_pass"] in ("False", False)
    assert "wer" in qc.loc[silent_clip, "qc_reasons"]
    assert qc.loc[silent_clip, "in_study"] in ("False", False)

    # the removal is logged with its reason and a same-stratum replacement
    removals = _read(work, "results/sampling/removals.csv")
    audio = removals[removals["reason"] == "audio_quality"]
    # (other clips may fail QC on their own, e.g. on WER; they are replaced the same way)
    mine = audio.set_index("conversation_id").loc[victim.conversation_id]
    assert silent_clip in mine["detail"]
    review = _read(work, "results/audio/review.csv")
    reviewed = review.drop_duplicates("conversation_id").set_index("conversation_id")
    assert reviewed.loc[mine["replaced_by"], "stratum"] == victim.stratum
    assert mine["replaced_by"] not in set(drawn["conversation_id"])
    for rem in audio.itertuples():
        assert reviewed.loc[rem.replaced_by, "stratum"] == rem.stratum

    # a second round rendered and reviewed the replacements; the last round replaced nothing
    rounds = review["round"].astype(int)
    assert rounds.max() >= 1 and (work / "results/audio/rounds/1/shards/0.csv").is_file()
    assert set(review.loc[review["action"] == "replace", "conversation_id"]) == set(audio["conversation_id"])
    assert set(review.loc[rounds == rounds.max(), "action"]) == {"keep"}
    final = _read(work, "results/sampling/final_prompts.csv")

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

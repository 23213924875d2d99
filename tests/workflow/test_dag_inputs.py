"""Inputs the DAG sees, and runs a lab can move and repeat (issue #13, items 2 and 7).

The shared default run (tests/conftest.py: the embedded default, made inside a copy of the checkout,
so the working directory is the checkout, as for a user) serves the checks:

- editing one line of the data JSONL makes ``snakemake -n`` plan the data step and what follows;
- two study clips damaged after rendering (one zeroed, one silenced) make ``snakemake -n`` plan their
  shard's QC, and a real run fails them (``unreadable``; Whisper's WER) and replaces their prompts from
  their strata in a second round (this was tests/test_audio_replacement.py's tiny run; the fault-injection
  key ``audio_qc.inject_silence`` itself is tests/speech/test_speech.py's); a damaged clip of another engine makes that
  engine's manifest rule rerun and stop with a message naming the clip and the shard to re-render;
- moving the checkout (results included) leaves nothing to do (no absolute path in any rule's params);
- rendering a shard again gives byte-identical WAVs for every engine (the study's piper, espeak-ng);
- outputs get the umask's permissions (group-readable with 022).

Each mutating check works on its own copy of the run.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf
import yaml

from support.bad_inputs import assert_clean_failure
from support.workflow_runner import ROOT, copy_run, planned_jobs, run_workflow

pytestmark = pytest.mark.slow

SPEECH = ["results/audio/manifest.csv", "results/audio/engines/espeak-ng/manifest.csv"]
IDS = {"prompt_id": str, "clip_id": str, "conversation_id": str, "replaced_by": str}


def wav_digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((root / "results/audio").rglob("*.wav"))
    }


def test_editing_one_line_of_the_data_plans_the_data_step(default_run, tmp_path):
    run = copy_run(default_run, tmp_path / "run")
    data = run / "resources/sample/conversations.jsonl"
    lines = data.read_text(encoding="utf-8").splitlines(keepends=True)
    row = json.loads(lines[-1])
    row["conversation_history"][0]["content"] += " Thanks."  # one user message of the last conversation
    lines[-1] = json.dumps(row) + "\n"
    data.write_text("".join(lines), encoding="utf-8")
    jobs = planned_jobs(run_workflow(run, "-n"))
    assert {"conversations", "sample_prompts", "render_shard"} <= set(jobs), jobs


def _read(run: Path, rel: str) -> pd.DataFrame:
    return pd.read_csv(run / rel, dtype=IDS, keep_default_na=False)


def test_damaged_study_clips_fail_qc_and_their_prompts_are_replaced(default_run, tmp_path):
    """Two study clips of one shard damaged after rendering: one zeroed (an unreadable file), one
    overwritten with digital silence of its length (a valid WAV only the real QC can catch: Whisper's round
    trip, level, silences). A dry run plans that shard's QC and the review, no rendering; the run fails both
    clips, replaces both prompts from their strata in the next round, and the study keeps its size."""
    run = copy_run(default_run, tmp_path / "run")
    drawn = _read(run, "results/sampling/prompts.csv")
    final = _read(run, "results/sampling/final_prompts.csv")
    shards = [_read(run, str(p.relative_to(run))) for p in sorted(run.glob("results/audio/rounds/0/shards/*.csv"))]
    kept_by_shard = [
        [p for p in dict.fromkeys(shard["prompt_id"]) if p in set(final["prompt_id"]) and p != "attn"]
        for shard in shards
    ]
    damaged_shard = max(range(len(shards)), key=lambda s: len(kept_by_shard[s]))
    kept = kept_by_shard[damaged_shard]  # shards balance text length, so one long clip can fill a shard
    assert len(kept) >= 2, kept_by_shard
    zeroed, silenced = (final.set_index("prompt_id").loc[p] for p in kept[:2])
    unreadable_clip, silent_clip = f"{kept[0]}_1", f"{kept[1]}_0"
    (run / f"results/audio/clips/{unreadable_clip}.wav").write_bytes(b"")
    audio, rate = sf.read(run / f"results/audio/clips/{silent_clip}.wav", dtype="int16")
    sf.write(run / f"results/audio/clips/{silent_clip}.wav", np.zeros_like(audio), rate, subtype="PCM_16")

    jobs = planned_jobs(run_workflow(run, "-n", *SPEECH))
    assert jobs.get("audio_qc") == 1 and "audio_review" in jobs, jobs
    assert "render_shard" not in jobs and "conversations" not in jobs, jobs

    # The damaged shard's QC, planned with every rerun trigger (the clips' digests are a param of audio_qc).
    shard_files = sorted(run.glob("results/audio/rounds/0/shards/*.csv"))
    proc = run_workflow(run, f"results/audio/rounds/0/qc/{shard_files[damaged_shard].name}")
    assert proc.returncode == 0, proc.stderr[-4000:]
    # A replacement can itself fail QC (Kokoro's accented PyPI voices failed Whisper's round trip on about one prompt
    # in four), and which replacements fail depends on the installed TTS and ASR builds: give the chain room, as
    # a lab would (an exhausted review's message says so). Raising max_rounds plans the review rounds again,
    # never the first draw or its rendering.
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["audio_qc"]["max_rounds"] = 8
    (run / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    jobs = planned_jobs(run_workflow(run, "-n", SPEECH[0], "results/study/stimuli.csv"))
    assert "audio_review" in jobs and not {"sample_prompts", "conversations"} & set(jobs), jobs
    first_draw_written = (run / "results/sampling/prompts.csv").stat().st_mtime_ns
    # the study voice only: the other engines would render every clip of the new prompt set again
    proc = run_workflow(run, SPEECH[0], "results/study/stimuli.csv")
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    assert (run / "results/sampling/prompts.csv").stat().st_mtime_ns == first_draw_written
    qc = _read(run, "results/audio/qc.csv").set_index("clip_id")
    assert qc.loc[unreadable_clip, "qc_reasons"].startswith("unreadable")
    assert "wer" in qc.loc[silent_clip, "qc_reasons"] and qc.loc[silent_clip, "qc_pass"] in ("False", False)
    assert qc.loc[[unreadable_clip, silent_clip], "in_study"].isin(["False", False]).all()

    # each removal is logged with its reason, the failing clip and a replacement from the same stratum that
    # was not drawn before
    review = _read(run, "results/audio/review.csv")
    reviewed = review.drop_duplicates("conversation_id").set_index("conversation_id")
    removals = _read(run, "results/sampling/removals.csv")
    audio_removals = removals[removals["reason"] == "audio_quality"].set_index("conversation_id")
    for victim, clip in ((zeroed, unreadable_clip), (silenced, silent_clip)):
        removal = audio_removals.loc[victim.conversation_id]
        assert clip in removal["detail"] and removal["replaced_by"], removal
        assert reviewed.loc[removal["replaced_by"], "stratum"] == victim.stratum
        assert removal["replaced_by"] not in set(drawn["conversation_id"])
    for rem in audio_removals.itertuples():
        assert reviewed.loc[rem.replaced_by, "stratum"] == rem.stratum
    rounds = review["round"].astype(int)
    assert set(review.loc[review["action"] == "replace", "conversation_id"]) == set(audio_removals.index)
    assert set(review.loc[rounds == rounds.max(), "action"]) == {"keep"}  # the last round replaced nothing
    log = (run / "results/logs/speech/audio_review_round0.log").read_text()
    assert f"replace {kept[0]}" in log and f"replace {kept[1]}" in log

    # the study: the configured number of prompts, each with two passing clips, without the victims
    new_final = _read(run, "results/sampling/final_prompts.csv")
    stimuli = _read(run, "results/study/stimuli.csv")
    manifest = _read(run, "results/audio/manifest.csv").set_index("clip_id")
    n_prompts = yaml.safe_load((run / "config.yaml").read_text())["sampling"]["n_prompts"]
    assert stimuli["prompt_id"].nunique() == len(new_final) == n_prompts
    assert not set(kept[:2]) & set(stimuli["prompt_id"]) and not {unreadable_clip, silent_clip} & set(manifest.index)
    assert (stimuli.groupby("prompt_id")["clip_id"].count() == 2).all()
    assert manifest.loc[stimuli["clip_id"], "qc_pass"].isin(["True", True]).all()
    assert set(stimuli["prompt_id"]) == set(new_final["prompt_id"])
    assert manifest.reset_index()["prompt_id"].nunique() == n_prompts + 1  # and the attention check


@pytest.mark.parametrize("damage", ["delete", "replace with another clip"])
def test_other_clip_damage_plans_qc(default_run, tmp_path, damage):
    run = copy_run(default_run, tmp_path / "run")
    clips = sorted((run / "results/audio/clips").glob("*.wav"))
    if damage == "delete":
        clips[2].unlink()
    else:
        shutil.copy(clips[3], clips[2])
    jobs = planned_jobs(run_workflow(run, "-n", *SPEECH))
    assert jobs.get("audio_qc") == 1 and "render_shard" not in jobs, jobs


def test_damaged_engine_clip_names_the_shard_to_render_again(default_run, tmp_path):
    run = copy_run(default_run, tmp_path / "run")
    manifest = pd.read_csv(run / "results/audio/engines/espeak-ng/shards/0.csv", dtype=IDS, keep_default_na=False)
    clip = run / manifest["path"].iloc[1]
    clip.write_bytes(b"RIFF garbage")
    jobs = planned_jobs(run_workflow(run, "-n", SPEECH[1]))
    assert jobs == {"engine_manifest": 1}, jobs
    audio = run / "results/audio"
    kept = {name: (audio / name).read_bytes() for name in ("manifest.csv", "qc.csv")}
    # watched: everything but the failing rule's own output (Snakemake removes a failed job's stale output)
    # and the logs
    watch = [p for p in (run / "results").iterdir() if p.is_dir() and p.name not in ("audio", "logs")]
    watch += [audio / "rounds", audio / "review", audio / "clips"]
    result = assert_clean_failure(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--cores",
            "1",
            "--snakefile",
            str(run / "Snakefile"),
            "--directory",
            str(run),
            SPEECH[1],
        ],
        watch=watch,
        must_mention=[
            f"unreadable clip(s) of espeak-ng: {manifest['clip_id'].iloc[1]}",
            "delete results/audio/engines/espeak-ng/shards/0.csv",
        ],
    )
    assert {name: (audio / name).read_bytes() for name in kept} == kept
    assert "Traceback (most recent call last)" not in result.output
    (run / "results/audio/engines/espeak-ng/shards/0.csv").unlink()  # the fix the message names
    proc = run_workflow(run, SPEECH[1])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert wav_digests(run) == wav_digests(default_run)  # the clip is rendered again, identical


def test_moved_checkout_reruns_nothing(default_run, tmp_path):
    moved = copy_run(default_run, tmp_path / "elsewhere" / "moved")
    jobs = planned_jobs(run_workflow(moved, "-n"))
    assert jobs == {}, jobs


def _shortest_shard(run: Path, pattern: str) -> str:
    """The shard manifest matching ``pattern`` with the least audio (the cheapest to render again)."""
    shards = sorted(run.glob(pattern))
    assert shards, pattern
    seconds = {p: pd.read_csv(p, usecols=["duration_s"])["duration_s"].sum() for p in shards}
    return str(min(shards, key=lambda p: seconds[p]).relative_to(run))


def test_rendering_again_gives_identical_wavs_for_every_engine(default_run, tmp_path):
    """One shard of each engine, deleted and rendered again (new processes, another folder), is byte-identical.

    The other engines' shards first: they render the final prompts, which a re-rendered study shard would
    make out of date (its QC and the review would run again before them)."""
    run = copy_run(default_run, tmp_path / "run")
    clips, ran = [], set()
    engines = [_shortest_shard(run, "results/audio/engines/espeak-ng/shards/*.csv")]
    study = [_shortest_shard(run, "results/audio/rounds/*/shards/*.csv")]
    for shards in (engines, study):  # deleted one group at a time, for the reason above
        for rel in shards:
            paths = pd.read_csv(run / rel, dtype={"path": str}, keep_default_na=False)["path"].tolist()
            assert paths, rel
            for path in paths:
                (run / path).unlink()
            (run / rel).unlink()
            clips += paths
        proc = run_workflow(run, *shards)
        assert proc.returncode == 0, proc.stderr[-4000:]
        ran |= set(re.findall(r"(?:rule|checkpoint) (\w+):", proc.stdout + proc.stderr))
    assert ran == {"render_shard", "render_engine_shard"}, ran
    digests, original = wav_digests(run), wav_digests(default_run)
    assert {path: digests.get(path) for path in clips} == {path: original[path] for path in clips}
    assert digests == original


def test_outputs_are_group_readable(default_run):
    for path in [*(default_run / "results").rglob("*.csv"), *(default_run / "results/audio").rglob("*.wav")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & stat.S_IRGRP and mode & stat.S_IROTH, f"{path}: {oct(mode)}"


def test_make_run_uses_the_local_profile():
    """`make run` and profiles/local agree: the Makefile's run target is snakemake with that profile."""
    proc = subprocess.run(["make", "-n", "run", "VENV=.venv-nonexistent"], cwd=ROOT, capture_output=True, text=True)
    run_line = [line for line in proc.stdout.splitlines() if "snakemake" in line and "pip" not in line]
    assert run_line and "--workflow-profile profiles/local" in run_line[-1], proc.stdout
    profile = yaml.safe_load((ROOT / "profiles/local/config.yaml").read_text())
    assert profile["rerun-incomplete"] is True and profile["cores"] == 2


def test_install_doc_says_what_make_run_does():
    """Every command `make run` runs (pip installs, snakemake) is in docs/install.md's description of it."""
    proc = subprocess.run(
        ["make", "-n", "run"], cwd=ROOT, capture_output=True, text=True, env={**os.environ, "VENV": ".venv-nonexistent"}
    )
    commands = [
        " ".join(line.replace(".venv-nonexistent", ".venv").split())
        for line in proc.stdout.splitlines()
        if line.startswith(("python3 -m venv", ".venv-nonexistent/bin/"))
    ]
    commands = [c.replace(" --quiet", "") for c in commands if "--upgrade pip" not in c]
    assert len(commands) >= 5, proc.stdout
    readme = " ".join((ROOT / "docs" / "install.md").read_text().split())
    for command in commands:
        assert f"`{command}`" in readme, command


def test_cluster_doc_names_every_rule():
    """docs/cluster.md's "What runs where" says where each rule of the workflow runs."""
    rules = set()
    for smk in [ROOT / "Snakefile", *sorted((ROOT / "rules").glob("*.smk"))]:
        rules |= set(re.findall(r"^(?:rule|checkpoint) (\w+):", smk.read_text(), flags=re.M))
    doc = (ROOT / "docs/cluster.md").read_text()
    table = doc.split("## What runs where", 1)[1].split("\n\n", 2)[1]
    assert len(rules) >= 30
    assert sorted(r for r in rules if f"`{r}`" not in table) == []

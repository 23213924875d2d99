"""Inputs the DAG sees, and runs a lab can move and repeat (issue #13, items 2 and 7).

One tiny run, made inside a copy of the checkout (the working directory is the checkout, as for a
user), is shared by the checks:

- editing one line of the data JSONL makes ``snakemake -n`` plan the data step and what follows;
- a study clip zeroed after rendering makes ``snakemake -n`` plan its shard's QC, and a real run fails
  the clip as ``unreadable`` and replaces its prompt; a damaged clip of another engine makes that
  engine's manifest rule rerun and stop with a message naming the clip and the shard to re-render;
- moving the checkout (results included) leaves nothing to do (no absolute path in any rule's params);
- a second identical run gives byte-identical WAVs for every engine (kokoro-onnx, piper, espeak-ng);
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

import pandas as pd
import pytest
import yaml

from bad_inputs import assert_clean_failure
from workflow_runner import ROOT, deep_update, planned_jobs, tiny_overrides

pytestmark = pytest.mark.slow

#: What a user's checkout holds that the workflow reads (no .venv, no results).
CHECKOUT = ["Snakefile", "config.yaml", "rules", "workflow", "src", "resources", "envs", "profiles", "benchmarks/out"]
SPEECH = [
    "results/audio/manifest.csv",
    "results/audio/engines/piper/manifest.csv",
    "results/audio/engines/espeak-ng/manifest.csv",
]
IDS = {"prompt_id": str, "clip_id": str, "conversation_id": str, "replaced_by": str}


def make_checkout(dest: Path) -> Path:
    for rel in CHECKOUT:
        src = ROOT / rel
        if src.is_dir():
            shutil.copytree(src, dest / rel, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    cfg = deep_update(yaml.safe_load((dest / "config.yaml").read_text()), tiny_overrides())
    (dest / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return dest


def snakemake(checkout: Path, *args: str, timeout: float = 3000) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--cores",
        "2",
        "--snakefile",
        str(checkout / "Snakefile"),
        "--directory",
        str(checkout),
        *args,
    ]
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=lambda: os.umask(0o022),
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
    )


@pytest.fixture(scope="module")
def checkout_run(tmp_path_factory) -> Path:
    """A checkout copy with the tiny config, run to the end (report included)."""
    checkout = make_checkout(tmp_path_factory.mktemp("dag") / "checkout")
    proc = snakemake(checkout)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return checkout


def copy_run(run: Path, dest: Path) -> Path:
    shutil.copytree(run, dest, symlinks=True)  # mtimes and Snakemake's metadata kept
    return dest


def wav_digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((root / "results/audio").rglob("*.wav"))
    }


def test_nothing_to_do_after_the_run(checkout_run):
    assert planned_jobs(snakemake(checkout_run, "-n")) == {}


def test_editing_one_line_of_the_data_plans_the_data_step(checkout_run, tmp_path):
    run = copy_run(checkout_run, tmp_path / "run")
    data = run / "resources/sample/conversations.jsonl"
    lines = data.read_text(encoding="utf-8").splitlines(keepends=True)
    row = json.loads(lines[-1])
    row["conversation_history"][0]["content"] += " Thanks."  # one user message of the last conversation
    lines[-1] = json.dumps(row) + "\n"
    data.write_text("".join(lines), encoding="utf-8")
    jobs = planned_jobs(snakemake(run, "-n"))
    assert {"conversations", "sample_prompts", "render_shard"} <= set(jobs), jobs


def test_zeroed_study_clip_plans_its_qc_and_is_replaced(checkout_run, tmp_path):
    run = copy_run(checkout_run, tmp_path / "run")
    final = pd.read_csv(run / "results/sampling/final_prompts.csv", dtype=IDS, keep_default_na=False)
    victim = final.iloc[0]
    clip = f"{victim.prompt_id}_1"
    (run / f"results/audio/clips/{clip}.wav").write_bytes(b"")
    jobs = planned_jobs(snakemake(run, "-n", *SPEECH))
    assert jobs.get("audio_qc") == 1 and "audio_review" in jobs, jobs
    assert "render_shard" not in jobs and "conversations" not in jobs, jobs

    proc = snakemake(run, *SPEECH)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    qc = pd.read_csv(run / "results/audio/qc.csv", dtype=IDS, keep_default_na=False)
    row = qc[qc["clip_id"] == clip].iloc[0]
    assert row["qc_reasons"].startswith("unreadable") and row["in_study"] in ("False", False)
    removals = pd.read_csv(run / "results/sampling/removals.csv", dtype=IDS, keep_default_na=False)
    removed = removals[removals["conversation_id"] == victim.conversation_id]
    assert (removed["reason"] == "audio_quality").any() and removed["replaced_by"].iloc[0]
    manifest = pd.read_csv(run / "results/audio/manifest.csv", dtype=IDS, keep_default_na=False)
    assert clip not in set(manifest["clip_id"]) and victim.prompt_id not in set(manifest["prompt_id"])
    assert manifest["prompt_id"].nunique() == len(final) + 1  # the study keeps its size (attention check + prompts)


@pytest.mark.parametrize("damage", ["delete", "replace with another clip"])
def test_other_clip_damage_plans_qc(checkout_run, tmp_path, damage):
    run = copy_run(checkout_run, tmp_path / "run")
    clips = sorted((run / "results/audio/clips").glob("*.wav"))
    if damage == "delete":
        clips[2].unlink()
    else:
        shutil.copy(clips[3], clips[2])
    jobs = planned_jobs(snakemake(run, "-n", *SPEECH))
    assert jobs.get("audio_qc") == 1 and "render_shard" not in jobs, jobs


def test_damaged_engine_clip_names_the_shard_to_render_again(checkout_run, tmp_path):
    run = copy_run(checkout_run, tmp_path / "run")
    manifest = pd.read_csv(run / "results/audio/engines/piper/shards/0.csv", dtype=IDS, keep_default_na=False)
    clip = run / manifest["path"].iloc[1]
    clip.write_bytes(b"RIFF garbage")
    jobs = planned_jobs(snakemake(run, "-n", SPEECH[1]))
    assert jobs == {"engine_manifest": 1}, jobs
    audio = run / "results/audio"
    kept = {name: (audio / name).read_bytes() for name in ("manifest.csv", "qc.csv")}
    # watched: everything but the failing rule's own output (Snakemake removes a failed job's stale output)
    # and the logs
    watch = [p for p in (run / "results").iterdir() if p.is_dir() and p.name not in ("audio", "logs")]
    watch += [audio / "rounds", audio / "review", audio / "clips", audio / "engines/espeak-ng"]
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
            f"unreadable clip(s) of piper: {manifest['clip_id'].iloc[1]}",
            "delete results/audio/engines/piper/shards/0.csv",
        ],
    )
    assert {name: (audio / name).read_bytes() for name in kept} == kept
    assert "Traceback (most recent call last)" not in result.output
    (run / "results/audio/engines/piper/shards/0.csv").unlink()  # the fix the message names
    proc = snakemake(run, SPEECH[1])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert wav_digests(run) == wav_digests(checkout_run)  # the clip is rendered again, identical


def test_moved_checkout_reruns_nothing(checkout_run, tmp_path):
    moved = copy_run(checkout_run, tmp_path / "elsewhere" / "moved")
    jobs = planned_jobs(snakemake(moved, "-n"))
    assert jobs == {}, jobs


def test_identical_runs_give_identical_wavs_for_every_engine(checkout_run, tmp_path):
    other = make_checkout(tmp_path / "second")
    proc = snakemake(other, *SPEECH)
    assert proc.returncode == 0, proc.stderr[-4000:]
    first, second = wav_digests(checkout_run), wav_digests(other)
    engines = {"clips", "engines/piper", "engines/espeak-ng"}
    assert {k.split("/", 2)[2].rsplit("/", 1)[0] for k in first} >= engines
    assert first == second


def test_outputs_are_group_readable(checkout_run):
    for path in [*(checkout_run / "results").rglob("*.csv"), *(checkout_run / "results/audio").rglob("*.wav")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & stat.S_IRGRP and mode & stat.S_IROTH, f"{path}: {oct(mode)}"


def test_make_run_uses_the_local_profile():
    """`make run` and profiles/local agree: the Makefile's run target is snakemake with that profile."""
    proc = subprocess.run(["make", "-n", "run", "VENV=.venv-nonexistent"], cwd=ROOT, capture_output=True, text=True)
    run_line = [line for line in proc.stdout.splitlines() if "snakemake" in line and "pip" not in line]
    assert run_line and "--workflow-profile profiles/local" in run_line[-1], proc.stdout
    profile = yaml.safe_load((ROOT / "profiles/local/config.yaml").read_text())
    assert profile["rerun-incomplete"] is True and profile["cores"] == 2


def test_readme_install_line_is_what_make_does():
    """Every command `make run` runs (pip installs, snakemake) is in the README's description of it."""
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
    readme = " ".join((ROOT / "README.md").read_text().split())
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

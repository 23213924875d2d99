"""Resuming after a crash: kill the workflow mid-run, rerun with --rerun-incomplete, same tables.

The local executor stands in for a lost cluster node (docs/cluster.md, "Resuming"). On a copy of the
shared default run (tests/conftest.py) the last rendering round's first shard is deleted (its manifest,
WAVs and log), so that the shard and everything after it must run again; the workflow is started for
the final tables and its whole process group is SIGKILLed once that shard is rendering (the job is then
marked incomplete and the lock stays behind, as after a crash); `snakemake --unlock` and a rerun with
`--rerun-incomplete` finish it, and every final table must equal the default run's byte for byte (the
audio manifest but for its render timings).

This is also the suite's determinism check: rendering, QC, the last review, the design, the simulated
ratings and the ICC table computed again in another folder give the same tables, and a fresh folder
draws the same prompts from the data.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from support.workflow_runner import copy_run, make_checkout, run_workflow

pytestmark = pytest.mark.slow

TABLES = [
    "results/sampling/removals.csv",
    "results/sampling/final_prompts.csv",
    "results/audio/qc.csv",
    "results/study/stimuli.csv",
    "results/study/assignments.csv",
    "results/ratings/ratings.csv",
    "results/ratings/trials.csv",
    "results/ratings/participants.csv",
    "results/stats/tables/icc.csv",
    "results/stats/tables/icc.md",
]
MANIFEST = "results/audio/manifest.csv"
START_TIMEOUT_S = 240


def _last_round(run: Path) -> int:
    return max(int(p.name) for p in (run / "results/audio/rounds").iterdir())


def _start(workdir: Path) -> subprocess.Popen:
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(workdir / "Snakefile"),
        "--directory",
        str(workdir),
        "--cores",
        "2",
        *TABLES,
        MANIFEST,
    ]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True
    )  # its own process group: killed with its jobs


def _kill_once_rendering(proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        while not log.exists():
            assert proc.poll() is None, f"the workflow ended (rc {proc.returncode}) before rendering"
            assert time.monotonic() < deadline, "the shard's rendering did not start"
            time.sleep(0.2)
        time.sleep(1.0)  # inside the rendering job
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def test_kill_and_rerun_incomplete_gives_identical_tables(default_run, tmp_path):
    crashed = copy_run(default_run, tmp_path / "crashed")
    last = _last_round(crashed)
    shard, log = f"results/audio/rounds/{last}/shards/0.csv", f"results/logs/speech/render_round{last}_shard0.log"
    clips = pd.read_csv(crashed / shard, dtype={"path": str}, keep_default_na=False)["path"]
    for path in [*clips, shard, log]:
        (crashed / path).unlink()

    _kill_once_rendering(_start(crashed), crashed / log)
    assert not (crashed / shard).exists(), "killed too late: the shard had finished"
    incomplete = list((crashed / ".snakemake/incomplete").glob("*"))
    assert incomplete, "no job was marked incomplete by the kill"

    unlock = run_workflow(crashed, "--unlock", timeout=120)
    assert unlock.returncode == 0, unlock.stderr[-2000:]
    resumed = run_workflow(crashed, "--rerun-incomplete", *TABLES, MANIFEST, timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    ran = resumed.stdout + resumed.stderr
    for rule in ("render_shard", "audio_qc", "audio_review", "stimuli", "simulate_ratings", "icc_table"):
        assert re.search(rf"(?:rule|checkpoint) {rule}:", ran), rule
    assert not list((crashed / ".snakemake/incomplete").glob("*"))

    for rel in TABLES:
        assert (crashed / rel).read_bytes() == (default_run / rel).read_bytes(), rel
    manifests = [pd.read_csv(run / MANIFEST, keep_default_na=False) for run in (crashed, default_run)]
    timings = ["render_seconds"]  # wall-clock seconds: the one column that is not the same twice
    pd.testing.assert_frame_equal(*(m.drop(columns=timings) for m in manifests))


def test_a_fresh_folder_draws_the_same_prompts(default_run, tmp_path):
    fresh = make_checkout(tmp_path / "fresh")
    proc = run_workflow(fresh, "results/sampling/prompts.csv", "results/data/conversations.parquet")
    assert proc.returncode == 0, proc.stderr[-4000:]
    for rel in ("results/sampling/prompts.csv", "results/data/conversations.parquet"):
        assert (fresh / rel).read_bytes() == (default_run / rel).read_bytes(), rel

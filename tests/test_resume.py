"""Resuming after a crash: kill the workflow mid-run, rerun with --rerun-incomplete, same tables.

The local executor stands in for a lost cluster node (docs/cluster.md, "Resuming"): the tiny
workflow is started, its whole process group is SIGKILLed once the speech stage has started (jobs
are then marked incomplete and the lock stays behind, as after a crash), `snakemake --unlock` and a
rerun with `--rerun-incomplete` finish it, and every final table must equal a clean run's byte for
byte. This is also the suite's determinism check: two runs of one config in two folders, the same tables.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workflow_runner import ROOT, run_workflow, tiny_overrides, write_config

pytestmark = pytest.mark.slow

TABLES = [
    "results/sampling/prompts.csv",
    "results/sampling/removals.csv",
    "results/study/stimuli.csv",
    "results/study/assignments.csv",
    "results/ratings/ratings.csv",
    "results/ratings/trials.csv",
    "results/ratings/participants.csv",
    "results/stats/tables/icc.csv",
    "results/stats/tables/icc.md",
]
START_TIMEOUT_S = 240
# The final tables are the targets (everything upstream of them runs; the other statistics rules are
# local and independent of resuming).


def _config(workdir: Path) -> Path:
    """The tiny config made smaller still (2 prompts -> 6 clips in 2 shards): rendering dominates."""
    return write_config(
        workdir,
        {
            **tiny_overrides(),
            "sampling": {"n_prompts": 2},
            "study": {"raters_per_condition": 6, "trials_per_participant": 2},
            "tts": {"shard_size": 3},
            "stats": {"n_boot": 20},
        },
    )


def _start(workdir: Path) -> subprocess.Popen:
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(ROOT / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(workdir / "config.yaml"),
        "--cores",
        "2",
        *TABLES,
    ]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True
    )  # its own process group: killed with its jobs


def _kill_once_speech_started(proc: subprocess.Popen, workdir: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        while not list((workdir / "results/logs/speech").glob("render_round*_shard*.log")):
            assert proc.poll() is None, f"the workflow ended (rc {proc.returncode}) before the speech stage"
            assert time.monotonic() < deadline, "the speech stage did not start"
            time.sleep(0.2)
        time.sleep(1.0)  # inside the rendering jobs
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def test_kill_and_rerun_incomplete_gives_identical_tables(tmp_path):
    clean = tmp_path / "clean"
    _config(clean)
    done = run_workflow(clean, *TABLES, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]

    crashed = tmp_path / "crashed"
    _config(crashed)
    _kill_once_speech_started(_start(crashed), crashed)
    assert not (crashed / "results/audio/manifest.csv").exists(), "killed too late: speech already finished"
    incomplete = list((crashed / ".snakemake/incomplete").glob("*"))
    assert incomplete, "no job was marked incomplete by the kill"

    unlock = run_workflow(crashed, "--unlock", timeout=120)
    assert unlock.returncode == 0, unlock.stderr[-2000:]
    resumed = run_workflow(crashed, "--rerun-incomplete", *TABLES, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    assert "render_shard" in resumed.stdout + resumed.stderr
    assert not list((crashed / ".snakemake/incomplete").glob("*"))

    for rel in TABLES:
        assert (crashed / rel).read_bytes() == (clean / rel).read_bytes(), rel

"""The workflow on a real SLURM (one node, started by tests/cluster/slurm_up.sh).

Runs the tiny config through ``--workflow-profile`` with the test profile derived from
profiles/slurm (tests/cluster/slurm_profile.py), every Snakemake call guarded by ``timeout -s KILL``, and
checks that

- every non-local job ran as a SLURM job (its log's ``job origin`` line has the SLURM job id that
  Snakemake reported at submission), grouped as the profile says, and the local rules ran on the
  submitting host without a SLURM job;
- a job that fails inside SLURM (``ingest_ratings`` on an invalid ratings.csv) makes Snakemake exit
  non-zero and report the SLURM failure;
- changing ``tts.voice`` resubmits only speech and what follows.

Skipped (with the reason) unless SLURM answers or MODPREFS_SLURM=1 is set; with MODPREFS_SLURM=1
a missing SLURM or plugin is a failure, not a skip (CI: .ci/run starts SLURM first).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from workflow_runner import ROOT, write_config

sys.path.insert(0, str(ROOT / "tests" / "cluster"))
from slurm_profile import write_test_profile  # noqa: E402  (tests/cluster/slurm_profile.py)

sys.path.insert(0, str(ROOT / "src"))
from modprefs.workflow_log import parse_origin  # noqa: E402

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

REQUIRED = os.environ.get("MODPREFS_SLURM") == "1"
# Per Snakemake call (timeout -s KILL). A healthy tiny run takes 1-3 min alone, but in CI the other xdist
# worker runs the default workflow on the same 2 cores and CI's run took longer than 420 s.
RUN_TIMEOUT_S = 1200
# Target: the ICC table pulls in every SLURM stage (data .. ratings) and one local statistics rule;
# the other statistics rules are local too and only add run time here.
TARGETS = ["results/stats/tables/icc.csv", "results/stats/tables/icc.md"]
# The tiny config: 2 prompts -> 6 clips (with the attention check's two) in 2 render shards, a small
# panel and bootstrap. What is checked is where jobs run, not what they compute, so the study voice is
# espeak-ng's (no model to load), the other engines are off and QC skips its Whisper and DNSMOS models
# (the shared default run covers those): 2 min instead of 3.5 on an idle machine.
TINY = {
    "sampling": {"n_prompts": 2},
    "study": {"raters_per_condition": 6, "trials_per_participant": 2},
    "tts": {"backend": "espeak-ng", "voice": "en-us", "shard_size": 3, "engines": []},
    "audio_qc": {"asr": False, "dnsmos": False},
    "stats": {"n_boot": 20},
}
# The rules' logs: statistics are `localrules` (results/logs/stats/), everything else is a SLURM job.
# The audio-QC review (a checkpoint) and the final sample are local too: they are cheap and run once per round.
LOCAL_LOG_DIRS = (
    "results/logs/stats",
    "results/logs/report",
    "results/logs/speech/audio_review_",
    "results/logs/sampling/final_sample",
)
SLURM_RULE_LOGS = {
    "conversations": "results/logs/data/conversations.log",
    "sample_prompts": "results/logs/sampling/sample_prompts.log",
    "render_shard": "results/logs/speech/render_round*_shard*.log",
    "audio_qc": "results/logs/speech/audio_qc_round*_shard*.log",
    "audio_manifest": "results/logs/speech/audio_manifest.log",
    "stimuli": "results/logs/study/stimuli.log",
    "assignments": "results/logs/study/assignments.log",
    "simulate_ratings": "results/logs/ratings/simulate_ratings.log",
}


def _slurm_state() -> str:
    if not shutil.which("sinfo"):
        return "no sinfo on PATH"
    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:
        return "sinfo timed out"
    state = out.stdout.strip().splitlines()[0].strip("*~#!%$@^-") if out.stdout.strip() else ""
    return state if out.returncode == 0 and state else f"sinfo failed: {out.stderr.strip()[:200]}"


def _why_not() -> str | None:
    state = _slurm_state()
    if state not in ("idle", "mix", "alloc", "comp"):
        return (
            f"SLURM is not up ({state}): start it with `bash tests/cluster/slurm_up.sh` (root); "
            "with MODPREFS_SLURM=1 this is a failure instead of a skip"
        )
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        return "snakemake-executor-plugin-slurm is not installed (pip install snakemake-executor-plugin-slurm==2.8.0)"
    return None


@pytest.fixture(scope="module", autouse=True)
def _need_slurm():
    reason = _why_not()
    if reason:
        if REQUIRED:
            pytest.fail(f"MODPREFS_SLURM=1 but {reason}")
        pytest.skip(reason)


def _run_on_slurm(workdir: Path, profile: Path, configfile: Path) -> subprocess.CompletedProcess:
    cmd = [
        "timeout",
        "-s",
        "KILL",
        str(RUN_TIMEOUT_S),
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(ROOT / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(configfile),
        "--workflow-profile",
        str(profile),
        *TARGETS,
    ]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT_S + 30)
    (workdir / f"snakemake_{configfile.parent.name}.out").write_text(proc.stdout + proc.stderr)
    assert proc.returncode != 137, f"snakemake killed after {RUN_TIMEOUT_S} s:\n{(proc.stdout + proc.stderr)[-4000:]}"
    return proc


def _submitted(proc: subprocess.CompletedProcess) -> dict[str, str]:
    """SLURM job id -> Snakemake's id of what it submitted (a job or a group job)."""
    text = proc.stdout + proc.stderr
    return {m.group(2): m.group(1) for m in re.finditer(r"Job (\S+) has been submitted with SLURM jobid (\d+)", text)}


def _ran_rules(proc: subprocess.CompletedProcess) -> set[str]:
    return set(re.findall(r"Finished jobid: \d+ \(Rule: (\w+)\)", proc.stdout + proc.stderr))


def _origins(workdir: Path) -> dict[str, list[dict[str, str] | None]]:
    """Rule -> the job origin of each of its logs (SLURM_RULE_LOGS)."""
    return {
        rule: [parse_origin(log.read_text()) for log in sorted(workdir.glob(pattern))]
        for rule, pattern in SLURM_RULE_LOGS.items()
    }


def _all_log_origins(workdir: Path) -> dict[str, dict[str, str] | None]:
    """Every rule log (not SLURM's own) -> its job origin."""
    logs = [p for p in (workdir / "results/logs").rglob("*.log") if "slurm" not in p.relative_to(workdir).parts[2:3]]
    return {str(p.relative_to(workdir)): parse_origin(p.read_text()) for p in sorted(logs)}


def _slurm_node() -> str:
    return subprocess.run(["sinfo", "-h", "-o", "%n"], capture_output=True, text=True).stdout.split()[0]


@pytest.fixture(scope="module")
def slurm_run(tmp_path_factory):
    """The tiny config run once on SLURM: (workdir, profile dir, finished process)."""
    base = tmp_path_factory.mktemp("slurm")
    profile = write_test_profile(base / "profile")
    workdir = base / "run"
    cfg = write_config(base / "cfg", TINY)
    proc = _run_on_slurm(workdir, profile, cfg)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    return workdir, profile, proc


def test_every_non_local_job_ran_in_slurm(slurm_run):
    workdir, _, proc = slurm_run
    submitted = _submitted(proc)
    assert submitted, "no SLURM submissions in Snakemake's output"
    origins = _origins(workdir)
    node = _slurm_node()
    for rule in SLURM_RULE_LOGS:
        assert origins[rule] and all(origins[rule]), f"{rule}: no job origin line in its log"
    for log, origin in _all_log_origins(workdir).items():
        if log.startswith(LOCAL_LOG_DIRS):
            continue
        assert origin is not None, f"{log}: no job origin line"
        assert origin["slurm_job_id"] in submitted, (log, origin, submitted)
        assert origin["host"].split(".")[0] == node, (log, origin, node)
    # the profile's groups: one SLURM job for data+sampling, one for both shards, one for the study
    job_of = {rule: {o["slurm_job_id"] for o in origins[rule]} for rule in SLURM_RULE_LOGS}
    assert (
        len(job_of["render_shard"]) == 1
        and len(list(workdir.glob("results/logs/speech/render_round0_shard*.log"))) == 2
    )
    assert job_of["audio_qc"] == job_of["render_shard"]  # each shard's QC runs in the rendering job
    assert job_of["conversations"] == job_of["sample_prompts"]
    assert job_of["audio_manifest"] == job_of["stimuli"] == job_of["assignments"] == job_of["simulate_ratings"]
    assert len(job_of["render_shard"] | job_of["conversations"] | job_of["stimuli"]) == 3, job_of
    assert set().union(*job_of.values()) == set(submitted), (job_of, submitted)  # no other submissions
    assert (workdir / "results/stats/tables/icc.csv").is_file()


def test_local_rules_ran_on_the_submitting_host(slurm_run):
    workdir, _, _ = slurm_run
    local = {log: o for log, o in _all_log_origins(workdir).items() if log.startswith(LOCAL_LOG_DIRS)}
    assert {
        "results/logs/stats/icc_table.log",
        "results/logs/speech/audio_review_round0.log",
        "results/logs/sampling/final_sample.log",
    } <= set(local), sorted(local)
    for log, origin in local.items():
        assert origin is not None, f"{log}: no job origin line"
        assert origin["slurm_job_id"] == "none", (log, origin)
        assert origin["host"] == socket.gethostname(), (log, origin)


def _copy_run(workdir: Path, dest: Path, drop: tuple[str, ...] = ()) -> Path:
    """A copy of a finished run (mtimes and Snakemake metadata kept) without some result folders."""
    shutil.copytree(workdir, dest, symlinks=True, ignore=shutil.ignore_patterns(".snakemake/slurm_logs"))
    for rel in drop:
        shutil.rmtree(dest / rel, ignore_errors=True)
    return dest


def test_failing_slurm_job_fails_the_run(slurm_run, tmp_path):
    workdir, profile, _ = slurm_run
    collected = tmp_path / "collected"
    collected.mkdir()
    for table in ("ratings", "trials", "participants"):
        shutil.copy(workdir / f"results/ratings/{table}.csv", collected / f"{table}.csv")
    ratings = pd.read_csv(collected / "ratings.csv")
    ratings.loc[4, "rating"] = 101  # out of the slider's 1..100
    ratings.to_csv(collected / "ratings.csv", index=False)
    work = _copy_run(workdir, tmp_path / "run", ("results/ratings", "results/stats"))
    cfg = write_config(tmp_path / "bad_ratings", {**TINY, "ratings": {"source": str(collected)}})
    proc = _run_on_slurm(work, profile, cfg)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0, text[-4000:]
    submitted = _submitted(proc)
    assert len(submitted) == 1, submitted  # only ingest_ratings was submitted
    (job_id,) = submitted
    # Snakemake names the failed SLURM job by its log (kept for failed jobs), which holds the job's error
    slurm_logs = list(work.glob(f"results/logs/slurm/*/{job_id}.log"))
    assert len(slurm_logs) == 1 and str(slurm_logs[0]) in text, text[-4000:]
    assert re.search(rf"SLURM-job '{job_id}' failed|Error in (group|rule) ", text), text[-4000:]
    assert "problem(s) with the ratings" in slurm_logs[0].read_text()  # run_adapter: the message, no traceback
    log = (work / "results/logs/ratings/ingest_ratings.log").read_text()
    assert parse_origin(log)["slurm_job_id"] == job_id
    assert "ratings.csv" in log and "row 6" in log and "rating" in log
    assert not (work / "results/stats/tables/icc.csv").exists()


def test_voice_change_resubmits_only_speech_and_downstream(slurm_run, tmp_path):
    workdir, profile, _ = slurm_run
    work = _copy_run(workdir, tmp_path / "run")
    before = _origins(work)
    cfg = write_config(tmp_path / "voice", {**TINY, "tts": {**TINY["tts"], "voice": "en-gb"}})
    proc = _run_on_slurm(work, profile, cfg)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    ran = _ran_rules(proc)
    assert {"render_shard", "audio_manifest", "stimuli", "simulate_ratings", "icc_table"} <= ran, ran
    assert not {"conversations", "sample_prompts"} & ran, ran
    after = _origins(work)
    submitted = _submitted(proc)
    for rule in ("conversations", "sample_prompts"):  # not resubmitted: the same SLURM job's log
        assert after[rule] == before[rule], rule
    for rule in ("render_shard", "audio_manifest", "stimuli", "simulate_ratings"):
        assert all(o["slurm_job_id"] in submitted for o in after[rule]), (rule, after[rule], submitted)
    resubmitted = {
        o["slurm_job_id"]
        for rule in ("render_shard", "audio_manifest", "stimuli", "assignments", "simulate_ratings")
        for o in after[rule]
    }
    assert resubmitted == set(submitted) and len(submitted) == 2, (resubmitted, submitted)  # render + study groups
    manifest = pd.read_csv(work / "results/audio/manifest.csv")
    assert set(manifest["voice"]) == {"en-gb"}

"""The workflow on a real SLURM (one node, started by tests/cluster/slurm_up.sh).

Runs the tiny config through ``--workflow-profile`` with the test profile derived from
profiles/slurm (tests/support/slurm_profile.py), every Snakemake call guarded by ``timeout -s KILL``, and
checks that

- every non-local job ran as a SLURM job (its log's ``job origin`` line has the SLURM job id that
  Snakemake reported at submission), grouped as the profile says, and the local rules ran on the
  submitting host without a SLURM job;
- a job that fails inside SLURM (``ingest_ratings`` on an invalid ratings.csv) makes Snakemake exit
  non-zero and report the SLURM failure;
- changing ``tts.voice`` resubmits only speech and what follows;
- docs/cluster.md's "Resuming after a failure" commands, as written, finish a run whose Snakemake was killed while
  its SLURM job ran;
- a reward run (the default backbone, 2 epochs) is one SLURM job (the ``reward`` group: training and evaluation) on
  the CPU partition, its pairs built in another;
- on tests/cluster/mechanics (the workflow's partition and retry helpers, the production profile's settings): a job
  killed for memory succeeds on its retry with twice the memory, a job requeued while it runs (as on preemption)
  runs again and completes, and a GPU job lands on the GPU partition (the test cluster has the production profile's
  partitions, `cpu` and `gpu` with one fake GPU, and refuses a GPU request on `cpu`: tests/cluster/slurm_up.sh).

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
import time
from pathlib import Path

import pandas as pd
import pytest

from modprefs.workflow_log import parse_origin  # noqa: E402
from support.doc_blocks import commands, fenced_blocks, section
from support.slurm_profile import write_test_profile  # noqa: E402  (tests/support/slurm_profile.py)
from support.workflow_runner import ROOT, write_config

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


def _run_on_slurm(
    workdir: Path, profile: Path, configfile: Path, *extra: str, targets: list[str] = TARGETS
) -> subprocess.CompletedProcess:
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
        *extra,
        *targets,
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
    # QC (CPU: Whisper, DNSMOS) is a job of its own, not inside the rendering job (a GPU one with kokoro)
    assert len(job_of["audio_qc"]) == 1 and job_of["audio_qc"] != job_of["render_shard"]
    assert job_of["conversations"] == job_of["sample_prompts"]
    assert job_of["audio_manifest"] == job_of["stimuli"] == job_of["assignments"] == job_of["simulate_ratings"]
    assert len(job_of["render_shard"] | job_of["audio_qc"] | job_of["conversations"] | job_of["stimuli"]) == 4, job_of
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
    # no retries: the profile's two (with more memory and time) would resubmit a bad input twice more
    proc = _run_on_slurm(work, profile, cfg, "--retries", "0")
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
        for rule in ("render_shard", "audio_qc", "audio_manifest", "stimuli", "assignments", "simulate_ratings")
        for o in after[rule]
    }
    # the tts, qc and study groups
    assert resubmitted == set(submitted) and len(submitted) == 3, (resubmitted, submitted)
    manifest = pd.read_csv(work / "results/audio/manifest.csv")
    assert set(manifest["voice"]) == {"en-gb"}


RESUME_SNAKEFILE = """\
rule all:
    input: "b.txt"
rule a:
    output: "a.txt"
    shell: "echo start $SLURM_JOB_ID >> a.starts; sleep 20; echo a > {output}"
rule b:
    input: "a.txt"
    output: "b.txt"
    shell: "cat {input} > {output}; echo b >> {output}"
"""


def test_the_resume_commands_of_the_docs_finish_a_run_whose_snakemake_was_killed(tmp_path):
    """A lost login session: Snakemake killed (SIGKILL) while its SLURM job runs leaves a lock and an incomplete
    job; docs/cluster.md's two commands, run as written in the workflow's folder (profiles/slurm = the test
    profile), unlock, resubmit the incomplete job and finish the run."""
    block = fenced_blocks(section(ROOT / "docs" / "cluster.md", "Resuming after a failure"), "bash")[0]
    lines = commands(block)
    assert lines == [
        "snakemake --unlock --workflow-profile profiles/slurm",
        "snakemake --workflow-profile profiles/slurm --rerun-incomplete",
    ], lines
    (tmp_path / "Snakefile").write_text(RESUME_SNAKEFILE)
    write_test_profile(tmp_path / "profiles" / "slurm")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    first = subprocess.Popen(
        ["snakemake", "--workflow-profile", "profiles/slurm"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _wait_for(lambda: (tmp_path / "a.starts").exists(), 300, "job a running in SLURM", first)
    finally:
        os.killpg(first.pid, 9)  # the login session is lost: Snakemake and its children die at once
        first.wait(timeout=30)
    assert not (tmp_path / "b.txt").exists()
    assert list((tmp_path / ".snakemake" / "locks").iterdir()), "the killed run left no lock"  # --unlock is needed
    for line in lines:
        proc = subprocess.run(
            ["timeout", "-s", "KILL", "600", "bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert proc.returncode == 0, (line, (proc.stdout + proc.stderr)[-4000:])
    text = proc.stdout + proc.stderr
    assert "incomplete" in text.lower(), text[-4000:]  # job a's output was not trusted: it ran again
    assert (tmp_path / "b.txt").read_text().split() == ["a", "b"]
    starts = (tmp_path / "a.starts").read_text().split("\n")
    assert len([s for s in starts if s.startswith("start")]) == 2, starts  # the killed run's job, then the rerun


# A reward run on the tiny study: human labels, one degradation kind, no colloquial pairs, 2 epochs, one run
REWARD_TINY = {
    "reward": {
        "pairs": {"sources": ["human"], "degradation": {"kinds": ["noise"], "per_clip": 1}, "colloquial": None},
        "train": {"epochs": 2},
        "runs": {"main": {}},
    }
}


def test_a_reward_run_is_one_slurm_job_on_the_cpu_partition(slurm_run, tmp_path):
    workdir, profile, _ = slurm_run
    work = _copy_run(workdir, tmp_path / "run")
    cfg = write_config(tmp_path / "reward", {**TINY, **REWARD_TINY})
    proc = _run_on_slurm(work, profile, cfg, targets=["results/reward/main/eval/eval.json"])
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    assert {"reward_pairs", "reward_train", "reward_eval"} <= _ran_rules(proc), _ran_rules(proc)
    submitted = _submitted(proc)
    logs = {name: work / f"results/logs/reward/{name}.log" for name in ("pairs", "train_main", "eval_main")}
    origin = {name: parse_origin(log.read_text()) for name, log in logs.items()}
    assert all(o is not None and o["slurm_job_id"] in submitted for o in origin.values()), (origin, submitted)
    # training and evaluation in one job (the run's reward group), the pairs before it in another
    assert origin["train_main"]["slurm_job_id"] == origin["eval_main"]["slurm_job_id"]
    assert origin["pairs"]["slurm_job_id"] != origin["train_main"]["slurm_job_id"]
    job = origin["train_main"]["slurm_job_id"]
    assert (work / f"results/logs/slurm/group_reward_reward_eval_reward_train/{job}.log").is_file(), job
    # the default backbone needs no GPU: the CPU partition (the test cluster refuses a GPU request there)
    assert origin["train_main"]["slurm_partition"] == "cpu", origin
    evaluated = __import__("json").loads((work / "results/reward/main/eval/eval.json").read_text())
    assert evaluated["val_n_pairs"] > 0 and evaluated["n_pairs"] > evaluated["val_n_pairs"]


MECHANICS = ROOT / "tests" / "cluster" / "mechanics" / "Snakefile"
# Over the first attempt's memory (the profile's default mem_mb: 2000 MB), under the retry's (x2: 4000 MB).
HUNGRY_MB = 3000


def _wait_for(predicate, timeout_s: float, what: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if proc.poll() is not None:
            raise AssertionError(f"snakemake ended ({proc.returncode}) while waiting for {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} after {timeout_s} s")
        time.sleep(1)


def _job_state(job_id: str) -> str:
    out = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True, timeout=30)
    return out.stdout.strip()


@pytest.fixture(scope="module")
def mechanics_run(tmp_path_factory):
    """tests/cluster/mechanics on SLURM with the test profile: `requeued` is requeued by hand (as a preemption
    would) while it runs, and released at once instead of after SLURM's 121 s requeue delay."""
    base = tmp_path_factory.mktemp("mechanics")
    profile = write_test_profile(base / "profile")
    work = base / "run"
    work.mkdir()
    cmd = [
        *("timeout", "-s", "KILL", "900", sys.executable, "-m", "snakemake", "--snakefile", str(MECHANICS)),
        *("--directory", str(work), "--workflow-profile", str(profile), "--config", f"hungry_mb={HUNGRY_MB}"),
    ]
    out = open(base / "snakemake.out", "w")
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    starts = work / "requeued.starts"
    try:
        _wait_for(starts.exists, 600, "start of the job `requeued`", proc)
        job_id = starts.read_text().split()[1]
        subprocess.run(["scontrol", "requeue", job_id], check=True, timeout=30)
        _wait_for(lambda: _job_state(job_id) == "PENDING", 60, f"job {job_id} pending after requeue", proc)
        subprocess.run(["scontrol", "update", f"JobId={job_id}", "StartTime=now"], check=True, timeout=30)
        proc.wait(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
        out.close()
    text = (base / "snakemake.out").read_text()
    assert proc.returncode == 0, text[-6000:]
    return work, text, job_id


def test_a_job_killed_for_memory_succeeds_on_its_retry_with_twice_the_memory(mechanics_run):
    work, text, _ = mechanics_run
    attempts = (work / "hungry.attempts").read_text().splitlines()
    assert [line.split()[2] for line in attempts] == ["mem=2000M", "mem=4000M"], attempts
    assert attempts[0].split()[1] != attempts[1].split()[1]  # a new SLURM job for the retry
    assert (work / "hungry.txt").read_text().strip() == "ok"
    assert "Trying to restart job" in text, text[-4000:]


def test_a_requeued_job_runs_again_and_completes(mechanics_run):
    work, text, job_id = mechanics_run
    starts = (work / "requeued.starts").read_text().splitlines()
    assert [line.split()[1] for line in starts] == [job_id, job_id], starts  # the same SLURM job, run twice
    assert (work / "requeued.txt").read_text().strip() == "runs=2"
    assert len(re.findall(rf"submitted with SLURM jobid {job_id}\b", text)) == 1  # not a Snakemake retry


def test_gpu_jobs_go_to_the_gpu_partition_as_in_production(mechanics_run):
    """The production profile's partitions on the test cluster (cpu, gpu with one fake GPU; its job_submit filter
    refuses a GPU request on cpu and a CPU job on gpu): the workflow's partition() routes both."""
    work, _, _ = mechanics_run
    gpu = dict(kv.split("=") for kv in (work / "on_gpu.txt").read_text().split())
    cpu = dict(kv.split("=") for kv in (work / "on_cpu.txt").read_text().split())
    assert gpu["partition"] == "gpu" and gpu["cuda"] != "none", gpu
    assert cpu == {"partition": "cpu", "cuda": "none"}, cpu

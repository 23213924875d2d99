"""A stand-in SLURM that records every ``sbatch`` call: the paper-size DAG's submissions without a cluster.

``benchmarks/performance/dag_scale.py`` runs the real Snakemake with the real executor plugin and the production profile
(profiles/slurm, partitions and account as shipped) against these commands on PATH:

- ``sbatch`` records its arguments (one JSON line per submission in ``submissions.jsonl``: the call as the plugin
  built it, and partition, time, memory, CPUs and GPUs parsed from it), then runs the job: the wrapped Snakemake
  jobstep command in the background, with ``SLURM_JOB_ID`` and ``SLURM_JOB_PARTITION`` set as SLURM would, at
  most ``MAX_RUNNING`` at a time;
- ``squeue`` / ``sacct`` answer each job's state (PENDING, RUNNING, COMPLETED, FAILED, OUT_OF_MEMORY);
- ``srun`` (the jobstep's) drops its options and runs the command; ``scancel``, ``sinfo``, ``scontrol`` answer
  what the plugin asks.

What is recorded is exactly what the plugin would send to a cluster. What runs is the same job, optionally with a
**stand-in config** appended to the job's ``--configfiles`` (``FAKE_SLURM_STANDIN``): a cheap voice and QC without
models, so that a paper-size run finishes on a laptop. The main process (DAG, resources, partitions, local rules)
uses the real config. ``FAKE_SLURM_FAIL_FIRST`` (comma-separated substrings of the job comment, e.g. ``group_tts``)
makes a job's first attempt end OUT_OF_MEMORY without running, so the retry's bigger request is recorded too.

    python tests/support/fake_slurm.py install BIN_DIR STATE_DIR [--standin FILE] [--fail-first rule_x,group_y]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

MAX_RUNNING = 2
COMMANDS = ("sbatch", "squeue", "sacct", "scancel", "sinfo", "scontrol", "srun")
PARTITIONS = ("cpu", "gpu")


def _state_dir() -> Path:
    return Path(os.environ["FAKE_SLURM_DIR"])


def _job_file(job_id: str) -> Path:
    return _state_dir() / "jobs" / f"{job_id}.json"


def _read(job_id: str) -> dict:
    return json.loads(_job_file(job_id).read_text())


def _write(job: dict) -> None:
    path = _job_file(job["id"])
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(job))
    tmp.replace(path)


def _next_id() -> str:
    counter = _state_dir() / "next_id"
    import fcntl

    with open(_state_dir() / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        n = int(counter.read_text()) if counter.exists() else 1001
        counter.write_text(str(n + 1))
    return str(n)


def parse_sbatch(argv: list[str]) -> dict:
    """Partition, time, memory, CPUs, GPUs, comment and wrapped command of an sbatch call (the plugin's options)."""
    out: dict = {"gpus": None, "gres": None, "requeue": False}
    takes_value = {"--job-name", "--output", "--comment", "-A", "-p", "-t", "--mem", "-D", "-C", "--mem-per-cpu"}
    names = {
        "--job-name": "name",
        "--output": "output",
        "--comment": "comment",
        "-A": "account",
        "-p": "partition",
        "-t": "time",
        "--mem": "mem_mb",
        "-D": "workdir",
        "--mem-per-cpu": "mem_mb_per_cpu",
    }
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in takes_value and i + 1 < len(argv):
            out[names.get(arg, arg)] = argv[i + 1]
            i += 2
            continue
        if arg.startswith("--wrap="):
            out["wrap"] = arg[len("--wrap=") :]
        elif arg.startswith("--gpus="):
            out["gpus"] = arg.split("=", 1)[1]
        elif arg.startswith("--gres="):
            out["gres"] = arg.split("=", 1)[1]
        elif arg.startswith("--cpus-per-task="):
            out["cpus_per_task"] = int(arg.split("=", 1)[1])
        elif arg.startswith("--cpus-per-gpu="):
            out["cpus_per_gpu"] = int(arg.split("=", 1)[1])
        elif arg == "--requeue":
            out["requeue"] = True
        i += 1
    for key in ("time", "mem_mb"):
        if key in out:
            out[key] = int(out[key])
    attempt = re.search(r"--attempt (\d+)", out.get("wrap", ""))
    out["attempt"] = int(attempt.group(1)) if attempt else None
    return out


def _with_standin(wrap: str, standin: str) -> str:
    """The jobstep command with ``standin`` as the last of its --configfiles (it wins over the others)."""
    return re.sub(r"(--configfiles(?: (?!--)\S+)+)", lambda m: f"{m.group(1)} {shlex.quote(standin)}", wrap, count=1)


def sbatch(argv: list[str]) -> int:
    job_id = _next_id()
    parsed = parse_sbatch(argv)
    call = "sbatch " + " ".join(shlex.quote(a) for a in argv)
    record = {"id": job_id, "call": call, **{k: v for k, v in parsed.items() if k != "wrap"}}
    with open(_state_dir() / "submissions.jsonl", "a") as fh:
        fh.write(json.dumps(record) + "\n")
    job = {**record, "wrap": parsed.get("wrap", ""), "state": "PENDING", "submitted": time.time()}
    fail_first = [s for s in os.environ.get("FAKE_SLURM_FAIL_FIRST", "").split(",") if s]
    if parsed.get("attempt") == 1 and any(s in parsed.get("comment", "") for s in fail_first):
        job.update(state="OUT_OF_MEMORY", end=time.time(), note="FAKE_SLURM_FAIL_FIRST: first attempt failed")
        _write(job)
        print(job_id)
        return 0
    _write(job)
    log = Path(parsed.get("output", str(_state_dir() / "%j.log")).replace("%j", job_id))
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        subprocess.Popen(
            [sys.executable, __file__, "_run", job_id],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=parsed.get("workdir") or os.getcwd(),
        )
    print(job_id)
    return 0


def _running() -> int:
    n = 0
    for path in (_state_dir() / "jobs").glob("*.json"):
        try:
            n += json.loads(path.read_text())["state"] == "RUNNING"
        except (OSError, ValueError):
            continue
    return n


def run_job(job_id: str) -> int:
    """The job's life: wait for a free slot, run the wrapped command, record the end state."""
    import fcntl

    while True:
        with open(_state_dir() / "lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            job = _read(job_id)
            if job["state"] == "CANCELLED":
                return 0
            if _running() < MAX_RUNNING:
                job.update(state="RUNNING", start=time.time(), pid=os.getpid())
                _write(job)
                break
        time.sleep(0.5)
    wrap = job["wrap"]
    standin = os.environ.get("FAKE_SLURM_STANDIN")
    if standin:
        wrap = _with_standin(wrap, standin)
    env = {
        **os.environ,
        "SLURM_JOB_ID": job_id,
        "SLURM_JOBID": job_id,
        "SLURM_JOB_PARTITION": job.get("partition", ""),
        "SLURM_JOB_NAME": job.get("name", ""),
        "SLURM_CPUS_PER_TASK": str(job.get("cpus_per_task", 1)),
    }
    if job.get("gpus"):
        env["SLURM_GPUS"] = str(job["gpus"])
    proc = subprocess.run(["bash", "-c", wrap], env=env)
    job = _read(job_id)
    if job["state"] != "CANCELLED":
        job.update(state="COMPLETED" if proc.returncode == 0 else "FAILED", end=time.time(), rc=proc.returncode)
        _write(job)
    return 0


def _jobs(name: str | None) -> list[dict]:
    jobs = []
    for path in sorted((_state_dir() / "jobs").glob("*.json")):
        try:
            job = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if name is None or job.get("name") == name:
            jobs.append(job)
    return jobs


def _arg(argv: list[str], flag: str) -> str | None:
    for i, a in enumerate(argv):
        if a == flag and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def status(argv: list[str]) -> int:
    """squeue --format=%i|%T / sacct --format=JobIdRaw,State: one ``id|STATE`` line per job of the run."""
    if "-j" in argv:  # sacct -j ID.step --format=Reason: why a job failed
        job_id = (_arg(argv, "-j") or "").split(".")[0]
        if _job_file(job_id).exists():
            print(_read(job_id).get("note", "fake SLURM"))
        return 0
    for job in _jobs(_arg(argv, "--name")):
        print(f"{job['id']}|{job['state']}")
    return 0


def scancel(argv: list[str]) -> int:
    ids = [a for a in argv if a.isdigit()]
    name = _arg(argv, "--name")
    for job in _jobs(name) if name else [_read(i) for i in ids if _job_file(i).exists()]:
        if job["state"] in ("PENDING", "RUNNING"):
            if job.get("pid"):
                try:
                    os.killpg(os.getpgid(int(job["pid"])), signal.SIGTERM)
                except (ProcessLookupError, PermissionError):
                    pass
            job.update(state="CANCELLED", end=time.time())
            _write(job)
    return 0


def srun(argv: list[str]) -> int:
    """The jobstep's ``srun -n1 --cpu-bind=q --cpus-per-task=N ...``: options dropped, the command run."""
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        i += 1
    return subprocess.call(argv[i:])


def install(bin_dir: Path, state_dir: Path) -> dict[str, str]:
    """Write the command shims into ``bin_dir``; returns the environment to run Snakemake with."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "jobs").mkdir(parents=True, exist_ok=True)
    for name in COMMANDS:
        shim = bin_dir / name
        shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(__file__)} {name} "$@"\n')
        shim.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "FAKE_SLURM_DIR": str(state_dir)}


def submissions(state_dir: Path) -> list[dict]:
    """Every recorded sbatch call, in order, with the job's end state."""
    path = state_dir / "submissions.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    for row in rows:
        job = json.loads((state_dir / "jobs" / f"{row['id']}.json").read_text())
        row["state"] = job["state"]
        if "start" in job and "end" in job:
            row["seconds"] = round(job["end"] - job["start"], 1)
    return rows


def main(argv: list[str]) -> int:
    cmd, rest = argv[0], argv[1:]
    if cmd == "install":
        ap = argparse.ArgumentParser()
        ap.add_argument("bin_dir", type=Path)
        ap.add_argument("state_dir", type=Path)
        args = ap.parse_args(rest)
        print(json.dumps(install(args.bin_dir, args.state_dir)))
        return 0
    if cmd == "_run":
        return run_job(rest[0])
    if cmd == "sbatch":
        return sbatch(rest)
    if cmd in ("squeue", "sacct"):
        return status(rest)
    if cmd == "scancel":
        return scancel(rest)
    if cmd == "srun":
        return srun(rest)
    if cmd == "sinfo":
        print("PARTITION")
        print("\n".join(f"{p}*" if i == 0 else p for i, p in enumerate(PARTITIONS)))
        return 0
    if cmd == "scontrol":
        print("MinJobAge               = 300 sec")
        return 0
    print(f"fake_slurm: unknown command {cmd}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

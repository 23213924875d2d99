"""The paper-size DAG through the production SLURM profile, each ``sbatch`` call captured (tests/support/fake_slurm.py).

:func:`capture` runs the real Snakemake with the real executor plugin and ``--workflow-profile profiles/slurm`` (as
shipped: partitions, account, groups, retries, requeue) on config/paper.yaml, 100 prompts drawn from a local JSONL
(benchmarks/tools/make_prism_scale.py: the synthetic PRISM-scale export), against the fake ``sbatch``/``squeue``. Only
the command line differs from a lab's run: status checks after 2 s instead of 40, no weight staging (nothing to
download here: MODPREFS_STAGE_WEIGHTS=0) and no judge preflight (no API; ``judges.preflight: false``).

What is recorded is what the plugin sends to a cluster, sized by the real config (kokoro on a GPU, QC with Whisper
and DNSMOS). What runs inside each fake job is the same job with :data:`STANDIN` as its last config file (espeak-ng,
QC without models), so that the run fits a 2-core laptop. The targets stop before the judges and the statistics (the
judges are API calls; statistics are local rules of the main process): the study's ratings, i.e. the groups
prepare, tts, qc and study, and the local audio review and final draw.

    python tests/support/paper_capture.py OUT_DIR      # prints the submissions as JSON lines
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
if __package__ in (None, ""):
    # Run as a script (`python tests/support/paper_capture.py OUT_DIR`, a subprocess outside pytest): the
    # `support` package it imports is found from tests/, which pytest's ini `pythonpath` adds only in its own run.
    sys.path.insert(0, str(ROOT / "tests"))

from support import fake_slurm  # noqa: E402
from support.benchmarks import bench_module  # noqa: E402
from support.workflow_runner import deep_update, write_config  # noqa: E402

make_prism_scale = bench_module("make_prism_scale")

#: what each fake job runs instead of the paper's models (the main process plans with the real config)
STANDIN: dict[str, Any] = {
    "tts": {"backend": "espeak-ng", "voice": "en-us"},
    "audio_qc": {"asr": False, "dnsmos": False},
}
#: up to the study's ratings: the groups prepare, tts (GPU), qc and study (the other engines' CPU shards would add
#: 18 more shards and ~10 min on 2 cores without another partition to show)
TARGETS = ["results/ratings/ratings.csv"]
#: seconds; ~20 min on a busy 2-core machine
RUN_TIMEOUT_S = 2700


def paper_config(base: Path) -> Path:
    """config.yaml + config/paper.yaml + a local data file (no hub) and no API preflight, written to ``base``."""
    data = make_prism_scale.write(base / "prism_scale.jsonl")
    paper = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())
    overrides = deep_update(paper, {"data": {"source": str(data)}, "judges": {"preflight": False}})
    return write_config(base / "work", overrides)


def capture(base: Path, targets: list[str] = TARGETS, fail_first: str = "") -> tuple[list[dict], str]:
    """Run the paper-size DAG on the fake SLURM in ``base``; returns (submissions, Snakemake's output)."""
    cfg = paper_config(base)
    standin = base / "standin.yaml"
    standin.write_text(yaml.safe_dump(STANDIN))
    env = {
        **os.environ,
        **fake_slurm.install(base / "bin", base / "slurm"),
        "FAKE_SLURM_STANDIN": str(standin),
        "FAKE_SLURM_FAIL_FIRST": fail_first,
        "MODPREFS_STAGE_WEIGHTS": "0",
        "OPENAI_API_KEY": "sk-not-used",
        "OPENBLAS_NUM_THREADS": "1",
    }
    cmd = [
        *("timeout", "-s", "KILL", str(RUN_TIMEOUT_S), sys.executable, "-m", "snakemake"),
        *("--snakefile", str(ROOT / "Snakefile"), "--directory", str(cfg.parent), "--configfile", str(cfg)),
        *("--workflow-profile", str(ROOT / "profiles" / "slurm")),
        *("--slurm-init-seconds-before-status-checks", "2", "--latency-wait", "5"),
        *targets,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    text = proc.stdout + proc.stderr
    (base / "snakemake.out").write_text(text)
    if proc.returncode != 0:
        raise RuntimeError(f"the paper-size run on the fake SLURM failed ({proc.returncode}):\n{text[-6000:]}")
    return fake_slurm.submissions(base / "slurm"), text


def member_runtimes(text: str) -> dict[str, list[int]]:
    """SLURM job id -> the runtimes (minutes) Snakemake gave each member of what it submitted (its output)."""
    out: dict[str, list[int]] = {}
    current: list[int] = []
    for line in text.splitlines():
        if re.search(r"\] (Group job \S+ \(|(local)?(rule|checkpoint) \w+:)", line) and "Group job" in line:
            current = []
        m = re.search(r"resources: .*\bruntime=(\d+)", line)
        if m:
            current.append(int(m.group(1)))
        m = re.search(r"has been submitted with SLURM jobid (\d+)", line)
        if m:
            out[m.group(1)] = current
            current = []
    return out


def job_label(comment: str) -> str:
    """``group tts`` or ``rule sample_prompts`` from the plugin's --comment (rule_<group>_<rules> / rule_<rule>)."""
    name = comment.removeprefix("rule_").split("_wildcards_")[0]
    for group in GROUPS:
        if name.startswith(group + "_"):
            return f"group {group}"
    return f"rule {name}"


#: the production profile's group names
GROUPS = tuple(sorted(set(yaml.safe_load((ROOT / "profiles/slurm/config.yaml").read_text())["groups"].values())))


def summarize(subs: list[dict], text: str) -> dict[str, Any]:
    """The numbers docs/cluster.md quotes: each submission's partition, wall time (minutes), memory (MB), CPUs,
    GPUs and its members' runtimes, and the totals."""
    runtimes = member_runtimes(text)
    jobs = [
        {
            "job": job_label(row.get("comment", "")),
            "attempt": row.get("attempt"),
            "partition": row.get("partition"),
            "time_min": row.get("time"),
            "mem_mb": row.get("mem_mb"),
            "cpus": row.get("cpus_per_task"),
            "gpus": int(row["gpus"]) if row.get("gpus") else 0,
            "requeue": row.get("requeue"),
            "member_runtimes_min": runtimes.get(row["id"], []),
            "state": row.get("state"),
        }
        for row in subs
    ]
    gpu = [j for j in jobs if j["gpus"]]
    return {
        "what": "config/paper.yaml (100 prompts, local JSONL) through profiles/slurm on tests/support/fake_slurm.py",
        "targets": TARGETS,
        "submissions": len(jobs),
        "gpu_jobs": len(gpu),
        "gpu_jobs_on_gpu_partition": sum(j["partition"] == "gpu" for j in gpu),
        "gpu_requests_on_cpu_partition": sum(j["partition"] != "gpu" for j in gpu),
        "longest_time_min": max((j["time_min"] or 0 for j in jobs), default=0),
        "jobs": jobs,
    }


if __name__ == "__main__":
    subs, _ = capture(Path(sys.argv[1]))
    for row in subs:
        print(json.dumps(row))

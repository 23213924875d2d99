"""Run the Snakemake workflow on a config in a scratch working directory (integration tests)."""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]

# Config keys holding paths relative to the repository (made absolute for a scratch workdir).
PATH_KEYS = [
    ("data", "source"),
    ("attention_check",),
    ("sampling", "screening", "harmful_terms"),
    ("stats", "modality_terms"),
]


def deep_update(base: dict, overrides: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_update(out[key], value)
        else:
            out[key] = value
    return out


def tiny_overrides() -> dict[str, Any]:
    """The smallest config that still exercises every stage (a few short clips)."""
    return {
        "sampling": {"n_prompts": 4},
        "study": {"raters_per_condition": 6, "trials_per_participant": 3},
        "tts": {"shard_size": 5},
        "stats": {"n_boot": 50, "n_perm": 50, "n_boot_alpha": 100, "n_perm_alpha": 100, "n_boot_threshold": 50},
    }


def write_config(workdir: Path, overrides: dict[str, Any] | None = None) -> Path:
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    for keys in PATH_KEYS:
        node = cfg
        for k in keys[:-1]:
            node = node[k]
        value = node[keys[-1]]
        if value != "prism" and not Path(value).is_absolute():
            node[keys[-1]] = str(ROOT / value)
    cfg = deep_update(cfg, overrides or {})
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def run_workflow(
    workdir: Path, *args: str, timeout: float = 1800, configfile: Path | None = None
) -> subprocess.CompletedProcess:
    """``snakemake`` with the repository's Snakefile in ``workdir``; returns the finished process."""
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(ROOT / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(configfile or workdir / "config.yaml"),
        "--cores",
        "2",
        *args,
    ]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def planned_jobs(proc: subprocess.CompletedProcess) -> dict[str, int]:
    """Rule -> job count from the 'Job stats' table a dry run prints (empty if nothing to do)."""
    text = proc.stdout + proc.stderr
    if "Job stats:" not in text:
        return {}
    table = text.split("Job stats:", 1)[1]
    jobs = {}
    for line in table.splitlines()[3:]:
        m = re.match(r"^(\S+)\s+(\d+)\s*$", line)
        if not m:
            if line.strip() == "" and jobs:
                break
            continue
        if m.group(1) != "total":
            jobs[m.group(1)] = int(m.group(2))
    return jobs

"""Run the Snakemake workflow on a config in a scratch working directory (integration tests)."""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from filelock import FileLock

ROOT = Path(__file__).resolve().parents[2]

# Config keys holding paths relative to the repository (made absolute for a scratch workdir).
PATH_KEYS = [
    ("data", "source"),
    ("attention_check",),
    ("sampling", "screening", "harmful_terms"),
    ("stats", "modality_terms"),
]


def deep_update(base: dict, overrides: dict) -> dict:
    """A new dict: ``base`` with ``overrides`` merged in, sharing no object with either (callers mutate the result,
    and a shared override such as THREE_SYNTHESISERS_TTS must not change under other tests)."""
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_update(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def tiny_overrides() -> dict[str, Any]:
    """The smallest config that still exercises every stage (a few short clips)."""
    return {
        "sampling": {"n_prompts": 4},
        "study": {"raters_per_condition": 6, "trials_per_participant": 3},
        "tts": {"shard_size": 5},
        "stats": {"n_boot": 50, "n_perm": 50, "n_boot_alpha": 100, "n_perm_alpha": 100, "n_boot_threshold": 50},
    }


#: A study voice and two other engines, one of each offline synthesiser (Kokoro's int8 ONNX, piper, espeak-ng): the
#: tts block of the tests that check each backend's settings (the shipped config renders with piper and espeak-ng).
THREE_SYNTHESISERS_TTS: dict[str, Any] = {
    "backend": "kokoro-onnx",
    "voice": "jf_alpha",
    "lang": "en-us",
    "engines": [{"backend": "piper", "voice": "en_US-joe-medium"}, {"backend": "espeak-ng", "voice": "en-us"}],
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
    """``snakemake`` in ``workdir``; returns the finished process.

    The Snakefile is the workdir's own when it is a checkout copy (:func:`make_checkout`), else the
    repository's. Outputs get umask 022's permissions (group-readable), as for a user.
    """
    snakefile = workdir / "Snakefile" if (workdir / "Snakefile").is_file() else ROOT / "Snakefile"
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(snakefile),
        "--directory",
        str(workdir),
        "--configfile",
        str(configfile or workdir / "config.yaml"),
        "--cores",
        "2",
        *args,
    ]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, env=env, preexec_fn=lambda: os.umask(0o022)
    )


#: What a user's checkout holds that the workflow reads (no .venv, no results).
CHECKOUT = ["Snakefile", "config.yaml", "rules", "workflow", "src", "resources", "envs", "profiles", "benchmarks/out"]


def make_checkout(dest: Path, overrides: dict[str, Any] | None = None) -> Path:
    """A copy of the checkout's workflow files in ``dest``, its config.yaml updated with ``overrides``.

    Run in it, the working directory is the checkout, as for a user: config paths stay relative.
    """
    for rel in CHECKOUT:
        src = ROOT / rel
        if src.is_dir():
            shutil.copytree(src, dest / rel, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    if overrides:
        cfg = deep_update(yaml.safe_load((dest / "config.yaml").read_text()), overrides)
        (dest / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return dest


def config_with(base: Path, dest: Path, overrides: dict[str, Any]) -> Path:
    """``base`` (a config file) updated with ``overrides``, written to ``dest``/config.yaml (paths unchanged)."""
    cfg = deep_update(yaml.safe_load(base.read_text()), overrides)
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def copy_run(run: Path, dest: Path, drop: tuple[str, ...] = ()) -> Path:
    """A copy of a finished run (mtimes and Snakemake's metadata kept), without the folders in ``drop``.

    Snakemake's own logs (.snakemake/log) stay behind: another test's dry run on ``run`` may be writing one.
    """
    shutil.copytree(run, dest, symlinks=True, ignore=_snakemake_logs)
    for rel in drop:
        shutil.rmtree(dest / rel, ignore_errors=True)
    return dest


def _snakemake_logs(folder: str, names: list[str]) -> list[str]:
    return ["log"] if Path(folder).name == ".snakemake" and "log" in names else []


def shared_run(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """``build(folder)`` once per test session, shared by the xdist workers; returns the folder.

    The first worker that asks builds it under a file lock; the others wait for it and reuse it (a
    failed build is recorded and fails them too, rather than being built again). Tests must not
    change the folder: the mutating ones work on :func:`copy_run` copies.
    """
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the session's folder, shared by the workers
    folder, built, failed = base / name, base / f"{name}.built", base / f"{name}.failed"
    with FileLock(str(base / f"{name}.lock")):
        if failed.exists():
            pytest.fail(f"the shared run {name!r} failed in another worker:\n{failed.read_text()}")
        if not built.exists():
            try:
                build(folder)
            except BaseException as exc:
                failed.write_text(f"{type(exc).__name__}: {exc}"[-6000:])
                raise
            built.touch()
    return folder


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

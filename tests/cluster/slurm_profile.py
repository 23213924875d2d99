"""The SLURM test profile: profiles/slurm/config.yaml with a test cluster's settings on top.

tests/test_slurm.py writes it to a scratch folder, so the test exercises the production profile's
groups, set-resources and localrules, and only the cluster-specific values differ:

- no account and no partition (the test cluster's default partition, `slurm-no-account`);
- `slurm-status-command: squeue` (no accounting database; slurm_up.sh sets MinJobAge = 300 s);
- `slurm-init-seconds-before-status-checks: 2` (the default 40 s makes a toy run take minutes);
- memory and runtime requests scaled down to fit a one-node cluster on a CI machine, at most
  two threads per job (and `cores`, which sizes group jobs, to match), no retries (the failure
  test wants exactly one failure).

Run `python tests/cluster/slurm_profile.py DIR` to write it by hand, e.g. to try the tiny config:
`snakemake --workflow-profile DIR --configfile ...`.
"""

from __future__ import annotations

import copy
import os
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION_PROFILE = ROOT / "profiles" / "slurm" / "config.yaml"

OVERRIDES: dict[str, Any] = {
    "jobs": 4,
    "latency-wait": 5,
    "retries": 0,
    "slurm-init-seconds-before-status-checks": 2,
    "slurm-status-command": "squeue",
    "slurm-no-account": True,
    "slurm-keep-successful-logs": True,
}
MAX_MEM_MB = 1500
MAX_RUNTIME_MIN = 10


def slurm_test_profile(production: Path = PRODUCTION_PROFILE) -> dict[str, Any]:
    """The production profile with the test cluster's settings (see the module docstring)."""
    prof = copy.deepcopy(yaml.safe_load(production.read_text()))
    prof.update(OVERRIDES)
    defaults = prof.setdefault("default-resources", {})
    defaults.pop("slurm_partition", None)
    defaults.pop("slurm_account", None)
    defaults["mem_mb"] = min(int(defaults.get("mem_mb", MAX_MEM_MB)), MAX_MEM_MB)
    defaults["runtime"] = min(int(defaults.get("runtime", MAX_RUNTIME_MIN)), MAX_RUNTIME_MIN)
    for resources in (prof.get("set-resources") or {}).values():
        for key in ("slurm_partition", "slurm_account", "gpu", "gpu_model", "gres"):
            resources.pop(key, None)
        if "mem_mb" in resources:
            resources["mem_mb"] = min(int(resources["mem_mb"]), MAX_MEM_MB)
        if "runtime" in resources:
            resources["runtime"] = min(int(resources["runtime"]), MAX_RUNTIME_MIN)
    threads = max(1, min(2, os.cpu_count() or 1))
    prof["set-threads"] = {rule: min(int(n), threads) for rule, n in (prof.get("set-threads") or {}).items()}
    prof["cores"] = min(int(prof.get("cores", threads)), threads)
    return prof


def write_test_profile(directory: Path) -> Path:
    """Write the test profile to ``directory/config.yaml``; returns the directory."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.yaml").write_text(yaml.safe_dump(slurm_test_profile(), sort_keys=False))
    return directory


if __name__ == "__main__":
    print(write_test_profile(Path(sys.argv[1])))

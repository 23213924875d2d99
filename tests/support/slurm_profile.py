"""The SLURM test profile: profiles/slurm/config.yaml with the test cluster's settings on top.

tests/cluster/test_slurm.py writes it to a scratch folder, so the test exercises the production profile's groups,
partitions (the test cluster has the same `cpu` and `gpu` partitions and one fake GPU: tests/cluster/slurm_up.sh),
requeueing, retries and the rules' own memory and wall times; only what belongs to a cluster, not to the workflow,
differs:

- no account (`slurm-no-account`: the test cluster has no accounting);
- `slurm-status-command: squeue` (no accounting database; slurm_up.sh sets MinJobAge = 300 s);
- `slurm-init-seconds-before-status-checks: 2` (the default 40 s makes a toy run take minutes);
- `cores` (the most threads of one job, which caps every rule's threads) at most the node's CPUs, so that every
  job fits on the one node; fewer jobs at once; successful jobs' SLURM logs kept.

Run `python tests/support/slurm_profile.py DIR` to write it by hand, e.g. to try the tiny config:
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
    "slurm-init-seconds-before-status-checks": 2,
    "slurm-status-command": "squeue",
    "slurm-no-account": True,
    "slurm-keep-successful-logs": True,
}


def slurm_test_profile(production: Path = PRODUCTION_PROFILE) -> dict[str, Any]:
    """The production profile with the test cluster's settings (see the module docstring)."""
    prof = copy.deepcopy(yaml.safe_load(production.read_text()))
    prof.update(OVERRIDES)
    prof.setdefault("default-resources", {}).pop("slurm_account", None)
    prof["cores"] = min(int(prof.get("cores", 1)), os.cpu_count() or 1)
    return prof


def write_test_profile(directory: Path) -> Path:
    """Write the test profile to ``directory/config.yaml``; returns the directory."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.yaml").write_text(yaml.safe_dump(slurm_test_profile(), sort_keys=False))
    return directory


if __name__ == "__main__":
    print(write_test_profile(Path(sys.argv[1])))

"""Issue #16's test loop: how long ``make test-fast`` (and, given ``--full``, ``make test``) take on this machine.

Runs the Makefile's target in a subprocess and records wall seconds, CPU seconds of the whole process tree, the
1-minute load average before and after, and pytest's summary line. On a shared machine the wall time depends on
the other load; CPU seconds / cores is the wall time on idle cores, less the time one worker waits for the other.

    .venv/bin/python benchmarks/performance/test_loop.py [--full]

Writes benchmarks/out/test_loop.json (one entry per target; a target not run keeps its last entry).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import time
from pathlib import Path

from modprefs.io import write_json

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "benchmarks" / "out" / "test_loop.json"


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_target(target: str) -> dict:
    """``make TARGET`` timed: wall and CPU seconds, load, pytest's last line, exit status."""
    load_before, cpu0, t0 = os.getloadavg()[0], children_cpu(), time.perf_counter()
    proc = subprocess.run(["make", target], cwd=ROOT, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
    summary = next((ln for ln in reversed(proc.stdout.splitlines()) if re.search(r"\d+ (passed|failed)", ln)), "")
    return {
        "exit_status": proc.returncode,
        "wall_minutes": round(wall / 60, 2),
        "cpu_minutes": round(cpu / 60, 2),
        "cpu_minutes_per_core_at_2_cores": round(cpu / 120, 2),
        "load_average_1min_before": round(load_before, 1),
        "load_average_1min_after": round(os.getloadavg()[0], 1),
        "pytest_summary": summary.strip("= "),
        "failed": [ln for ln in proc.stdout.splitlines() if ln.startswith(("FAILED", "ERROR"))],
    }


def machine() -> dict:
    """The commit measured and the CPU it ran on (times differ between machines of the same size)."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout)
    cpuinfo = Path("/proc/cpuinfo")
    models = re.findall(r"model name\s*:\s*(.+)", cpuinfo.read_text()) if cpuinfo.exists() else []
    return {"head": head, "working_tree_dirty": dirty, "cpu_model": models[0] if models else "unknown"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--full", action="store_true", help="also run `make test` (the whole suite)")
    args = ap.parse_args()
    out = json.loads(OUT.read_text()) if OUT.exists() else {}
    for target in ("test-fast", *(("test",) if args.full else ())):
        limit = 5 if target == "test-fast" else 20
        out[target] = {**run_target(target), **machine(), "cores": os.cpu_count(), "target_minutes": limit}
        print(target, out[target])
    write_json(out, OUT)


if __name__ == "__main__":
    main()

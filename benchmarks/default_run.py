"""Wall time of the whole default workflow (`snakemake --cores 2` on config.yaml) in a fresh folder.

One snakemake call for `all`, as `make run` makes it (jobs run side by side on the 2 cores), timed end to
end; then a dry run that must find nothing to do. Where the time goes comes from Snakemake's own log:
each job's start and finish timestamps (whole seconds), summed per rule ("job seconds": two jobs that ran
side by side both count, so the sum can exceed the wall time).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/default_run.py

Writes benchmarks/out/default_run.json.
"""

from __future__ import annotations

import os
import platform
import re
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from modprefs.io import write_json  # noqa: E402
from workflow_runner import run_workflow, write_config  # noqa: E402

STAMP = re.compile(r"^\[(\w{3} \w{3}\s+\d+ \d\d:\d\d:\d\d \d{4})\]$")
RULE = re.compile(r"^(?:local)?(?:check)?rule (\S+):$")
JOBID = re.compile(r"^\s+jobid: (\d+)$")
FINISHED = re.compile(r"^Finished jobid: (\d+)|^Finished job (\d+)\.")


def job_seconds_by_rule(log: str) -> dict[str, float]:
    """Seconds from each job's start to its finish, summed per rule, from Snakemake's console log."""
    now: datetime | None = None
    rule: str | None = None
    started: dict[str, tuple[str, datetime]] = {}
    totals: dict[str, float] = defaultdict(float)
    for line in log.splitlines():
        if m := STAMP.match(line):
            now = datetime.strptime(" ".join(m.group(1).split()), "%a %b %d %H:%M:%S %Y")
        elif m := RULE.match(line):
            rule = m.group(1)
        elif (m := JOBID.match(line)) and rule and now:
            started[m.group(1)] = (rule, now)
            rule = None
        elif (m := FINISHED.match(line)) and now:
            job = m.group(1) or m.group(2)
            if job in started:
                name, t0 = started.pop(job)
                totals[name] += (now - t0).total_seconds()
    return dict(sorted(totals.items(), key=lambda kv: -kv[1]))


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        write_config(workdir)
        load_before = os.getloadavg()[0]
        t0 = time.perf_counter()
        proc = run_workflow(workdir, timeout=3600)
        total = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(proc.stderr[-3000:])
        load_after = os.getloadavg()[0]
        t1 = time.perf_counter()
        dry = run_workflow(workdir, "-n", timeout=600)
        if "Nothing to be done" not in dry.stdout + dry.stderr:
            raise SystemExit("a second run still had jobs to do:\n" + dry.stdout[-2000:])
        dry_seconds = time.perf_counter() - t1
        per_rule = job_seconds_by_rule(proc.stdout + "\n" + proc.stderr)
        manifest = (workdir / "results/audio/manifest.csv").read_text().splitlines()
        n_clips = len(list((workdir / "results/audio/clips").glob("*.wav")))
        audio_s = sum(float(line.split(",")[5]) for line in manifest[1:]) if n_clips else 0.0
    out = {
        "command": "snakemake --cores 2 all (config.yaml, the embedded default), one call in a fresh folder",
        "total_seconds": round(total, 1),
        "total_minutes": round(total / 60, 2),
        "target_minutes": 15,
        "dry_run_afterwards_seconds": round(dry_seconds, 1),
        "load_average_1min_before": round(load_before, 1),
        "load_average_1min_after": round(load_after, 1),
        "job_seconds_by_rule": {k: round(v) for k, v in per_rule.items()},
        "job_seconds_total": round(sum(per_rule.values())),
        "n_clips": n_clips,
        "audio_seconds_rendered": round(audio_s, 1),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
    }
    write_json(out, ROOT / "benchmarks/out/default_run.json")
    print(out)


if __name__ == "__main__":
    main()

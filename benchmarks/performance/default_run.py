"""Wall time of the whole default workflow (`snakemake --cores 2` on config.yaml) in a fresh folder.

One snakemake call for `all`, as `make run` makes it (jobs run side by side on the 2 cores), timed end to
end; then a dry run that must find nothing to do. Where the time goes comes from Snakemake's own log:
each job's start and finish timestamps (whole seconds), summed per rule ("job seconds": two jobs that ran
side by side both count, so the sum can exceed the wall time).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/performance/default_run.py

Writes benchmarks/out/default_run.json. ``--compare BASE_REV [--head REV] [--repeats 2]`` times two revisions
alternating on the same machine (each run in a fresh checkout of its revision, with its own config.yaml; head
defaults to the working tree), reports the medians and their ratio, and checks that the statistics tables are
byte-identical and the judge ratings and reward evaluations equal: benchmarks/out/default_run_compare.json.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from modprefs.io import write_json  # noqa: E402
from support.workflow_runner import make_checkout, run_workflow, write_config  # noqa: E402

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


def checkout_at(rev: str | None, dest: Path) -> Path:
    """A checkout to run in: ``git archive`` of ``rev``, or the working tree's workflow files (``rev`` None)."""
    if rev is None:
        return make_checkout(dest)
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def timed_run(checkout: Path) -> tuple[float, dict[str, float]]:
    """Wall seconds of ``snakemake --cores 2`` (all) in a fresh checkout, and the job seconds per rule."""
    t0 = time.perf_counter()
    proc = run_workflow(checkout, timeout=3600)
    total = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{checkout}: " + proc.stderr[-3000:])
    return total, job_seconds_by_rule(proc.stdout + "\n" + proc.stderr)


def same_outputs(a: Path, b: Path) -> dict[str, list[str]]:
    """Which statistics tables, judge ratings and reward metrics differ between two finished runs."""
    import pandas as pd

    differ: dict[str, list[str]] = {"stats_tables": [], "judges": [], "reward": []}
    for path in sorted((a / "results/stats/tables").glob("*.csv")):
        other = b / path.relative_to(a)
        if not other.is_file() or other.read_bytes() != path.read_bytes():
            differ["stats_tables"].append(path.name)
    judge_a, judge_b = a / "results/judges/ratings.csv", b / "results/judges/ratings.csv"
    if judge_a.is_file():
        keep = ["clip_id", "modality", "kind", "rating"]
        ra, rb = (pd.read_csv(p)[keep].sort_values(keep[:3]).reset_index(drop=True) for p in (judge_a, judge_b))
        if not ra.equals(rb):
            differ["judges"].append("ratings.csv (clip_id, modality, kind, rating)")
    for path in sorted((a / "results/reward").glob("*/eval/*.csv")):
        other = b / path.relative_to(a)
        if not other.is_file() or other.read_bytes() != path.read_bytes():
            differ["reward"].append(str(path.relative_to(a / "results/reward")))
    return differ


def compare(base: str, head: str | None, repeats: int) -> None:
    """Runs of ``base`` and ``head`` alternating (base first), ``repeats`` each, on the same machine; medians,
    their ratio, and whether the outputs are identical. Writes benchmarks/out/default_run_compare.json."""
    import statistics

    runs: dict[str, list[float]] = {"base": [], "head": []}
    rules: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        kept: dict[str, Path] = {}
        for i in range(repeats):
            for name, rev in (("base", base), ("head", head)):
                folder = checkout_at(rev, Path(tmp) / f"{name}{i}")
                total, per_rule = timed_run(folder)
                runs[name].append(round(total, 1))
                rules.setdefault(name, per_rule)
                print(f"{name} run {i + 1}: {total:.1f} s", flush=True)
                if i == 0:
                    kept[name] = folder
                else:
                    shutil.rmtree(folder, ignore_errors=True)
        differ = same_outputs(kept["base"], kept["head"])
    med = {k: statistics.median(v) for k, v in runs.items()}
    out = {
        "command": "snakemake --cores 2 all on each checkout's own config.yaml, fresh folder per run, alternating",
        "base": base,
        "head": head or "working tree",
        "repeats": repeats,
        "seconds": runs,
        "median_seconds": med,
        "ratio_head_to_base": round(med["head"] / med["base"], 3),
        "job_seconds_by_rule_first_run": {k: {r: round(s) for r, s in v.items()} for k, v in rules.items()},
        "outputs_that_differ": differ,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "load_average_1min_after": round(os.getloadavg()[0], 1),
    }
    write_json(out, ROOT / "benchmarks/out/default_run_compare.json")
    print(out)


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--compare", metavar="BASE_REV", help="time BASE_REV against --head, alternating")
    ap.add_argument("--head", metavar="REV", default=None, help="the newer revision (default: the working tree)")
    ap.add_argument("--repeats", type=int, default=2, help="runs of each (default 2)")
    args = ap.parse_args()
    if args.compare:
        compare(args.compare, args.head, args.repeats)
        return
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

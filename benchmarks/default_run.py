"""Wall time of the whole default workflow (`snakemake --cores 2` on config.yaml) in a fresh folder.

Writes benchmarks/out/default_run.json: total seconds and the seconds of each stage, timed by
running the workflow's targets stage by stage (each a separate snakemake call), then the rest of
`all`, then a dry run that must find nothing to do.
"""

from __future__ import annotations

import json
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from workflow_runner import run_workflow, write_config  # noqa: E402

STAGES = [
    ("data+sampling", "results/sampling/prompts.csv"),
    ("speech", "results/audio/manifest.csv"),
    ("study", "results/study/assignments.csv"),
    ("ratings", "results/ratings/ratings.csv"),
    ("judges", "results/judges/ratings.csv"),
    ("icc table", "results/stats/tables/icc.csv"),
    ("reward models", "results/reward/summary/runs.csv"),
]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        write_config(workdir)
        stages = {}
        t_all = time.perf_counter()
        for name, target in STAGES:
            t0 = time.perf_counter()
            proc = run_workflow(workdir, target, timeout=1800)
            if proc.returncode != 0:
                raise SystemExit(proc.stderr[-3000:])
            stages[name] = round(time.perf_counter() - t0, 2)
        t0 = time.perf_counter()
        proc = run_workflow(workdir, timeout=1200)  # the rest of `all`: other engines, statistics, report
        if proc.returncode != 0:
            raise SystemExit(proc.stderr[-3000:])
        stages["rest of all: other engines, other statistics, report"] = round(time.perf_counter() - t0, 2)
        t0 = time.perf_counter()
        proc = run_workflow(workdir, "-n", timeout=600)
        if "Nothing to be done" not in proc.stdout + proc.stderr:
            raise SystemExit("a second run still had jobs to do:\n" + proc.stdout[-2000:])
        stages["dry run afterwards (nothing to do)"] = round(time.perf_counter() - t0, 2)
        total = time.perf_counter() - t_all
        n_clips = len(list((workdir / "results/audio/clips").glob("*.wav")))
        audio_s = (
            sum(
                float(line.split(",")[5])
                for line in (workdir / "results/audio/manifest.csv").read_text().splitlines()[1:]
            )
            if n_clips
            else 0.0
        )
    out = {
        "command": "snakemake --cores 2 (config.yaml, the embedded default)",
        "total_seconds": round(total, 1),
        "stage_seconds": stages,
        "n_clips": n_clips,
        "audio_seconds_rendered": round(audio_s, 1),
        "machine": {"cpus": 2, "python": platform.python_version(), "platform": platform.platform()},
        "note": "each stage is a separate snakemake call, so the sum includes ~2-3 s of start-up per stage",
    }
    target = ROOT / "benchmarks/out/default_run.json"
    target.parent.mkdir(exist_ok=True)
    target.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

"""Wall time of the whole default workflow (`snakemake --cores 2` on config.yaml) in a fresh folder.

Writes benchmarks/out/default_run.json: total seconds, per-rule job counts and the summed job
seconds per rule (from Snakemake's per-job `benchmark`-free timing: each rule's log mtime minus
its start line is not reliable, so we time phases by running the targets stage by stage).
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
    ("stats", "results/stats/tables/icc.csv"),
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
        proc = run_workflow(workdir, timeout=600)  # `all`: must have nothing left to do
        stages["all (nothing left)"] = round(time.perf_counter() - t0, 2)
        total = time.perf_counter() - t_all
        n_clips = len(list((workdir / "results/audio/clips").glob("*.wav")))
        audio_s = sum(float(line.split(",")[5]) for line in
                      (workdir / "results/audio/manifest.csv").read_text().splitlines()[1:]) if n_clips else 0.0
    out = {"command": "snakemake --cores 2 (config.yaml, the embedded default)", "total_seconds": round(total, 1),
           "stage_seconds": stages, "n_clips": n_clips, "audio_seconds_rendered": round(audio_s, 1),
           "machine": {"cpus": 2, "python": platform.python_version(), "platform": platform.platform()},
           "note": "each stage is a separate snakemake call, so the sum includes ~2-3 s of start-up per stage"}
    target = ROOT / "benchmarks/out/default_run.json"
    target.parent.mkdir(exist_ok=True)
    target.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

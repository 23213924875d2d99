"""What the start-of-run checks and the clip fingerprints cost at PRISM scale.

Every ``snakemake`` call (a dry run included, and every SLURM job, which parses the Snakefile again)
now checks the whole config before the DAG is built (modprefs.config_checks.check_config): that
includes reading the data JSONL row by row and building its interactions to compare the eligible
conversations with ``sampling.n_prompts``. Once clips exist, each ``audio_qc`` / ``engine_manifest``
job's params fingerprint its WAVs (modprefs.speech.render.clip_fingerprint: size + first 64 KB).

Measured here, medians of ``--repeat`` runs, in one process:

1. ``check_config`` on the PRISM-scale synthetic data (benchmarks/tools/make_prism_scale.py: 3,113 unguided
   conversations; ``n_prompts`` 3,113), and its data part alone;
2. ``clip_fingerprint`` over ``--clips`` synthetic 20 s WAVs (24 kHz, 16-bit), per clip and
   extrapolated to PRISM scale's 6,228 clips (files in the page cache, as on a rerun).

3. with ``--baseline REV``: ``snakemake -n`` of the whole PRISM-scale workflow (as benchmarks/performance/dag_scale.py)
   with this checkout and with git revision REV (before the checks), interleaved, ``--dry-runs`` each.

Writes benchmarks/out/dag_checks.json.

    python benchmarks/performance/dag_checks.py [--repeat 5] [--clips 500] [--baseline 1efca40 --dry-runs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import soundfile as sf
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks" / "tools"))

import make_prism_scale  # noqa: E402

from modprefs.config_checks import _data_problems, check_config  # noqa: E402
from modprefs.speech.render import clip_fingerprint  # noqa: E402

OUT = ROOT / "benchmarks" / "out" / "dag_checks.json"
PRISM_CLIPS = 6228


def _median_seconds(fn, repeat: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), [round(t, 4) for t in times]


def _dry_run_seconds(checkout: Path, work: Path) -> float:
    """One ``snakemake -n`` of the PRISM-scale config in ``work`` with ``checkout``'s Snakefile."""
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(checkout / "Snakefile"),
        "--directory",
        str(work),
        "--configfile",
        str(work / "config.yaml"),
        "-n",
        "--cores",
        "2",
        "--quiet",
        "rules",
    ]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(checkout / "src")}
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"snakemake -n failed with {checkout}:\n{proc.stderr[-3000:]}")
    return seconds


def compare_dry_runs(baseline: str, runs: int, data: Path, tmp: Path) -> dict:
    """Interleaved dry runs at PRISM scale: this checkout vs ``git archive baseline``."""
    sys.path.insert(0, str(ROOT / "tests"))
    from support.workflow_runner import write_config

    old = tmp / "baseline"
    old.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", baseline], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
    work = tmp / "work"
    write_config(
        work,
        {
            "data": {"source": str(data)},
            "sampling": {
                "n_prompts": make_prism_scale.N_CONVERSATIONS,
                "long_fraction": make_prism_scale.long_fraction_for(),
            },
        },
    )
    times: dict[str, list[float]] = {"this checkout": [], f"baseline {baseline}": []}
    for _ in range(runs):
        times["this checkout"].append(round(_dry_run_seconds(ROOT, work), 2))
        times[f"baseline {baseline}"].append(round(_dry_run_seconds(old, work), 2))
    medians = {k: statistics.median(v) for k, v in times.items()}
    return {
        "runs": times,
        "medians": medians,
        "ratio_this_over_baseline": round(medians["this checkout"] / medians[f"baseline {baseline}"], 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--clips", type=int, default=500)
    ap.add_argument("--baseline", help="git revision to compare whole dry runs with (e.g. 1efca40)")
    ap.add_argument("--dry-runs", type=int, default=2)
    args = ap.parse_args()
    comparison = None

    with tempfile.TemporaryDirectory(prefix="dag_checks_") as tmp:
        tmp = Path(tmp)
        data = make_prism_scale.write(tmp / "prism_scale.jsonl")
        cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
        cfg["data"]["source"] = str(data)
        cfg["sampling"].update(
            n_prompts=make_prism_scale.N_CONVERSATIONS, long_fraction=make_prism_scale.long_fraction_for()
        )
        check_config(cfg, ROOT)  # warm imports and caches
        whole, whole_runs = _median_seconds(lambda: check_config(cfg, ROOT), args.repeat)
        data_only, data_runs = _median_seconds(lambda: _data_problems(cfg, data), args.repeat)

        clip_dir = tmp / "clips"
        clip_dir.mkdir()
        audio = (np.random.default_rng(0).standard_normal(20 * 24000) * 0.1).astype(np.float32)
        paths = []
        for i in range(args.clips):
            path = clip_dir / f"c{i:05d}.wav"
            sf.write(path, audio, 24000, subtype="PCM_16")
            paths.append(str(path))
        manifest = tmp / "manifest.csv"
        pd.DataFrame({"path": paths}).to_csv(manifest, index=False)
        clip_fingerprint(manifest)  # page cache, as on a rerun
        fp, fp_runs = _median_seconds(lambda: clip_fingerprint(manifest), args.repeat)
        if args.baseline:
            comparison = compare_dry_runs(args.baseline, args.dry_runs, data, tmp)

    result = {
        "what": "start-of-run config checks and clip fingerprints at PRISM scale",
        "machine": {
            "python": platform.python_version(),
            "cpus_visible": os.cpu_count(),
            "load_average_1min": round(os.getloadavg()[0], 2),
        },
        "check_config_seconds": {
            "median": round(whole, 3),
            "runs": whole_runs,
            "data_part_median": round(data_only, 3),
            "data_part_runs": data_runs,
            "conversations": make_prism_scale.N_CONVERSATIONS,
        },
        "clip_fingerprint": {
            "clips": args.clips,
            "wav_seconds_each": 20,
            "median_seconds": round(fp, 4),
            "runs": fp_runs,
            "per_clip_ms": round(1000 * fp / args.clips, 3),
            "extrapolated_prism_scale_seconds": round(fp / args.clips * PRISM_CLIPS, 3),
        },
        "dry_run_prism_scale": comparison or "not measured (--baseline)",
        "notes": [
            "a dry run of a fresh folder fingerprints nothing (no manifests yet); once rendered, a DAG "
            "build fingerprints every clip once per reading rule: the study clips for audio_qc and each "
            "other engine's clips for its engine_manifest (3 x 6,228 at PRISM scale with two engines)",
            "the checks run in the main Snakemake process only, not again inside each SLURM job",
        ],
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

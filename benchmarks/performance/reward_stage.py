"""Wall time of the default run's reward stage, before and after a change, side by side in one run.

The reward stage is what `benchmarks/performance/default_run.py` times as "reward models": `snakemake --cores 2
results/reward/summary/runs.csv` once everything upstream exists (pairs, four training runs, four
evaluations, the summary). Here:

1. the upstream artifacts (clips, ratings, judges, other engines) are made once, with the current code, in a
   scratch folder (or ``--upstream DIR`` reuses one);
2. the "before" code is ``git archive <ref>`` (default: the merge base of HEAD and ``main``), the "after"
   code is this working tree; each runs with the upstream's config and its own ``reward:`` section (the
   "before" code has none: its built-in defaults), checked by a dry run to plan reward jobs only;
3. for each repeat, before and after alternate: the upstream folder is copied (mtimes and Snakemake's
   metadata kept, so nothing upstream reruns: checked, the run is rejected otherwise) and the stage runs
   with that code's own Snakefile and default config.yaml;
4. the medians, their ratio, each run's training time (metrics.json) and the pair counts are written.

    .venv/bin/python benchmarks/performance/reward_stage.py [--before REF] [--repeats 2] [--upstream DIR]

Writes benchmarks/out/reward_stage.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
OUT = ROOT / "benchmarks" / "out" / "reward_stage.json"
TARGET = "results/reward/summary/runs.csv"
UPSTREAM = [
    "results/ratings/ratings.csv",
    "results/judges/ratings.csv",
    "results/study/stimuli.csv",
    "results/audio/manifest.csv",
    "results/audio/engines/piper/manifest.csv",
    "results/audio/engines/espeak-ng/manifest.csv",
    "results/data/conversations.parquet",
]


def snakemake(code: Path, workdir: Path, *targets: str, timeout: float = 3600) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(code / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(workdir / "config.yaml"),
        "--cores",
        "2",
        *targets,
    ]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(code / "src")}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=workdir)


def write_config(code: Path, workdir: Path) -> None:
    """The code's own config.yaml with repository paths made absolute (as tests/support/workflow_runner.py does)."""
    import yaml

    cfg = yaml.safe_load((code / "config.yaml").read_text())
    for keys in (
        ("data", "source"),
        ("attention_check",),
        ("sampling", "screening", "harmful_terms"),
        ("stats", "modality_terms"),
    ):
        node = cfg
        for k in keys[:-1]:
            node = node[k]
        if node[keys[-1]] != "prism" and not Path(node[keys[-1]]).is_absolute():
            node[keys[-1]] = str(code / node[keys[-1]])
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))


def stage_config(code: Path, upstream: Path, workdir: Path) -> None:
    """The upstream's config (same paths and values, so nothing upstream reruns) with the ``reward:`` section of
    ``code``'s own config.yaml (none for a version without one: its built-in defaults)."""
    import yaml

    cfg = yaml.safe_load((upstream / "config.yaml").read_text())
    own = yaml.safe_load((code / "config.yaml").read_text())
    cfg.pop("reward", None)
    if "reward" in own:
        cfg["reward"] = own["reward"]
    for section, values in cfg.items():  # keys newer than ``code`` (e.g. stats.n_boot_threshold): its schema
        if isinstance(values, dict) and isinstance(own.get(section), dict):  # would refuse them; they do
            for key in [k for k in values if k not in own[section]]:  # not reach the reward stage
                values.pop(key)
    (workdir / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))


def jobs_run(proc: subprocess.CompletedProcess) -> dict[str, int]:
    text = proc.stdout + proc.stderr
    if "Job stats:" not in text:
        return {}
    out = {}
    for line in text.split("Job stats:", 1)[1].splitlines()[3:]:
        m = re.match(r"^(\S+)\s+(\d+)\s*$", line)
        if not m:
            if not line.strip() and out:
                break
            continue
        if m.group(1) != "total":
            out[m.group(1)] = int(m.group(2))
    return out


def one_stage(code: Path, upstream: Path, scratch: Path, label: str) -> dict:
    workdir = scratch / label
    if workdir.exists():
        shutil.rmtree(workdir)
    shutil.copytree(upstream, workdir, symlinks=True, copy_function=shutil.copy2)
    stage_config(code, upstream, workdir)
    dry = snakemake(code, workdir, TARGET, "-n")
    foreign = sorted(r for r in jobs_run(dry) if not r.startswith("reward_"))
    if dry.returncode != 0 or foreign:
        raise SystemExit(f"{label}: upstream rules would rerun ({foreign}) or the plan failed:\n{dry.stderr[-3000:]}")
    shutil.rmtree(workdir / "results" / "reward", ignore_errors=True)
    t0 = time.perf_counter()
    proc = snakemake(code, workdir, TARGET)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{label}: the reward stage failed:\n{proc.stderr[-4000:]}")
    jobs = jobs_run(proc)
    foreign = sorted(r for r in jobs if not r.startswith("reward_"))
    if foreign:
        raise SystemExit(f"{label}: upstream rules reran ({foreign}); the timing would not be the reward stage's")
    runs = {}
    for metrics in sorted((workdir / "results" / "reward").glob("*/metrics.json")):
        m = json.loads(metrics.read_text())
        runs[metrics.parent.name] = {
            "train_s": round(m["timing"]["train_s"], 2),
            "featurize_s": round(m["timing"]["featurize_s"], 2),
            "n_pairs": m["n_pairs"],
            "n_train": m["n_train"],
            "val_accuracy": m["val"]["accuracy"] if m.get("val") else None,
        }
    pairs = json.loads((workdir / "results/reward/pairs/summary.json").read_text())
    counts = {k: (v.get("pairs") if isinstance(v, dict) else None) for k, v in pairs.items() if k != "skipped"}
    types = workdir / "results/reward/summary/pair_types.csv"
    return {
        "seconds": round(seconds, 2),
        "jobs": jobs,
        "runs": runs,
        "pair_counts": counts,
        "pair_types_csv": types.read_text() if types.is_file() else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", default=None, help="git ref of the 'before' code (default: merge base with main)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--upstream", type=Path, default=None, help="a folder whose results/ hold the upstream artifacts")
    args = ap.parse_args()
    ref = (
        args.before
        or subprocess.run(
            ["git", "merge-base", "HEAD", "main"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    sha = subprocess.run(["git", "rev-parse", ref], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout)
    scratch = Path(tempfile.mkdtemp(prefix="reward_stage_"))
    before = scratch / "before_code"
    before.mkdir()
    archive = subprocess.run(["git", "archive", sha], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
    upstream = args.upstream
    if upstream is None:
        upstream = scratch / "upstream"
        write_config(ROOT, upstream)
        proc = snakemake(ROOT, upstream, *UPSTREAM)
        if proc.returncode != 0:
            raise SystemExit(proc.stderr[-4000:])
    load_before = os.getloadavg()
    results: dict[str, list[dict]] = {"before": [], "after": []}
    for r in range(args.repeats):
        order = (("before", before), ("after", ROOT))
        for label, code in order if r % 2 == 0 else order[::-1]:
            res = one_stage(code, upstream, scratch, f"{label}{r}")
            results[label].append(res)
            print(label, r, res["seconds"], {k: v["train_s"] for k, v in res["runs"].items()}, file=sys.stderr)
    med = {k: statistics.median(x["seconds"] for x in v) for k, v in results.items()}
    out = {
        "what": "default run's reward stage (snakemake --cores 2 results/reward/summary/runs.csv, upstream done), "
        "before vs after, alternating in one run",
        "before_ref": sha,
        "after": {"head": head, "working_tree_dirty": dirty},
        "repeats": args.repeats,
        "median_seconds": {k: round(v, 2) for k, v in med.items()},
        "ratio_after_over_before": round(med["after"] / med["before"], 3),
        "runs": results,
        "load_average_1_5_15": {
            "before": [round(x, 2) for x in load_before],
            "after": [round(x, 2) for x in os.getloadavg()],
        },
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "note": "both versions read the same upstream artifacts; each repeat copies them afresh. On a shared "
        "machine absolute seconds move with the load (recorded); the ratio is what the two versions "
        "were measured side by side.",
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({k: out[k] for k in ("median_seconds", "ratio_after_over_before")}, indent=2))
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()

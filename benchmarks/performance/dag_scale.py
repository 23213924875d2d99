"""How big is the workflow at PRISM scale, and how long does Snakemake take to plan it?

Generates the synthetic PRISM-scale input (benchmarks/tools/make_prism_scale.py: 3,113 unguided
conversations), writes a config that draws all of them (``sampling.n_prompts: 3113`` -> 6,226
study clips + 2 attention-check clips; ``long_fraction`` = the long stratum's share 312/3113, see
make_prism_scale.py for why the paper's 0.25 cannot be met when every conversation is drawn), and
times ``snakemake -n`` in a scratch folder:

1. the local executor (``--cores 2``): jobs per rule and in total;
2. with ``--workflow-profile profiles/slurm`` (needs snakemake-executor-plugin-slurm): how many
   SLURM jobs the profile's groups make of them (group jobs + ungrouped non-local jobs).

Target: the plan in <= 20 s on 2 cores, and no rule with one job per clip. Pinned to 2 CPUs with
``taskset`` when available. Writes benchmarks/out/dag_scale.json.

    python benchmarks/performance/dag_scale.py [--repeat 3] [--run-sampling] [--paper-sbatch]
    python benchmarks/performance/dag_scale.py --paper-sbatch-only
        # only config/paper.yaml's sbatch calls, into the same file

``--paper-sbatch-only`` re-records the ``paper_sbatch`` section (what docs/cluster.md's table quotes) after a change of
the wall-time model, keeping the PRISM-scale sections of the last full run (``paper_sbatch.recorded_apart`` says so).

``--run-sampling`` also runs the ``conversations`` and ``sample_prompts`` jobs at scale (local
executor) to show that the quotas fit: every one of the 3,113 conversations is drawn.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks" / "tools"))

import make_prism_scale  # noqa: E402

from support.workflow_runner import planned_jobs, write_config  # noqa: E402

OUT = ROOT / "benchmarks" / "out" / "dag_scale.json"
#: why the PRISM-scale dry run with the SLURM profile does not finish (a profiled run at 68 render shards)
SLOW_GROUP_CHECK = (
    "Snakemake's group check (snakemake.dag.DAG._check_groups) walks every group member's upstream jobs once per "
    "member of the group: with group-components, a group of n members whose upstream is the whole speech stage (the "
    "engines group: 1,780 engine shards at PRISM scale, each after every QC shard) costs ~n^2 x upstream steps. At 68 "
    "render shards (paper config, shard_size 3) it took 85 of 162 s; at PRISM scale it does not finish"
)
TARGET_S = 20.0


def _cmd(workdir: Path, *args: str) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(ROOT / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(workdir / "config.yaml"),
        *args,
    ]
    if shutil.which("taskset") and (os.cpu_count() or 1) > 2:
        cmd = ["taskset", "-c", "0,1", *cmd]
    return cmd


def _timed(cmd: list[str], timeout: float = 600) -> tuple[float, subprocess.CompletedProcess]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    return time.perf_counter() - start, proc


def _local_rules(api_judges: bool = False) -> set[str]:
    """The workflow's localrules (rules/*.smk); judge_modality is one only with API judges (rules/judges.smk)."""
    names: set[str] = set()
    for smk in (ROOT / "rules").glob("*.smk"):
        # top-level and conditional (indented) blocks; a member may carry a comment
        text = smk.read_text()
        for block in re.findall(r"^[ \t]*localrules:[ \t]*\n((?:[ \t]+\w+,?[ \t]*(?:#.*)?\n)+)", text, flags=re.M):
            names.update(re.findall(r"^[ \t]+(\w+)", block, flags=re.M))
    if not api_judges:
        names.discard("judge_modality")
    return names | {"all"}


def _slurm_submissions(text: str, local: set[str]) -> dict[str, int]:
    """SLURM jobs in a dry run's job list: group jobs by group, plus ungrouped non-local jobs by rule."""
    counts: dict[str, int] = {}
    for line in text.splitlines():
        m = re.search(r"\] Group job (\S+) \(", line)
        if m:
            counts[f"group {m.group(1)}"] = counts.get(f"group {m.group(1)}", 0) + 1
            continue
        m = re.match(r"^(?:local)?rule (\w+):$", line)  # unindented = not inside a group
        if m and m.group(1) not in local:
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts


def _paper_sbatch(base: Path) -> dict:
    """config/paper.yaml's sbatch calls on the fake SLURM (tests/support/paper_capture.py), summarized."""
    sys.path.insert(0, str(ROOT / "tests" / "cluster"))
    from support import paper_capture  # noqa: PLC0415

    base.mkdir(parents=True)
    start = time.perf_counter()
    subs, text = paper_capture.capture(base)
    summary = paper_capture.summarize(subs, text)
    summary["seconds"] = round(time.perf_counter() - start, 1)
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="dry runs to time (the median is reported)")
    ap.add_argument("--run-sampling", action="store_true", help="also run conversations + sample_prompts")
    ap.add_argument(
        "--slurm-timeout", type=float, default=300, help="seconds for the dry run with the SLURM profile (default 300)"
    )
    ap.add_argument(
        "--paper-sbatch",
        action="store_true",
        help="also run config/paper.yaml's DAG on a fake SLURM, sbatch calls recorded (tests/support/paper_capture.py)",
    )
    ap.add_argument(
        "--paper-sbatch-only",
        action="store_true",
        help="only re-record the paper_sbatch section of benchmarks/out/dag_scale.json (the rest is kept)",
    )
    args = ap.parse_args()

    if args.paper_sbatch_only:
        result = json.loads(OUT.read_text())
        with tempfile.TemporaryDirectory(prefix="dag_scale_") as tmp:
            result["paper_sbatch"] = _paper_sbatch(Path(tmp) / "paper")
        result["paper_sbatch"]["recorded_apart"] = (
            f"--paper-sbatch-only on {time.strftime('%Y-%m-%d')}; the PRISM-scale sections are the last full run's"
        )
        OUT.write_text(json.dumps(result, indent=2) + "\n")
        print(json.dumps(result["paper_sbatch"], indent=2))
        return

    with tempfile.TemporaryDirectory(prefix="dag_scale_") as tmp:
        work = Path(tmp) / "work"
        data = make_prism_scale.write(Path(tmp) / "prism_scale.jsonl")
        n_prompts = make_prism_scale.N_CONVERSATIONS
        long_fraction = make_prism_scale.long_fraction_for()
        cfg_path = write_config(
            work, {"data": {"source": str(data)}, "sampling": {"n_prompts": n_prompts, "long_fraction": long_fraction}}
        )
        cfg = yaml.safe_load(cfg_path.read_text())

        times, proc = [], None
        for _ in range(args.repeat):
            seconds, proc = _timed(_cmd(work, "-n", "--cores", "2", "--quiet", "rules"))
            if proc.returncode != 0:
                raise SystemExit(f"snakemake -n failed:\n{proc.stderr[-4000:]}")
            times.append(seconds)
        jobs = planned_jobs(proc)
        n_clips = 2 * n_prompts + 2
        result = {
            "what": "snakemake -n at PRISM scale (synthetic 3,113 unguided conversations)",
            "machine": {
                "python": platform.python_version(),
                "cpus_visible": os.cpu_count(),
                "pinned_to_2_cpus": bool(shutil.which("taskset") and (os.cpu_count() or 1) > 2),
            },
            "config": {
                "n_prompts": n_prompts,
                "long_fraction": long_fraction,
                "long_percentile": cfg["sampling"]["long_percentile"],
                "shard_size": cfg["tts"]["shard_size"],
                "raters_per_condition": cfg["study"]["raters_per_condition"],
                "trials_per_participant": cfg["study"]["trials_per_participant"],
            },
            "clips": n_clips,
            "dry_run_seconds": {
                "runs": [round(t, 2) for t in times],
                "median": round(sorted(times)[len(times) // 2], 2),
                "target": TARGET_S,
            },
            "jobs_per_rule": jobs,
            "jobs_total": sum(jobs.values()),
            "max_jobs_one_rule": max(jobs.values()),
            "no_rule_with_one_job_per_clip": max(jobs.values()) < n_clips,
            "notes": [
                "long_fraction = the long stratum's share (312/3113): drawing all 3,113 conversations leaves no "
                "candidates for replacement, so each stratum's quota must equal its pool; the generator makes "
                "exactly 312 long-gap pairs (a 10 % tail above the 90th percentile). The paper's 0.25 would ask "
                "for 778 long-gap prompts from 312 and stop with a SamplingError.",
                "render_shard: tts.shard_size 7 clips per job (890 jobs for 6,228 clips); the SLURM profile packs "
                "10 shards per SLURM job (group-components), statistics rules are localrules.",
            ],
        }

        if importlib.util.find_spec("snakemake_executor_plugin_slurm") is not None:
            profile = ROOT / "profiles" / "slurm"
            try:
                seconds, sproc = _timed(
                    _cmd(work, "-n", "--workflow-profile", str(profile)), timeout=args.slurm_timeout
                )
            except subprocess.TimeoutExpired:
                seconds, sproc = args.slurm_timeout, None
            if sproc is None:
                result["slurm_profile"] = {"timed_out_s": args.slurm_timeout, "why": SLOW_GROUP_CHECK}
            elif sproc.returncode == 0:
                subs = _slurm_submissions(sproc.stdout + sproc.stderr, _local_rules())
                result["slurm_profile"] = {
                    "dry_run_seconds": round(seconds, 2),
                    "slurm_jobs": subs,
                    "slurm_jobs_total": sum(subs.values()),
                    "local_jobs": {r: n for r, n in jobs.items() if r in _local_rules()},
                }
            else:
                result["slurm_profile"] = {"error": (sproc.stdout + sproc.stderr)[-1500:]}
        else:
            result["slurm_profile"] = {"skipped": "snakemake-executor-plugin-slurm not installed"}

        if args.run_sampling:
            seconds, rproc = _timed(_cmd(work, "--cores", "2", "results/sampling/prompts.csv"), timeout=1800)
            entry: dict = {"seconds": round(seconds, 1), "returncode": rproc.returncode}
            if rproc.returncode == 0:
                import pandas as pd

                prompts = pd.read_csv(work / "results/sampling/prompts.csv")
                removals = pd.read_csv(work / "results/sampling/removals.csv")
                entry.update(
                    {
                        "prompts": len(prompts),
                        "by_stratum": prompts["stratum"].value_counts().to_dict(),
                        "removed": len(removals),
                    }
                )
            else:
                entry["error"] = rproc.stderr[-1500:]
            result["sampling_at_scale"] = entry

        if args.paper_sbatch:
            result["paper_sbatch"] = _paper_sbatch(Path(tmp) / "paper")

    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

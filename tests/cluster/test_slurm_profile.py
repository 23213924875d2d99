"""The production SLURM profile on the paper-size DAG: what each ``sbatch`` call asks for (no cluster needed).

tests/support/paper_capture.py runs config/paper.yaml (100 prompts from a local JSONL; kokoro on a GPU, QC with
Whisper and DNSMOS) through ``--workflow-profile profiles/slurm`` with the real executor plugin against a fake
``sbatch`` that records every call (tests/support/fake_slurm.py). Checked on the recorded calls:

- every job that asks for a GPU is on the GPU partition, every other job on the CPU partition;
- no group job asks for more wall time than its shards' measured cost plus the margin (modprefs.cluster), computed
  here from the shards themselves (their texts for rendering, their audio for QC);
- statistics, the audio review, the final draw and the API judges are local rules (never submitted).

docs/cluster.md quotes benchmarks/out/dag_scale.json (``paper_sbatch``, ``slurm_profile``): its numbers are compared
with that file here too.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from modprefs import cluster  # noqa: E402
from modprefs.speech.clips import read_study_clips, shard_bounds  # noqa: E402
from modprefs.workflow_log import parse_origin  # noqa: E402
from support import (
    fake_slurm,  # noqa: E402
    paper_capture,  # noqa: E402
)
from support.benchmarks import bench_module
from support.workflow_runner import ROOT

dag_scale = bench_module("dag_scale")
DAG_SCALE = ROOT / "benchmarks" / "out" / "dag_scale.json"
CLUSTER_DOC = ROOT / "docs" / "cluster.md"


@pytest.fixture(scope="module")
def paper_run(tmp_path_factory):
    """The paper-size run on the fake SLURM: (workdir, its config, the summarized submissions).

    Runs only with ``MODPREFS_PAPER_SBATCH=1``;
    ``MODPREFS_PAPER_CAPTURE=DIR`` checks the finished capture in DIR (a ``capture`` base folder, e.g. an earlier
    session's) instead of running one (~20 min on 2 busy cores)."""
    if not (os.environ.get("MODPREFS_PAPER_CAPTURE") or os.environ.get("MODPREFS_PAPER_SBATCH")):
        # ~20 min on one of CI's two workers put `make test` past CI's limit: run on demand, like the benchmark
        pytest.skip(
            "the paper-size sbatch capture runs with MODPREFS_PAPER_SBATCH=1 (~20 min) or "
            "MODPREFS_PAPER_CAPTURE=DIR; `python benchmarks/performance/dag_scale.py --paper-sbatch` records the same"
        )
    if os.environ.get("MODPREFS_PAPER_CAPTURE"):
        base = Path(os.environ["MODPREFS_PAPER_CAPTURE"])
        subs, text = fake_slurm.submissions(base / "slurm"), (base / "snakemake.out").read_text()
    else:
        base = tmp_path_factory.mktemp("paper_sbatch")
        subs, text = paper_capture.capture(base)
    work = base / "work"
    return work, yaml.safe_load((work / "config.yaml").read_text()), paper_capture.summarize(subs, text)


def _render_minutes(work: Path, cfg: dict) -> list[int]:
    """Each round-0 render shard's runtime from its texts at the measured kokoro speed (the bound of a GPU shard)."""
    clips = read_study_clips(
        work / "results/sampling/prompts.csv", work / "results/data/conversations.parquet", cfg["attention_check"]
    )
    chars = clips["text"].fillna("").astype(str).str.len().tolist()
    bounds = shard_bounds(clips, cfg["tts"]["shard_size"])
    cost = cluster.KOKORO_GPU_BOUND
    return [cluster.minutes(cost.seconds(chars[a:b])) for a, b in zip(bounds, bounds[1:])]


def _qc_minutes(work: Path) -> list[int]:
    """Each round-0 QC shard's runtime from its rendered audio at the measured Whisper + DNSMOS speeds."""
    shards = sorted((work / "results/audio/rounds/0/shards").glob("*.csv"), key=lambda p: int(p.stem))
    return [cluster.minutes(cluster.QC_COSTS.seconds(pd.read_csv(p)["duration_s"].tolist())) for p in shards]


@pytest.mark.slow
@pytest.mark.integration
def test_every_gpu_job_is_on_the_gpu_partition_and_no_other(paper_run):
    _, _, summary = paper_run
    jobs = summary["jobs"]
    assert {j["job"] for j in jobs} == {"group prepare", "group tts", "group qc", "group study"}, jobs
    gpu = [j for j in jobs if j["gpus"]]
    assert gpu and {j["job"] for j in gpu} == {"group tts"}, jobs  # kokoro renders on a GPU; QC does not
    assert all(j["partition"] == "gpu" and j["gpus"] == 1 for j in gpu), gpu
    assert all(j["partition"] == "cpu" for j in jobs if not j["gpus"]), jobs
    assert summary["gpu_requests_on_cpu_partition"] == 0 and summary["gpu_jobs_on_gpu_partition"] == len(gpu)
    assert all(j["requeue"] for j in jobs)  # slurm-requeue: a preempted job goes back to the queue


@pytest.mark.slow
@pytest.mark.integration
def test_no_group_asks_for_more_than_its_shards_need(paper_run):
    work, cfg, summary = paper_run
    by_job = {j["job"]: j for j in summary["jobs"] if j["attempt"] == 1}
    render = _render_minutes(work, cfg)
    tts = by_job["group tts"]
    assert sorted(tts["member_runtimes_min"]) == sorted(render), (tts, render)
    assert tts["time_min"] <= sum(render), (tts, render)  # one GPU shard per layer: exactly the sum
    qc = by_job["group qc"]
    assert sorted(qc["member_runtimes_min"]) == sorted(_qc_minutes(work)), qc
    assert qc["time_min"] <= sum(qc["member_runtimes_min"]), qc  # side-by-side shards share a layer's time
    for job in summary["jobs"]:  # every group: at most the sum of its members' own (measured) runtimes
        assert job["member_runtimes_min"] and job["time_min"] <= sum(job["member_runtimes_min"]) * 2 ** (
            job["attempt"] - 1
        ), job
    assert summary["longest_time_min"] <= 120, summary  # fits any GPU partition's limit


@pytest.mark.slow
@pytest.mark.integration
def test_statistics_reviews_and_api_judges_stay_local(paper_run):
    work, _, summary = paper_run
    local = dag_scale._local_rules(api_judges=True)
    stats_rules = set(re.findall(r"^rule (\w+):", (ROOT / "rules/stats.smk").read_text(), flags=re.M))
    assert stats_rules and stats_rules | {"rater_plan", "judges_table", "judge_modality", "report"} <= local
    submitted = " ".join(j["job"] for j in summary["jobs"])
    assert not [r for r in local if re.search(rf"\b{r}\b", submitted)], submitted
    for log in ("speech/audio_review_round0.log", "sampling/final_sample.log"):
        assert parse_origin((work / "results/logs" / log).read_text())["slurm_job_id"] == "none", log


#: what docs/cluster.md's table shows of each submission
DOC_KEYS = ("job", "attempt", "partition", "gpus", "cpus", "mem_mb", "time_min", "member_runtimes_min")


@pytest.mark.slow
@pytest.mark.integration
def test_the_benchmark_recorded_these_submissions(paper_run):
    """benchmarks/out/dag_scale.json (which docs/cluster.md quotes) holds what this run submitted."""
    _, _, summary = paper_run
    recorded = json.loads(DAG_SCALE.read_text())["paper_sbatch"]["jobs"]

    def rows(jobs: list[dict]) -> list[dict]:  # in submission order, which may differ between independent groups
        return sorted(({k: j[k] for k in DOC_KEYS} for j in jobs), key=lambda j: (j["job"], j["attempt"]))

    assert rows(summary["jobs"]) == rows(recorded)


def test_cluster_doc_quotes_the_benchmark():
    """docs/cluster.md's table of SLURM jobs is benchmarks/out/dag_scale.json's paper_sbatch, row by row, and its
    PRISM-scale job counts are the file's slurm_profile."""
    result = json.loads(DAG_SCALE.read_text())
    doc = CLUSTER_DOC.read_text()
    table = doc.split("<!-- paper_sbatch -->", 2)[1]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]
    jobs = result["paper_sbatch"]["jobs"]
    assert len(rows) == len(jobs), (rows, jobs)
    for row, job in zip(rows, jobs):
        cells = [c.strip().strip("`") for c in row.strip("|").split("|")]
        assert cells[:6] == [
            job["job"],
            job["partition"],
            str(job["gpus"]),
            str(job["cpus"]),
            str(job["mem_mb"]),
            str(job["time_min"]),
        ], (row, job)
        assert cells[6] == " + ".join(str(m) for m in job["member_runtimes_min"]), (row, job)
    scale = result["slurm_profile"]
    line = " ".join(doc.split("<!-- prism_scale -->", 2)[1].split())
    assert f"plans {result['jobs_total']:,} jobs in {result['dry_run_seconds']['median']} s" in line, line
    if "timed_out_s" in scale:  # Snakemake's group check at PRISM scale (the benchmark says why)
        assert f"did not finish within {scale['timed_out_s']:.0f} s" in line, line
    else:
        assert f"{scale['slurm_jobs_total']:,} SLURM jobs" in line, line
        for name, n in scale["slurm_jobs"].items():
            assert f"{n:,} × {name.removeprefix('group ')}" in line, (name, n, line)
    assert "91 SLURM jobs" not in doc


def test_cluster_setup_is_the_install_ci_runs():
    """docs/cluster.md's Setup block is `make install`, which .ci/run runs before the tests; its venv has the SLURM
    executor plugin at the version the profile is written for (the `slurm` extra, part of the test extra)."""
    import tomllib

    from support.doc_blocks import commands, fenced_blocks, section

    block = fenced_blocks(section(CLUSTER_DOC, "Setup (once)"), "bash")
    assert [commands(b) for b in block] == [["make install"]], block
    assert re.search(r"^make install$", (ROOT / ".ci" / "run").read_text(), flags=re.M)
    assert "-e '.[test]'" in (ROOT / "Makefile").read_text()
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert "modprefs[slurm]" in extras["test"] and extras["slurm"] == ["snakemake-executor-plugin-slurm==2.8.0"]
    assert "pip install snakemake-executor-plugin-slurm==2.8.0" in (ROOT / "profiles/slurm/config.yaml").read_text()
    from importlib.metadata import version

    assert version("snakemake-executor-plugin-slurm") == "2.8.0"

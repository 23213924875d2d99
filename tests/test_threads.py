"""The numeric kernels run on the job's threads (issue 27, item 8).

``modprefs stats`` and ``modprefs plan`` pin BLAS/OpenMP to ``--threads`` (default 1) for the whole run; a
Snakemake ``script:`` job gets OMP_NUM_THREADS / OPENBLAS_NUM_THREADS / MKL_NUM_THREADS = its ``threads`` from
Snakemake itself (snakemake/shell.py), which the last test confirms on a two-rule workflow of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import threadpoolctl

import modprefs.cli as cli


def _pools() -> list[int]:
    return [int(i["num_threads"]) for i in threadpoolctl.threadpool_info()]


@pytest.mark.parametrize("given, expected", [([], 1), (["--threads", "1"], 1), (["--threads", "2"], 2)])
def test_stats_runs_with_blas_pinned_to_threads(monkeypatch, tmp_path, given, expected):
    seen = {}

    def fake_run_stats(*args, **kwargs):
        seen["pools"] = _pools()
        seen["env"] = os.environ.get("OPENBLAS_NUM_THREADS"), os.environ.get("OMP_NUM_THREADS")
        return []

    monkeypatch.setattr(cli, "run_stats", fake_run_stats)
    before = os.environ.get("OPENBLAS_NUM_THREADS")
    assert cli.main(["stats", "--ratings", str(tmp_path), "--out", str(tmp_path / "out"), *given]) == 0
    assert seen["pools"] and set(seen["pools"]) == {expected}, seen  # every BLAS/OpenMP pool, scipy's included
    assert seen["env"] == (str(expected), str(expected))
    assert os.environ.get("OPENBLAS_NUM_THREADS") == before  # restored after the run


def test_plan_runs_with_blas_pinned_to_threads(monkeypatch):
    import modprefs.plan.cli as plan_cli

    seen = {}

    def fake_run(args):
        seen["pools"], seen["threads"] = _pools(), args.threads
        return 0

    monkeypatch.setattr(plan_cli, "run", fake_run)
    assert cli.main(["plan", "--threads", "1"]) == 0
    assert seen["threads"] == 1 and set(seen["pools"]) == {1}, seen


def test_threads_must_be_positive(capsys):
    with pytest.raises(SystemExit):
        cli.main(["stats", "--ratings", "x", "--out", "y", "--threads", "0"])
    assert "--threads" in capsys.readouterr().err


@pytest.mark.slow  # a Snakemake run (~5 s)
def test_a_snakemake_script_job_sees_its_threads(tmp_path):
    (tmp_path / "Snakefile").write_text(
        textwrap.dedent(
            """
            rule all:
                input: "one.json", "two.json"

            rule probe:
                output: "{n}.json"
                threads: lambda wc: 1 if wc.n == "one" else 2
                script: "probe.py"
            """
        )
    )
    (tmp_path / "probe.py").write_text(
        textwrap.dedent(
            """
            import json, os
            import scipy.linalg, threadpoolctl
            env = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
            pools = [i["num_threads"] for i in threadpoolctl.threadpool_info()]
            json.dump({"threads": snakemake.threads, "env": env, "pools": pools}, open(snakemake.output[0], "w"))
            """
        )
    )
    snakemake = Path(sys.executable).with_name("snakemake")
    proc = subprocess.run(
        [str(snakemake), "--cores", "2", "--quiet"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    for name, threads in (("one", 1), ("two", 2)):
        got = json.loads((tmp_path / f"{name}.json").read_text())
        assert got["threads"] == threads and set(got["env"].values()) == {str(threads)}, got
        assert set(got["pools"]) == {threads}, got

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
import modprefs.stats.cli as stats_cli


def _pools() -> list[int]:
    return [int(i["num_threads"]) for i in threadpoolctl.threadpool_info()]


@pytest.mark.parametrize("given, expected", [([], 1), (["--threads", "1"], 1), (["--threads", "2"], 2)])
def test_stats_runs_with_blas_pinned_to_threads(monkeypatch, tmp_path, given, expected):
    seen = {}

    def fake_run_stats(*args, **kwargs):
        seen["pools"] = _pools()
        seen["env"] = os.environ.get("OPENBLAS_NUM_THREADS"), os.environ.get("OMP_NUM_THREADS")
        return []

    monkeypatch.setattr(stats_cli, "run_stats", fake_run_stats)
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


def _dry_run_threads(checkout: Path, cores: int) -> dict[str, set[int]]:
    """rule -> the thread counts its jobs get in a dry run of the whole default workflow on ``cores`` cores."""
    from support.workflow_runner import run_workflow

    proc = run_workflow(checkout, "-n", "--cores", str(cores), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    threads: dict[str, set[int]] = {}
    rule = None
    for line in (proc.stdout + proc.stderr).splitlines():
        if line.startswith(("rule ", "localrule ", "checkpoint ")) and line.endswith(":"):
            rule = line.split()[1].rstrip(":")
            threads.setdefault(rule, set()).add(1)  # Snakemake prints `threads:` only above 1
        elif rule and line.strip().startswith("threads:"):
            threads[rule].discard(1)
            threads[rule].add(int(line.split(":")[1]))
    return threads


@pytest.mark.slow  # two dry runs of the default workflow (~20 s)
def test_speech_jobs_split_the_cores_and_the_judge_keeps_its_threads(tmp_path):
    """Round 0's four render and QC shards run one thread each, side by side, on 2 cores (a second thread gives
    Kokoro and Whisper ~1.65x, not 2x) and two each on 8 cores; the local judge keeps 2 on both, because its
    torch model scores differently with another thread count, and so do the other engines' shards, which run
    beside the judges (one-thread jobs there kept a core busy while a judge waited for two)."""
    from support.workflow_runner import make_checkout

    checkout = make_checkout(tmp_path / "checkout")
    two, eight = _dry_run_threads(checkout, 2), _dry_run_threads(checkout, 8)
    assert two["render_shard"] == two["audio_qc"] == {1}, two
    assert eight["render_shard"] == eight["audio_qc"] == {2}, eight  # 4 shards on 8 cores
    for rule in ("judge_modality", "render_engine_shard"):
        assert two[rule] == eight[rule] == {2}, rule


@pytest.mark.slow  # loads Kokoro, Whisper and DNSMOS twice (~25 s)
def test_speech_outputs_do_not_depend_on_the_thread_count():
    """What lets a speech job take 1 or 2 threads as the cores allow: audio and transcripts are bit-identical at
    both counts (onnxruntime and CTranslate2 split work, not sums); DNSMOS scores agree to 1e-6 (its P.835 model's
    ovrl output differs by ~5e-8 between 1 and 2 onnxruntime threads, the same at each count run after run)."""
    from modprefs.speech import kokoro_onnx
    from modprefs.speech.qc_models import DnsMos, Transcriber

    text = "Here are three ideas for your weekend: visit the museum, try a new recipe, or walk by the river."
    results = []
    for threads in (1, 2):
        audio = kokoro_onnx.KokoroOnnxBackend(threads=threads).synthesize(text)
        sr = kokoro_onnx.KokoroOnnxBackend._sample_rate()
        transcript = Transcriber(threads=threads).transcribe(audio, sr)
        results.append((audio.tobytes(), transcript, DnsMos(threads=threads).score(audio, sr)))
    assert results[0][0] == results[1][0]
    assert results[0][1] == results[1][1] and results[0][1].strip()
    assert results[0][2].keys() == results[1][2].keys()
    for key, score in results[0][2].items():
        assert abs(score - results[1][2][key]) < 1e-6, (key, score, results[1][2][key])

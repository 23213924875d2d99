"""modprefs.cluster: wall times from measured costs, growth per retry, partitions by GPU need, Qwen host memory."""

from __future__ import annotations

import json

import pytest

from modprefs import cluster
from support.workflow_runner import ROOT


def test_minutes_are_work_times_margin_plus_job_start_rounded_up():
    assert cluster.minutes(0) == 1  # the job's start alone
    assert cluster.minutes(40) == 2  # 40 s x 1.5 + 60 s = 120 s
    assert cluster.minutes(41) == 3
    assert cluster.minutes(-5) == 1


def test_each_retry_doubles():
    assert [cluster.grown(1500, a) for a in (1, 2, 3)] == [1500, 3000, 6000]
    assert cluster.grown(7.2, 1) == 8 and cluster.grown(5, 0) == 5  # rounded up; attempt < 1 counts as the first


def test_a_shard_costs_its_clips_characters():
    kokoro = cluster.TTS_COSTS["kokoro-onnx"]
    one = kokoro.seconds([3349])
    assert one == pytest.approx(1.824 + 0.484 + 387.36)  # the AVX2-only CPU: the slower one
    assert kokoro.seconds([100, 200]) < kokoro.seconds([1000, 2000])
    assert cluster.QC_COSTS.seconds([60.0], asr=False, dnsmos=False) < cluster.QC_COSTS.seconds([60.0])


@pytest.mark.parametrize(("cpu", "path"), [("avx512", "tts_rtf.json"), ("avx2", "tts_rtf_avx2.json")])
def test_rendering_costs_are_the_benchmarks_figures(cpu, path):
    measured = json.loads((ROOT / "benchmarks" / "out" / path).read_text())
    assert measured["threads"] == 2 and measured["texts"]["chars"] == 3349
    for backend, cost in cluster.TTS_COSTS_MEASURED[cpu].items():
        r = measured["results"][backend]
        assert (cost.load_s, cost.per_clip_s) == (r["load_s"], r["overhead_per_clip_s"]), backend
        assert cost.per_char_s == pytest.approx(r["synth_s"] / r["chars"]), backend


@pytest.mark.parametrize(("cpu", "path"), [("avx512", "tts_qc.json"), ("avx2", "tts_qc_avx2.json")])
def test_qc_costs_are_the_benchmarks_figures(cpu, path):
    measured = json.loads((ROOT / "benchmarks" / "out" / path).read_text())
    cost, speed = cluster.QC_COSTS_MEASURED[cpu], measured["throughput"]
    assert measured["threads"] == 2 and measured["n_clips"] == 60
    assert (cost.asr_load_s, cost.dnsmos_load_s) == (measured["load_s"]["asr"], measured["load_s"]["dnsmos"])
    assert (cost.asr_audio_s_per_s, cost.dnsmos_audio_s_per_s, cost.signal_audio_s_per_s) == (
        speed["asr"]["audio_s_per_s"],
        speed["dnsmos"]["audio_s_per_s"],  # DNSMOS' own 1 s hop, as QC runs it
        speed["signal"]["audio_s_per_s"],
    )
    slowest = max(c.seconds([30.0] * 25) for c in cluster.QC_COSTS_MEASURED.values())
    # each term at its slowest: at least the slower CPU's total, more only by the other's longer model load
    assert slowest <= cluster.QC_COSTS.seconds([30.0] * 25) <= slowest + 1.0


def test_cpu_jobs_ask_for_the_slower_cpu_and_gpu_kokoro_for_the_faster():
    for backend, cost in cluster.TTS_COSTS.items():
        if backend == "given":
            continue
        per_cpu = [by_cpu[backend] for by_cpu in cluster.TTS_COSTS_MEASURED.values()]
        assert cost.seconds([300] * 25) == pytest.approx(max(c.seconds([300] * 25) for c in per_cpu)), backend
    avx2 = cluster.TTS_COSTS_MEASURED["avx2"]["kokoro-onnx"]
    assert cluster.TTS_COSTS["kokoro-onnx"].seconds([300] * 25) == pytest.approx(avx2.seconds([300] * 25))
    # an AVX2 node renders Kokoro 9x slower: a 25-clip shard would overrun the faster CPU's wall time and its
    # first retry's (two failed submissions before the third fits)
    intel = cluster.KOKORO_GPU_BOUND
    assert avx2.seconds([300] * 25) > cluster.grown(cluster.minutes(intel.seconds([300] * 25)), 2) * 60


def test_gpu_jobs_go_to_the_gpu_partition_or_stop_the_run():
    assert cluster.partition_for(1, "cpu", "gpu", cluster=True) == "gpu"
    assert cluster.partition_for(0, "cpu", "gpu", cluster=True) == "cpu"
    assert cluster.partition_for(1, None, None, cluster=False) is None  # a local run: no partition
    with pytest.raises(cluster.GpuPartitionMissing, match="gpu_partition"):
        cluster.partition_for(1, "cpu", None, cluster=True)  # never a GPU request on the CPU partition


def test_qwen_host_memory_is_docs_reward_tables_weights_plus_overhead():
    table = json.loads((ROOT / "benchmarks/out/reward_memory.json").read_text())["table"]
    weights = {(row["model"].split("-")[-1], "LoRA" in row["setting"]): row["weights_gib"] for row in table}
    assert {k: v for k, v in weights.items() if k in cluster.QWEN_WEIGHTS_GIB} == cluster.QWEN_WEIGHTS_GIB
    mem = cluster.qwen_host_mem_mb({"name": "qwen2.5-omni", "model_id": "Qwen/Qwen2.5-Omni-3B"})
    assert mem == int((13.9 + cluster.QWEN_HOST_OVERHEAD_GIB) * 1024 + 0.999)
    lora7 = cluster.qwen_host_mem_mb({"model_id": "Qwen/Qwen2.5-Omni-7B", "lora": {"r": 16}})
    assert lora7 == int((14.6 + cluster.QWEN_HOST_OVERHEAD_GIB) * 1024 + 0.999)


def test_cluster_doc_quotes_both_cpus_rendering_times():
    """docs/cluster.md's Kokoro times on the two CPUs are the benchmarks' (rounded), not retyped figures."""
    doc = " ".join((ROOT / "docs" / "cluster.md").read_text().split())
    times = [
        json.loads((ROOT / "benchmarks" / "out" / path).read_text())["results"]["kokoro-onnx"]["synth_s"]
        for path in ("tts_rtf_avx2.json", "tts_rtf.json")
    ]
    assert f"({times[0]:.0f} s against {times[1]:.0f} s for the same 3,349 characters on 2 threads)" in doc
    assert f"renders {times[0] / times[1]:.0f}x slower" in doc

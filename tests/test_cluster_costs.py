"""modprefs.cluster: wall times from measured costs, growth per retry, partitions by GPU need, Qwen host memory."""

from __future__ import annotations

import json

import pytest

from modprefs import cluster
from workflow_runner import ROOT


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
    assert one == pytest.approx(0.54 + 0.322 + 43.25)
    assert kokoro.seconds([100, 200]) < kokoro.seconds([1000, 2000])
    assert cluster.QC_COSTS.seconds([60.0], asr=False, dnsmos=False) < cluster.QC_COSTS.seconds([60.0])


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

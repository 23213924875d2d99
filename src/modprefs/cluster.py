"""What each SLURM job of the workflow asks for (rules/common.smk turns these into ``resources:``; docs/cluster.md).

Three things a cluster's admin checks, and where each is decided:

1. **GPU jobs on a GPU partition.** A rule says how many GPUs a job needs (``gpu``, from the config: the torch
   Kokoro pipeline, a Qwen2.5-Omni reward run). :func:`partition_for` sends a job with a GPU to the lab's GPU
   partition and every other job to its CPU partition; the lab names both once, in the profile's
   ``default-resources`` (``slurm_partition``: CPU, ``gpu_partition``: GPU). A GPU job without a GPU partition is an
   error when the DAG is built: never a GPU request on a CPU partition.
2. **Honest wall times.** A job's ``runtime`` is its work at measured speeds (:data:`TTS_COSTS`, :data:`QC_COSTS`,
   :data:`REWARD_COSTS`: the benchmarks named there, on 2 CPU threads; for rendering and QC the slower of two CPU
   families, since a CPU job may land on a node without AVX-512) times :data:`MARGIN`, plus
   :data:`JOB_START_S` for Snakemake's start inside the job, rounded up to whole minutes (:func:`minutes`).
   A group job asks for the sum over its layers (Snakemake), so a group of shards asks for what its shards need,
   not for a default per member.
3. **Retries that grow.** Memory and runtime are multiplied by ``GROWTH ** (attempt - 1)`` (:func:`grown`): a job
   killed for time or memory is resubmitted with twice as much, then four times (``retries: 2`` in the profile).

Host memory of a Qwen2.5-Omni run comes from docs/reward.md's table (:data:`QWEN_WEIGHTS_GIB`, the ``weights``
column of benchmarks/out/reward_memory.json): the weights as they sit in host memory while loading and saving, plus
:data:`QWEN_HOST_OVERHEAD_GIB` for the process (torch, CUDA libraries, the data).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

#: Wall time requested = measured work x MARGIN + JOB_START_S (then whole minutes, then x GROWTH per retry).
MARGIN = 1.5
#: Snakemake's start inside a SLURM job (parsing the workflow, imports) and shared-file-system latency, per member.
JOB_START_S = 60.0
#: Each retry multiplies memory and runtime by this.
GROWTH = 2


def grown(value: float, attempt: int) -> int:
    """``value`` for the given attempt (1 = the first submission): x GROWTH per retry, rounded up."""
    return int(math.ceil(value * GROWTH ** (max(1, int(attempt)) - 1)))


def minutes(work_s: float) -> int:
    """The runtime (minutes, at least 1) for ``work_s`` seconds of measured work: margin and job start included."""
    return max(1, math.ceil((max(0.0, work_s) * MARGIN + JOB_START_S) / 60.0))


# --- speech ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TtsCost:
    """Seconds to render: ``load_s`` once per job, then ``per_clip_s + per_char_s x characters`` per clip."""

    load_s: float
    per_clip_s: float
    per_char_s: float
    source: str

    def seconds(self, chars: Iterable[int]) -> float:
        sizes = list(chars)
        return self.load_s + sum(self.per_clip_s + self.per_char_s * c for c in sizes)


_RTF = "benchmarks/out/tts_rtf.json (20 texts, 3,349 characters, 2 threads; Intel Xeon, AVX-512)"
_RTF_AVX2 = "benchmarks/out/tts_rtf_avx2.json (the same texts and threads; AMD EPYC, AVX2 and FMA only)"
#: Rendering costs per backend measured on two CPUs (2 threads each). Int8 and float ONNX kernels differ by CPU
#: family: Kokoro's int8 convolutions run ~9x slower without AVX-512 VNNI, piper's ~6x.
TTS_COSTS_MEASURED: dict[str, dict[str, TtsCost]] = {
    "avx512": {
        "kokoro-onnx": TtsCost(load_s=0.54, per_clip_s=0.322, per_char_s=43.25 / 3349, source=_RTF),
        "piper": TtsCost(load_s=0.208, per_clip_s=0.238, per_char_s=5.16 / 3349, source=_RTF),
        "espeak-ng": TtsCost(load_s=0.009, per_clip_s=0.004, per_char_s=0.14 / 3349, source=_RTF),
    },
    "avx2": {
        "kokoro-onnx": TtsCost(load_s=1.824, per_clip_s=0.484, per_char_s=387.36 / 3349, source=_RTF_AVX2),
        "piper": TtsCost(load_s=0.642, per_clip_s=0.734, per_char_s=29.26 / 3349, source=_RTF_AVX2),
        "espeak-ng": TtsCost(load_s=0.016, per_clip_s=0.006, per_char_s=0.36 / 3349, source=_RTF_AVX2),
    },
}


def slower_tts(costs: Iterable[TtsCost]) -> TtsCost:
    """The cost no measured CPU exceeds: each term's largest value (a CPU job may land on any node type)."""
    costs = list(costs)
    return TtsCost(
        load_s=max(c.load_s for c in costs),
        per_clip_s=max(c.per_clip_s for c in costs),
        per_char_s=max(c.per_char_s for c in costs),
        source="the slower of " + " and ".join(c.source for c in costs),
    )


#: What a CPU rendering job asks for, per backend: the slower of the measured CPUs (:func:`slower_tts`). ``given``
#: only reads and levels the lab's files: espeak-ng's cost stands in for it.
TTS_COSTS: dict[str, TtsCost] = {
    name: slower_tts(by_cpu[name] for by_cpu in TTS_COSTS_MEASURED.values())
    for name in ("kokoro-onnx", "piper", "espeak-ng")
}
TTS_COSTS["given"] = replace(TTS_COSTS["espeak-ng"], source=TTS_COSTS["espeak-ng"].source + ", espeak-ng's")
#: The torch Kokoro pipeline on a GPU: bounded by the int8 model on 2 threads of the faster measured CPU (a GPU
#: renders faster than either; no GPU was available to measure it, so a GPU job's estimate is an upper bound).
KOKORO_GPU_BOUND: TtsCost = TTS_COSTS_MEASURED["avx512"]["kokoro-onnx"]
#: Seconds of audio per character of text (kokoro-onnx over the same 20 texts: 210.43 s / 3,349 characters); the QC
#: estimate of a shard not yet rendered.
AUDIO_S_PER_CHAR = 210.43 / 3349


@dataclass(frozen=True)
class QcCost:
    """Seconds of audio QC: each model's load once, then audio seconds / the model's throughput."""

    asr_load_s: float
    asr_audio_s_per_s: float
    dnsmos_load_s: float
    dnsmos_audio_s_per_s: float
    signal_audio_s_per_s: float
    source: str

    def seconds(self, audio_s: Iterable[float], asr: bool = True, dnsmos: bool = True) -> float:
        total = float(sum(audio_s))
        s = total / self.signal_audio_s_per_s
        if asr:
            s += self.asr_load_s + total / self.asr_audio_s_per_s
        if dnsmos:
            s += self.dnsmos_load_s + total / self.dnsmos_audio_s_per_s
        return s


#: QC throughput measured on the same two CPUs (2 threads; 60 clips, 592 s of audio; DNSMOS at its own 1 s hop).
QC_COSTS_MEASURED: dict[str, QcCost] = {
    "avx512": QcCost(
        asr_load_s=0.979,
        asr_audio_s_per_s=11.22,
        dnsmos_load_s=0.059,
        dnsmos_audio_s_per_s=8.59,
        signal_audio_s_per_s=3413.91,
        source="benchmarks/out/tts_qc.json (60 clips, 591.8 s of audio, 2 threads; Intel Xeon, AVX-512)",
    ),
    "avx2": QcCost(
        asr_load_s=0.777,
        asr_audio_s_per_s=7.84,
        dnsmos_load_s=0.058,
        dnsmos_audio_s_per_s=4.09,
        signal_audio_s_per_s=2572.86,
        source="benchmarks/out/tts_qc_avx2.json (60 clips, 592.5 s of audio, 2 threads; AMD EPYC, AVX2 only)",
    ),
}


def slower_qc(costs: Iterable[QcCost]) -> QcCost:
    """Each term at the slowest measured CPU: the largest load time, the smallest throughput."""
    costs = list(costs)
    return QcCost(
        asr_load_s=max(c.asr_load_s for c in costs),
        asr_audio_s_per_s=min(c.asr_audio_s_per_s for c in costs),
        dnsmos_load_s=max(c.dnsmos_load_s for c in costs),
        dnsmos_audio_s_per_s=min(c.dnsmos_audio_s_per_s for c in costs),
        signal_audio_s_per_s=min(c.signal_audio_s_per_s for c in costs),
        source="the slower of " + " and ".join(c.source for c in costs),
    )


#: What a QC job asks for: the slower CPU's speeds (:func:`slower_qc`).
QC_COSTS: QcCost = slower_qc(QC_COSTS_MEASURED.values())


#: The offline judges (SmolLM2-135M, Whisper, DNSMOS; one thread): load seconds and seconds per clip rated, by
#: modality (benchmarks/out/judges_local.json: text 22.9 s + 0.413 s per rating; audio 19.6 s + 0.871 s cascade +
#: 0.687 s DNSMOS per clip)
JUDGE_COSTS: dict[str, tuple[float, float]] = {"text": (22.92, 0.413), "audio": (19.6, 0.871 + 0.687)}


# --- reward models ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RewardCost:
    """Seconds of a default-backbone (minilm-logmel) reward run: training and its evaluation."""

    load_s: float  # imports, MiniLM and the log-mel front end
    featurize_s_per_pair: float
    train_s_per_pair_epoch: float
    eval_s_per_item: float  # one scored pair or engine clip, evaluation's loads included
    source: str

    def train_seconds(self, n_pairs: int, epochs: int, val_fraction: float) -> float:
        n_train = n_pairs * (1.0 - val_fraction)
        return self.load_s + self.featurize_s_per_pair * n_pairs + self.train_s_per_pair_epoch * n_train * epochs

    def eval_seconds(self, n_items: int) -> float:
        return self.load_s + self.eval_s_per_item * n_items


REWARD_COSTS = RewardCost(
    load_s=5.0,
    featurize_s_per_pair=3.25 / 82,
    train_s_per_pair_epoch=59.02 / (76 * 20),
    eval_s_per_item=34.0 / 4 / (82 + 64),
    source=(
        "benchmarks/out/reward_stage.json (run main: 76 training pairs x 20 epochs in 52.7-59.0 s, 82 pairs "
        "featurized in 3.0-3.3 s) and benchmarks/out/default_run.json (4 evaluations in 34 s, 82 pairs + 64 engine "
        "clips each)"
    ),
)

#: reward_pairs (colloquial renditions with piper, degraded copies of the study clips): 7 s for the default run's 32
#: clips (benchmarks/out/default_run.json), per study clip
REWARD_PAIRS_S_PER_CLIP = 7.0 / 32

#: Qwen2.5-Omni training on a GPU is not measured here (no GPU): a planning value (minutes) that a lab replaces
#: with its own measurement (``--set-resources reward_train:runtime=...``).
QWEN_TRAIN_MINUTES = 480
QWEN_EVAL_MINUTES = 60

#: Qwen2.5-Omni weights in host memory (GiB): docs/reward.md's table, column "weights" (fp32 master weights for a
#: full fine-tune, the bf16 frozen base for LoRA), from benchmarks/out/reward_memory.json.
QWEN_WEIGHTS_GIB: dict[tuple[str, bool], float] = {
    ("3B", False): 13.9,
    ("3B", True): 7.1,
    ("7B", False): 28.7,
    ("7B", True): 14.6,
}
#: The rest of the training process in host memory: torch and the CUDA libraries, tokenizer, audio features.
QWEN_HOST_OVERHEAD_GIB = 8.0


def qwen_size(backbone: Mapping[str, Any]) -> str:
    """``3B`` or ``7B`` from the model id (a local folder without either is taken as 7B: the larger need)."""
    if backbone.get("thinker_config") and not backbone.get("model_id"):
        return "tiny"
    found = re.search(r"(\d+)\s*B\b", str(backbone.get("model_id") or ""), flags=re.IGNORECASE)
    return "3B" if found and found.group(1) == "3" else "7B"


def qwen_host_mem_mb(backbone: Mapping[str, Any]) -> int:
    """Host memory (MB) of a Qwen2.5-Omni training or evaluation job (module docstring)."""
    size = qwen_size(backbone)
    if size == "tiny":  # a randomly initialised thinker (tests)
        return 4000
    weights = QWEN_WEIGHTS_GIB[(size, bool(backbone.get("lora")))]
    return int(math.ceil((weights + QWEN_HOST_OVERHEAD_GIB) * 1024))


# --- partitions ------------------------------------------------------------------------------------------------


class GpuPartitionMissing(ValueError):
    """A job asks for a GPU and the profile names no GPU partition."""


def partition_for(gpus: int, cpu_partition: str | None, gpu_partition: str | None, cluster: bool) -> str | None:
    """The partition of a job asking for ``gpus`` GPUs: the GPU partition if any, else the CPU one.

    ``cluster`` is true in the main process of a cluster run (SLURM): there a GPU job without ``gpu_partition``
    raises instead of landing on the CPU partition. ``None``: no partition (local runs; SLURM's default).
    """
    if int(gpus) > 0:
        if gpu_partition:
            return gpu_partition
        if cluster:
            raise GpuPartitionMissing(
                "a job asks for a GPU but the profile names no GPU partition: set default-resources "
                "gpu_partition: <your GPU partition> in profiles/slurm/config.yaml (sinfo -o '%P %G' lists them)"
            )
    return cpu_partition or None

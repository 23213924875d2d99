"""Where Kokoro-ONNX's time goes on this machine (issue #3: RTF target 0.5 on 2 cores).

Over the same 20 texts as benchmarks/performance/tts_rtf.py, split each synthesis into grapheme-to-phoneme
(espeak-ng via kokoro_onnx's tokenizer) and ONNX inference, time inference at 1 and 2 intra-op
threads side by side (alternating, median of 2 rounds per text), and aggregate onnxruntime's own
profile by operator type. Writes benchmarks/out/tts_profile.json.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/performance/tts_profile.py
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # tts_rtf, beside it

from tts_rtf import benchmark_texts, pin_cpus  # noqa: E402

from modprefs.speech.kokoro_onnx import DEFAULT_LANG, DEFAULT_VOICE, default_model_path, default_voices_path  # noqa: E402

OUT = ROOT / "benchmarks/out/tts_profile.json"
SAMPLE_RATE = 24000


def _session(threads: int, profile_dir: str | None = None):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    if profile_dir:
        options.enable_profiling = True
        options.profile_file_prefix = str(Path(profile_dir) / "kokoro")
    return ort.InferenceSession(str(default_model_path()), sess_options=options, providers=["CPUExecutionProvider"])


def _kokoro(session):
    from kokoro_onnx import Kokoro

    return Kokoro.from_session(session, str(default_voices_path()))


def _batches(kokoro, text: str) -> list[list[int]]:
    phonemes = " ".join(kokoro.tokenizer.phonemize(text, DEFAULT_LANG).split())
    return [kokoro.tokenizer.tokenize(p) for p in kokoro._split_phonemes(phonemes)]


def _infer_s(kokoro, style, batches) -> tuple[float, float]:
    """Seconds of inference and seconds of audio for the text's phoneme batches."""
    audio_s, start = 0.0, time.perf_counter()
    for tokens in batches:
        audio, _ = kokoro._infer(tokens, kokoro._style_for(style, len(tokens)), 1.0)
        audio_s += len(audio) / SAMPLE_RATE
    return time.perf_counter() - start, audio_s


def main() -> None:
    cpus = pin_cpus(2)
    texts = benchmark_texts()
    k2 = _kokoro(_session(2))
    k1 = _kokoro(_session(1))
    style = k2.get_voice_style(DEFAULT_VOICE)

    g2p_s, batches = [], []
    for text in texts:
        start = time.perf_counter()
        batches.append(_batches(k2, text))
        g2p_s.append(time.perf_counter() - start)

    per_text = []
    for text, b in zip(texts, batches):
        runs = {1: [], 2: []}
        audio_s = 0.0
        for _ in range(2):
            for threads, k in ((1, k1), (2, k2)):
                secs, audio_s = _infer_s(k, style, b)
                runs[threads].append(secs)
        per_text.append(
            {
                "chars": len(text),
                "audio_s": round(audio_s, 3),
                "infer_s_1_thread": round(statistics.median(runs[1]), 4),
                "infer_s_2_threads": round(statistics.median(runs[2]), 4),
            }
        )
    audio_total = sum(t["audio_s"] for t in per_text)
    infer1 = sum(t["infer_s_1_thread"] for t in per_text)
    infer2 = sum(t["infer_s_2_threads"] for t in per_text)
    g2p_total = sum(g2p_s)

    with tempfile.TemporaryDirectory() as tmp:
        session = _session(2, tmp)
        kp = _kokoro(session)
        for b in batches[:5]:
            _infer_s(kp, style, b)
        profile = Path(session.end_profiling())
        events = json.loads(profile.read_text())
    by_op: dict[str, float] = defaultdict(float)
    for ev in events:
        if ev.get("cat") == "Node" and ev.get("name", "").endswith("_kernel_time"):
            by_op[ev.get("args", {}).get("op_name", "?")] += ev.get("dur", 0) / 1e6
    total_op = sum(by_op.values())
    top = sorted(by_op.items(), key=lambda kv: -kv[1])[:12]

    result = {
        "what": "Kokoro-82M int8 ONNX (PyPI) on this machine: G2P vs inference, 1 vs 2 intra-op threads, op profile",
        "pinned_cpus": cpus,
        "load_average_1min": os.getloadavg()[0],
        "n_texts": len(texts),
        "audio_s": round(audio_total, 2),
        "g2p_s": round(g2p_total, 3),
        "g2p_share_of_2_thread_time": round(g2p_total / (g2p_total + infer2), 4),
        "infer_s_1_thread": round(infer1, 2),
        "infer_s_2_threads": round(infer2, 2),
        "rtf_1_thread": round((g2p_total + infer1) / audio_total, 4),
        "rtf_2_threads": round((g2p_total + infer2) / audio_total, 4),
        "speedup_2_vs_1_threads_median_text": round(
            statistics.median(t["infer_s_1_thread"] / t["infer_s_2_threads"] for t in per_text), 3
        ),
        "rtf_target": 0.5,
        "op_profile_2_threads_first_5_texts": {
            "total_op_s": round(total_op, 3),
            "top_ops": [{"op": op, "s": round(s, 3), "share": round(s / total_op, 4)} for op, s in top],
        },
        "per_text": per_text,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "per_text"}, indent=1))


if __name__ == "__main__":
    np.random.seed(0)
    main()

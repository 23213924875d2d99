"""QC throughput (round-trip ASR, DNSMOS, signal metrics) and the QC metrics of each backend's clips.

Scores the 20 benchmark texts of ``benchmarks/performance/tts_rtf.py`` as rendered by each offline backend:

* throughput of each QC part on 2 pinned CPUs (models loaded once, ``threads=2``): seconds per
  clip and audio seconds per second for Whisper tiny.en (faster-whisper, int8, greedy,
  ``language="en"``), DNSMOS (DNSMOS' own 1 s hop, and non-overlapping 9.01 s windows) and the
  signal metrics; the DNSMOS overall score's largest change from the 1 s hop to non-overlapping
  windows;
* per backend: WER (mean, median, max, and how many clips exceed 0.15), DNSMOS ovrl/p808
  (min/median), speaking rate (words/s, chars/s: min/median/max), silences, and how many clips pass
  the default thresholds with which reasons — the data behind ``qc.DEFAULT_THRESHOLDS``;
* a silent clip and a hard-clipped clip, which must fail.

    .venv/bin/python benchmarks/performance/tts_qc.py [--audio-dir DIR]   # DIR from tts_rtf.py --keep-audio

Without ``--audio-dir`` the clips are rendered here first (kokoro-onnx takes a minute or two).
Writes benchmarks/out/tts_qc.json (or ``--out``) and prints it, with the CPU's model and vector extensions.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # tts_rtf, beside it

import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402
from tts_rtf import BACKENDS, THREADS, benchmark_texts, cpu_description, pin_cpus  # noqa: E402

from modprefs.speech.qc import DEFAULT_THRESHOLDS, qc_clip, signal_metrics  # noqa: E402
from modprefs.speech.qc_models import DnsMos, Transcriber  # noqa: E402


def render_all(directory: Path) -> None:
    from modprefs.speech.backends import get_backend

    texts = benchmark_texts()
    (directory / "texts.json").write_text(json.dumps(texts, indent=1) + "\n", encoding="utf-8")
    for name, cfg in BACKENDS.items():
        try:
            backend = get_backend(cfg, threads=THREADS)
        except (ImportError, RuntimeError, FileNotFoundError) as err:
            print(f"skip {name}: {err}", file=sys.stderr)
            continue
        (directory / name).mkdir(parents=True, exist_ok=True)
        for i, text in enumerate(texts):
            sf.write(
                directory / name / f"{i:02d}.wav",
                np.clip(backend.synthesize(text), -1, 1),
                backend.sample_rate,
                subtype="PCM_16",
            )


def summary(values: list[float], digits: int = 3) -> dict[str, float]:
    v = [x for x in values if np.isfinite(x)]
    return (
        {"min": round(min(v), digits), "median": round(statistics.median(v), digits), "max": round(max(v), digits)}
        if v
        else {}
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--audio-dir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/out/tts_qc.json")
    args = parser.parse_args()
    cpus = pin_cpus()
    tmp = None
    if args.audio_dir is None:
        tmp = tempfile.TemporaryDirectory()
        args.audio_dir = Path(tmp.name)
        render_all(args.audio_dir)
    texts = json.loads((args.audio_dir / "texts.json").read_text(encoding="utf-8"))
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None

    t0 = time.perf_counter()
    asr = Transcriber(threads=THREADS)
    asr_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    mos = DnsMos(threads=THREADS)
    mos_fast = DnsMos(threads=THREADS, hop_s=DnsMos.INPUT_LENGTH)
    mos_load = (time.perf_counter() - t0) / 2
    asr.transcribe(np.zeros(16000, np.float32) + 1e-4, 16000)  # warm-up

    timing = {"asr_s": 0.0, "dnsmos_s": 0.0, "dnsmos_nonoverlap_s": 0.0, "signal_s": 0.0, "audio_s": 0.0, "n": 0}
    per_backend, max_ovrl_diff = {}, 0.0
    for name in BACKENDS:
        folder = args.audio_dir / name
        if not folder.is_dir():
            continue
        rows = []
        for i, text in enumerate(texts):
            audio, sr = sf.read(folder / f"{i:02d}.wav", dtype="float32")
            t0 = time.perf_counter()
            transcript = asr.transcribe(audio, sr)
            t1 = time.perf_counter()
            scores = mos.score(audio, sr)
            t2 = time.perf_counter()
            fast = mos_fast.score(audio, sr)
            t3 = time.perf_counter()
            signal_metrics(audio, sr, text)
            t4 = time.perf_counter()
            timing["asr_s"] += t1 - t0
            timing["dnsmos_s"] += t2 - t1
            timing["dnsmos_nonoverlap_s"] += t3 - t2
            timing["signal_s"] += t4 - t3
            timing["audio_s"] += audio.size / sr
            timing["n"] += 1
            max_ovrl_diff = max(max_ovrl_diff, abs(fast["ovrl"] - scores["ovrl"]))
            row = qc_clip(audio, sr, text, transcript=transcript, mos=scores)
            row["clip"] = i
            rows.append(row)
        wers = [r["wer"] for r in rows]
        reasons: dict[str, int] = {}
        for r in rows:
            for reason in filter(None, r["qc_reasons"].split("; ")):
                key = reason.split(" ")[0]
                reasons[key] = reasons.get(key, 0) + 1
        per_backend[name] = {
            "n_clips": len(rows),
            "wer": {
                "mean": round(float(np.mean(wers)), 4),
                "median": round(statistics.median(wers), 4),
                "max": round(max(wers), 4),
                "n_over_0.15": sum(w > 0.15 for w in wers),
                "n_zero": sum(w == 0 for w in wers),
            },
            "dnsmos_ovrl": summary([r["dnsmos_ovrl"] for r in rows]),
            "dnsmos_p808": summary([r["dnsmos_p808"] for r in rows]),
            "dnsmos_sig": summary([r["dnsmos_sig"] for r in rows]),
            "words_per_s": summary([r["words_per_s"] for r in rows]),
            "chars_per_s": summary([r["chars_per_s"] for r in rows]),
            "leading_silence_s": summary([r["leading_silence_s"] for r in rows]),
            "trailing_silence_s": summary([r["trailing_silence_s"] for r in rows]),
            "internal_silence_s": summary([r["internal_silence_s"] for r in rows]),
            "rms_dbfs": summary([r["rms_dbfs"] for r in rows], 1),
            "clipping_ratio_max": max(r["clipping_ratio"] for r in rows),
            "n_pass_default_thresholds": sum(r["qc_pass"] for r in rows),
            "failed_metrics": reasons,
            "worst_wer_clip": (
                lambda r: {
                    "clip": r["clip"],
                    "wer": round(r["wer"], 3),
                    "text": texts[r["clip"]][:200],
                    "transcript": r["transcript"][:200],
                }
            )(max(rows, key=lambda r: r["wer"])),
        }
        print(
            f"{name}: WER mean {per_backend[name]['wer']['mean']}, max {per_backend[name]['wer']['max']}; "
            f"pass {per_backend[name]['n_pass_default_thresholds']}/{len(rows)} {reasons}",
            file=sys.stderr,
        )

    # known-bad clips
    sr = 22050
    silent = qc_clip(
        np.zeros(3 * sr, np.float32),
        sr,
        "This should have been spoken aloud.",
        transcript=asr.transcribe(np.zeros(3 * sr, np.float32), sr),
    )
    t = np.arange(3 * sr) / sr
    clipped_audio = np.clip(3.0 * np.sin(2 * np.pi * 220 * t), -1, 1).astype(np.float32)
    clipped = qc_clip(clipped_audio, sr, "This should have been spoken aloud.")

    n, audio_s = timing["n"], timing["audio_s"]
    out = {
        "n_clips": n,
        "audio_s": round(audio_s, 1),
        "threads": THREADS,
        "pinned_cpus": cpus,
        "load_s": {"asr": round(asr_load, 3), "dnsmos": round(mos_load, 3)},
        "throughput": {
            part: {
                "s_per_clip": round(timing[f"{part}_s"] / n, 4),
                "audio_s_per_s": round(audio_s / timing[f"{part}_s"], 2),
            }
            for part in ("asr", "dnsmos", "dnsmos_nonoverlap", "signal")
        }
        if n
        else {},
        "dnsmos_ovrl_max_abs_diff_nonoverlap_vs_1s_hop": round(max_ovrl_diff, 4),
        "default_thresholds": DEFAULT_THRESHOLDS,
        "backends": per_backend,
        "known_bad": {
            "silent": {
                "qc_pass": silent["qc_pass"],
                "qc_reasons": silent["qc_reasons"],
                "transcript": silent["transcript"],
            },
            "hard_clipped_tone": {"qc_pass": clipped["qc_pass"], "qc_reasons": clipped["qc_reasons"]},
        },
        "load_average_1min": {
            "before": load_before,
            "after": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        },
        "machine": {
            "cpus_visible": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpu": cpu_description(),
        },
    }
    target = args.out
    target.parent.mkdir(exist_ok=True)
    target.write_text(json.dumps(out, indent=2, default=float) + "\n")
    print(json.dumps(out, indent=2, default=float))
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()

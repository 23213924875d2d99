"""Real-time factor of each offline TTS backend on 2 cores, and the cost of loading a model per clip.

The texts: the first 20 turn-0 responses of the bundled sample (``resources/sample``) after
``speakable_text`` (65-603 characters, 3,349 in all; 189-210 s of audio), the same 20 for every
backend. For each backend available offline (kokoro-onnx, piper, espeak-ng):

* load seconds (model built once), one warm-up synthesis (not counted);
* per text: synthesis seconds and audio seconds; RTF = synthesis / audio (< 1 is faster than
  real time), reported as total-over-total and the per-clip median;
* per-clip overhead: the 5 shortest texts rendered with the model loaded once vs loaded again for
  every clip (interleaved text by text); overhead = (per-clip total - once total) / 5, next to
  the median load time of those reloads.

The process is pinned to 2 CPUs (``sched_setaffinity``) and each engine gets ``threads=2``. The
machine's 1-minute load average before and after is recorded: on a shared machine the absolute
times move with it, the ratios between backends much less.

    .venv/bin/python benchmarks/performance/tts_rtf.py [--backends kokoro-onnx piper espeak-ng] [--keep-audio DIR]
        [--threads 2] [--texts 20] [--out benchmarks/out/tts_rtf.json]

Writes benchmarks/out/tts_rtf.json (or ``--out``) and prints it, with the CPU's model and vector extensions
(Kokoro's int8 convolutions depend on them: ``benchmarks/out/tts_rtf_cpu.json`` is ``--threads 1 --texts 6`` on
an AVX2-only CPU, the main file 2 threads on an Intel Xeon). ``--keep-audio`` saves every clip as
``DIR/{backend}/{i:02d}.wav`` plus ``DIR/texts.json`` for ``benchmarks/performance/tts_qc.py --audio-dir``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402

from modprefs.speech.backends import get_backend  # noqa: E402
from modprefs.speech.text import speakable_text  # noqa: E402

BACKENDS = {
    "kokoro-onnx": {"backend": "kokoro-onnx", "voice": "jf_alpha", "lang": "en-us", "speed": 1.0},
    "piper": {"backend": "piper", "voice": "en_US-joe-medium", "speed": 1.0},
    "espeak-ng": {"backend": "espeak-ng", "voice": "en-us", "speed": 1.0},
}
N_TEXTS = 20
N_OVERHEAD = 5
THREADS = 2
WARMUP = "This sentence warms the engine up."


def benchmark_texts(n: int = N_TEXTS) -> list[str]:
    """The first ``n`` speakable turn-0 responses of the bundled sample, in file order."""
    texts = []
    with open(ROOT / "resources/sample/conversations.jsonl", encoding="utf-8") as fh:
        for line in fh:
            for utt in json.loads(line)["conversation_history"]:
                if utt["role"] == "model" and utt["turn"] == 0:
                    try:
                        texts.append(speakable_text(utt["content"]))
                    except ValueError:
                        continue
                    if len(texts) == n:
                        return texts
    raise RuntimeError(f"the sample has fewer than {n} speakable responses")


def pin_cpus(n: int = THREADS) -> list[int]:
    """Restrict this process to ``n`` CPUs where the OS allows it; the CPUs used."""
    if hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))[:n]
        os.sched_setaffinity(0, cpus)
        return cpus
    return []


def cpu_description() -> dict[str, object]:
    """The CPU's model name and the vector extensions that decide int8/float kernels' speed (Linux; else {})."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    flags = set(fields.get("flags", "").split())
    wanted = ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8")
    return {"model": fields.get("model name", ""), "extensions": [f for f in wanted if f in flags]}


def bench_backend(name: str, texts: list[str], keep: Path | None, threads: int = THREADS) -> dict:
    t0 = time.perf_counter()
    backend = get_backend(BACKENDS[name], threads=threads)
    load_s = time.perf_counter() - t0
    backend.synthesize(WARMUP)
    clips = []
    for i, text in enumerate(texts):
        t0 = time.perf_counter()
        audio = backend.synthesize(text)
        synth_s = time.perf_counter() - t0
        audio_s = audio.size / backend.sample_rate
        clips.append(
            {
                "chars": len(text),
                "synth_s": round(synth_s, 3),
                "audio_s": round(audio_s, 3),
                "rtf": round(synth_s / audio_s, 4),
            }
        )
        if keep is not None:
            import soundfile as sf

            (keep / name).mkdir(parents=True, exist_ok=True)
            sf.write(keep / name / f"{i:02d}.wav", np.clip(audio, -1, 1), backend.sample_rate, subtype="PCM_16")
    synth_total = sum(c["synth_s"] for c in clips)
    audio_total = sum(c["audio_s"] for c in clips)

    # model loaded once vs per clip, on the N_OVERHEAD shortest texts; the two are interleaved
    # text by text so that a change in the machine's load hits both alike
    few = sorted(texts, key=len)[:N_OVERHEAD]
    once, fresh_times, loads = [], [], []
    for text in few:
        t0 = time.perf_counter()
        backend.synthesize(text)
        once.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        fresh = get_backend(BACKENDS[name], threads=threads)
        t1 = time.perf_counter()
        fresh.synthesize(text)
        fresh_times.append(time.perf_counter() - t0)
        loads.append(t1 - t0)
        del fresh
    once_s, per_clip_s = sum(once), sum(fresh_times)
    return {
        "load_s": round(load_s, 3),
        "n_clips": len(clips),
        "chars": sum(c["chars"] for c in clips),
        "synth_s": round(synth_total, 2),
        "audio_s": round(audio_total, 2),
        "rtf": round(synth_total / audio_total, 4),
        "rtf_median_clip": round(statistics.median(c["rtf"] for c in clips), 4),
        "chars_per_synth_s": round(sum(c["chars"] for c in clips) / synth_total, 1),
        f"shortest_{N_OVERHEAD}_loaded_once_s": round(once_s, 3),
        f"shortest_{N_OVERHEAD}_loaded_per_clip_s": round(per_clip_s, 3),
        "overhead_per_clip_s": round((per_clip_s - once_s) / N_OVERHEAD, 3),
        "load_s_median_of_reloads": round(statistics.median(loads), 3),
        "overhead_texts_chars": [len(t) for t in few],
        "clips": clips,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=list(BACKENDS))
    parser.add_argument("--keep-audio", type=Path, default=None)
    parser.add_argument("--threads", type=int, default=THREADS, help="threads per engine (and CPUs pinned)")
    parser.add_argument("--texts", type=int, default=N_TEXTS, help="the first N texts of the sample")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/out/tts_rtf.json")
    args = parser.parse_args()
    cpus = pin_cpus(args.threads)
    texts = benchmark_texts(args.texts)
    if args.keep_audio is not None:
        args.keep_audio.mkdir(parents=True, exist_ok=True)
        (args.keep_audio / "texts.json").write_text(json.dumps(texts, indent=1) + "\n", encoding="utf-8")
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    results, skipped = {}, {}
    for name in args.backends:
        try:
            results[name] = bench_backend(name, texts, args.keep_audio, args.threads)
        except (ImportError, RuntimeError, FileNotFoundError) as err:  # a backend not installed here
            skipped[name] = f"{type(err).__name__}: {err}"
        else:
            r = results[name]
            print(
                f"{name}: RTF {r['rtf']} ({r['synth_s']} s for {r['audio_s']} s of audio), load {r['load_s']} s, "
                f"overhead per clip when reloading {r['overhead_per_clip_s']} s",
                file=sys.stderr,
            )
    out = {
        "texts": {
            "source": f"resources/sample/conversations.jsonl, first {len(texts)} turn-0 responses, speakable_text",
            "n": len(texts),
            "chars": sum(map(len, texts)),
            "min_chars": min(map(len, texts)),
            "max_chars": max(map(len, texts)),
        },
        "threads": args.threads,
        "pinned_cpus": cpus,
        "backends": {k: dict(BACKENDS[k]) for k in results},
        "results": results,
        "skipped": skipped,
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
    target.write_text(json.dumps(out, indent=2) + "\n")
    print(
        json.dumps(
            {k: v for k, v in out.items() if k != "results"}
            | {"results": {k: {m: x for m, x in v.items() if m != "clips"} for k, v in results.items()}},
            indent=2,
        )
    )


if __name__ == "__main__":
    main()

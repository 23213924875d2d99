"""Training throughput and peak memory of the default reward backbone (minilm-logmel) on 2 cores.

Pairs like the default workflow's: study-length clips (``--clip-s`` seconds of speech-like synthetic
audio, default 12 s ≈ the mean Kokoro study clip), response-length transcripts (~600 characters), a
two-turn text context and the quality criterion; the default ``reward.train`` settings (20 epochs,
batch 16, λ = 0.01) and the default backbone (dim 128, audio cut at 20 s). For each pair count
(default 12, 48, 100) a fresh process (so its peak RSS is its own):

* ``model_load_s``: building the model (MiniLM from the PyPI package);
* ``featurize_s``: frozen-encoder features and log-mel of every pair side, cold cache;
* ``train_s`` and ``train_pairs_per_s``: the training loop (pairs seen per second, per-epoch
  evaluation included), ``total_s`` end to end;
* ``peak_rss_mb``: the process's peak resident memory.

Each setting runs ``--repeats`` times (medians reported) with 2 and with 1 torch thread(s), the
process pinned to 2 CPUs; the machine's 1-minute load average before and after is recorded (on a
shared machine absolute times move with it).

    .venv/bin/python benchmarks/performance/reward_train.py [--pairs 12 48 100] [--epochs 20] \\
        [--clip-s 12] [--repeats 3]

Writes benchmarks/out/reward_train.json and prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
OUT = ROOT / "benchmarks" / "out" / "reward_train.json"
RESPONSE = (
    "Sure. Here is a short overview of how it works, step by step, with the main points you asked "
    "about and a couple of practical tips at the end. "
) * 4


def worker(n_pairs: int, epochs: int, clip_s: float, threads: int = 2) -> dict:
    import pandas as pd
    import soundfile as sf
    import torch

    from modprefs.reward.synthetic import SR, speechlike
    from modprefs.reward.train import TrainConfig, build_model, train_reward_model

    torch.set_num_threads(threads)
    tmp = Path(tempfile.mkdtemp(prefix="reward_bench_"))
    rows = []
    for i in range(n_pairs):
        paths = []
        for side in (0, 1):
            p = tmp / f"p{i}_{side}.wav"
            sf.write(p, speechlike(2 * i + side, clip_s), SR)
            paths.append(str(p))
        ctx = [
            {"role": "user", "text": f"Question {i}: how do I get started with gardening?", "audio": None},
            {"role": "model", "text": "Start small, with a few pots of herbs.", "audio": None},
            {"role": "user", "text": "And then what should I plant next?", "audio": None},
        ]
        rows.append(
            {
                "pair_id": f"p{i}",
                "criterion": "quality",
                "category": "human_audio",
                "source": "human",
                "label_modality": "audio",
                "group": f"p{i}",
                "context": ctx,
                "chosen_audio": paths[0],
                "chosen_text": f"{i} {RESPONSE}",
                "chosen_transform": None,
                "rejected_audio": paths[1],
                "rejected_text": f"{i} {RESPONSE[::-1]}",
                "rejected_transform": None,
                "chosen_chars": len(RESPONSE),
                "rejected_chars": len(RESPONSE),
                "margin": 10.0,
            }
        )
    pairs = pd.DataFrame(rows)
    t0 = time.perf_counter()
    model = build_model({"backbone": {"name": "minilm-logmel"}, "pooling": "mean"})
    load_s = time.perf_counter() - t0
    cfg = TrainConfig(epochs=epochs, batch_size=16, center_coef=0.01, val_fraction=0.25, progress=False, seed=0)
    _, metrics = train_reward_model(pairs, tmp / "run", model=model, train=cfg)
    t = metrics["timing"]
    return {
        "n_pairs": n_pairs,
        "n_train": metrics["n_train"],
        "epochs": epochs,
        "clip_s": clip_s,
        "model_load_s": round(load_s, 2),
        "featurize_s": round(t["featurize_s"], 2),
        "train_s": round(t["train_s"], 2),
        "total_s": round(load_s + t["total_s"], 2),
        "train_pairs_per_s": round(t["train_pairs_per_s"], 1),
        "peak_rss_mb": round(t["peak_rss_mb"], 1),
        "train_accuracy": metrics["train"]["accuracy"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, nargs="+", default=[12, 48, 100])
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--clip-s", type=float, default=12.0)
    ap.add_argument("--threads", type=int, nargs="+", default=[2, 1])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--worker-threads", type=int, default=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker is not None:
        print(json.dumps(worker(args.worker, args.epochs, args.clip_s, args.worker_threads)))
        return
    cpus = sorted(os.sched_getaffinity(0))[:2]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    load_before = os.getloadavg()[0]
    results = []
    for n in args.pairs:
        for threads in args.threads:
            runs = []
            for _ in range(args.repeats):
                cmd = [
                    "taskset",
                    "-c",
                    ",".join(map(str, cpus)),
                    sys.executable,
                    __file__,
                    "--worker",
                    str(n),
                    "--worker-threads",
                    str(threads),
                    "--epochs",
                    str(args.epochs),
                    "--clip-s",
                    str(args.clip_s),
                ]
                proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
                runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
            med = {
                k: statistics.median(r[k] for r in runs)
                for k in ("model_load_s", "featurize_s", "train_s", "total_s", "train_pairs_per_s", "peak_rss_mb")
            }
            row = {
                "n_pairs": n,
                "n_train": runs[0]["n_train"],
                "torch_threads": threads,
                "repeats": len(runs),
                **{f"median_{k}": round(v, 2) for k, v in med.items()},
                "train_s_min_max": [min(r["train_s"] for r in runs), max(r["train_s"] for r in runs)],
                "train_accuracy": [r["train_accuracy"] for r in runs],
            }
            results.append(row)
            print(row, file=sys.stderr)
    out = {
        "backbone": "minilm-logmel (dim 128, audio cut at 20 s, no mixer layers), mean pooling",
        "settings": {
            "epochs": args.epochs,
            "batch_size": 16,
            "center_coef": 0.01,
            "val_fraction": 0.25,
            "clip_s": args.clip_s,
        },
        "results": results,
        "pinned_cpus": cpus,
        "load_average_1min": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)},
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "note": "train_pairs_per_s counts pairs through forward+backward; per-epoch scoring of all pairs is inside "
        "train_s. Medians of `repeats` fresh processes: with 2 torch threads on a shared 2-core machine "
        "single runs vary up to 10x (thread contention with other processes); 1 thread is steadier.",
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

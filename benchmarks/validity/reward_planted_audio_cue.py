"""The default speech reward model against its baselines where the truth is an audio cue, not length (issue #51).

The audio version of benchmarks/validity/reward_planted_cue.py, on the workflow's default backbone (``minilm-logmel``:
frozen MiniLM text states + the trainable log-mel conv stack and conditioning mixer, as `reward.model` ships) and real
speech: ``--prompts`` prompts (default 200), one pair of responses each, both spoken by espeak-ng. Each response is a
different excerpt of a sample response (resources/sample/conversations.jsonl), cut at a word boundary to a length
drawn log-uniformly from 40-300 characters, independent of everything else. The planted cue is the **voice**: in
every pair one response is spoken by espeak-ng's ``en-us+f3`` variant (a high-pitched voice) and the other by
``en-us+m3`` (a low one), which side at random; the label prefers the ``f3`` side with probability ``--cue-prob``
(default .9). Nothing in the text says which side is which, so only listening can beat chance, and the length-only,
position, majority and PRISM-like baselines (a PRISM-like score = the cue + Gaussian noise of twice its spread) stay
near .5 (PRISM a little above).

Half the prompts are held out (``val_fraction`` .5); the model must beat every baseline with the prompt-clustered
95 % interval of (model − length) above 0. The same held-out pairs, relabelled by the cue alone, give the length-bias
table (how much of the reward is length).

    .venv/bin/python benchmarks/validity/reward_planted_audio_cue.py [--prompts 200] [--epochs 20] [--seed 0]

Writes benchmarks/out/reward_planted_audio_cue.{json,md} and prints the JSON. About 5 min on 2 CPU threads.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import soundfile as sf

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # reward_planted_cue, beside it

from reward_planted_cue import by_cue  # noqa: E402

from modprefs.reward.evaluate import accuracy_table, length_bias, score_pairs  # noqa: E402
from modprefs.reward.pairs import PAIR_COLUMNS, assign_split  # noqa: E402
from modprefs.reward.train import TrainConfig, train_reward_model  # noqa: E402
from modprefs.speech.espeak_backend import EspeakNgBackend  # noqa: E402

OUT = ROOT / "benchmarks" / "out"
VOICES = {True: "en-us+f3", False: "en-us+m3"}  # cue side -> voice
MODEL = {"backbone": {"name": "minilm-logmel"}, "pooling": "mean"}


def sample_words(path: Path = ROOT / "resources" / "sample" / "conversations.jsonl") -> list[str]:
    """Every word of the sample's assistant responses, in order (the excerpts' source)."""
    words: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        for turn in row.get("conversation_history", []):
            if turn.get("role") == "model":
                words += str(turn.get("content", "")).split()
    if not words:
        raise SystemExit(f"{path}: no assistant responses found")
    return words


def excerpt(words: list[str], start: int, chars: int) -> str:
    """Words from ``start`` (wrapping) until the excerpt has at least ``chars`` characters."""
    out: list[str] = []
    i = start
    while len(" ".join(out)) < chars:
        out.append(words[i % len(words)])
        i += 1
    return " ".join(out)


def build(n_prompts: int, seed: int, cue_prob: float, directory: Path) -> pd.DataFrame:
    """The pairs (the workflow's pair columns + ``cue_right``), their WAVs rendered into ``directory``."""
    rng = np.random.default_rng(seed)
    words = sample_words()
    voices = {cue: EspeakNgBackend(voice=v) for cue, v in VOICES.items()}
    rows = []
    for i in range(n_prompts):
        f3_side = int(rng.integers(2))  # response 0 or 1 in the high voice
        sides = []
        for response in (0, 1):
            text = excerpt(words, int(rng.integers(len(words))), int(np.exp(rng.uniform(np.log(40), np.log(300)))))
            high = response == f3_side
            path = directory / f"p{i:03d}_{response}.wav"
            backend = voices[high]
            sf.write(path, backend.synthesize(text), backend.sample_rate)
            prism = float(high) + rng.normal(scale=2.0)
            sides.append({"text": text, "path": str(path), "high": high, "prism": prism})
        follows_cue = rng.random() < cue_prob
        c = f3_side if follows_cue else 1 - f3_side
        ch, rj = sides[c], sides[1 - c]
        rows.append(
            {
                "pair_id": f"audio_cue:{i}",
                "criterion": "quality",
                "category": "planted_voice_cue",
                "source": "simulated",
                "label_modality": "audio",
                "group": f"p{i:03d}",
                "prompt_id": f"p{i:03d}",
                "context": [],
                "chosen_audio": ch["path"],
                "chosen_text": ch["text"],
                "chosen_chars": len(ch["text"]),
                "rejected_audio": rj["path"],
                "rejected_text": rj["text"],
                "rejected_chars": len(rj["text"]),
                "margin": 0.0,
                "n_raters": 0,
                "chosen_response": c,
                "rejected_response": 1 - c,
                "chosen_prism": ch["prism"],
                "rejected_prism": rj["prism"],
                "cue_right": bool(ch["high"]),
            }
        )
    pairs = pd.DataFrame(rows)
    return pairs[[c for c in PAIR_COLUMNS if c in pairs.columns] + ["cue_right"]]


def run(pairs: pd.DataFrame, epochs: int, seed: int, cache_dir: Path) -> dict[str, Any]:
    """Train the default backbone (half the prompts held out) and evaluate on the held-out prompts."""
    cfg = TrainConfig(epochs=epochs, batch_size=16, center_coef=0.01, val_fraction=0.5, progress=False, seed=seed)
    t0 = time.perf_counter()
    model, metrics = train_reward_model(pairs.drop(columns="cue_right"), None, MODEL, cfg, cache_dir=cache_dir)
    train_s = time.perf_counter() - t0
    split = assign_split(pairs, cfg.val_fraction, seed).tolist()
    scores = score_pairs(model, pairs.drop(columns="cue_right"), split)
    val = scores[scores["split"] == "val"]
    acc = accuracy_table(scores, seed=seed)
    row = acc[(acc["split"] == "val") & (acc["level"] == "micro")].iloc[0].to_dict()
    cue_right = pairs.loc[val.index, "cue_right"].to_numpy()
    lb = length_bias(by_cue(val, cue_right)).iloc[0].to_dict()
    on_cue = np.mean((val["r_chosen"].to_numpy() > val["r_rejected"].to_numpy()) == cue_right)
    return {
        "held_out": {k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()},
        "length_bias_vs_cue": {k: (v.item() if hasattr(v, "item") else v) for k, v in lb.items()},
        "accuracy_on_cue_alone": float(on_cue),
        "labels_follow_cue_held_out": float(np.mean(cue_right)),
        "train_seconds": round(train_s, 1),
        "final_train_accuracy": metrics["train"]["accuracy"],
    }


def markdown(result: dict[str, Any]) -> str:
    h = result["run"]["held_out"]
    lines = [
        f"# Planted voice cue, default backbone ({result['prompts']} prompts, {h['n_prompts']} held out)",
        "",
        "| model [95 % CI] | length | position | majority | PRISM-like | model − length [95 % CI] | beats length "
        "| acc. on the cue alone | labels follow the cue |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {h['model']:.3f} [{h['ci_low']:.3f}, {h['ci_high']:.3f}] | {h['length']:.3f} | {h['position']:.3f} | "
        f"{h['majority']:.3f} | {h['prism']:.3f} | {h['minus_length']:+.3f} [{h['minus_length_ci_low']:+.3f}, "
        f"{h['minus_length_ci_high']:+.3f}] | {h['beats_length']} | {result['run']['accuracy_on_cue_alone']:.3f} | "
        f"{result['run']['labels_follow_cue_held_out']:.3f} |",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--prompts", type=int, default=200)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--cue-prob", type=float, default=0.9)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(2)
    with tempfile.TemporaryDirectory(prefix="audio_cue_") as tmp:
        t0 = time.perf_counter()
        pairs = build(args.prompts, args.seed, args.cue_prob, Path(tmp))
        render_s = time.perf_counter() - t0
        result: dict[str, Any] = {
            "prompts": args.prompts,
            "epochs": args.epochs,
            "cue_prob": args.cue_prob,
            "seed": args.seed,
            "voices": {"cue side": VOICES[True], "other side": VOICES[False]},
            "model": MODEL,
            "render_seconds": round(render_s, 1),
            "run": run(pairs, args.epochs, args.seed, Path(tmp) / "cache"),
            "machine": {"python": platform.python_version(), "platform": platform.platform()},
        }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "reward_planted_audio_cue.json").write_text(json.dumps(result, indent=2, default=float) + "\n")
    (args.out / "reward_planted_audio_cue.md").write_text(markdown(result))
    print(json.dumps(result, indent=2, default=float))
    return result


if __name__ == "__main__":
    main()

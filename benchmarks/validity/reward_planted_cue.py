"""A reward model against its baselines where the truth is known and is not length (issue #51).

Simulated preferences on ``--prompts`` prompts (default 200), one pair of responses each. Every response has a
length (characters, log-uniform 40-800, independent of everything else), a planted cue (a standard normal
"content" feature) and six noise features; the reward model sees [standardised log length, cue, noise] through
the ``features`` backbone (a linear reward over given features: the training loop, loss, split, evaluation,
baselines and intervals are the workflow's own; the audio and text encoders are not exercised). Response 0/1
is assigned at random and a PRISM-like score is the cue plus noise of twice its spread.

* **cue**: the label follows the cue alone, P(A preferred) = σ(3 · (cue_A − cue_B)). The model must beat
  length-only, position, majority and PRISM on the held-out prompts with the prompt-clustered 95 % interval
  of (model − length) above 0.
* **cue + length**: the labels also prefer the longer response, logit 3 · Δcue + 2 · Δlog length. A plain model
  learns the length preference; ``length_control: covariate`` puts β · Δlog length in the BT logit instead and
  ``balanced`` weighs longer- and shorter-chosen training pairs the same. The length-bias table of the held-out
  pairs relabelled by the cue alone (:func:`by_cue`) says how much of a reward is length: its gap (accuracy on
  pairs whose longer response is the cue's choice − on pairs whose shorter one is) and the reward-length
  correlation should shrink under length control, while the accuracy on the cue alone stays or rises.

    .venv/bin/python benchmarks/validity/reward_planted_cue.py [--prompts 200] [--seed 0]

Writes benchmarks/out/reward_planted_cue.{json,md,png} and prints the JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from modprefs.reward.evaluate import accuracy_table, length_bias  # noqa: E402
from modprefs.reward.model import pair_examples  # noqa: E402
from modprefs.reward.pairs import assign_split  # noqa: E402
from modprefs.reward.run_outputs import scores_table  # noqa: E402
from modprefs.reward.train import TrainConfig, train_reward_model  # noqa: E402

OUT = ROOT / "benchmarks" / "out"
N_NOISE = 6


def simulate(n_prompts: int, seed: int, length_weight: float) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """(pairs, chosen features (n, 8), rejected features (n, 8)); features = [z log length, cue, noise x 6].

    The label: P(response A preferred) = σ(3 · Δcue + length_weight · Δlog length)."""
    rng = np.random.default_rng(seed)
    log_len = rng.uniform(np.log(40), np.log(800), size=(n_prompts, 2))
    cue = rng.normal(size=(n_prompts, 2))
    noise = rng.normal(size=(n_prompts, 2, N_NOISE))
    prism = cue + rng.normal(scale=2.0, size=(n_prompts, 2))
    logit = 3.0 * (cue[:, 0] - cue[:, 1]) + length_weight * (log_len[:, 0] - log_len[:, 1])
    a_wins = rng.random(n_prompts) < 1 / (1 + np.exp(-logit))
    c, r = np.where(a_wins, 0, 1), np.where(a_wins, 1, 0)
    z = (log_len - log_len.mean()) / log_len.std()
    feats = np.concatenate([z[..., None], cue[..., None], noise], axis=2).astype(np.float32)
    idx = np.arange(n_prompts)
    pairs = pd.DataFrame(
        {
            "pair_id": [f"cue:{i}" for i in idx],
            "criterion": "quality",
            "category": "planted_cue",
            "source": "simulated",
            "group": [f"p{i}" for i in idx],
            "chosen_audio": None,
            "chosen_text": "",
            "rejected_audio": None,
            "rejected_text": "",
            "margin": 0.0,
            "chosen_chars": np.round(np.exp(log_len[idx, c])).astype(int),
            "rejected_chars": np.round(np.exp(log_len[idx, r])).astype(int),
            "chosen_response": c,
            "rejected_response": r,
            "chosen_prism": prism[idx, c],
            "rejected_prism": prism[idx, r],
            "cue_right": cue[idx, c] > cue[idx, r],  # the planted cue alone would choose this side
        }
    )
    return pairs, feats[idx, c], feats[idx, r]


def run(pairs: pd.DataFrame, xc: np.ndarray, xr: np.ndarray, length_control: str, seed: int) -> dict[str, Any]:
    """Train (half the prompts held out) and evaluate: the held-out comparison row and length-bias row."""
    cfg = TrainConfig(
        epochs=60,
        batch_size=32,
        lr=0.05,
        center_coef=0.01,
        val_fraction=0.5,
        length_control=length_control,
        progress=False,
        seed=seed,
    )
    backbone = {"name": "features", "dim": xc.shape[1]}
    model, metrics = train_reward_model(
        pairs, None, {"backbone": backbone, "pooling": "mean"}, cfg, features=(list(xc), list(xr))
    )
    ex_c, ex_r = pair_examples(pairs, model.criteria, (list(xc), list(xr)))
    scores = model.score(ex_c + ex_r)
    split = assign_split(pairs, cfg.val_fraction, seed).tolist()
    s = scores_table(pairs, split, scores[: len(pairs)], scores[len(pairs) :])
    val = s[s["split"] == "val"]
    acc = accuracy_table(s, seed=seed)
    row = acc[(acc["split"] == "val") & (acc["level"] == "micro")].iloc[0].to_dict()
    lb = length_bias(by_cue(val, pairs.loc[val.index, "cue_right"].to_numpy())).iloc[0].to_dict()
    cue_right = pairs.loc[val.index, "cue_right"].to_numpy()
    on_cue = np.mean((val["r_chosen"].to_numpy() > val["r_rejected"].to_numpy()) == cue_right)
    longer = np.sign(val["chosen_chars"].to_numpy() - val["rejected_chars"].to_numpy())
    return {
        "length_control": length_control,
        "length_beta": metrics["length_beta"],
        "held_out": {k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()},
        "length_bias": {k: (v.item() if hasattr(v, "item") else v) for k, v in lb.items()},
        "gap_longer_chosen_minus_rejected": float(lb["accuracy_longer_chosen"] - lb["accuracy_longer_rejected"]),
        "accuracy_on_cue_alone": float(on_cue),
        "share_model_prefers_longer": float(np.mean(np.sign(val["r_chosen"] - val["r_rejected"]) == longer)),
        "share_labels_prefer_longer": float(np.mean(longer > 0)),
    }


def by_cue(val: pd.DataFrame, cue_right: np.ndarray) -> pd.DataFrame:
    """The held-out scores relabelled by the planted cue alone (chosen = the side the cue prefers): the length-bias
    table on these says how much of the model's preference is length rather than the cue."""
    swap = ~cue_right
    out = val.copy()
    for a, b in (("r_chosen", "r_rejected"), ("chosen_chars", "rejected_chars")):
        out.loc[swap, [a, b]] = val.loc[swap, [b, a]].to_numpy()
    return out


def figure(results: dict[str, Any], target: Path) -> None:
    """Left: held-out accuracy (cue scenario) beside the baselines with the model's prompt-clustered interval;
    right: the length-bias gap and reward-length correlation, plain vs covariate (cue + length scenario)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.4))
    h = results["cue"]["held_out"]
    names = ["model", "length", "position", "majority", "prism"]
    vals = [h[k] for k in names]
    ax.barh(names, vals, color=["tab:blue"] + ["grey"] * 4)
    ax.errorbar(h["model"], 0, xerr=[[h["model"] - h["ci_low"]], [h["ci_high"] - h["model"]]], color="k", capsize=3)
    ax.axvline(0.5, color="k", linestyle="--", linewidth=0.8)
    ax.set(xlim=(0, 1), title=f"cue only: held out, {h['n_prompts']} prompts", xlabel="accuracy (ties ½)")
    ax.invert_yaxis()
    runs = [results[f"cue_length_{how}"] for how in ("plain", "covariate", "balanced")]
    x = np.arange(3)
    bx.bar(x - 0.2, [r["gap_longer_chosen_minus_rejected"] for r in runs], 0.4, label="acc. longer chosen − rejected")
    bx.bar(x + 0.2, [r["length_bias"]["pearson_r"] for r in runs], 0.4, label="reward–length r")
    bx.set_xticks(x, ["plain", "length covariate", "length-balanced"])
    bx.axhline(0, color="k", linewidth=0.8)
    bx.set(title="cue + length labels: held-out length bias vs the cue")
    bx.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(target, dpi=100)
    plt.close(fig)


def markdown(results: dict[str, Any]) -> str:
    """The benchmark's numbers as a Markdown table."""
    lines = [
        "| scenario | length control | held-out prompts | model [95 % CI] | length | position | majority | PRISM "
        "| model − length [95 % CI] | vs cue: gap longer chosen − rejected | vs cue: reward–length r "
        "| acc. on cue alone | model prefers longer | labels prefer longer | β |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        if not isinstance(r, dict) or "held_out" not in r:
            continue
        h, lb = r["held_out"], r["length_bias"]
        beta = "-" if r["length_beta"] is None else f"{r['length_beta']:.3f}"
        lines.append(
            f"| {name} | {r['length_control']} | {h['n_prompts']} | {h['model']:.3f} [{h['ci_low']:.3f}, "
            f"{h['ci_high']:.3f}] | {h['length']:.3f} | {h['position']:.3f} | {h['majority']:.3f} | "
            f"{h['prism']:.3f} | {h['minus_length']:+.3f} [{h['minus_length_ci_low']:+.3f}, "
            f"{h['minus_length_ci_high']:+.3f}] | {r['gap_longer_chosen_minus_rejected']:+.3f} | "
            f"{lb['pearson_r']:+.3f} | {r['accuracy_on_cue_alone']:.3f} | {r['share_model_prefers_longer']:.3f} | "
            f"{r['share_labels_prefer_longer']:.3f} | {beta} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--prompts", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    results: dict[str, Any] = {"prompts": args.prompts, "seed": args.seed}
    cue = simulate(args.prompts, args.seed, length_weight=0.0)
    results["cue"] = run(*cue, "none", args.seed)
    both = simulate(args.prompts, args.seed + 1, length_weight=2.0)
    results["cue_length_plain"] = run(*both, "none", args.seed)
    results["cue_length_covariate"] = run(*both, "covariate", args.seed)
    results["cue_length_balanced"] = run(*both, "balanced", args.seed)
    h = results["cue"]["held_out"]
    beaten = {b: h["model"] > h[b] for b in ("length", "position", "majority", "prism")}
    results["verdict"] = {
        "cue_beats_every_baseline": all(beaten.values()) and h["ci_low"] > max(h[b] for b in beaten),
        "cue_beats_length_interval_above_0": h["minus_length_ci_low"] > 0,
        **{
            f"{how}_cuts_length_gap": abs(results[f"cue_length_{how}"]["gap_longer_chosen_minus_rejected"])
            < abs(results["cue_length_plain"]["gap_longer_chosen_minus_rejected"])
            for how in ("covariate", "balanced")
        },
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "reward_planted_cue.json").write_text(json.dumps(results, indent=2, default=float) + "\n")
    (args.out / "reward_planted_cue.md").write_text(markdown(results))
    figure(results, args.out / "reward_planted_cue.png")
    print(json.dumps(results["verdict"], indent=2))
    print(markdown(results))
    return results


if __name__ == "__main__":
    main()

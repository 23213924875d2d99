"""What a reward model's scores on its pairs come to, and a training run's files: pairwise accuracy and mean
rewards (:func:`pair_accuracy`, :func:`reward_summary`), the per-pair scores table, the training curve, and the run
folder :func:`modprefs.reward.train.train_reward_model` writes (:func:`write_run`). Evaluation
(:mod:`modprefs.reward.evaluate`) reads its accuracy and scores with the same functions.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from modprefs.reward.model import RewardModel


def pair_accuracy(r_chosen: np.ndarray, r_rejected: np.ndarray, tie_tol: float = 1e-6) -> dict[str, float]:
    """Correct / wrong / tie counts; accuracy over decided pairs, and with ties as half."""
    d = np.asarray(r_chosen, dtype=np.float64) - np.asarray(r_rejected, dtype=np.float64)
    ties = int(np.sum(np.abs(d) <= tie_tol))
    correct = int(np.sum(d > tie_tol))
    wrong = int(len(d) - ties - correct)
    decided = correct + wrong
    return {
        "n": int(len(d)),
        "correct": correct,
        "wrong": wrong,
        "ties": ties,
        "accuracy": correct / decided if decided else float("nan"),
        "accuracy_ties_half": (correct + 0.5 * ties) / len(d) if len(d) else float("nan"),
    }


def reward_summary(r_chosen: np.ndarray, r_rejected: np.ndarray) -> dict[str, float]:
    if len(r_chosen) == 0:
        return {"mean_chosen": float("nan"), "mean_rejected": float("nan"), "mean_reward": float("nan")}
    return {
        "mean_chosen": float(np.mean(r_chosen)),
        "mean_rejected": float(np.mean(r_rejected)),
        "mean_reward": float(np.mean(np.concatenate([r_chosen, r_rejected]))),
        "mean_pair_sum": float(np.mean(r_chosen + r_rejected)),
    }


def scores_table(
    pairs: pd.DataFrame, split: Sequence[str] | np.ndarray, rc: np.ndarray, rr: np.ndarray
) -> pd.DataFrame:
    cols = [
        c
        for c in (
            "pair_id",
            "criterion",
            "category",
            "source",
            "label_modality",
            "group",
            "chosen_chars",
            "rejected_chars",
            "chosen_response",
            "rejected_response",
            "chosen_prism",
            "rejected_prism",
        )
        if c in pairs.columns
    ]
    out = pairs[cols].copy()
    out["split"] = list(split)
    out["r_chosen"], out["r_rejected"] = rc, rr
    return out


def write_run(
    model: RewardModel,
    metrics: dict[str, Any],
    pairs: pd.DataFrame,
    split: Sequence[str] | np.ndarray,
    rc: np.ndarray,
    rr: np.ndarray,
    run_dir: str | os.PathLike[str],
) -> Path:
    from modprefs.io import write_csv, write_json

    run_dir = Path(run_dir)
    model.save(run_dir)
    write_csv(scores_table(pairs, split, rc, rr), run_dir / "scores.csv")
    plot_curve(
        metrics["history"],
        run_dir / "curve.png",
        title=f"{metrics['backbone']['name']} / {metrics['pooling']} / λ={metrics['center_coef']}",
    )
    write_json(metrics, run_dir / "metrics.json")
    return run_dir


def plot_curve(history: list[dict[str, Any]], target: str | os.PathLike[str], title: str = "") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from modprefs.io import atomic_path

    h = pd.DataFrame(history)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    axes[0].plot(h["epoch"], h["train_loss"], label="train")
    if "val_loss" in h:
        axes[0].plot(h["epoch"], h["val_loss"], label="val")
    axes[0].set(title="loss", xlabel="epoch")
    axes[1].plot(h["epoch"], h["train_accuracy"], label="train (running, during the epoch)")
    if "val_accuracy" in h:
        axes[1].plot(h["epoch"], h["val_accuracy"], label="val")
    axes[1].set(title="pairwise accuracy", xlabel="epoch", ylim=(0, 1.02))
    axes[2].plot(h["epoch"], h["train_mean_chosen"], label="chosen")
    axes[2].plot(h["epoch"], h["train_mean_rejected"], label="rejected")
    axes[2].plot(h["epoch"], h["train_mean_reward"], label="mean", linestyle="--")
    axes[2].axhline(0, color="grey", linewidth=0.5)
    axes[2].set(title="mean reward (train, running)", xlabel="epoch")
    for ax in axes:
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    with atomic_path(target) as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)

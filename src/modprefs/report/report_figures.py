"""Figures the report draws from tables (PNG bytes, 150 dpi): where a reader would rather look than read.

* :func:`thresholds_figure`: each modality's binarisation threshold per rule with its bootstrap interval
  (``thresholds_recommendations.csv``);
* :func:`reward_accuracy_figure`: reward-model held-out accuracy by pair type with Wilson 95 % intervals and
  the 50 % chance line (``results/reward/summary/pair_types.csv``).

The analyses' own figures (Figures 2-4, AI-human) are PNG files already and are embedded as they are.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

COLORS = {"audio": "#1f77b4", "text": "#d62728"}


def _png(fig) -> bytes:  # noqa: ANN001 (a matplotlib Figure)
    import matplotlib.pyplot as plt  # noqa: PLC0415

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=150, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _pyplot():
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    return plt


def thresholds_figure(recs: pd.DataFrame) -> bytes | None:
    """Threshold (rating-gap points) by rule, one marker per modality with its interval; None without rows."""
    needed = {"condition", "rule", "threshold", "threshold_lo", "threshold_hi"}
    if recs is None or recs.empty or not needed <= set(recs.columns):
        return None
    data = recs.dropna(subset=["threshold"])
    if data.empty:
        return None
    plt = _pyplot()
    rules = list(dict.fromkeys(data["rule"].astype(str)))
    conditions = list(dict.fromkeys(data["condition"].astype(str)))
    fig, ax = plt.subplots(figsize=(6.4, 0.9 + 0.55 * len(rules)))
    offsets = np.linspace(-0.15, 0.15, len(conditions)) if len(conditions) > 1 else [0.0]
    for off, condition in zip(offsets, conditions, strict=True):
        part = data[data["condition"].astype(str) == condition].set_index("rule")
        ys = [rules.index(r) + off for r in part.index.astype(str)]
        est = part["threshold"].to_numpy(float)
        lo = np.where(np.isnan(part["threshold_lo"].to_numpy(float)), est, part["threshold_lo"].to_numpy(float))
        hi = np.where(np.isnan(part["threshold_hi"].to_numpy(float)), est, part["threshold_hi"].to_numpy(float))
        ax.errorbar(
            est, ys, xerr=[est - lo, hi - est], fmt="o", capsize=3, color=COLORS.get(condition), label=condition
        )
    ax.set_yticks(range(len(rules)), [r.replace("_", " ") for r in rules])
    ax.invert_yaxis()
    ax.set_xlabel("rating gap threshold (scale points)")
    ax.legend(loc="best", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)


def wilson_interval(successes: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion (statsmodels' ``proportion_confint``)."""
    from statsmodels.stats.proportion import proportion_confint  # noqa: PLC0415

    lo, hi = proportion_confint(round(successes), n, alpha=1 - level, method="wilson")
    return float(lo), float(hi)


def reward_accuracy_figure(pair_types: pd.DataFrame) -> bytes | None:
    """Held-out accuracy by pair type and run, Wilson 95 % intervals, the length-only baseline on the same pairs
    (a bar, where the table has ``val_length``), chance at .5; None without held-out pairs."""
    if (
        pair_types is None
        or pair_types.empty
        or not {"val_n", "val_accuracy", "label", "run"} <= set(pair_types.columns)
    ):
        return None
    data = pair_types[(pair_types["val_n"].fillna(0) > 0) & pair_types["val_accuracy"].notna()]
    if data.empty:
        return None
    plt = _pyplot()
    labels = list(dict.fromkeys(data["label"].astype(str)))
    runs = list(dict.fromkeys(data["run"].astype(str)))
    fig, ax = plt.subplots(figsize=(6.4, 1.2 + 0.3 * len(labels) * max(1, len(runs) / 2)))
    step = 0.7 / max(1, len(runs))
    for j, run in enumerate(runs):
        part = data[data["run"].astype(str) == run]
        ys = np.array([labels.index(lab) for lab in part["label"].astype(str)]) + (j - (len(runs) - 1) / 2) * step
        acc = part["val_accuracy"].to_numpy(float)
        n = part["val_n"].to_numpy(int)
        bounds = np.array([wilson_interval(a * k, k) for a, k in zip(acc, n, strict=True)])
        # clipped at 0: statsmodels' Wilson bound of 0 successes can come back as +5.6e-17
        xerr = np.clip([acc - bounds[:, 0], bounds[:, 1] - acc], 0.0, None)
        ax.errorbar(acc, ys, xerr=xerr, fmt="o", capsize=2, label=run, markersize=4)
        if "val_length" in part:  # the length-only baseline on the same pairs
            ax.plot(part["val_length"].to_numpy(float), ys, "|", color="black", markersize=7)
        for y, k in zip(ys, n, strict=True):  # n beside the plot, outside the data area
            ax.annotate(f"n={k}", (1.01, y), xycoords=("axes fraction", "data"), va="center", fontsize=6)
    ax.axvline(0.5, color="grey", linestyle="--", linewidth=1)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel("held-out accuracy (chosen scored above rejected), Wilson 95 % intervals; | length-only")
    ax.legend(
        loc="upper center",
        bbox_to_anchor=(0.5, -0.18),
        ncol=min(4, len(runs)),
        fontsize=7,
        title="run",
        title_fontsize=7,
    )
    return _png(fig)

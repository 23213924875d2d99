"""The AI–human alignment figures (paper §4.4): AI vs human clip means, AI differentiation vs per-prompt ICC.

The tables they draw: :mod:`modprefs.stats.tables.ai_alignment` (Table 5) and
:mod:`modprefs.stats.tables.ai_alignment_table6`.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from modprefs.scale import PAPER_SCALE, RatingScale
from modprefs.stats.tables.scale_units import scale_label
from modprefs.study.terms import CONDITIONS as MODALITIES


def _figure(ncols: int, width: float = 10.0):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, 4.2))
    FigureCanvasAgg(fig)
    return fig, fig.subplots(1, ncols, squeeze=False)[0]


def figure_ai_human(clips: pd.DataFrame, target: str | os.PathLike[str], scale: RatingScale | None = None) -> None:
    """Clip-level mean AI rating against mean human rating, one panel per modality, with the identity
    line and the MAE (Table 5's first block), axes over the rating ``scale`` (default 1..100). PNG written
    atomically."""
    from modprefs.stats.figures import COLOURS, save_png

    lo, hi = (1.0, 100.0) if scale is None else (scale.min, scale.max)
    pad = (hi - lo) / 99
    fig, axes = _figure(2)
    for ax, m in zip(axes, MODALITIES):
        d = clips.dropna(subset=[f"ai_{m}", f"human_{m}"])
        ax.plot([lo, hi], [lo, hi], color="#888888", lw=1, ls="--")
        if len(d):
            mae = (d[f"ai_{m}"] - d[f"human_{m}"]).abs().mean()
            ax.scatter(d[f"human_{m}"], d[f"ai_{m}"], s=14, alpha=0.7, color=COLOURS[m])
            ax.set_title(f"{m}: {len(d)} clips, MAE = {mae:.2f}", fontsize=10)
        else:
            ax.set_title(f"{m}: no clips with AI and human means", fontsize=10)
        ax.set(
            xlim=(lo - pad, hi + pad),
            ylim=(lo - pad, hi + pad),
            xlabel=f"mean human rating ({m})",
            ylabel=f"mean AI rating ({m})",
        )
        ax.grid(alpha=0.3)
    fig.suptitle("Table 5: clip-level AI vs human mean ratings", fontsize=11)
    fig.tight_layout()
    save_png(fig, target)


def figure_ai_diff_icc(
    per_prompt: pd.DataFrame, target: str | os.PathLike[str], scale: RatingScale | None = None
) -> None:
    """Human per-prompt ICC(2,1) against AI differentiation (rating points of ``scale``, default the paper's
    1..100) by modality with per-modality OLS lines; influential points (Cook's D > 4/n) drawn as crosses
    (Table 6). PNG written atomically."""
    from modprefs.stats.figures import COLOURS, save_png

    on = scale or PAPER_SCALE
    fig, (ax,) = _figure(1, 6.4)
    used = per_prompt[per_prompt["usable"]]
    for m in MODALITIES:
        d = used[used["modality"] == m]
        if d.empty:
            continue
        infl = d["influential"].astype(bool)
        ax.scatter(d.loc[~infl, "ai_diff"], d.loc[~infl, "icc_2_1"], s=16, alpha=0.7, color=COLOURS[m], label=m)
        ax.scatter(d.loc[infl, "ai_diff"], d.loc[infl, "icc_2_1"], s=30, marker="x", color=COLOURS[m])
        if len(d) > 2 and d["ai_diff"].nunique() > 1:
            b, a = np.polyfit(d["ai_diff"], d["icc_2_1"], 1)
            xs = np.linspace(d["ai_diff"].min(), d["ai_diff"].max(), 50)
            ax.plot(xs, a + b * xs, color=COLOURS[m], lw=1.5, label=f"{m}: slope {b:.4f}")
    ax.axhline(0, color="#888888", lw=0.8)
    ax.set(
        xlabel=f"AI differentiation |mean AI(resp 0) - mean AI(resp 1)| (points, scale {scale_label(on)})",
        ylabel="human per-prompt ICC(2,1)",
        title="Table 6: AI differentiation and human agreement (x: Cook's D > 4/n)",
    )
    ax.title.set_fontsize(9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_png(fig, target)


def figure_placeholder(reason: str, target: str | os.PathLike[str]) -> None:
    """A PNG that states why an analysis was skipped (so a rule's declared figure output exists)."""
    import textwrap

    from modprefs.stats.figures import save_png

    fig, (ax,) = _figure(1, 6.4)
    ax.axis("off")
    ax.text(
        0.5,
        0.5,
        "skipped:\n" + textwrap.fill(reason, 60),
        ha="center",
        va="center",
        fontsize=10,
        transform=ax.transAxes,
    )
    save_png(fig, target)

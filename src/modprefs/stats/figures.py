"""Figures (matplotlib, Agg canvas, no pyplot state): Figure 2 and an atomic PNG writer.

Figures are built with :class:`matplotlib.figure.Figure` and rendered by the Agg canvas, so no
global backend is set and nothing needs a display.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from modprefs.io import atomic_path
from modprefs.stats.tables.thresholds import prompt_mean_gaps
from modprefs.study.terms import PAPER_COLUMN_ORDER as CONDITIONS  # Tables 1 and 3

COLOURS = {"text": "#1f77b4", "audio": "#d62728"}


def save_png(fig: Figure, target: str | os.PathLike[str], dpi: int = 150) -> None:
    """Render ``fig`` to a PNG at ``target`` atomically (temporary file + rename, :func:`modprefs.io.atomic_path`)."""
    if fig.canvas is None or not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    with atomic_path(target) as tmp:
        fig.savefig(tmp, format="png", dpi=dpi, bbox_inches="tight")


def ecdf(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted finite values and their empirical CDF (i/n, i = 1..n)."""
    x = np.sort(np.asarray(values, dtype=float))
    x = x[np.isfinite(x)]
    return x, np.arange(1, len(x) + 1) / len(x) if len(x) else np.array([])


def _panel(ax, data: dict[str, np.ndarray], title: str, xlabel: str, unit: str, max_gap: float = 100.0) -> None:
    for c in CONDITIONS:
        x, y = ecdf(data.get(c, np.array([])))
        if len(x):
            ax.step(
                np.concatenate([[0.0], x]),
                np.concatenate([[0.0], y]),
                where="post",
                color=COLOURS[c],
                label=f"{c} ({unit} = {len(x)}; M = {x.mean():.1f}, Mdn = {np.median(x):.1f})",
            )
            ax.axvline(x.mean(), color=COLOURS[c], ls=":", lw=1)
        else:
            ax.plot([], [], color=COLOURS[c], label=f"{c}: no data")
    ax.set_xlim(0, max_gap)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("Cumulative proportion")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)


def figure2_gap_cdf(
    gaps: pd.DataFrame, target: str | os.PathLike[str] | None = None, dpi: int = 150, max_gap: float = 100.0
) -> Figure:
    """Figure 2 (§4.1): cumulative distribution of the rating gap on decisive trials, by modality.

    Left (the paper's caption): the **mean per-prompt** gap — each prompt's mean ``|r_0 - r_1|`` over
    its decisive trials (:func:`modprefs.stats.tables.thresholds.prompt_mean_gaps`), one point per prompt
    and modality. Right: the **per-trial** gaps of decisive trials, the distribution the §4.1
    Mann–Whitney U compares. Dotted lines mark the means. ``gaps`` is
    :func:`modprefs.stats.tables.thresholds.trial_gaps`' output; with ``target`` the PNG is written
    atomically. A modality without decisive trials is drawn as 'no data', never an error. ``max_gap``: the
    x axis' end (the scale's max - min; 100 for the paper's 1-100 slider).
    """
    dec = gaps[gaps["kind"] == "decisive"]
    per_prompt = prompt_mean_gaps(gaps, "decisive")
    fig = Figure(figsize=(10, 4.2))
    FigureCanvasAgg(fig)
    ax1, ax2 = fig.subplots(1, 2, sharey=True)
    _panel(
        ax1,
        {c: per_prompt.loc[per_prompt.condition == c, "mean_gap"].to_numpy() for c in CONDITIONS},
        "Mean per-prompt rating gap (decisive trials)",
        "Mean |rating difference| per prompt",
        "prompts",
        max_gap,
    )
    _panel(
        ax2,
        {c: dec.loc[dec.condition == c, "gap"].to_numpy() for c in CONDITIONS},
        "Per-trial rating gap (decisive trials)",
        "|rating difference| on a trial",
        "trials",
        max_gap,
    )
    ax2.set_ylabel("")
    fig.suptitle("Figure 2: rating gap when a preference (not a tie) was declared", fontsize=11)
    fig.tight_layout()
    if target is not None:
        save_png(fig, target, dpi=dpi)
    return fig

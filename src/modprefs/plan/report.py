"""The plan's outputs: design table, recommendation, priors, figures and a self-contained HTML page.

:func:`plan_report_html` builds the plan's own report page with :func:`modprefs.report.html.build_report`;
the workflow's main report is left alone (the plan is an optional target).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from modprefs.plan.grid import Targets
from modprefs.plan.planner import PlanResult
from modprefs.plan.priors import Priors
from modprefs.scale import RatingScale
from modprefs.study.terms import CONDITIONS

SCENARIO_STYLE = {"central": "-", "pessimistic": ":", "optimistic": "--"}


def _panels(
    table: pd.DataFrame,
    metrics: list[tuple[str, str]],
    target_of: dict[str, float | None],
    path: str | os.PathLike[str],
    title: str,
    ylim: tuple[float, float] | None = None,
) -> None:
    """Lines of ``metric`` vs raters per condition, one per prompt count (central: solid, with a band
    from the pessimistic to the optimistic scenario); one column of panels per trials value."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from modprefs.stats.figures import save_png

    trials = sorted(table["trials"].unique())
    fig, axes = plt.subplots(len(metrics), len(trials), figsize=(4.2 * len(trials), 3.2 * len(metrics)), squeeze=False)
    prompts = sorted(table["prompts"].unique())
    colours = plt.get_cmap("viridis")(np.linspace(0.1, 0.85, len(prompts)))
    for i, (metric, label) in enumerate(metrics):
        for j, t in enumerate(trials):
            ax = axes[i, j]
            for colour, p in zip(colours, prompts):
                sub = table[(table["prompts"] == p) & (table["trials"] == t)]
                central = sub[sub["scenario"] == "central"].sort_values("raters")
                if central.empty or metric not in central:
                    continue
                ax.plot(central["raters"], central[metric], "-o", ms=3, color=colour, label=f"{p} prompts")
                lo = sub[sub["scenario"] == "pessimistic"].sort_values("raters")
                hi = sub[sub["scenario"] == "optimistic"].sort_values("raters")
                if len(lo) == len(central) and len(hi) == len(central):
                    ax.fill_between(central["raters"], lo[metric], hi[metric], color=colour, alpha=0.15, lw=0)
            if target_of.get(metric) is not None:
                ax.axhline(target_of[metric], color="grey", ls="--", lw=1)
            ax.set(xlabel="raters per condition", ylabel=label, title=f"{t} trials per participant")
            if ylim:
                ax.set_ylim(*ylim)
            ax.legend(fontsize=7)
    fig.suptitle(title + " (band: pessimistic to optimistic priors)", fontsize=10)
    fig.tight_layout()
    save_png(fig, path)
    plt.close(fig)


def figures(result: PlanResult, targets: Targets, folder: Path) -> list[tuple[str, Path]]:
    """Precision (ICC(2,k) CI half-width), expected ICC(2,k) and power vs raters; returns (caption, path)."""
    table = result.table
    conds = [c for c in CONDITIONS if f"icc_k_{c}" in table]
    out = []
    path = folder / "precision.png"
    _panels(
        table,
        [(f"ci_half_width_{c}", f"ICC(2,k) CI half-width, {c}") for c in conds],
        {f"ci_half_width_{c}": targets.ci_half_width for c in conds},
        path,
        "Precision: expected half-width of the reported ICC(2,k) interval",
    )
    out.append(("Precision vs raters per condition", path))
    path = folder / "icc_k.png"
    _panels(
        table,
        [(f"icc_k_{c}", f"expected ICC(2,k), {c}") for c in conds],
        {f"icc_k_{c}": targets.icc_k for c in conds},
        path,
        "Expected ICC(2,k)",
        (0, 1),
    )
    out.append(("Expected ICC(2,k) vs raters per condition", path))
    powers = [
        (m, label)
        for m, label in (
            ("power_icc_diff", f"power, ICC(2,1) difference {targets.icc_diff}"),
            ("power_table2", f"power, Table 2 {targets.table2_term} = {targets.table2_effect}"),
        )
        if m in table
    ]
    if powers:
        path = folder / "power.png"
        _panels(table, powers, {m: targets.power for m, _ in powers}, path, "Power", (0, 1))
        out.append(("Power vs raters per condition", path))
    return out


def scale_units(scale: RatingScale) -> str:
    """What the plan's rating-unit quantities are in (the report and plan.json say it)."""
    return (
        f"Ratings are simulated on the rating scale {scale.min:g}-{scale.max:g} (step {scale.step:g}); quantities in "
        "rating units (the Table 2 effect of --target-power-table2, a pilot's variance components, fixed effects and "
        "mean rating) are in its units. ICC, power and agreement targets are scale-free."
    )


def recommendation_lines(result: PlanResult) -> list[str]:
    """Plain-text lines: the recommended design (or the shortfall) per scenario."""
    lines = []
    for r in result.recommendations.to_dict("records"):
        if not r["met"]:
            lines.append(f"{r['scenario']}: no design in the grid meets every target ({r['note']})")
            continue
        parts = [
            f"{int(r['prompts'])} prompts, {int(r['raters'])} raters per condition, {int(r['trials'])} trials each "
            f"({r['conditions']}): recruit ~{int(r['recruits'])} participants, cost {r['cost']:.0f}"
        ]
        for c in CONDITIONS:
            if f"icc_k_{c}" in r and pd.notna(r.get(f"icc_k_{c}")):
                parts.append(
                    f"{c} ICC(2,k) {r[f'icc_k_{c}']:.3f} (k {r[f'k_{c}']:.1f}), CI half-width "
                    f"{r[f'ci_half_width_{c}']:.3f}"
                )
        for m in ("power_icc_diff", "power_table2"):
            if m in r and pd.notna(r.get(m)):
                parts.append(f"{m.replace('_', ' ')} {r[m]:.2f}")
        lines.append(f"{r['scenario']}: " + "; ".join(parts))
    return lines


def plan_report_html(
    result: PlanResult, priors: Priors, targets: Targets, figure_paths: list[tuple[str, Path]], config: dict
) -> str:
    """The plan's own HTML page (recommendation, priors, design table, figures, configuration)."""
    from modprefs.report.html import build_report

    rec = result.recommendations
    shown = [c for c in rec.columns if not c.startswith("meets_") and not c.endswith("_mcse")]
    notes = [result.statement, scale_units(priors.scale), *recommendation_lines(result), *priors.notes]
    sections = [
        ("Recommendation", [("Cheapest design meeting every target, per scenario", rec[shown])]),
        ("Priors", [(f"Priors: {priors.source}", priors.table)]),
        ("Figures", figure_paths),
        ("Designs", [("Every design (mean over simulated studies; _mcse = Monte-Carlo SE)", result.table)]),
    ]
    return build_report(sections, config, notes, title="modprefs plan")

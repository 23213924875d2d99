"""How tables state their intervals: the level (``stats.ci_level``) and the method, in the title.

:func:`level_text` writes a level as every title does (``95 %``); :func:`icc_interval_text` describes the ICC
table's intervals (level, the method each condition's row used, the resampling count), which the ICC table and
the raters-needed table (whose optimistic/pessimistic counts sit at those bounds) put in their titles;
:func:`with_per_prompt_intervals` adds the F-based interval to the per-prompt ICC table.
"""

from __future__ import annotations

import pandas as pd

from modprefs.stats.reliability.icc_f_interval import per_prompt_intervals


def level_text(level: float) -> str:
    """An interval level as titles write it: ``95 %``, ``90 %``, ``99.5 %``."""
    return f"{100 * level:.10g} %"


def icc_interval_text(icc: pd.DataFrame, level: float) -> str:
    """The ICC table's intervals in words: the level, the method each analysed condition's row used (one label when
    all agree, else ``audio: ...; text: ...``; ``auto``'s rows say ``auto: `` + the method it chose) and the
    resampling count, e.g. ``95 % CIs: auto: logit-t, crossed jackknife (...); 2000 residual-bootstrap refits ...``.
    """
    rows = icc[pd.to_numeric(icc["n_ratings"], errors="coerce") > 0] if "n_ratings" in icc.columns else icc
    labels = (
        rows.set_index("condition")["ci_method"].dropna().astype(str)
        if {"condition", "ci_method"} <= set(rows.columns)
        else pd.Series(dtype=str)
    )
    used = labels.iloc[0] if labels.nunique() == 1 else "; ".join(f"{c}: {m}" for c, m in labels.items())
    text = f"{level_text(level)} CIs: {used or 'none'}"
    n_boot = pd.to_numeric(rows["n_boot"], errors="coerce").max() if "n_boot" in rows.columns else float("nan")
    if pd.notna(n_boot) and labels.str.contains("jackknife").any():
        text += f"; {int(n_boot)} residual-bootstrap refits for the jackknife's noise term"
    elif pd.notna(n_boot) and labels.str.contains("bootstrap").any():
        text += f"; {int(n_boot)} resamples"
    return text


def with_per_prompt_intervals(table: pd.DataFrame, frame: pd.DataFrame, level: float) -> pd.DataFrame:
    """The per-prompt ICC table (:func:`modprefs.stats.tables.modality.per_prompt_icc`) with each ICC(2,1)'s
    F-based interval after ``icc_2_1`` (:func:`modprefs.stats.reliability.icc_f_interval.per_prompt_intervals`: a
    prompt's block of 2 clips x the raters who rated both is complete and has no covariates) and ``ci_level``."""
    if table.empty or not {"prompt_id", "condition", "icc_2_1"} <= set(table.columns):
        return table
    ci = per_prompt_intervals(frame, level)
    out = table.merge(ci, on=["prompt_id", "condition"], how="left")
    order = list(table.columns)
    at = order.index("icc_2_1") + 1
    order[at:at] = ["icc_2_1_lo", "icc_2_1_hi"]
    return out[order].assign(ci_level=level)

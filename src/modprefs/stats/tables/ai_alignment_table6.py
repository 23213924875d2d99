"""AI–human alignment, Table 6 (paper §4.4): AI differentiation predicts human per-prompt agreement.

Inputs, scales and the paper's reference values: :mod:`modprefs.stats.tables.ai_alignment` (Table 5).

Table 6 (paper values in brackets)
----------------------------------
* AI differentiation per prompt and modality: the absolute difference of the mean AI ratings of
  response 0 and response 1 (points); NaN with a note when a response has no AI rating.
* Outcome: the human per-prompt ICC(2,1) per modality (:func:`modprefs.stats.tables.modality.per_prompt_icc`,
  Shrout & Fleiss two-way random, 2 clips x the raters who rated both).
* OLS ``icc ~ ai_diff * modality`` (statsmodels), modality = 1 for text (reference audio, so
  "AI Differentiation" is the audio slope per point of AI gap and "Modality (Text)" the intercept
  shift) [AI Differentiation 0.014 (p < .001), Modality (Text) -0.010 (p = .76), AI Diff x Modality
  -0.003 (p = .15); N = 100 prompts]. Also each modality's simple slope (b1 and b1 + b3).
* Spearman within each modality (``scipy.stats.spearmanr``) [audio r = .23, p = .02; text r = .38,
  p < .001].
* Robustness (the paper: "robust to removal of influential observations (Cook's D)"): the OLS is
  refitted and the Spearman correlations recomputed without observations whose Cook's distance
  exceeds 4/n (n = observations in the full fit).

Reading Table 6: a per-prompt ICC(2,1) from 2 clips is a noisy, low-biased estimate of the prompt's
reliability (benchmarks/validity/judges_allocation.py: mean .20 for a true .30 with 9 raters per prompt), and
its OLS slope on the AI gap is attenuated to about 0.6 of the slope on the true per-prompt ICC; B
therefore understates the link to the true reliability.

With one modality absent (e.g. no audio judge), its rows are NaN with the reason in ``note`` and
Table 6's model is fitted within the available modality (``icc ~ ai_diff``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd
from scipy import stats

from modprefs.scale import RatingScale
from modprefs.stats.tables.ai_alignment import (
    TABLE_COLUMNS,
    ai_clip_means,
    on_study_scale,
    require_columns,
    select_judge_ratings,
    stimulus_map,
    table_row,
    with_paper_reference,
)
from modprefs.study.terms import CONDITIONS as MODALITIES

#: Cook's distance cut-off for "influential" (a common rule of thumb; the paper does not state its cut-off).
COOKS_D_RULE = "4/n"
#: Table 6 of the paper: term -> (estimate, p as printed).
PAPER_TABLE6: dict[str, tuple[float, str]] = {
    "AI Differentiation": (0.014, "<.001"),
    "Modality (Text)": (-0.010, ".76"),
    "AI Diff x Modality": (-0.003, ".15"),
    "Spearman: audio": (0.23, ".02"),
    "Spearman: text": (0.38, "<.001"),
}
OLS_TERMS: tuple[str, ...] = ("Intercept", "AI Differentiation", "Modality (Text)", "AI Diff x Modality")


def ai_differentiation(ai_means: pd.DataFrame, stimuli: pd.DataFrame) -> pd.DataFrame:
    """Per prompt (of the stimulus set) and modality the AI judge rated: ``ai_mean_0``, ``ai_mean_1``
    (mean AI rating of response 0 / 1, points) and ``ai_diff`` = ``|ai_mean_0 - ai_mean_1|`` (points);
    NaN with a ``note`` when a response has no AI rating.

    ``ai_means`` is :func:`ai_clip_means`' output. A modality without any AI rating has no rows.
    """
    s = stimulus_map(stimuli)
    rows = []
    for m in sorted(set(ai_means["modality"])):
        a = ai_means[ai_means["modality"] == m].set_index("clip_id")["ai_mean"]
        for prompt, block in s.groupby("prompt_id", sort=True):
            means = {int(r): a.get(c, math.nan) for r, c in zip(block["response"], block["clip_id"])}
            m0, m1 = means.get(0, math.nan), means.get(1, math.nan)
            missing = [r for r in (0, 1) if not np.isfinite(means.get(r, math.nan))]
            note = f"no AI-{m} rating of response(s) {missing}" if missing else ""
            rows.append(
                {
                    "prompt_id": prompt,
                    "modality": m,
                    "ai_mean_0": m0,
                    "ai_mean_1": m1,
                    "ai_diff": abs(m0 - m1) if not missing else math.nan,
                    "note": note,
                }
            )
    return pd.DataFrame(rows, columns=["prompt_id", "modality", "ai_mean_0", "ai_mean_1", "ai_diff", "note"])


def table6_frame(ai_diff: pd.DataFrame, per_prompt: pd.DataFrame) -> pd.DataFrame:
    """Per prompt and modality: AI differentiation beside the human per-prompt ICC(2,1).

    ``per_prompt`` is :func:`modprefs.stats.tables.modality.per_prompt_icc`'s table (prompt_id, condition,
    n_raters, icc_2_1, note). Returns prompt_id, modality, ai_diff, ai_mean_0, ai_mean_1, icc_2_1,
    n_raters, usable (both finite), note (why a row is unusable).
    """
    require_columns(per_prompt, ["prompt_id", "condition", "icc_2_1"], "per-prompt ICC table")
    h = per_prompt.rename(columns={"condition": "modality", "note": "icc_note"}).copy()
    h["prompt_id"] = h["prompt_id"].astype(str)
    keep = ["prompt_id", "modality", "icc_2_1"] + [c for c in ("n_raters", "icc_note") if c in h.columns]
    f = ai_diff.merge(h[keep], on=["prompt_id", "modality"], how="left")
    f["icc_2_1"] = pd.to_numeric(f["icc_2_1"], errors="coerce")
    f["usable"] = np.isfinite(f["ai_diff"].astype(float)) & np.isfinite(f["icc_2_1"])
    notes = []
    for r in f.itertuples(index=False):
        parts = [r.note] if r.note else []
        if not np.isfinite(r.icc_2_1):
            extra = getattr(r, "icc_note", "")
            parts.append("no human ICC" + (f" ({extra})" if isinstance(extra, str) and extra else ""))
        notes.append("; ".join(parts))
    f["note"] = notes
    return f.drop(columns=[c for c in ("icc_note",) if c in f.columns])


def design_matrix(frame: pd.DataFrame, interaction: bool = True) -> tuple[np.ndarray, list[str]]:
    """OLS design of ``icc ~ ai_diff * modality`` (modality = 1 for text, reference audio); without
    ``interaction`` just ``icc ~ ai_diff``. Columns named as :data:`OLS_TERMS`."""
    x = frame["ai_diff"].to_numpy(float)
    if not interaction:
        return np.column_stack([np.ones_like(x), x]), list(OLS_TERMS[:2])
    text = (frame["modality"].astype(str) == "text").to_numpy(float)
    return np.column_stack([np.ones_like(x), x, text, x * text]), list(OLS_TERMS)


def fit_ols(frame: pd.DataFrame, interaction: bool = True):
    """statsmodels OLS of :func:`design_matrix` on ``icc_2_1`` (a ``RegressionResults``)."""
    import statsmodels.api as sm

    X, names = design_matrix(frame, interaction)
    return sm.OLS(frame["icc_2_1"].to_numpy(float), pd.DataFrame(X, columns=names)).fit()


def _ols_rows(section: str, res, n_prompts: int, note: str) -> list[dict]:
    rows = []
    for term in res.params.index:
        rows.append(
            table_row(
                section,
                term,
                float(res.params[term]),
                float(res.bse[term]),
                float(res.tvalues[term]),
                float(res.df_resid),
                float(res.pvalues[term]),
                n=int(res.nobs),
                note=f"{note}; R2 = {res.rsquared:.3f}; {n_prompts} prompts",
                paper=PAPER_TABLE6,
            )
        )
    for term in OLS_TERMS:
        if term not in res.params.index:
            rows.append(table_row(section, term, note="needs both modalities", paper=PAPER_TABLE6))
    if "AI Diff x Modality" in res.params.index:
        c = np.array([0.0, 1.0, 0.0, 1.0])
        tt = res.t_test(c)
        rows.append(
            table_row(
                section,
                "Simple slope: text (b1 + b3)",
                float(np.squeeze(tt.effect)),
                float(np.squeeze(tt.sd)),
                float(np.squeeze(tt.tvalue)),
                float(res.df_resid),
                float(np.squeeze(tt.pvalue)),
                n=int(res.nobs),
                note="ICC per point of AI gap, text",
            )
        )
    return rows


def _spearman_rows(section: str, frame: pd.DataFrame) -> list[dict]:
    rows = []
    for m in MODALITIES:
        d = frame[frame["modality"] == m]
        term = f"Spearman: {m}"
        if len(d) < 3:
            rows.append(table_row(section, term, n=len(d), note=f"needs >= 3 usable {m} prompts", paper=PAPER_TABLE6))
            continue
        res = stats.spearmanr(d["ai_diff"], d["icc_2_1"])
        rows.append(
            table_row(
                section,
                term,
                float(res.statistic),
                p=float(res.pvalue),
                n=len(d),
                note="Spearman rho(AI differentiation, human ICC(2,1))",
                paper=PAPER_TABLE6,
            )
        )
    return rows


def cooks_distance(frame: pd.DataFrame, interaction: bool = True) -> np.ndarray:
    """Cook's distance of each row of ``frame`` in :func:`fit_ols`."""
    return np.asarray(fit_ols(frame, interaction).get_influence().cooks_distance[0], float)


def table6(frame: pd.DataFrame, scale: RatingScale | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 6 from :func:`table6_frame`'s output (usable rows enter; see the module docstring).

    Returns (table, per_prompt): ``table`` has :data:`TABLE_COLUMNS` (OLS estimates in ICC units per
    point of AI gap on ``scale``, the study's scale (default the paper's 1..100), Spearman rho in ``estimate``;
    the paper's values as printed and on ``scale``: :func:`with_paper_reference`); ``per_prompt`` is ``frame``
    with ``cooks_d`` and ``influential`` (Cook's D > 4/n) added for the usable rows.
    """
    per_prompt = frame.copy()
    per_prompt["cooks_d"] = math.nan
    per_prompt["influential"] = False
    used = per_prompt[per_prompt["usable"]]
    present = [m for m in MODALITIES if (used["modality"] == m).any()]
    absent = [m for m in MODALITIES if m not in present]
    interaction = len(present) == 2
    main = "OLS: ICC ~ AI_diff x Modality (reference audio)"
    p_needed = 4 if interaction else 2
    if len(used) <= p_needed:
        rows = [
            table_row(
                main, t, n=len(used), note=f"needs > {p_needed} usable prompt x modality rows", paper=PAPER_TABLE6
            )
            for t in OLS_TERMS
        ] + _spearman_rows("Spearman", used)
        return with_paper_reference(pd.DataFrame(rows, columns=TABLE_COLUMNS), scale), per_prompt
    note = "statsmodels OLS" if interaction else (f"within {present[0]} only (no usable {absent} rows): ICC ~ AI_diff")
    res = fit_ols(used, interaction)
    n_prompts = used["prompt_id"].nunique()
    rows = _ols_rows(main, res, n_prompts, note)
    rows += _spearman_rows("Spearman", used)
    cooks = np.asarray(res.get_influence().cooks_distance[0], float)
    cut = 4.0 / len(used)
    infl = cooks > cut
    per_prompt.loc[used.index, "cooks_d"] = cooks
    per_prompt.loc[used.index, "influential"] = infl
    kept = used[~infl]
    removed = used[infl]
    rob = f"Robustness: without influential points (Cook's D > 4/n = {cut:.3g})"
    what = ", ".join(f"{r.prompt_id}/{r.modality}" for r in removed.itertuples(index=False))
    rnote = f"removed {int(infl.sum())} of {len(used)}" + (f": {what}" if what else "")
    if len(kept) > p_needed:
        res2 = fit_ols(kept, interaction)
        rows += [
            {**r, "note": f"{rnote}; {r['note']}"}
            for r in _ols_rows(f"{rob}: OLS", res2, kept["prompt_id"].nunique(), note)
        ]
    else:
        rows += [table_row(f"{rob}: OLS", t, n=len(kept), note=f"{rnote}; too few rows left") for t in OLS_TERMS]
    rows += [{**r, "note": f"{rnote}; {r['note']}"} for r in _spearman_rows(f"{rob}: Spearman", kept)]
    table = with_paper_reference(pd.DataFrame(rows, columns=TABLE_COLUMNS), scale)
    table.attrs["n_usable"] = len(used)
    return table, per_prompt


def table6_from_inputs(
    judges: pd.DataFrame,
    ratings: pd.DataFrame,
    participants: pd.DataFrame,
    stimuli: pd.DataFrame,
    judge_by_modality: Mapping[str, str] | None = None,
    scale: RatingScale | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 6 from the raw tables: AI differentiation (:func:`ai_differentiation`, on the study's ``scale``) and
    the human per-prompt ICC(2,1) (:func:`modprefs.stats.tables.modality.per_prompt_icc` on
    :func:`modprefs.stats.tables.modality.rating_frame`). Returns :func:`table6`'s (table, per_prompt)."""
    from modprefs.stats.tables.modality import per_prompt_icc, rating_frame

    ai = on_study_scale(select_judge_ratings(judges, judge_by_modality), scale)
    diff = ai_differentiation(ai_clip_means(ai, stimuli), stimuli)
    icc = per_prompt_icc(rating_frame(ratings, participants, stimuli))
    if icc.empty:
        icc = pd.DataFrame(columns=["prompt_id", "condition", "n_raters", "icc_2_1", "note"])
    return table6(table6_frame(diff, icc), scale)

"""AI–human alignment (paper §4.4): Table 5 (AI–human rating error, PRISM vs external annotators)
and Table 6 (AI differentiation predicts human per-prompt agreement).

Inputs
------
* The AI judge table ``results/judges/ratings.csv`` (docs/CONTRACTS.md, results/judges/): only rows with
  ``status == "ok"`` and ``kind == "response_quality"`` enter (audio-quality ratings and failed calls
  never do). A judge is identified by ``judge@prompt_version``; each modality must have exactly one
  (or one chosen with ``judge_by_modality``, e.g. ``{"text": "openai:gpt-4o"}``), otherwise a
  ``ValueError`` lists the candidates. Repeated samples of a clip are averaged.
* Human ratings: the rated trials (trial >= 1) of participants who passed the attention check, clips
  of the stimulus set (:func:`modprefs.stats.reliability.icc.analysable_ratings`), raw 1–100 ratings.
* ``stimuli.csv`` maps clip -> prompt and response (0/1) and carries the original PRISM score.

All ratings and differences are on the study's rating scale ("points": the paper's 1–100 slider). The AI
judges rate on 1..100 (their prompt) whatever the study's scale; on another scale their ratings and the
PRISM scores (also 1..100) are first mapped linearly onto it (:meth:`modprefs.scale.RatingScale.from_paper_units`,
1 -> min, 100 -> max, not rounded), so every comparison with the humans is in the study's units.

The paper's values (in brackets below) are on its 1–100 slider. Each table row carries the paper's value twice
(:func:`with_paper_reference`): ``paper_estimate_1_100`` as printed, labelled by its scale, and
``paper_estimate_on_study_scale`` restated on the study's scale by its unit (:data:`PAPER_UNITS`): Table 5's errors
and differences x span/99 (one point of the paper's 1..100 is span/99 study units: 12.27 -> 0.50 on 1-5), Table 6's
slopes per rating point x 99/span, ICCs and rank correlations unchanged; ``paper_conversion`` says which. On the
paper's scale both are the printed value.

Table 5 (paper values in brackets)
----------------------------------
* Clip-level means: per clip and modality, the mean AI rating (over samples) and the mean human
  rating (over raters).
* MAE per modality: mean over clips of |AI mean - human mean| (clips with both means) [audio 12.27,
  text 14.29].
* Modality difference: ``abs_error ~ modality + (1 | clip_id)`` on the long table (one row per clip
  and modality), ``modality`` = 1 for text (reference audio), REML with Satterthwaite df and p as
  lmerTest (:func:`modprefs.stats.mixed.lmm.fit_formula`) [text - audio = 2.02, p = .035].
* PRISM vs external annotators: per clip d = PRISM score - group mean for AI-Text, AI-Audio,
  Human-Text, Human-Audio; paired t-test over the clips with both values (``scipy.stats.ttest_rel``,
  df = n - 1); mean signed difference [AI-Text -1.84 (p = .015), AI-Audio -9.18 (< .001),
  Human-Text 8.03 (< .001), Human-Audio 1.15 (p = .374)].

Table 6 (paper values in brackets)
----------------------------------
* AI differentiation per prompt and modality: |mean AI rating of response 0 - mean AI rating of
  response 1| (points); NaN with a note when a response has no AI rating.
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
reliability (benchmarks/judges_allocation.py: mean .20 for a true .30 with 9 raters per prompt), and
its OLS slope on the AI gap is attenuated to about 0.6 of the slope on the true per-prompt ICC; B
therefore understates the link to the true reliability.

With one modality absent (e.g. no audio judge), its rows are NaN with the reason in ``note`` and
Table 6's model is fitted within the available modality (``icc ~ ai_diff``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

import numpy as np
import pandas as pd
from scipy import stats

from modprefs.scale import PAPER_SCALE, RatingScale
from modprefs.stats.mixed.lmm import fit_formula
from modprefs.stats.reliability.icc import analysable_ratings
from modprefs.stats.tables.scale_units import conversion_text, paper_on_scale, scale_label
from modprefs.study.terms import CONDITIONS as MODALITIES

RESPONSE_QUALITY = "response_quality"
JUDGE_COLUMNS: tuple[str, ...] = (
    "judge",
    "prompt_version",
    "modality",
    "kind",
    "clip_id",
    "sample",
    "rating",
    "status",
)
TABLE_COLUMNS: list[str] = [
    "section",
    "term",
    "estimate",
    "se",
    "t",
    "df",
    "p",
    "n",
    "paper_estimate_1_100",
    "paper_estimate_on_study_scale",
    "paper_p",
    "paper_conversion",
    "note",
]
LMM_FORMULA = "abs_error ~ modality + (1 | clip_id)"
#: Cook's distance cut-off for "influential" (a common rule of thumb; the paper does not state its cut-off).
COOKS_D_RULE = "4/n"

#: Table 5 of the paper: term -> (estimate, p as printed).
PAPER_TABLE5: dict[str, tuple[float, str]] = {
    "Audio MAE": (12.27, ""),
    "Text MAE": (14.29, ""),
    "Text vs. Audio (LMM)": (2.02, ".035"),
    "vs. AI-Text": (-1.84, ".015"),
    "vs. AI-Audio": (-9.18, "<.001"),
    "vs. Human-Text": (8.03, "<.001"),
    "vs. Human-Audio": (1.15, ".374"),
}
#: Table 6 of the paper: term -> (estimate, p as printed).
PAPER_TABLE6: dict[str, tuple[float, str]] = {
    "AI Differentiation": (0.014, "<.001"),
    "Modality (Text)": (-0.010, ".76"),
    "AI Diff x Modality": (-0.003, ".15"),
    "Spearman: audio": (0.23, ".02"),
    "Spearman: text": (0.38, "<.001"),
}
#: The unit of each paper value (:data:`modprefs.stats.tables.scale_units.UNITS`), by which it is restated on the
#: study's scale: Table 5's errors and differences are rating differences; Table 6's slopes are ICC per rating point
#: of AI gap; its modality shift (an ICC) and Spearman's rho are unitless.
PAPER_UNITS: dict[str, str] = {
    **{term: "difference" for term in PAPER_TABLE5},
    "AI Differentiation": "per_point",
    "AI Diff x Modality": "per_point",
    "Modality (Text)": "unitless",
    "Spearman: audio": "unitless",
    "Spearman: text": "unitless",
}
#: PRISM comparison groups: label -> column of the clip table.
PRISM_GROUPS: tuple[tuple[str, str], ...] = (
    ("vs. AI-Text", "ai_text"),
    ("vs. AI-Audio", "ai_audio"),
    ("vs. Human-Text", "human_text"),
    ("vs. Human-Audio", "human_audio"),
)
OLS_TERMS: tuple[str, ...] = ("Intercept", "AI Differentiation", "Modality (Text)", "AI Diff x Modality")


# --- inputs -------------------------------------------------------------------------------------


def _require(df: pd.DataFrame, columns: tuple[str, ...] | list[str], name: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{name} lacks column(s) {missing}; has {list(df.columns)}")


def judges_skip_reason(judges: pd.DataFrame | None) -> str | None:
    """Why the AI-alignment analyses cannot run on this judge table, or None when they can.

    None (no table) -> the judges stage is not an input; no ``ok`` response-quality row -> says how
    many rows there are and why they failed. Column problems are errors, not skips (ValueError).
    """
    if judges is None:
        return "no AI judge ratings: results/judges/ratings.csv is not an input (judges stage disabled in config)"
    _require(judges, ["kind", "status"], "judge ratings")
    ok = (judges["status"].astype(str) == "ok") & (judges["kind"].astype(str) == RESPONSE_QUALITY)
    if ok.any():
        return None
    failed = judges[judges["status"].astype(str) != "ok"]
    why = ""
    if len(failed) and "reason" in failed.columns:
        top = failed["reason"].astype(str).str.slice(0, 80).value_counts().head(3)
        why = "; most common failure reasons: " + "; ".join(f"{n} x {r!r}" for r, n in top.items())
    return (
        f"no usable AI judge ratings: 0 of {len(judges)} rows have status 'ok' and kind '{RESPONSE_QUALITY}'"
        f" ({len(failed)} failed){why}"
    )


def _judge_id(df: pd.DataFrame) -> pd.Series:
    return df["judge"].astype(str) + "@" + df["prompt_version"].astype(str)


def select_judge_ratings(
    judges: pd.DataFrame, judge_by_modality: Mapping[str, str | None] | None = None
) -> pd.DataFrame:
    """The ``ok`` response-quality AI ratings, one judge per modality.

    Args:
        judges: the judge table (docs/CONTRACTS.md columns; at least :data:`JUDGE_COLUMNS`).
        judge_by_modality: optional ``{modality: "judge"}`` or ``{modality: "judge@prompt_version"}``;
            needed when a modality has several judges (or prompt versions) in the table.

    Returns:
        modality, clip_id, sample, rating (float, 1–100), judge_id (``judge@prompt_version``).

    Raises:
        ValueError: a missing column, an ``ok`` rating missing or outside 1..100, an unknown modality,
            a modality with several judges and no choice, or a chosen judge absent from the table.
    """
    _require(judges, JUDGE_COLUMNS, "judge ratings")
    ok = judges[(judges["status"].astype(str) == "ok") & (judges["kind"].astype(str) == RESPONSE_QUALITY)].copy()
    ok["modality"] = ok["modality"].astype(str)
    unknown = sorted(set(ok["modality"]) - set(MODALITIES))
    if unknown:
        raise ValueError(f"judge ratings: column 'modality' has unknown values {unknown}; expected {list(MODALITIES)}")
    rating = pd.to_numeric(ok["rating"], errors="coerce")
    bad = ok[~rating.between(1, 100)]
    if len(bad):
        raise ValueError(
            f"judge ratings: column 'rating' is missing or outside 1..100 in {len(bad)} row(s) with "
            f"status 'ok' (first: clip {bad['clip_id'].iloc[0]!r}, rating {bad['rating'].iloc[0]!r})"
        )
    ok["rating"] = rating.astype(float)
    ok["judge_id"] = _judge_id(ok)
    ok["clip_id"] = ok["clip_id"].astype(str)
    choice = dict(judge_by_modality or {})
    unknown = sorted(set(choice) - set(MODALITIES))
    if unknown:
        raise ValueError(f"judge_by_modality has unknown modalities {unknown}; expected {list(MODALITIES)}")
    parts = []
    for m in MODALITIES:
        sub = ok[ok["modality"] == m]
        if sub.empty:
            if choice.get(m):
                raise ValueError(f"judge_by_modality[{m!r}] = {choice[m]!r}, but the table has no ok {m} ratings")
            continue
        if choice.get(m):
            want = str(choice[m])
            sub = sub[(sub["judge_id"] == want) | (sub["judge"].astype(str) == want)]
            if sub.empty:
                raise ValueError(
                    f"judge_by_modality[{m!r}] = {want!r} matches none of "
                    f"{sorted(ok.loc[ok['modality'] == m, 'judge_id'].unique())}"
                )
        ids = sorted(sub["judge_id"].unique())
        if len(ids) > 1:
            raise ValueError(
                f"judge ratings: several {m} judges (judge@prompt_version) {ids}; choose one with "
                f"judge_by_modality (config stats.ai_alignment.judge_by_modality.{m})"
            )
        parts.append(sub[["modality", "clip_id", "sample", "rating", "judge_id"]])
    if not parts:
        return pd.DataFrame(columns=["modality", "clip_id", "sample", "rating", "judge_id"])
    return pd.concat(parts, ignore_index=True)


def _stimulus_map(stimuli: pd.DataFrame) -> pd.DataFrame:
    _require(stimuli, ["prompt_id", "clip_id", "response"], "stimuli")
    s = stimuli.copy()
    s["clip_id"] = s["clip_id"].astype(str)
    s["prompt_id"] = s["prompt_id"].astype(str)
    s["response"] = pd.to_numeric(s["response"], errors="raise").astype(int)
    if s["clip_id"].duplicated().any():
        dup = s.loc[s["clip_id"].duplicated(), "clip_id"].iloc[0]
        raise ValueError(f"stimuli: column 'clip_id' has duplicates, e.g. {dup!r}")
    if (s["response"] < 0).any():
        raise ValueError("stimuli: column 'response' must be a response index (0, 1, ...)")
    return s


def on_study_scale(ai: pd.DataFrame, scale: RatingScale | None) -> pd.DataFrame:
    """The judges' 1..100 ratings mapped linearly onto the study's ``scale`` (not rounded; unchanged on the paper's)."""
    if scale is None or scale.is_paper:
        return ai
    return ai.assign(rating=scale.from_paper_units(ai["rating"].to_numpy(float), snap=False))


def ai_clip_means(ai: pd.DataFrame, stimuli: pd.DataFrame) -> pd.DataFrame:
    """Per modality and stimulus clip: ``ai_mean`` (mean over samples, points), ``ai_n`` (samples), judge_id.

    ``ai`` is :func:`select_judge_ratings`' output; clips outside the stimulus set (the attention
    check) are left out.
    """
    s = _stimulus_map(stimuli)
    a = ai[ai["clip_id"].isin(set(s["clip_id"]))]
    out = (
        a.groupby(["modality", "clip_id"], sort=True)
        .agg(ai_mean=("rating", "mean"), ai_n=("rating", "size"), judge_id=("judge_id", "first"))
        .reset_index()
    )
    return out.merge(s[["clip_id", "prompt_id", "response"]], on="clip_id", how="left")


def human_clip_means(ratings: pd.DataFrame, participants: pd.DataFrame, stimuli: pd.DataFrame) -> pd.DataFrame:
    """Per modality and clip: ``human_mean`` (mean raw rating, points) and ``human_n`` (raters).

    Ratings as :func:`modprefs.stats.reliability.icc.analysable_ratings` keeps them (passed attention, trial >= 1,
    stimulus clips).
    """
    frames = []
    for m in MODALITIES:
        df = analysable_ratings(ratings, participants, m, stimuli)
        if df.empty:
            continue
        df = df.assign(clip_id=df["clip_id"].astype(str), rating=pd.to_numeric(df["rating"]).astype(float))
        g = df.groupby("clip_id", sort=True)["rating"].agg(human_mean="mean", human_n="size").reset_index()
        frames.append(g.assign(modality=m))
    if not frames:
        return pd.DataFrame(columns=["clip_id", "human_mean", "human_n", "modality"])
    return pd.concat(frames, ignore_index=True)


def clip_table(
    ai_means: pd.DataFrame, human_means: pd.DataFrame, stimuli: pd.DataFrame, scale: RatingScale | None = None
) -> pd.DataFrame:
    """One row per stimulus clip: prompt_id, response, prism_score and the four group means
    ``ai_audio``, ``ai_text``, ``human_audio``, ``human_text`` (NaN where a group did not rate the
    clip) with their counts ``n_ai_*`` (AI samples) and ``n_human_*`` (raters). On a ``scale`` other than
    the paper's the PRISM score (1..100) is mapped onto it, as the AI ratings are (:func:`on_study_scale`)."""
    s = _stimulus_map(stimuli)
    prism = pd.to_numeric(s["prism_score"], errors="coerce") if "prism_score" in s.columns else np.nan
    if scale is not None and not scale.is_paper and "prism_score" in s.columns:
        prism = pd.Series(scale.from_paper_units(np.asarray(prism, float), snap=False), index=s.index)
    out = pd.DataFrame(
        {"clip_id": s["clip_id"], "prompt_id": s["prompt_id"], "response": s["response"], "prism_score": prism}
    )
    for m in MODALITIES:
        a = ai_means[ai_means["modality"] == m].set_index("clip_id")
        h = human_means[human_means["modality"] == m].set_index("clip_id")
        out[f"ai_{m}"] = out["clip_id"].map(a["ai_mean"]).astype(float)
        out[f"n_ai_{m}"] = out["clip_id"].map(a["ai_n"]).fillna(0).astype(int)
        out[f"human_{m}"] = out["clip_id"].map(h["human_mean"]).astype(float)
        out[f"n_human_{m}"] = out["clip_id"].map(h["human_n"]).fillna(0).astype(int)
    return out.sort_values(["prompt_id", "response"], kind="stable").reset_index(drop=True)


# --- Table 5 --------------------------------------------------------------------------------------


def _row(
    section: str,
    term: str,
    estimate: float = math.nan,
    se: float = math.nan,
    t: float = math.nan,
    df: float = math.nan,
    p: float = math.nan,
    n: int = 0,
    note: str = "",
    paper: Mapping[str, tuple[float, str]] | None = None,
) -> dict:
    pe, pp = (paper or {}).get(term, (math.nan, ""))
    return {
        "section": section,
        "term": term,
        "estimate": estimate,
        "se": se,
        "t": t,
        "df": df,
        "p": p,
        "n": int(n),
        "paper_estimate_1_100": pe,
        "paper_estimate_on_study_scale": math.nan,
        "paper_p": pp,
        "paper_conversion": "",
        "note": note,
    }


def with_paper_reference(table: pd.DataFrame, scale: RatingScale | None) -> pd.DataFrame:
    """Table 5 or 6 with each paper value restated on the study's ``scale`` (default the paper's 1..100).

    ``paper_estimate_1_100`` is the paper's value as printed (its 1..100 slider); ``paper_estimate_on_study_scale``
    the same value on ``scale`` by the term's unit (:data:`PAPER_UNITS`: rating differences x span/99, slopes per
    rating point x 99/span, ICCs and correlations unchanged; :func:`modprefs.stats.tables.scale_units.paper_on_scale`);
    ``paper_conversion`` says which. Rows without a paper value keep NaN and ''.
    """
    on = scale or PAPER_SCALE
    out = table.copy()
    printed = out["paper_estimate_1_100"].astype(float)
    units = out["term"].map(PAPER_UNITS)
    missing = sorted(set(out.loc[printed.notna() & units.isna(), "term"]))
    if missing:
        raise ValueError(f"paper values without a unit in PAPER_UNITS: {missing}")
    pairs = list(zip(printed, units))
    out["paper_estimate_1_100"] = printed
    out["paper_estimate_on_study_scale"] = [math.nan if pd.isna(v) else paper_on_scale(v, u, on) for v, u in pairs]
    out["paper_conversion"] = ["" if pd.isna(v) else conversion_text(u, on) for v, u in pairs]
    return out


def abs_error_long(clips: pd.DataFrame) -> pd.DataFrame:
    """Long table of |AI - human| per clip and modality (clips with both means): clip_id, prompt_id,
    condition, modality (1 = text), abs_error (points)."""
    parts = []
    for m in MODALITIES:
        d = clips.dropna(subset=[f"ai_{m}", f"human_{m}"])
        parts.append(
            pd.DataFrame(
                {
                    "clip_id": d["clip_id"],
                    "prompt_id": d["prompt_id"],
                    "condition": m,
                    "modality": float(m == "text"),
                    "abs_error": (d[f"ai_{m}"] - d[f"human_{m}"]).abs(),
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def ai_human_error(clips: pd.DataFrame) -> list[dict]:
    """Table 5's first block: MAE per modality (estimate = MAE, se = SD/sqrt(n)) and the LMM
    modality difference (text - audio, Satterthwaite df and p)."""
    section = "AI-Human absolute error"
    long = abs_error_long(clips)
    rows = []
    for m in MODALITIES:
        e = long.loc[long["condition"] == m, "abs_error"].to_numpy(float)
        term = f"{m.capitalize()} MAE"
        if e.size == 0:
            rows.append(
                _row(section, term, note=f"no clip has both an AI-{m} and a human-{m} mean", paper=PAPER_TABLE5)
            )
            continue
        se = e.std(ddof=1) / math.sqrt(e.size) if e.size > 1 else math.nan
        rows.append(
            _row(
                section,
                term,
                float(e.mean()),
                se,
                n=e.size,
                note="mean |AI - human| over clips (points)",
                paper=PAPER_TABLE5,
            )
        )
    term = "Text vs. Audio (LMM)"
    counts = long["condition"].value_counts()
    if any(counts.get(m, 0) == 0 for m in MODALITIES):
        missing = [m for m in MODALITIES if counts.get(m, 0) == 0]
        rows.append(
            _row(section, term, note=f"needs both modalities; no AI-human pairs for {missing}", paper=PAPER_TABLE5)
        )
        return rows
    if len(long) < 4 or long["clip_id"].nunique() < 2:
        rows.append(_row(section, term, n=len(long), note="too few clips for the LMM", paper=PAPER_TABLE5))
        return rows
    fit = fit_formula(long, LMM_FORMULA)
    j = list(fit.x_names).index("modality")
    note = f"{LMM_FORMULA}, REML, Satterthwaite df; {long['clip_id'].nunique()} clips"
    if fit.singular:
        note += "; singular fit (clip variance at 0)"
    if not fit.converged:
        note += f"; not converged: {fit.message}"
    rows.append(
        _row(
            section,
            term,
            float(fit.beta[j]),
            float(fit.beta_se[j]),
            float(fit.t_value[j]),
            float(fit.df[j]),
            float(fit.p_value[j]),
            n=fit.n_obs,
            note=note,
            paper=PAPER_TABLE5,
        )
    )
    return rows


def prism_comparisons(clips: pd.DataFrame) -> list[dict]:
    """Table 5's second block: paired t-tests of PRISM score - group mean over clips (estimate = mean
    signed difference in points, se its standard error, df = n - 1)."""
    section = "PRISM vs external annotators"
    rows = []
    for term, col in PRISM_GROUPS:
        d = clips[["prism_score", col]].dropna()
        n = len(d)
        if n < 2:
            rows.append(
                _row(
                    section, term, n=n, note=f"needs >= 2 clips with a PRISM score and a {col} mean", paper=PAPER_TABLE5
                )
            )
            continue
        diff = (d["prism_score"] - d[col]).to_numpy(float)
        res = stats.ttest_rel(d["prism_score"].to_numpy(float), d[col].to_numpy(float))
        rows.append(
            _row(
                section,
                term,
                float(diff.mean()),
                float(diff.std(ddof=1) / math.sqrt(n)),
                float(res.statistic),
                float(n - 1),
                float(res.pvalue),
                n=n,
                note="paired t over clips, PRISM - group",
                paper=PAPER_TABLE5,
            )
        )
    return rows


def table5(
    judges: pd.DataFrame,
    ratings: pd.DataFrame,
    participants: pd.DataFrame,
    stimuli: pd.DataFrame,
    judge_by_modality: Mapping[str, str] | None = None,
    scale: RatingScale | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 5 and the clip-level table it is computed from (see the module docstring).

    Returns (table, clips): ``table`` has :data:`TABLE_COLUMNS` (estimate in points of ``scale``, the
    study's rating scale; default the paper's 1..100; the paper's values as printed and on ``scale``:
    :func:`with_paper_reference`), ``clips`` is :func:`clip_table`'s output.
    """
    ai = on_study_scale(select_judge_ratings(judges, judge_by_modality), scale)
    clips = clip_table(ai_clip_means(ai, stimuli), human_clip_means(ratings, participants, stimuli), stimuli, scale)
    table = with_paper_reference(
        pd.DataFrame(ai_human_error(clips) + prism_comparisons(clips), columns=TABLE_COLUMNS), scale
    )
    judge_ids = ai.groupby("modality")["judge_id"].first().to_dict()
    table.attrs["judges"] = judge_ids
    return table, clips


# --- Table 6 --------------------------------------------------------------------------------------


def ai_differentiation(ai_means: pd.DataFrame, stimuli: pd.DataFrame) -> pd.DataFrame:
    """Per prompt (of the stimulus set) and modality the AI judge rated: ``ai_mean_0``, ``ai_mean_1``
    (mean AI rating of response 0 / 1, points) and ``ai_diff`` = |ai_mean_0 - ai_mean_1| (points);
    NaN with a ``note`` when a response has no AI rating.

    ``ai_means`` is :func:`ai_clip_means`' output. A modality without any AI rating has no rows.
    """
    s = _stimulus_map(stimuli)
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
    _require(per_prompt, ["prompt_id", "condition", "icc_2_1"], "per-prompt ICC table")
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
            _row(
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
            rows.append(_row(section, term, note="needs both modalities", paper=PAPER_TABLE6))
    if "AI Diff x Modality" in res.params.index:
        c = np.array([0.0, 1.0, 0.0, 1.0])
        tt = res.t_test(c)
        rows.append(
            _row(
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
            rows.append(_row(section, term, n=len(d), note=f"needs >= 3 usable {m} prompts", paper=PAPER_TABLE6))
            continue
        res = stats.spearmanr(d["ai_diff"], d["icc_2_1"])
        rows.append(
            _row(
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
            _row(main, t, n=len(used), note=f"needs > {p_needed} usable prompt x modality rows", paper=PAPER_TABLE6)
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
        rows += [_row(f"{rob}: OLS", t, n=len(kept), note=f"{rnote}; too few rows left") for t in OLS_TERMS]
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


# --- figures --------------------------------------------------------------------------------------


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

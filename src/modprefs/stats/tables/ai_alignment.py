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
* MAE per modality: mean over clips of ``|AI mean - human mean|`` (clips with both means) [audio 12.27,
  text 14.29].
* Modality difference: ``abs_error ~ modality + (1 | clip_id)`` on the long table (one row per clip
  and modality), ``modality`` = 1 for text (reference audio), REML with Satterthwaite df and p as
  lmerTest (:func:`modprefs.stats.mixed.lmm.fit_formula`) [text - audio = 2.02, p = .035].
* PRISM vs external annotators: per clip d = PRISM score - group mean for AI-Text, AI-Audio,
  Human-Text, Human-Audio; paired t-test over the clips with both values (``scipy.stats.ttest_rel``,
  df = n - 1); mean signed difference [AI-Text -1.84 (p = .015), AI-Audio -9.18 (< .001),
  Human-Text 8.03 (< .001), Human-Audio 1.15 (p = .374)].

Table 6 (AI differentiation predicts human per-prompt agreement) is in
:mod:`modprefs.stats.tables.ai_alignment_table6`, on the judge selection, clip means and row helpers here; the
figures in :mod:`modprefs.stats.tables.ai_alignment_figures`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd
from scipy import stats

from modprefs.scale import PAPER_SCALE, RatingScale
from modprefs.stats.mixed.lmm import fit_formula
from modprefs.stats.reliability.icc import analysable_ratings
from modprefs.stats.tables.scale_units import conversion_text, paper_on_scale
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


def require_columns(df: pd.DataFrame, columns: tuple[str, ...] | list[str], name: str) -> None:
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
    require_columns(judges, ["kind", "status"], "judge ratings")
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
    require_columns(judges, JUDGE_COLUMNS, "judge ratings")
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


def stimulus_map(stimuli: pd.DataFrame) -> pd.DataFrame:
    require_columns(stimuli, ["prompt_id", "clip_id", "response"], "stimuli")
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
    s = stimulus_map(stimuli)
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
    s = stimulus_map(stimuli)
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


def table_row(
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
    """Long table of ``|AI - human|`` per clip and modality (clips with both means): clip_id, prompt_id,
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
                table_row(section, term, note=f"no clip has both an AI-{m} and a human-{m} mean", paper=PAPER_TABLE5)
            )
            continue
        se = e.std(ddof=1) / math.sqrt(e.size) if e.size > 1 else math.nan
        rows.append(
            table_row(
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
            table_row(section, term, note=f"needs both modalities; no AI-human pairs for {missing}", paper=PAPER_TABLE5)
        )
        return rows
    if len(long) < 4 or long["clip_id"].nunique() < 2:
        rows.append(table_row(section, term, n=len(long), note="too few clips for the LMM", paper=PAPER_TABLE5))
        return rows
    fit = fit_formula(long, LMM_FORMULA)
    j = list(fit.x_names).index("modality")
    note = f"{LMM_FORMULA}, REML, Satterthwaite df; {long['clip_id'].nunique()} clips"
    if fit.singular:
        note += "; singular fit (clip variance at 0)"
    if not fit.converged:
        note += f"; not converged: {fit.message}"
    rows.append(
        table_row(
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
                table_row(
                    section, term, n=n, note=f"needs >= 2 clips with a PRISM score and a {col} mean", paper=PAPER_TABLE5
                )
            )
            continue
        diff = (d["prism_score"] - d[col]).to_numpy(float)
        res = stats.ttest_rel(d["prism_score"].to_numpy(float), d[col].to_numpy(float))
        rows.append(
            table_row(
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

"""The paper's analyses as named units: each takes loaded tables and returns tables and figures.

``ANALYSES[name](tables, params)`` returns an :class:`AnalysisResult`: ``tables`` maps an output
name to a DataFrame (written as ``results/stats/tables/<name>.csv`` and ``.md``), ``figures`` maps
an output name to a function that draws the PNG at a given path. The Snakemake rules of
``rules/stats.smk`` are one per analysis; ``workflow/scripts/analysis.py`` does the I/O.
Inputs (``tables``): ratings, trials, participants, stimuli, assignments (as read from CSV) and,
for ``raters_needed``, the ICC table; ``table5`` / ``table6`` (§4.4) also take ``judges`` (the AI
judge table, results/judges/ratings.csv). Without it (judges stage disabled) or without any usable
judge rating they are *skipped*: every declared table is one row (status ``skipped``, reason) and
every figure a PNG stating the reason, so the rule's outputs exist and say why.

Any ratings table in: each output declares what it needs (:data:`NEEDS`: columns that must hold a
value, a column that must vary, conditions that must have ratings). :func:`run_analysis` checks
the needs against the columns present in the data and computes only the outputs whose needs are
met; every other declared output is *skipped* the same way, its reason naming the missing column
(e.g. ``needs trials.preference``). Skips are per output: constant audio quality skips the
``audio_quality`` table, not the random-slope LRT beside it.

Any design: the outputs built on rating *pairs* (decision thresholds and gaps, cross-modality winners,
the preference-score slope, per-prompt ICCs, Table 6's AI gap; :attr:`Needs.pairs`) need the paper's
pairwise design, every prompt with responses 0 and 1 (:func:`modprefs.ratings.read.pairs_reason`); in a
single-stimulus (MOS) design or one with more responses per prompt they are skipped with that reason,
while the ICC, Krippendorff's continuous alpha (Table 4, whose preference alphas are then NaN rows saying
why), raters needed, Table 2 and Table 5 run.

Any scale: ``params["scale"]`` is the study's rating scale (a ``study.scale`` mapping, as the workflow's
config and ``modprefs stats --scale`` give it, or a :class:`~modprefs.scale.RatingScale`; default the
paper's 1..100). Ratings stay in its units, so every statistic in rating units (gaps, thresholds, the
threshold grid 0..max-min in its steps, LMM coefficients, Table 5's errors) is in scale units; the AI
judges' 1..100 ratings are mapped onto it first. On a scale other than the paper's, the tables in rating
units (:data:`RATING_UNIT_TABLES`) get a ``scale`` column and their titles name the scale. Tables 5 and 6 carry
the paper's values as printed (``paper_estimate_1_100``) and restated on the study's scale
(``paper_estimate_on_study_scale``; :func:`modprefs.stats.tables.ai_alignment.with_paper_reference`), their titles
say which is which on every scale (:func:`paper_titles`); a threshold the scale's step makes degenerate carries a
caveat naming the step (:func:`modprefs.stats.tables.thresholds.grid_caveat`, :func:`threshold_caveat_title`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from modprefs.errors import InsufficientDataError
from modprefs.ratings.read import pairs_reason
from modprefs.scale import PAPER_SCALE, RatingScale, scale_from_config
from modprefs.stats.defaults import STATS_DEFAULTS
from modprefs.stats.figures import figure2_gap_cdf
from modprefs.stats.reliability import rater_scaling
from modprefs.stats.reliability.icc import ICC_COLUMNS
from modprefs.stats.reliability.icc_ci import icc_with_ci
from modprefs.stats.tables import (
    agreement,
    ai_alignment,
    ai_alignment_figures,
    ai_alignment_table6,
    behaviour,
    descriptive,
    modality,
    reliability_table,
    thresholds,
)
from modprefs.stats.tables.catalog import OUTPUTS
from modprefs.stats.tables.interval_text import icc_interval_text, level_text, with_per_prompt_intervals
from modprefs.stats.tables.justifications import justification_terms
from modprefs.stats.tables.scale_units import scale_label
from modprefs.study.terms import CONDITIONS

log = logging.getLogger(__name__)

Tables = dict[str, pd.DataFrame]


@dataclass
class AnalysisResult:
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    figures: dict[str, Callable[[str], object]] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)
    md_columns: dict[str, list[str]] = field(default_factory=dict)  # a table's columns in its Markdown twin


# Titles of the output tables (the Markdown twin's heading, the report's caption).
TITLES: dict[str, str] = {
    "table1_demographics": "Table 1: participant demographics by condition",
    "table3_session": "Table 3: session and trial characteristics by condition",
    "behaviour": "Behaviour: re-listening, replays, rating reversals, deliberation",
    "thresholds_gaps": "Decision thresholds (§4.1): rating gap on decisive vs tie trials",
    "thresholds_recommendations": "Per-modality binarisation thresholds",
    "table4_reliability": "Table 4: inter-rater reliability by modality (p of audio - text)",
    "raters_needed": "Raters needed per stimulus for ICC(2,k) = .50 / .75 / .90",
    "cross_modality_agreement": "Cross-modality agreement of winners by threshold (Figure 3)",
    "cross_modality_binomial": (
        "Winner agreement at threshold 0: binomial test vs 50 % (the paper's p = .31 is the one-sided test)"
    ),
    "justifications": (
        "Justification terms by modality (TF-IDF vocabulary; p_perm: participant-level permutation test; "
        "significant: its Westfall-Young step-down maxT p_fwer <= .05 (family-wise), measured null rate of >= 1 "
        "discovery 3.9-6.1 % (1,000 studies per cell, phrase habits of every strength; "
        "benchmarks/out/justifications_null.md); q: Benjamini-Hochberg on p_perm, 3.2-5.8 %. chi2, p_chi2, "
        "q_chi2: the paper's document-level chi-square, for comparison only: 33-98 % under the same habits)"
    ),
    "justifications_counts": "Justification corpus",
    "table2_lmm": (
        "Table 2: fixed effects of the omnibus LMM (reference audio) and per-modality simple "
        "effects (Satterthwaite df, t-based CI at stats.ci_level)"
    ),
    "practice_effects": "Practice effects: log trial duration over standardised trial number",
    "random_slope": (
        "Prompt-specific modality effects (§4.3): preference score ~ modality, LRT for (1 + modality | prompt)"
    ),
    "audio_quality": "Audio quality as a fidelity control",
    "per_prompt_icc": "Per-prompt ICC(2,1) by modality (2 clips x raters, Shrout & Fleiss two-way random)",
}


def _titles(*names: str) -> dict[str, str]:
    return {n: TITLES[n] for n in names}


#: outputs holding values in rating units (means, gaps, thresholds, variances, coefficients, errors)
RATING_UNIT_TABLES = frozenset(
    {
        "icc",
        "thresholds_gaps",
        "thresholds_recommendations",
        "cross_modality_agreement",
        "table2_lmm",
        "random_slope",
        "audio_quality",
        "per_prompt_icc",
        "table5_ai_human",
        "table5_clips",
        "table6_ai_diff_icc",
        "table6_per_prompt",
    }
)


def study_scale(p: Mapping[str, Any]) -> RatingScale:
    """The rating scale of the params (``scale``: a ``study.scale`` mapping or a RatingScale; default the paper's)."""
    value = p.get("scale")
    return value if isinstance(value, RatingScale) else scale_from_config(value) if value else PAPER_SCALE


def mark_scale(result: AnalysisResult, scale: RatingScale) -> AnalysisResult:
    """On a scale other than the paper's: the computed tables in rating units get a ``scale`` column and a title
    naming it (the paper's scale leaves everything as it was)."""
    if scale.is_paper:
        return result
    for name, table in result.tables.items():
        if name in RATING_UNIT_TABLES and list(table.columns) != ["status", "reason"]:
            table["scale"] = scale_label(scale)
            result.titles[name] = (
                f"{result.titles.get(name, name)} [ratings on the scale {scale_label(scale)}: means, gaps, "
                "thresholds, errors and coefficients in its units]"
            )
    return result


def asr_transcript_note(t: Tables) -> str | None:
    """The note every table of a study carries when some clips' text condition is an ASR transcript (a pairs
    table's audio-only sides; ``stimuli.transcript == "asr"``), else None."""
    stimuli = t.get("stimuli")
    if stimuli is None or "transcript" not in stimuli.columns:
        return None
    asr = int((stimuli["transcript"].astype(str) == "asr").sum())
    if not asr:
        return None
    return f"transcript: asr ({asr} of {len(stimuli)} clips' text is the ASR transcript of their audio)"


def mark_transcripts(result: AnalysisResult, t: Tables) -> AnalysisResult:
    """Every table of a study with ASR-transcribed clips gets a ``transcript`` column and says so in its title."""
    note = asr_transcript_note(t)
    if note is None:
        return result
    for name, table in result.tables.items():
        table["transcript"] = note
        result.titles[name] = f"{result.titles.get(name, name)} [{note}]"
    return result


#: the ICC table's markdown: every column but the resampling bookkeeping
ICC_MD_COLUMNS = [c for c in ICC_COLUMNS if c not in ("n_boot", "n_boot_failed", "ci_level", "ci_method", "model")]


def icc_table(t: Tables, p: dict[str, Any]) -> AnalysisResult:
    """icc.csv (the rule ``icc_table`` and ``modprefs stats``): ICC(2,1), ICC(2,k) per condition with CIs.

    params: ``icc_ci_method``, ``n_boot``, ``seed``, ``ci_level`` (:data:`modprefs.stats.defaults.STATS_DEFAULTS`).
    """
    table = icc_with_ci(
        t["ratings"],
        t["participants"],
        method=p["icc_ci_method"],
        n_boot=int(p["n_boot"]),
        seed=int(p["seed"]),
        ci_level=float(p["ci_level"]),
        stimuli=t["stimuli"],
    )
    title = f"ICC per condition ({icc_interval_text(table, float(p['ci_level']))})"
    result = AnalysisResult({"icc": table}, titles={"icc": title}, md_columns={"icc": ICC_MD_COLUMNS})
    return mark_transcripts(mark_scale(result, study_scale(p)), t)


def table1(t: Tables, p: dict[str, Any]) -> AnalysisResult:
    return AnalysisResult(
        {"table1_demographics": descriptive.demographics_table(t["participants"])},
        titles=_titles("table1_demographics"),
    )


def _want(p: dict[str, Any], name: str) -> bool:
    """Whether output ``name`` is to be computed (:func:`run_analysis` passes ``_outputs``; default all)."""
    return p.get("_outputs") is None or name in p["_outputs"]


def table3(t: Tables, p: dict[str, Any]) -> AnalysisResult:
    tables = {}
    if _want(p, "table3_session"):
        tables["table3_session"] = descriptive.session_table(t["participants"], t["trials"])
    if _want(p, "behaviour"):
        tables["behaviour"] = behaviour.behaviour_table(t["trials"], t["participants"], t["assignments"], t["ratings"])
    return AnalysisResult(tables, titles=_titles("table3_session", "behaviour"))


def decision_thresholds(t: Tables, p: dict[str, Any]) -> AnalysisResult:
    """Rating gaps and binarisation thresholds; params: ``n_boot_threshold``, ``seed``, optional ``scale`` (the
    thresholds are searched on 0..max-min in the scale's steps)."""
    scale = study_scale(p)
    gaps = thresholds.trial_gaps(t["ratings"], t["trials"], t["participants"])
    max_gap = 100.0 if scale.is_paper else scale.span
    level = float(p.get("ci_level", STATS_DEFAULTS["ci_level"]))
    titles = _titles("thresholds_gaps", "thresholds_recommendations")
    titles["thresholds_gaps"] += f" ({level_text(level)} CIs of the mean: t-based, over trials)"
    titles["thresholds_recommendations"] += (
        f" ({level_text(level)} intervals: participant-bootstrap percentile, {int(p['n_boot_threshold'])} resamples)"
    )
    recs = thresholds.threshold_recommendations(
        gaps, n_boot=p["n_boot_threshold"], seed=p["seed"], taus=thresholds.threshold_grid(scale), ci_level=level
    )
    titles["thresholds_recommendations"] += threshold_caveat_title(recs, scale)
    return AnalysisResult(
        {"thresholds_gaps": thresholds.gap_table(gaps, ci_level=level), "thresholds_recommendations": recs},
        {"figure2_gap_cdf": lambda path: figure2_gap_cdf(gaps, path, max_gap=max_gap)},
        titles,
    )


def threshold_caveat_title(recs: pd.DataFrame, scale: RatingScale) -> str:
    """The title's note on degenerate thresholds (:func:`modprefs.stats.tables.thresholds.grid_caveat`): how many
    of the found thresholds the scale's step makes degenerate; '' when none."""
    found = recs["threshold"].notna()
    n = int((recs.loc[found, "caveat"].astype(str) != "").sum())
    if not n:
        return ""
    return (
        f" [{n} of {int(found.sum())} thresholds degenerate on the scale {scale_label(scale)} "
        f"({thresholds.threshold_grid(scale).size} possible thresholds in steps of {scale.step:g}): see the caveat "
        "column]"
    )


def table4(t: Tables, p: dict[str, Any]) -> AnalysisResult:
    """Table 4; its preference alphas need :data:`PREFERENCE_NEEDS` (else NaN rows with the reason), the rest runs
    on any design with both conditions."""
    present = p.get("_present")
    preference_reason = (
        unmet_reason(PREFERENCE_NEEDS, t, present) if present is not None else pairs_reason(t.get("stimuli"))
    )
    table = reliability_table.table4(
        t["icc"],
        t["ratings"],
        t["trials"],
        t["assignments"],
        t["participants"],
        t["stimuli"],
        n_perm=p["n_perm"],
        n_boot_alpha=p["n_boot_alpha"],
        icc_test=p.get("icc_test", STATS_DEFAULTS["icc_test"]),
        n_noise=p.get("n_boot", 0),
        n_perm_alpha=p["n_perm_alpha"],
        seed=p["seed"],
        ci_level=p["ci_level"],
        preference_reason=preference_reason,
    )
    title = reliability_table.table4_title(TITLES["table4_reliability"], table, t["icc"], float(p["ci_level"]))
    md = [c for c in reliability_table.TABLE4_COLUMNS if c not in reliability_table.RESAMPLING_COLUMNS]
    return AnalysisResult(
        {"table4_reliability": table}, titles={"table4_reliability": title}, md_columns={"table4_reliability": md}
    )


def raters_needed(t: Tables, p: dict[str, Any]) -> AnalysisResult:
    """Raters needed and Figure 4 from the ICC table; the optimistic/pessimistic counts sit at its ICC(2,1) interval
    bounds, whose level (the table's ``ci_level``, else params ``ci_level``) and method the title states."""
    icc = t["icc"]
    levels = pd.to_numeric(icc["ci_level"], errors="coerce").dropna().unique() if "ci_level" in icc else []
    level = float(levels[0]) if len(levels) == 1 else float(p.get("ci_level", STATS_DEFAULTS["ci_level"]))
    title = f"{TITLES['raters_needed']} (optimistic / pessimistic at the bounds of {icc_interval_text(icc, level)})"
    return AnalysisResult(
        {"raters_needed": rater_scaling.raters_needed_table(icc)},
        {"figure4_icc_by_k": lambda path: rater_scaling.figure4_icc_by_k(icc, path)},
        {"raters_needed": title},
    )


def cross_modality(t: Tables, p: dict[str, Any]) -> AnalysisResult:
    """Figure 3; params: optional ``scale`` (the paper's thresholds 0..40 points, proportionally on another scale)."""
    scale = study_scale(p)
    gaps = agreement.prompt_gaps(agreement.clip_means(t["ratings"], t["participants"], t["stimuli"]))
    curve = agreement.agreement_curve(gaps, None if scale.is_paper else np.linspace(0, 40 * scale.span / 99, 41))
    summary = pd.DataFrame([agreement.agreement_at_zero(gaps)])
    return AnalysisResult(
        {"cross_modality_agreement": curve, "cross_modality_binomial": summary},
        {"figure3_agreement": lambda path: agreement.figure3_agreement(curve, path)},
        _titles("cross_modality_agreement", "cross_modality_binomial"),
    )


def justifications(t: Tables, p: dict[str, Any]) -> AnalysisResult:
    """Justification terms; params: ``modality_terms``, ``seed`` and ``n_perm`` (the participant permutation test)."""
    table = justification_terms(
        t["trials"],
        t["participants"],
        p["modality_terms"],
        n_perm=int(p.get("n_perm", STATS_DEFAULTS["n_perm"])),
        seed=int(p.get("seed", STATS_DEFAULTS["seed"])),
    )
    counts = pd.DataFrame([{k: v for k, v in table.attrs.items() if not isinstance(v, (list, tuple, set, dict))}])
    return AnalysisResult(
        {"justifications": table, "justifications_counts": counts},
        titles=_titles("justifications", "justifications_counts"),
    )


def table2(t: Tables, p: dict[str, Any]) -> AnalysisResult:
    """Table 2; params: optional ``table2_random`` (:data:`modprefs.stats.tables.modality.TABLE2_RANDOM`),
    ``table2_slope_alpha`` and ``ci_level``."""
    random = p.get("table2_random") or modality.DEFAULT_TABLE2_RANDOM
    level = float(STATS_DEFAULTS["ci_level"] if p.get("ci_level") is None else p["ci_level"])
    alpha = float(
        STATS_DEFAULTS["table2_slope_alpha"] if p.get("table2_slope_alpha") is None else p["table2_slope_alpha"]
    )
    tables = {}
    if _want(p, "table2_lmm"):
        frame = modality.rating_frame(t["ratings"], t["participants"], t["stimuli"])
        tables["table2_lmm"] = modality.table2(frame, random, ci_level=level, slope_alpha=alpha)
    if _want(p, "practice_effects"):
        tables["practice_effects"] = modality.practice_effects(
            t["trials"], t["participants"], random, ci_level=level, slope_alpha=alpha
        )
    titles = {
        "table2_lmm": modality.table2_title(random, tables.get("table2_lmm"), level),
        "practice_effects": modality.practice_title(random, tables.get("practice_effects"), level),
    }
    return AnalysisResult(tables, titles=titles)


def modality_effects(t: Tables, p: dict[str, Any]) -> AnalysisResult:
    frame = modality.rating_frame(t["ratings"], t["participants"], t["stimuli"])
    make = {
        "random_slope": modality.random_slope_test,
        "audio_quality": modality.audio_quality_analysis,
        "per_prompt_icc": modality.per_prompt_icc,
    }
    tables = {name: f(frame) for name, f in make.items() if _want(p, name)}
    level = float(p.get("ci_level", STATS_DEFAULTS["ci_level"]))
    titles = _titles("random_slope", "audio_quality", "per_prompt_icc")
    if "per_prompt_icc" in tables:
        tables["per_prompt_icc"] = with_per_prompt_intervals(tables["per_prompt_icc"], frame, level)
        titles["per_prompt_icc"] += f"; {level_text(level)} CIs: F-based, McGraw & Wong (1996) ICC(A,1)"
    return AnalysisResult(tables, titles=titles)


def _placeholder_figure(reason: str, path: str) -> None:
    ai_alignment_figures.figure_placeholder(reason, path)


def _skipped(reason: str, tables: tuple[str, ...], figures: tuple[str, ...], titles: dict[str, str]) -> AnalysisResult:
    """Every declared output, each saying why the analysis did not run."""
    row = pd.DataFrame([{"status": "skipped", "reason": reason}])
    return AnalysisResult(
        {n: row.copy() for n in tables},
        {n: functools.partial(_placeholder_figure, reason) for n in figures},
        {n: f"{titles[n]} (skipped)" for n in tables},
    )


TABLE5_TITLES = {
    "table5_ai_human": "Table 5: AI-human absolute error (MAE per modality; LMM abs_error ~ modality + "
    "(1|clip), Satterthwaite) and PRISM - external annotators (paired t over clips)",
    "table5_clips": "Clip-level mean ratings: PRISM, AI and human by modality",
}
TABLE6_TITLES = {
    "table6_ai_diff_icc": "Table 6: human per-prompt ICC(2,1) ~ AI differentiation x modality (OLS, "
    "reference audio), Spearman per modality, robustness without Cook's D > 4/n",
    "table6_per_prompt": "Per prompt and modality: AI differentiation, human ICC(2,1), Cook's D",
}


def paper_titles(titles: Mapping[str, str], name: str, scale: RatingScale) -> dict[str, str]:
    """``titles`` with table ``name``'s (Table 5 or 6) saying the scale of its values and of its two paper columns."""
    out = dict(titles)
    out[name] += (
        f" [study values on the scale {scale_label(scale)}; paper_estimate_1_100: the paper's value as printed, on "
        f"its 1-100 scale; paper_estimate_on_study_scale: the same value on {scale_label(scale)} "
        "(paper_conversion says how)]"
    )
    return out


def table5(t: Tables, p: dict[str, Any]) -> AnalysisResult:
    """Table 5 (§4.4); params: optional ``judge_by_modality`` ({modality: judge[@prompt_version]})."""
    reason = ai_alignment.judges_skip_reason(t.get("judges"))
    if reason:
        return _skipped(reason, tuple(TABLE5_TITLES), ("figure_ai_human",), TABLE5_TITLES)
    table, clips = ai_alignment.table5(
        t["judges"], t["ratings"], t["participants"], t["stimuli"], p.get("judge_by_modality") or None, study_scale(p)
    )
    return AnalysisResult(
        {"table5_ai_human": table, "table5_clips": clips},
        {"figure_ai_human": lambda path: ai_alignment_figures.figure_ai_human(clips, path, study_scale(p))},
        paper_titles(TABLE5_TITLES, "table5_ai_human", study_scale(p)),
    )


def table6(t: Tables, p: dict[str, Any]) -> AnalysisResult:
    """Table 6 (§4.4); params: optional ``judge_by_modality``."""
    reason = ai_alignment.judges_skip_reason(t.get("judges"))
    if reason:
        return _skipped(reason, tuple(TABLE6_TITLES), ("figure_ai_diff_icc",), TABLE6_TITLES)
    table, per_prompt = ai_alignment_table6.table6_from_inputs(
        t["judges"], t["ratings"], t["participants"], t["stimuli"], p.get("judge_by_modality") or None, study_scale(p)
    )
    return AnalysisResult(
        {"table6_ai_diff_icc": table, "table6_per_prompt": per_prompt},
        {"figure_ai_diff_icc": lambda path: ai_alignment_figures.figure_ai_diff_icc(per_prompt, path, study_scale(p))},
        paper_titles(TABLE6_TITLES, "table6_ai_diff_icc", study_scale(p)),
    )


ANALYSES: dict[str, Callable[[Tables, dict[str, Any]], AnalysisResult]] = {
    "table1": table1,
    "table3": table3,
    "decision_thresholds": decision_thresholds,
    "table4": table4,
    "raters_needed": raters_needed,
    "cross_modality": cross_modality,
    "justifications": justifications,
    "table2": table2,
    "modality_effects": modality_effects,
    "table5": table5,
    "table6": table6,
}


# ---- what each output needs, and running an analysis on whatever the data holds ----------------------
@dataclass(frozen=True)
class Needs:
    """What one output needs. ``columns``: ``"table.column"`` holding at least one value; ``any_of``: at
    least one of these; ``varying``: a column with two or more distinct values; ``conditions``: the
    conditions that must have ratings; ``pairs``: the paper's pairwise design (every prompt with
    responses 0 and 1, :func:`modprefs.ratings.read.pairs_reason`)."""

    columns: tuple[str, ...] = ()
    any_of: tuple[str, ...] = ()
    varying: tuple[str, ...] = ()
    conditions: tuple[str, ...] = ()
    pairs: bool = False


BOTH = CONDITIONS
_ORDER = ("ratings.trial", "ratings.presented_first")
_PREFERENCES = ("trials.trial", "trials.preference", "ratings.trial")
NEEDS: dict[str, Needs] = {
    "table1_demographics": Needs(),
    "table3_session": Needs(
        (
            "participants.passed_attention",
            "participants.completed",
            "participants.session_minutes",
            "participants.difficulty",
            "trials.trial",
            "trials.decision_time_s",
        )
    ),
    "behaviour": Needs(
        ("trials.trial",),
        any_of=(
            "trials.replays_0",
            "trials.replays_1",
            "trials.relistened_first",
            "trials.rating_changes",
            "trials.deliberation_time_s",
        ),
    ),
    "thresholds_gaps": Needs(_PREFERENCES, pairs=True),
    "thresholds_recommendations": Needs(_PREFERENCES, pairs=True),
    "figure2_gap_cdf": Needs(_PREFERENCES, pairs=True),
    "table4_reliability": Needs(conditions=BOTH),
    "raters_needed": Needs(),
    "figure4_icc_by_k": Needs(),
    "cross_modality_agreement": Needs(conditions=BOTH, pairs=True),
    "cross_modality_binomial": Needs(conditions=BOTH, pairs=True),
    "figure3_agreement": Needs(conditions=BOTH, pairs=True),
    "justifications": Needs(("trials.trial", "trials.justification"), conditions=BOTH),
    "justifications_counts": Needs(("trials.trial", "trials.justification"), conditions=BOTH),
    "table2_lmm": Needs((*_ORDER, "stimuli.n_chars"), conditions=BOTH),
    "practice_effects": Needs(("trials.trial", "trials.decision_time_s"), conditions=BOTH),
    "random_slope": Needs(conditions=BOTH, pairs=True),
    "audio_quality": Needs((*_ORDER, "stimuli.n_chars"), varying=("ratings.audio_quality",), conditions=("audio",)),
    "per_prompt_icc": Needs(pairs=True),
    "table6_ai_diff_icc": Needs(pairs=True),
    "table6_per_prompt": Needs(pairs=True),
    "figure_ai_diff_icc": Needs(pairs=True),
}
#: what Table 4's preference alphas (ordinal, nominal) need; its ICC and continuous-alpha rows need both conditions
PREFERENCE_NEEDS = Needs((*_PREFERENCES, "ratings.presented_first"), pairs=True)


def unmet_reason(needs: Needs, tables: Tables, present: Mapping[str, Collection[str]]) -> str | None:
    """Why ``needs`` are not met by the data (naming the missing column), or None when they are."""
    missing = [c for c in needs.columns if c.split(".", 1)[1] not in present.get(c.split(".", 1)[0], ())]
    reasons = []
    if missing:
        reasons.append(f"needs {', '.join(missing)} (not in the data)")
    if needs.any_of and not any(c.split(".", 1)[1] in present.get(c.split(".", 1)[0], ()) for c in needs.any_of):
        reasons.append(f"needs one of {', '.join(needs.any_of)} (none in the data)")
    for c in needs.varying:
        table, column = c.split(".", 1)
        if column not in present.get(table, ()):
            reasons.append(f"needs {c} (not in the data)")
            continue
        values = pd.Series(tables[table][column]).dropna().unique()
        if len(values) < 2:
            reasons.append(f"{c} is constant ({values[0]!r} in every row): nothing to relate it to")
    if needs.pairs:
        reason = pairs_reason(tables.get("stimuli"))
        if reason:
            reasons.append(reason)
    if needs.conditions:
        have = set(tables["ratings"]["condition"].dropna().astype(str))
        lacking = [c for c in needs.conditions if c not in have]
        if lacking:
            reasons.append(
                f"needs ratings in the {' and '.join(needs.conditions)} condition"
                f"{'s' if len(needs.conditions) > 1 else ''} (ratings.condition has none in "
                f"{', '.join(lacking)})"
            )
    return "; ".join(reasons) or None


def run_analysis(
    name: str, tables: Tables, params: dict[str, Any], present: Mapping[str, Collection[str]]
) -> AnalysisResult:
    """Every declared output of analysis ``name``: computed where :data:`NEEDS` are met, else skipped.

    ``present``: per table, the columns holding a value in the data (:func:`modprefs.ratings.read.present_columns`,
    taken before any in-memory stand-in). A skipped table is one row (status ``skipped``, reason); a
    skipped figure a PNG stating the reason.
    """
    table_names, figure_names = OUTPUTS[name]
    reasons = {o: unmet_reason(NEEDS.get(o, Needs()), tables, present) for o in (*table_names, *figure_names)}
    wanted = {o for o, r in reasons.items() if r is None}
    try:
        run = {**params, "_outputs": wanted, "_present": present}
        result = ANALYSES[name](tables, run) if wanted else AnalysisResult()
    except InsufficientDataError as err:  # the study is too small for this analysis' model: say so, go on
        log.warning("%s: skipped, the data cannot support its model: %s", name, err)
        result = AnalysisResult()
        reasons.update({o: f"the data cannot support the model ({err})" for o in wanted})
    for o, reason in reasons.items():
        if reason is None:
            continue
        skipped = _skipped(
            reason,
            (o,) if o in table_names else (),
            (o,) if o in figure_names else (),
            {o: {**TITLES, **TABLE5_TITLES, **TABLE6_TITLES}.get(o, o)},
        )
        result.tables.update(skipped.tables)
        result.figures.update(skipped.figures)
        result.titles.update(skipped.titles)
    return mark_transcripts(mark_scale(result, study_scale(params)), tables)

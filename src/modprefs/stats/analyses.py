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
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from modprefs.stats import agreement, ai_alignment, descriptive, modality, rater_scaling, reliability, thresholds
from modprefs.stats.figures import figure2_gap_cdf
from modprefs.stats.justifications import justification_terms

Tables = dict[str, pd.DataFrame]


@dataclass
class AnalysisResult:
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    figures: dict[str, Callable[[str], None]] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)


def table1(t: Tables, p: dict[str, Any]) -> AnalysisResult:
    return AnalysisResult({"table1_demographics": descriptive.demographics_table(t["participants"])},
                          titles={"table1_demographics": "Table 1: participant demographics by condition"})


def table3(t: Tables, p: dict[str, Any]) -> AnalysisResult:
    return AnalysisResult(
        {"table3_session": descriptive.session_table(t["participants"], t["trials"]),
         "behaviour": descriptive.behaviour_table(t["trials"], t["participants"], t["assignments"], t["ratings"])},
        titles={"table3_session": "Table 3: session and trial characteristics by condition",
                "behaviour": "Behaviour: re-listening, replays, rating reversals, deliberation"})


def decision_thresholds(t: Tables, p: dict[str, Any]) -> AnalysisResult:
    gaps = thresholds.trial_gaps(t["ratings"], t["trials"], t["participants"])
    return AnalysisResult(
        {"thresholds_gaps": thresholds.gap_table(gaps),
         "thresholds_recommendations": thresholds.threshold_recommendations(gaps, n_boot=p.get("n_boot_threshold", 0),
                                                                           seed=p["seed"])},
        {"figure2_gap_cdf": lambda path: figure2_gap_cdf(gaps, path)},
        {"thresholds_gaps": "Decision thresholds (§4.1): rating gap on decisive vs tie trials",
         "thresholds_recommendations": "Per-modality binarisation thresholds"})


def table4(t: Tables, p: dict[str, Any]) -> AnalysisResult:
    table = reliability.table4(t["icc"], t["ratings"], t["trials"], t["assignments"], t["participants"], t["stimuli"],
                               n_perm=p["n_perm"], n_boot_alpha=p["n_boot_alpha"],
                               n_perm_alpha=p["n_perm_alpha"], seed=p["seed"], ci_level=p["ci_level"])
    return AnalysisResult({"table4_reliability": table},
                          titles={"table4_reliability": "Table 4: inter-rater reliability by modality "
                                  "(stimulus-bootstrap CIs; permutation p of audio - text)"})


def raters_needed(t: Tables, p: dict[str, Any]) -> AnalysisResult:
    icc = t["icc"]
    return AnalysisResult({"raters_needed": rater_scaling.raters_needed_table(icc)},
                          {"figure4_icc_by_k": lambda path: rater_scaling.figure4_icc_by_k(icc, path)},
                          {"raters_needed": "Raters needed per stimulus for ICC(2,k) = .50 / .75 / .90"})


def cross_modality(t: Tables, p: dict[str, Any]) -> AnalysisResult:
    gaps = agreement.prompt_gaps(agreement.clip_means(t["ratings"], t["participants"], t["stimuli"]))
    curve = agreement.agreement_curve(gaps)
    summary = pd.DataFrame([agreement.agreement_at_zero(gaps)])
    return AnalysisResult({"cross_modality_agreement": curve, "cross_modality_binomial": summary},
                          {"figure3_agreement": lambda path: agreement.figure3_agreement(curve, path)},
                          {"cross_modality_agreement": "Cross-modality agreement of winners by threshold (Figure 3)",
                           "cross_modality_binomial": "Winner agreement at threshold 0: binomial test vs 50 % "
                           "(the paper's p = .31 is the one-sided test)"})


def justifications(t: Tables, p: dict[str, Any]) -> AnalysisResult:
    table = justification_terms(t["trials"], t["participants"], p["modality_terms"])
    counts = pd.DataFrame([{k: v for k, v in table.attrs.items() if not isinstance(v, (list, tuple, set, dict))}])
    return AnalysisResult({"justifications": table, "justifications_counts": counts},
                          titles={"justifications": "Justification terms by modality (TF-IDF vocabulary, "
                                  "chi-square on presence, Benjamini-Hochberg q)",
                                  "justifications_counts": "Justification corpus"})


def table2(t: Tables, p: dict[str, Any]) -> AnalysisResult:
    """Table 2; params: optional ``table2_random`` (:data:`modprefs.stats.modality.TABLE2_RANDOM`)."""
    random = p.get("table2_random") or modality.DEFAULT_TABLE2_RANDOM
    frame = modality.rating_frame(t["ratings"], t["participants"], t["stimuli"])
    return AnalysisResult(
        {"table2_lmm": modality.table2(frame, random),
         "practice_effects": modality.practice_effects(t["trials"], t["participants"])},
        titles={"table2_lmm": "Table 2: fixed effects of the omnibus LMM (reference audio; random effects "
                f"{modality.TABLE2_RANDOM[random]}) and per-modality simple effects (Satterthwaite df, t-based 95 % CI)",
                "practice_effects": "Practice effects: log trial duration over standardised trial number"})


def modality_effects(t: Tables, p: dict[str, Any]) -> AnalysisResult:
    frame = modality.rating_frame(t["ratings"], t["participants"], t["stimuli"])
    return AnalysisResult(
        {"random_slope": modality.random_slope_test(frame), "audio_quality": modality.audio_quality_analysis(frame),
         "per_prompt_icc": modality.per_prompt_icc(frame)},
        titles={"random_slope": "Prompt-specific modality effects (§4.3): preference score ~ modality, LRT for "
                "(1 + modality | prompt)",
                "audio_quality": "Audio quality as a fidelity control",
                "per_prompt_icc": "Per-prompt ICC(2,1) by modality (2 clips x raters, Shrout & Fleiss two-way random)"})


def _skipped(reason: str, tables: tuple[str, ...], figures: tuple[str, ...], titles: dict[str, str]) -> AnalysisResult:
    """Every declared output, each saying why the analysis did not run."""
    row = pd.DataFrame([{"status": "skipped", "reason": reason}])
    return AnalysisResult({n: row.copy() for n in tables},
                          {n: (lambda path, r=reason: ai_alignment.figure_placeholder(r, path)) for n in figures},
                          {n: f"{titles[n]} (skipped)" for n in tables})


TABLE5_TITLES = {"table5_ai_human": "Table 5: AI-human absolute error (MAE per modality; LMM abs_error ~ modality + "
                 "(1|clip), Satterthwaite) and PRISM - external annotators (paired t over clips)",
                 "table5_clips": "Clip-level mean ratings: PRISM, AI and human by modality"}
TABLE6_TITLES = {"table6_ai_diff_icc": "Table 6: human per-prompt ICC(2,1) ~ AI differentiation x modality (OLS, "
                 "reference audio), Spearman per modality, robustness without Cook's D > 4/n",
                 "table6_per_prompt": "Per prompt and modality: AI differentiation, human ICC(2,1), Cook's D"}


def table5(t: Tables, p: dict[str, Any]) -> AnalysisResult:
    """Table 5 (§4.4); params: optional ``judge_by_modality`` ({modality: judge[@prompt_version]})."""
    reason = ai_alignment.judges_skip_reason(t.get("judges"))
    if reason:
        return _skipped(reason, tuple(TABLE5_TITLES), ("figure_ai_human",), TABLE5_TITLES)
    table, clips = ai_alignment.table5(t["judges"], t["ratings"], t["participants"], t["stimuli"],
                                       p.get("judge_by_modality") or None)
    return AnalysisResult({"table5_ai_human": table, "table5_clips": clips},
                          {"figure_ai_human": lambda path: ai_alignment.figure_ai_human(clips, path)},
                          dict(TABLE5_TITLES))


def table6(t: Tables, p: dict[str, Any]) -> AnalysisResult:
    """Table 6 (§4.4); params: optional ``judge_by_modality``."""
    reason = ai_alignment.judges_skip_reason(t.get("judges"))
    if reason:
        return _skipped(reason, tuple(TABLE6_TITLES), ("figure_ai_diff_icc",), TABLE6_TITLES)
    table, per_prompt = ai_alignment.table6_from_inputs(t["judges"], t["ratings"], t["participants"], t["stimuli"],
                                                        p.get("judge_by_modality") or None)
    return AnalysisResult({"table6_ai_diff_icc": table, "table6_per_prompt": per_prompt},
                          {"figure_ai_diff_icc": lambda path: ai_alignment.figure_ai_diff_icc(per_prompt, path)},
                          dict(TABLE6_TITLES))


ANALYSES: dict[str, Callable[[Tables, dict[str, Any]], AnalysisResult]] = {
    "table1": table1, "table3": table3, "decision_thresholds": decision_thresholds, "table4": table4,
    "raters_needed": raters_needed, "cross_modality": cross_modality, "justifications": justifications,
    "table2": table2, "modality_effects": modality_effects, "table5": table5, "table6": table6,
}

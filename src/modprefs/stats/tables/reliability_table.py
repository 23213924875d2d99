"""Table 4: reliability by modality -- ICC(2,1), ICC(2,k) and Krippendorff's alpha, their intervals at
``stats.ci_level``, and tests of the audio - text differences.

Every row says how its interval and its p-value were obtained (``ci_level``, ``ci_method``, ``test``) and what was
resampled, in columns named after it:

* ICC rows: the intervals are the ICC table's (:func:`modprefs.stats.reliability.icc_ci.icc_with_ci`, the method
  ``stats.icc_ci_method`` chose per condition: ``n_jackknife_noise_refits`` residual refits for the crossed
  jackknife's noise term, or ``n_boot_icc_refits`` bootstrap refits). The p-value is ``stats.icc_test``'s
  (:data:`ICC_TESTS`): ``calibrated`` (default) = the crossed-jackknife t test with its variance calibrated in
  ``n_null_studies`` null studies simulated from the study's own fit, on the calibrated variance's Satterthwaite
  df (:mod:`modprefs.stats.reliability.icc_difference`); ``jackknife`` = the same test uncalibrated (conservative);
  ``permutation`` = the paper's participant permutation (``n_perm_participants``), which tests exchangeable
  conditions and rejects too often when only the ICCs are equal. The jackknife tests' noise term uses the same
  ``n_jackknife_noise_refits``.
* Alpha rows: percentile intervals of a stimulus bootstrap (``n_boot_alpha_stimuli`` resamples of the units:
  clips for the continuous alpha, prompts for the preference alphas) and the test of
  :func:`modprefs.stats.tables.reliability_alpha.alpha_table` over ``n_perm_participants`` participant reassignments:
  the studentized permutation of the crossed-jackknife t, or with ``stats.icc_test: permutation`` (the paper's
  tests throughout) the permutation of the difference.

ICC permutation test (§4.2, :func:`icc_permutation_test`): the analysable participants of both conditions are
pooled and reassigned at random to pseudo-audio and pseudo-text groups of the original sizes, ``n_perm`` times;
each pseudo-group's ICCs are refitted with the same model as the observed ones
(:func:`modprefs.stats.reliability.icc.condition_design`: ``trial_z`` standardised within the group's rows).
Two-sided p = (1 + #{``|d*|`` >= ``|d|``}) / (1 + n_valid)
(:func:`modprefs.stats.reliability.resampling.permutation_p_value`).
Measured sizes of every test: benchmarks/out/icc_difference_null_v2.md (ICC) and alpha_difference_null.md (alpha).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pandas as pd

from modprefs.stats.mixed.reml import fit_crossed_intercepts
from modprefs.stats.reliability.icc import analysable_ratings, condition_design, icc_from_components
from modprefs.stats.reliability.icc_difference import N_NULL, N_REPLICATES, icc_difference_test
from modprefs.stats.reliability.resampling import permutation_masks, permutation_p_value
from modprefs.stats.tables.interval_text import icc_interval_text, level_text
from modprefs.stats.tables.reliability_alpha import ALPHA_METRICS, alpha_table
from modprefs.study.terms import CONDITIONS

log = logging.getLogger(__name__)

#: ``stats.icc_test`` -> what Table 4's ICC p-values are
ICC_TESTS = {
    "calibrated": "crossed-jackknife t test, variance calibrated in null studies from the study's fit, on that "
    "variance's Satterthwaite df",
    "jackknife": "crossed-jackknife t test (uncalibrated, conservative)",
    "permutation": "participant permutation of the difference (the paper's)",
}
ALPHA_CI_METHOD = "percentile, stimulus bootstrap (units resampled, raters fixed)"


def _group_iccs(pooled: pd.DataFrame, members: set[str], theta0: np.ndarray | None = None) -> tuple[float, float]:
    df = pooled[pooled["participant_id"].isin(members)]
    design = condition_design(df)
    fit = fit_crossed_intercepts(design.y, design.X, design.clip, design.participant, theta0=theta0)
    if not fit.converged:
        return float("nan"), float("nan")
    return icc_from_components(fit.var_g1, fit.var_g2, fit.var_resid, design.y.size / fit.n_levels[0])


def icc_permutation_test(
    ratings: pd.DataFrame, participants: pd.DataFrame, n_perm: int, seed: int, stimuli: pd.DataFrame | None = None
) -> dict[str, dict[str, float]]:
    """Permutation p-values of ICC(2,1) and ICC(2,k) differences (audio − text).

    Returns ``{"icc_2_1": {...}, "icc_2_k": {...}}``, each with observed, p_value, n_perm, n_valid.
    """
    frames = {c: analysable_ratings(ratings, participants, c, stimuli) for c in CONDITIONS}
    pooled = pd.concat(frames.values(), ignore_index=True)
    pooled["participant_id"] = pooled["participant_id"].astype(str)
    people = np.array(sorted(pooled["participant_id"].unique()))
    is_audio = np.isin(people, frames["audio"]["participant_id"].astype(str).unique())
    observed = np.subtract(_group_iccs(pooled, set(people[is_audio])), _group_iccs(pooled, set(people[~is_audio])))
    masks = permutation_masks(is_audio, n_perm, np.random.default_rng(np.random.SeedSequence([seed, 0x1CC])))
    null = np.full((n_perm, 2), np.nan)
    for i, mask in enumerate(masks):
        try:
            null[i] = np.subtract(_group_iccs(pooled, set(people[mask])), _group_iccs(pooled, set(people[~mask])))
        except (ValueError, np.linalg.LinAlgError):
            continue
    out = {}
    for j, name in enumerate(("icc_2_1", "icc_2_k")):
        finite = np.isfinite(null[:, j])
        out[name] = {
            "observed": float(observed[j]),
            "p_value": permutation_p_value(observed[j], null[:, j]),
            "n_perm": n_perm,
            "n_valid": int(finite.sum()),
        }
    return out


TABLE4_COLUMNS = [
    "metric",
    "audio",
    "audio_lo",
    "audio_hi",
    "text",
    "text_lo",
    "text_hi",
    "diff",
    "p_value",
    "ci_level",
    "ci_method",
    "test",
    "n_jackknife_noise_refits",
    "n_boot_icc_refits",
    "n_boot_alpha_stimuli",
    "n_perm_participants",
    "n_null_studies",
    "note",
]
#: the resampling counts (Table 4's markdown leaves them, and ci_method/test, to the title)
RESAMPLING_COLUMNS = TABLE4_COLUMNS[TABLE4_COLUMNS.index("ci_method") : TABLE4_COLUMNS.index("note")]
_ALPHA_LABELS = {
    "continuous": "Krippendorff's alpha (cont.)",
    "ordinal": "Krippendorff's alpha (ord.)",
    "nominal": "Krippendorff's alpha (nom.)",
}


def _icc_tests(
    icc_test: str,
    ratings: pd.DataFrame,
    participants: pd.DataFrame,
    stimuli: pd.DataFrame,
    n_perm: int,
    n_noise: int,
    seed: int,
) -> dict[str, dict[str, Any]]:
    """{icc_2_1/icc_2_k: {p_value, note...}} of the audio - text ICC difference by ``icc_test``."""
    if icc_test in ("jackknife", "calibrated"):
        frames = {c: analysable_ratings(ratings, participants, c, stimuli) for c in CONDITIONS}
        return {
            name: {"p_value": r.p_value, "note": r.note}
            for name, r in icc_difference_test(frames, n_noise, seed, method=icc_test).items()
        }
    if icc_test == "permutation":
        return icc_permutation_test(ratings, participants, n_perm, seed, stimuli) if n_perm > 0 else {}
    raise ValueError(f"unknown icc_test {icc_test!r}; expected one of {tuple(ICC_TESTS)}")


def _icc_resampling(icc: pd.DataFrame, icc_test: str, n_perm: int, n_noise: int) -> dict[str, Any]:
    """The ICC rows' resampling columns: what the intervals (by the ICC table's ci_method) and the test resampled."""
    methods = icc["ci_method"].dropna().astype(str) if "ci_method" in icc else pd.Series(dtype=str)
    n_boot = pd.to_numeric(icc["n_boot"], errors="coerce").max() if "n_boot" in icc else np.nan
    jackknife_ci, bootstrap_ci = methods.str.contains("jackknife").any(), methods.str.contains("bootstrap").any()
    jackknife_test = icc_test in ("jackknife", "calibrated")
    noise = n_noise if jackknife_test else n_boot if jackknife_ci else 0
    return {
        "ci_method": " / ".join(dict.fromkeys(methods)) or "none",
        "test": ICC_TESTS[icc_test],
        "n_jackknife_noise_refits": int(noise) if pd.notna(noise) else 0,
        "n_boot_icc_refits": int(n_boot) if bootstrap_ci and pd.notna(n_boot) else 0,
        "n_boot_alpha_stimuli": 0,
        "n_perm_participants": n_perm if icc_test == "permutation" else 0,
        "n_null_studies": N_REPLICATES + N_NULL if icc_test == "calibrated" else 0,
    }


def _icc_rows(icc: pd.DataFrame, tests: dict[str, dict[str, Any]], resampling: dict[str, Any]) -> list[dict[str, Any]]:
    """Table 4's ICC(2,1) and ICC(2,k) rows from the ICC table (indexed by condition) and the tests."""
    rows = []
    levels = pd.to_numeric(icc["ci_level"], errors="coerce").dropna().unique() if "ci_level" in icc else []
    for name, label in (("icc_2_1", "ICC(2,1)"), ("icc_2_k", "ICC(2,k)")):
        row: dict[str, Any] = {"metric": label, **resampling}
        row["ci_level"] = float(levels[0]) if len(levels) == 1 else np.nan
        for c in CONDITIONS:
            row[c], row[f"{c}_lo"], row[f"{c}_hi"] = (
                icc.loc[c, name],
                icc.loc[c, f"{name}_lo"],
                icc.loc[c, f"{name}_hi"],
            )
        row["diff"] = row["audio"] - row["text"]
        row["p_value"] = tests.get(name, {}).get("p_value", np.nan)
        row["note"] = "; ".join(
            n
            for n in (icc.loc["audio", "note"], icc.loc["text", "note"], tests.get(name, {}).get("note"))
            if isinstance(n, str) and n
        )
        rows.append(row)
    return rows


def _alpha_rows(alphas: pd.DataFrame, n_boot_alpha: int, n_perm_alpha: int) -> list[dict[str, Any]]:
    """Table 4's Krippendorff's alpha rows from :func:`modprefs.stats.tables.reliability_alpha.alpha_table`."""
    return [
        {
            "metric": _ALPHA_LABELS.get(a["metric"], a["metric"]),
            "audio": a["alpha_audio"],
            "audio_lo": a["lo_audio"],
            "audio_hi": a["hi_audio"],
            "text": a["alpha_text"],
            "text_lo": a["lo_text"],
            "text_hi": a["hi_text"],
            "diff": a["diff"],
            "p_value": a["p_value"],
            "ci_level": a["ci_level"],
            "ci_method": f"{ALPHA_CI_METHOD}; units: {ALPHA_METRICS[a['metric']][2]}",
            "test": a["test"],
            "n_jackknife_noise_refits": 0,
            "n_boot_icc_refits": 0,
            "n_boot_alpha_stimuli": n_boot_alpha,
            "n_perm_participants": n_perm_alpha,
            "n_null_studies": 0,
            "note": a.get("note", ""),
        }
        for a in alphas.to_dict("records")
    ]


def table4(
    icc: pd.DataFrame,
    ratings: pd.DataFrame,
    trials: pd.DataFrame,
    assignments: pd.DataFrame,
    participants: pd.DataFrame,
    stimuli: pd.DataFrame,
    n_perm: int,
    n_boot_alpha: int,
    n_perm_alpha: int,
    seed: int,
    ci_level: float = 0.95,
    icc_test: str = "calibrated",
    n_noise: int = 0,
    preference_reason: str | None = None,
) -> pd.DataFrame:
    """Table 4 as one tidy frame (:data:`TABLE4_COLUMNS`; module docstring).

    ``icc`` is the ICC table (:func:`modprefs.stats.reliability.icc_ci.icc_with_ci`, with its intervals at its
    ``ci_level``); this adds the tests of the audio - text differences and the alpha rows, whose intervals are at
    ``ci_level``. ``icc_test``: :data:`ICC_TESTS` (``n_noise`` residual refits per condition for the jackknife
    tests, ``n_perm`` permutations for ``permutation``, which also selects the paper's alpha test).

    ``preference_reason``: why the preference alphas (ordinal, nominal: they need stated preferences,
    presentation order and the pairwise design) cannot be computed; their rows are then NaN with that
    reason in ``note``, and the ICC and continuous-alpha rows are computed as usual.
    """
    if icc_test not in ICC_TESTS:
        raise ValueError(f"unknown icc_test {icc_test!r}; expected one of {tuple(ICC_TESTS)}")
    icc = icc.set_index("condition")
    tests = _icc_tests(icc_test, ratings, participants, stimuli, n_perm, n_noise, seed)
    rows = [
        {
            "metric": "Avg. raters per stimulus",
            "audio": icc.loc["audio", "k_mean_raters"],
            "text": icc.loc["text", "k_mean_raters"],
            "note": "descriptive: no interval or test",
        }
    ]
    rows += _icc_rows(icc, tests, _icc_resampling(icc, icc_test, n_perm, n_noise))
    alphas = alpha_table(
        ratings,
        trials,
        assignments,
        participants,
        n_boot=n_boot_alpha,
        n_perm=n_perm_alpha,
        seed=seed,
        ci_level=ci_level,
        stimuli=stimuli,
        metrics=("continuous",) if preference_reason else None,
        test="permutation" if icc_test == "permutation" else "studentized",
    )
    rows += _alpha_rows(alphas, n_boot_alpha, n_perm_alpha)
    if preference_reason:
        rows += [{"metric": _ALPHA_LABELS[m], "note": f"skipped: {preference_reason}"} for m in ("ordinal", "nominal")]
    return pd.DataFrame(rows).reindex(columns=TABLE4_COLUMNS)


def table4_title(base: str, table: pd.DataFrame, icc: pd.DataFrame, ci_level: float) -> str:
    """Table 4's title: ``base``, then the level and method of the ICC intervals (the ICC table's) and the alpha
    intervals (``ci_level``), and each test with what it resampled, from the table's own columns."""
    t = table.set_index("metric")
    icc_levels = pd.to_numeric(icc["ci_level"], errors="coerce").dropna().unique() if "ci_level" in icc else []
    icc_level = float(icc_levels[0]) if len(icc_levels) == 1 else ci_level
    parts = [base, f"ICC {icc_interval_text(icc, icc_level)}"]
    if "ICC(2,1)" in t.index and isinstance(t.loc["ICC(2,1)", "test"], str):
        r = t.loc["ICC(2,1)"]
        extra = f", {int(r['n_null_studies'])} null studies" if r["n_null_studies"] else ""
        extra += f", {int(r['n_perm_participants'])} permutations" if r["n_perm_participants"] else ""
        parts.append(f"ICC p: {r['test']}{extra}")
    alpha = t[t.index.str.startswith("Krippendorff") & t["test"].notna()]
    if len(alpha):
        r = alpha.iloc[0]
        parts.append(
            f"alpha {level_text(ci_level)} CIs: {ALPHA_CI_METHOD}, {int(r['n_boot_alpha_stimuli'])} resamples; "
            f"alpha p: {r['test']}, {int(r['n_perm_participants'])} permutations"
        )
    return "; ".join(parts)

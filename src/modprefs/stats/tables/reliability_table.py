"""Table 4: reliability by modality — ICC(2,1), ICC(2,k) and Krippendorff's alpha, with the
paper's stimulus-bootstrap CIs and participant-permutation tests of the audio–text difference.

ICC permutation test (§4.2): the analysable participants of both conditions are pooled and
reassigned at random to pseudo-audio and pseudo-text groups of the original sizes, ``n_perm``
times; each pseudo-group's ICCs are refitted with the same model as the observed ones
(:func:`modprefs.stats.reliability.icc.condition_design`: ``trial_z`` standardised within the group's rows).
Two-sided p = (1 + #{|d*| >= |d|}) / (1 + n_valid) (:func:`modprefs.stats.reliability.resampling.permutation_p_value`).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pandas as pd

from modprefs.stats.mixed.reml import fit_crossed_intercepts
from modprefs.stats.reliability.alpha import alpha_table
from modprefs.stats.reliability.icc import analysable_ratings, condition_design, icc_from_components
from modprefs.stats.reliability.icc_difference import icc_difference_test
from modprefs.stats.reliability.resampling import permutation_masks, permutation_p_value

log = logging.getLogger(__name__)


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
    frames = {c: analysable_ratings(ratings, participants, c, stimuli) for c in ("audio", "text")}
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
    "n_boot",
    "n_perm",
    "note",
]
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
    if icc_test == "jackknife":
        frames = {c: analysable_ratings(ratings, participants, c, stimuli) for c in ("audio", "text")}
        return {
            name: {"p_value": r.p_value, "note": r.note}
            for name, r in icc_difference_test(frames, n_noise, seed).items()
        }
    if icc_test == "permutation":
        return icc_permutation_test(ratings, participants, n_perm, seed, stimuli) if n_perm > 0 else {}
    raise ValueError(f"unknown icc_test {icc_test!r}; expected 'permutation' or 'jackknife'")


def _icc_rows(icc: pd.DataFrame, tests: dict[str, dict[str, Any]], n_boot: int, n_perm: int) -> list[dict[str, Any]]:
    """Table 4's ICC(2,1) and ICC(2,k) rows from the ICC table (indexed by condition) and the tests."""
    rows = []
    for name, label in (("icc_2_1", "ICC(2,1)"), ("icc_2_k", "ICC(2,k)")):
        row: dict[str, Any] = {"metric": label, "n_boot": n_boot, "n_perm": n_perm}
        for c in ("audio", "text"):
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
    """Table 4's Krippendorff's alpha rows from :func:`modprefs.stats.reliability.alpha.alpha_table`."""
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
            "n_boot": n_boot_alpha,
            "n_perm": n_perm_alpha,
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
    icc_test: str = "jackknife",
    n_noise: int = 0,
    preference_reason: str | None = None,
) -> pd.DataFrame:
    """Table 4 as one tidy frame: metric, audio, audio_lo, audio_hi, text, text_lo, text_hi, diff, p_value,
    n_boot, n_perm, note.

    ``icc`` is the ICC table (:func:`modprefs.stats.reliability.icc_ci.icc_by_condition`, with its bootstrap CIs);
    this adds the tests of the audio - text differences and the alpha rows. ``icc_test``: ``jackknife``
    (:func:`modprefs.stats.reliability.icc_difference.icc_difference_test`, ``n_noise`` residual refits per
    condition; the default, because it holds its size under equal ICCs) or ``permutation`` (the paper's
    participant permutation, ``n_perm``; it tests exchangeable conditions and rejects 7.5-11.7 % at alpha .05 when
    only the ICCs are equal).

    ``preference_reason``: why the preference alphas (ordinal, nominal: they need stated preferences,
    presentation order and the pairwise design) cannot be computed; their rows are then NaN with that
    reason in ``note``, and the ICC and continuous-alpha rows are computed as usual.
    """
    icc = icc.set_index("condition")
    n_boot = int(icc["n_boot"].max())
    tests = _icc_tests(icc_test, ratings, participants, stimuli, n_perm, n_noise, seed)
    rows = [
        {
            "metric": "Avg. raters per stimulus",
            "audio": icc.loc["audio", "k_mean_raters"],
            "text": icc.loc["text", "k_mean_raters"],
            "note": "descriptive: no interval or test",
        }
    ]
    rows += _icc_rows(icc, tests, n_boot, n_perm if icc_test == "permutation" else 0)
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
    )
    rows += _alpha_rows(alphas, n_boot_alpha, n_perm_alpha)
    if preference_reason:
        rows += [{"metric": _ALPHA_LABELS[m], "note": f"skipped: {preference_reason}"} for m in ("ordinal", "nominal")]
    return pd.DataFrame(rows).reindex(columns=TABLE4_COLUMNS)

"""What a reward model's accuracy is read against: simple baselines on the same pairs, prompt-clustered
intervals, and the human agreement ceiling.

An accuracy of a reward model means little alone: on the study's pairs the longer response is often the
preferred one, and a rule that prefers the longer response scores as well as a model that learned nothing
else. Every accuracy is therefore shown beside

- **length**: prefer the response with more characters (``chosen_chars`` vs ``rejected_chars``);
- **position**: always prefer response 0 of the prompt (``chosen_response`` / ``rejected_response``);
- **majority**: prefer the response position (0 or 1) that won most of the *training* pairs of the same pair
  type (the label prior a model can learn without looking at the inputs);
- **prism**: prefer the response with the higher PRISM score (``chosen_prism`` / ``rejected_prism``; study
  pairs only);

each scored per pair as a *credit*: 1 right, 0 wrong, ½ where the rule cannot choose (equal lengths, a pair
without positions); a pair type where the rule has no input at all (no PRISM scores) gets no baseline (NaN).
The model's credit is the same (a tie, ``|r_c − r_r| ≤ tol``, is ½), so model and baselines are compared as
``accuracy_ties_half``.

Pairs of one prompt are not independent (the four study label sets of a prompt share the responses; the
degradation and colloquial pairs of a prompt share its clips): intervals resample *prompts* (``group``), a
cluster bootstrap (:func:`cluster_bootstrap`), and every row carries its n in pairs and in prompts. The
model *beats* a baseline when the prompt-clustered 95 % interval of (model − baseline) lies above 0.

:func:`agreement_ceiling`: for the study's human labels, how often a single rater's preference (the sign
of their rating difference between the prompt's two responses) agrees with the mean preference of the
other raters of the same prompt and condition; the ceiling a model of the mean label can be read against.
Also the agreement of the AI judges' mean preference with the humans' mean preference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

BASELINES = ("length", "position", "majority", "prism")
N_BOOT = 2000
LEVEL = 0.95


def _side_credit(chosen: pd.Series, rejected: pd.Series, prefer_higher: bool = True) -> np.ndarray:
    """Credit of "prefer the side with the higher value" per pair (1, 0, ½ on equal; NaN where a value is missing).

    chosen, rejected: (n,) numbers (NaN/None = missing). Returns (n,) floats."""
    c = pd.to_numeric(chosen, errors="coerce").to_numpy(float)
    r = pd.to_numeric(rejected, errors="coerce").to_numpy(float)
    d = (c - r) if prefer_higher else (r - c)
    out = np.where(d > 0, 1.0, np.where(d < 0, 0.0, 0.5))
    return np.where(np.isnan(d), np.nan, out)


def model_credit(r_chosen: Sequence[float], r_rejected: Sequence[float], tie_tol: float = 1e-6) -> np.ndarray:
    """Per pair: 1 if the model scores the chosen side higher by more than ``tie_tol``, ½ on a tie, else 0. (n,)."""
    d = np.asarray(r_chosen, dtype=float) - np.asarray(r_rejected, dtype=float)
    return np.where(d > tie_tol, 1.0, np.where(d < -tie_tol, 0.0, 0.5))


def _col(scores: pd.DataFrame, name: str) -> pd.Series:
    return scores[name] if name in scores.columns else pd.Series(np.nan, index=scores.index)


def majority_credit(scores: pd.DataFrame, train_mask: np.ndarray | None = None) -> np.ndarray:
    """Per pair: the credit of preferring the response position that was chosen in most training pairs of the
    pair's ``category`` (response 0 on a tie or without training pairs of the type); NaN without positions."""
    pos = _side_credit(_col(scores, "rejected_response"), _col(scores, "chosen_response"))  # 1: response 0 chosen
    train = np.ones(len(scores), bool) if train_mask is None else np.asarray(train_mask, bool)
    cats = scores["category"].astype(str).to_numpy() if "category" in scores else np.full(len(scores), "all")
    out = np.full(len(scores), np.nan)
    for cat in np.unique(cats):
        here = cats == cat
        seen = pos[here & train & ~np.isnan(pos)]
        zero_wins = not len(seen) or float(np.mean(seen)) >= 0.5
        out[here] = pos[here] if zero_wins else 1.0 - pos[here]
    return out


def baseline_credits(scores: pd.DataFrame, train_mask: np.ndarray | None = None) -> pd.DataFrame:
    """Per pair credit of every baseline (:data:`BASELINES`), (n, 4), indexed like ``scores``.

    ``train_mask``: (n,) bool, the pairs the majority rule may learn from (None: all pairs)."""
    return pd.DataFrame(
        {
            "length": _side_credit(_col(scores, "chosen_chars"), _col(scores, "rejected_chars")),
            # response 0 is chosen when rejected_response > chosen_response (1 > 0)
            "position": _side_credit(_col(scores, "rejected_response"), _col(scores, "chosen_response")),
            "majority": majority_credit(scores, train_mask),
            "prism": _side_credit(_col(scores, "chosen_prism"), _col(scores, "rejected_prism")),
        },
        index=scores.index,
    )


def cluster_bootstrap(
    values: np.ndarray, groups: Sequence[Any], n_boot: int = N_BOOT, seed: int = 0, level: float = LEVEL
) -> np.ndarray:
    """Percentile interval of the pair-mean of each column of ``values`` (n, k), resampling ``groups``
    (prompts) with replacement; returns (k, 2) [low, high]. NaN rows where fewer than 2 groups (no spread to
    resample). NaN cells of ``values`` are left out of their column's mean."""
    values = np.asarray(values, dtype=float).reshape(len(values), -1)
    codes, uniq = pd.factorize(pd.Series(list(groups), dtype=object), sort=True)
    k, g = values.shape[1], len(uniq)
    if g < 2:
        return np.full((k, 2), np.nan)
    ok = ~np.isnan(values)
    sums = np.zeros((g, k))
    counts = np.zeros((g, k))
    np.add.at(sums, codes, np.where(ok, values, 0.0))
    np.add.at(counts, codes, ok.astype(float))
    rng = np.random.default_rng(seed)
    weights = np.stack([np.bincount(rng.integers(0, g, g), minlength=g) for _ in range(n_boot)]).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (weights @ sums) / (weights @ counts)  # (n_boot, k)
    alpha = (1 - level) / 2
    return np.stack([np.nanquantile(means, alpha, axis=0), np.nanquantile(means, 1 - alpha, axis=0)], axis=1)


def mean_credit(x: np.ndarray) -> float:
    """Mean with NaN counted as ½ (the rule cannot choose); NaN when every value is NaN."""
    return float(np.mean(np.where(np.isnan(x), 0.5, x))) if len(x) and not np.isnan(x).all() else float("nan")


def compare(
    model: np.ndarray, baselines: pd.DataFrame, groups: Sequence[Any], seed: int = 0, n_boot: int = N_BOOT
) -> dict[str, Any]:
    """One row of the comparison for a set of pairs.

    model: (n,) model credit; baselines: (n, 4) :func:`baseline_credits` rows of the same pairs; groups: (n,)
    prompt of each pair. Returns n_pairs, n_prompts, ``model`` (accuracy, ties ½) with its prompt-clustered
    ``ci_low``/``ci_high``, each baseline's accuracy, ``minus_length`` (model − length) with its interval,
    and ``beats_length`` (``yes``: the interval lies above 0; ``no``; ``n/a`` without lengths or pairs)."""
    n = len(model)
    groups = list(groups)
    lengths = baselines["length"].to_numpy(float)
    row: dict[str, Any] = {"n_pairs": n, "n_prompts": len(set(groups))}
    row["model"] = float(np.mean(model)) if n else float("nan")
    row["ci_low"] = row["ci_high"] = row["minus_length"] = float("nan")
    row["minus_length_ci_low"] = row["minus_length_ci_high"] = float("nan")
    row.update({b: mean_credit(baselines[b].to_numpy(float)) for b in BASELINES})
    row["beats_length"] = "n/a"
    if not n:
        return row
    gap = model - np.where(np.isnan(lengths), 0.5, lengths)
    ci = cluster_bootstrap(np.column_stack([model, gap]), groups, n_boot, seed)
    row["ci_low"], row["ci_high"] = float(ci[0, 0]), float(ci[0, 1])
    if not np.isnan(lengths).all():
        row["minus_length"] = float(np.mean(gap))
        row["minus_length_ci_low"], row["minus_length_ci_high"] = float(ci[1, 0]), float(ci[1, 1])
        row["beats_length"] = "yes" if row["minus_length_ci_low"] > 0 else "no"
    return row


def _labels(df: pd.DataFrame, who: str) -> pd.DataFrame:
    """(who, modality, prompt_id) -> rating difference response 0 − response 1, for whoever rated both clips."""
    wide = df.pivot_table(index=[who, "modality", "prompt_id"], columns="response", values="rating", aggfunc="mean")
    wide = wide.dropna(subset=[c for c in (0, 1) if c in wide.columns])
    if 0 not in wide.columns or 1 not in wide.columns:
        return pd.DataFrame(columns=[who, "modality", "prompt_id", "diff"])
    return (wide[0] - wide[1]).rename("diff").reset_index()


def _rated(ratings: pd.DataFrame, stimuli: pd.DataFrame, modality_col: str) -> pd.DataFrame:
    """Ratings of study clips with the clip's response position (0/1) and ``modality``."""
    resp = stimuli.astype({"clip_id": str}).set_index("clip_id")["response"]
    r = ratings.astype({"clip_id": str, "prompt_id": str})
    r = r[r["clip_id"].isin(resp.index) & pd.to_numeric(r["rating"], errors="coerce").notna()]
    if "trial" in r.columns:
        r = r[r["trial"] != 0]
    return r.assign(
        response=r["clip_id"].map(resp).astype(int),
        rating=pd.to_numeric(r["rating"]),
        modality=r[modality_col].astype(str),
    )


def agreement_ceiling(
    ratings: pd.DataFrame, stimuli: pd.DataFrame, judges: pd.DataFrame | None = None
) -> dict[str, dict[str, Any]]:
    """Per label set (``human_text``, ``human_audio``): the share of (rater, prompt) preferences that agree with
    the other raters' mean preference of the prompt in the same condition (both non-zero), with n; and per
    ``judge_{modality}``: the share of prompts where the judges' mean preference agrees with the humans'.

    ratings: the study's ratings (participant_id, condition, prompt_id, clip_id, rating); stimuli: clip_id,
    response (0/1); judges: the judges' table (modality, kind, prompt_id, clip_id, sample, rating, status)."""
    human = _labels(_rated(ratings, stimuli, "condition"), "participant_id")
    out: dict[str, dict[str, Any]] = {}
    for modality, g in human.groupby("modality", sort=True):
        total = g.groupby("prompt_id")["diff"].agg(["sum", "size"])
        others = (g["prompt_id"].map(total["sum"]) - g["diff"]) / (g["prompt_id"].map(total["size"]) - 1)
        keep = (g["prompt_id"].map(total["size"]) > 1) & (g["diff"] != 0) & (others != 0)
        agree = np.sign(g["diff"][keep]) == np.sign(others[keep])
        out[f"human_{modality}"] = {
            "agreement": float(agree.mean()) if keep.any() else float("nan"),
            "n_ratings": int(keep.sum()),
            "n_prompts": int(g["prompt_id"][keep].nunique()),
            "what": "a single rater's preference vs the other raters' mean preference (same prompt, condition)",
        }
    if judges is not None and len(judges):
        j = judges[(judges["kind"] == "response_quality") & (judges["status"] == "ok")]
        jl = _labels(_rated(j, stimuli, "modality").assign(who="judges"), "who")
        hm = human.groupby(["modality", "prompt_id"])["diff"].mean().rename("human")
        both = jl.set_index(["modality", "prompt_id"])["diff"].to_frame("judge").join(hm, how="inner")
        both = both[(both["judge"] != 0) & (both["human"] != 0)]
        for modality, g in both.groupby(level="modality"):
            out[f"judge_{modality}"] = {
                "agreement": float((np.sign(g["judge"]) == np.sign(g["human"])).mean()),
                "n_ratings": int(len(g)),
                "n_prompts": int(len(g)),
                "what": "the judges' mean preference vs the humans' mean preference (same prompt, modality)",
            }
    return out


def ceiling_of(category: str, ceilings: Mapping[str, Mapping[str, Any]] | None) -> float:
    """The human agreement ceiling of a ``human_*`` pair type (NaN for other types or without ratings)."""
    if not ceilings or not category.startswith("human_") or category not in ceilings:
        return float("nan")
    return float(ceilings[category]["agreement"])

"""Table 4's Krippendorff's alpha rows: the preference codings, the study's coders x units matrices, the table.

Preference codings (paper section 4.2 / Table 4)
------------------------------------------------
* continuous alpha: interval metric on the 1-100 ratings; **units = clips** (``clip_id``), coders =
  participants; computed on the raw ratings without covariate adjustment.
* ordinal alpha: A/Tie/B *recoded relative to presentation order*, i.e. order-corrected so that a
  code names the response, not the screen position: 0 = response 0 preferred, 1 = tie, 2 =
  response 1 preferred (ordered 0 < tie < 1, adjacent disagreements weigh less); **units = prompts**.
* nominal alpha: the *raw* A/Tie/B labels without order correction: "A" = the response the rater
  was shown first (``first_clip``), "B" = the one shown second, labelled by screen position as
  the rater saw them; **units = prompts**. Presentation order is counterbalanced across raters, so
  two raters who prefer the same response but saw it in opposite orders record opposite labels
  (A vs B): agreement on the response becomes disagreement on the label, which drives nominal
  alpha to ~0 (the paper: .010 audio, .031 text).

See :func:`preference_codes` (``frame="response"`` / ``"position"``).

The alpha: :mod:`modprefs.stats.reliability.alpha`; the test of a difference:
:mod:`modprefs.stats.reliability.alpha_difference`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from modprefs.io_tables import as_bool_column
from modprefs.stats.reliability.alpha import (
    Level,
    alpha_features,
    alpha_from_unit_features,
    bootstrap_alpha,
    reliability_matrix,
)
from modprefs.stats.reliability.alpha_difference import ALPHA_TESTS, alpha_difference_test
from modprefs.stats.reliability.icc import analysable_ratings
from modprefs.study.terms import ATTENTION_PROMPT, CONDITIONS

PreferenceFrame = Literal["response", "position"]

#: numeric codes of the three preference outcomes (both frames): first < tie < second.
PREFERENCE_DOMAIN: tuple[float, float, float] = (0.0, 1.0, 2.0)
#: preference coding -> (level of measurement, frame) per section 4.2.
PREFERENCE_ALPHAS: dict[str, tuple[Level, PreferenceFrame]] = {
    "ordinal": ("ordinal", "response"),
    "nominal": ("nominal", "position"),
}


def _passed(participants: pd.DataFrame) -> set[str]:
    return set(participants.loc[as_bool_column(participants["passed_attention"]), "participant_id"].astype(str))


def _normalise_preference(values: pd.Series) -> pd.Series:
    """'0'/'1'/'tie' (also 0, 1, 0.0, 'Tie') -> '0'/'1'/'tie'; anything else -> NA."""
    text = values.astype("string").str.strip().str.lower()
    text = text.replace({"0.0": "0", "1.0": "1"})
    return text.where(text.isin(["0", "1", "tie"]))


def preference_codes(trials: pd.DataFrame, assignments: pd.DataFrame, frame: PreferenceFrame) -> pd.DataFrame:
    """Numeric A/Tie/B codes of the preferences, in one of two frames.

    ``trials.preference`` is the preferred RESPONSE INDEX ('0', '1') or 'tie';
    ``assignments.first_clip`` is the response index shown first in that trial.

    * ``frame="response"`` — order-corrected ("recoded relative to presentation order"; the
      ORDINAL alpha): 0 = response 0 preferred, 1 = tie, 2 = response 1 preferred. Two raters who
      prefer the same response get the same code whatever order they saw.
    * ``frame="position"`` — raw screen labels without order correction (the NOMINAL alpha):
      0 = "A" = the response presented first (as the rater saw it), 1 = tie, 2 = "B" = the
      response presented second; "A" iff ``preference == first_clip``. Under counterbalanced order
      raters who agree on the response disagree on the label about half the time.

    Returns:
        The merged rows (participant_id, condition, prompt_id, trial, first_clip, preference,
        code) for every trial with a valid preference and a matching assignment.

    Raises:
        ValueError: a trial without its assignment (participant_id, prompt_id, trial).
    """
    if frame not in ("response", "position"):
        raise ValueError(f"frame must be 'response' or 'position', got {frame!r}")
    t = trials[["participant_id", "prompt_id", "trial", "preference"]].copy()
    a = assignments[["participant_id", "condition", "prompt_id", "trial", "first_clip"]].copy()
    for df in (t, a):
        df["participant_id"] = df["participant_id"].astype(str)
        df["prompt_id"] = df["prompt_id"].astype(str)
        df["trial"] = pd.to_numeric(df["trial"]).astype(int)
    merged = t.merge(a, on=["participant_id", "prompt_id", "trial"], how="left", validate="one_to_one")
    if merged["first_clip"].isna().any():
        row = merged[merged["first_clip"].isna()].iloc[0]
        raise ValueError(
            f"trial without assignment: participant {row['participant_id']}, prompt "
            f"{row['prompt_id']}, trial {row['trial']}"
        )
    merged["preference"] = _normalise_preference(merged["preference"])
    merged = merged[merged["preference"].notna()].reset_index(drop=True)
    first = pd.to_numeric(merged["first_clip"]).astype(int).to_numpy()
    pref = merged["preference"].to_numpy(dtype=object)
    tie = pref == "tie"
    idx = np.where(tie, -1, pd.to_numeric(pd.Series(np.where(tie, "0", pref))).to_numpy(int))
    if frame == "response":
        code = np.where(tie, 1.0, 2.0 * idx)
    else:
        code = np.where(tie, 1.0, np.where(idx == first, 0.0, 2.0))
    merged["first_clip"] = first
    merged["code"] = code
    return merged


def preference_matrix(
    trials: pd.DataFrame,
    assignments: pd.DataFrame,
    participants: pd.DataFrame,
    condition: str | None,
    frame: PreferenceFrame,
) -> pd.DataFrame:
    """Participants x prompts matrix of preference codes (:func:`preference_codes`) of a condition.

    Units = prompts; coders = participants who passed the attention check; trial 0 / prompt
    ``attn`` dropped. ``condition=None`` pools both conditions (for the permutation test).
    Values in :data:`PREFERENCE_DOMAIN`.
    """
    codes = preference_codes(trials, assignments, frame)
    keep = (
        codes["participant_id"].isin(_passed(participants))
        & (codes["trial"] >= 1)
        & (codes["prompt_id"] != ATTENTION_PROMPT)
    )
    if condition is not None:
        keep &= codes["condition"].astype(str) == condition
    return reliability_matrix(codes[keep], "participant_id", "prompt_id", "code")


#: Table 4's alpha rows: name -> (level, frame or None for the ratings, unit column).
ALPHA_METRICS: dict[str, tuple[Level, PreferenceFrame | None, str]] = {
    "continuous": ("interval", None, "clip_id"),
    "ordinal": ("ordinal", "response", "prompt_id"),
    "nominal": ("nominal", "position", "prompt_id"),
}


def _pooled_matrix(
    metric: str,
    ratings: pd.DataFrame,
    trials: pd.DataFrame,
    assignments: pd.DataFrame,
    participants: pd.DataFrame,
    conditions: tuple[str, ...],
    stimuli: pd.DataFrame | None,
) -> tuple[pd.DataFrame, np.ndarray]:
    """(participants x units matrix of both conditions, (C,) condition per row)."""
    level, frame, _ = ALPHA_METRICS[metric]
    if frame is None:
        df = pd.concat([analysable_ratings(ratings, participants, c, stimuli) for c in conditions])
        mat = reliability_matrix(df, "participant_id", "clip_id", "rating")
        cond = df.drop_duplicates("participant_id").set_index("participant_id")["condition"].astype(str)
    else:
        mat = preference_matrix(trials, assignments, participants, None, frame)
        codes = preference_codes(trials, assignments, frame)
        cond = codes.drop_duplicates("participant_id").set_index("participant_id")["condition"].astype(str)
        mat = mat.loc[[p for p in mat.index if cond.get(p) in conditions]]
    return mat, cond.reindex(mat.index.astype(str)).to_numpy(dtype=str)


def _condition_alpha(
    sub: pd.DataFrame,
    c: str,
    level: Level,
    domain: np.ndarray | Sequence[float] | None,
    n_boot: int,
    rng: np.random.Generator,
    ci_level: float,
) -> dict[str, Any]:
    """One condition's columns of an :func:`alpha_table` row: counts, alpha and its bootstrap interval."""
    from modprefs.stats.reliability.resampling import stimulus_bootstrap  # noqa: PLC0415

    sub = sub.loc[:, sub.notna().any(axis=0)]
    m = sub.notna().sum(axis=0).to_numpy()
    row: dict[str, Any] = {
        f"n_coders_{c}": int(sub.shape[0]),
        f"n_units_{c}": int(sub.shape[1]),
        f"n_pairable_units_{c}": int((m >= 2).sum()),
        f"coders_per_unit_{c}": float(m.mean()) if m.size else np.nan,
    }
    if (m >= 2).any():
        feats = alpha_features(sub, level, domain)
        row[f"alpha_{c}"] = float(alpha_from_unit_features(feats.unit_features(), level))
        boot = stimulus_bootstrap(sub.shape[1], functools.partial(bootstrap_alpha, feats), n_boot, rng)
        lo, hi = boot.ci(ci_level) if n_boot else (np.nan, np.nan)
        row.update({f"lo_{c}": lo, f"hi_{c}": hi, f"n_boot_failed_{c}": boot.n_failed})
    else:
        row.update({f"alpha_{c}": np.nan, f"lo_{c}": np.nan, f"hi_{c}": np.nan, f"n_boot_failed_{c}": 0})
    return row


def alpha_table(
    ratings: pd.DataFrame,
    trials: pd.DataFrame,
    assignments: pd.DataFrame,
    participants: pd.DataFrame,
    n_boot: int = 5000,
    n_perm: int = 5000,
    seed: int = 0,
    ci_level: float = 0.95,
    stimuli: pd.DataFrame | None = None,
    conditions: tuple[str, str] = CONDITIONS,
    metrics: tuple[str, ...] | None = None,
    test: str = "studentized",
) -> pd.DataFrame:
    """Krippendorff's alpha rows of Table 4: per condition, bootstrap CI, the test of the difference.

    ``metrics``: the rows to compute (keys of :data:`ALPHA_METRICS`; default all). Each metric keeps its own
    random stream, so a row is the same whichever others are computed.

    One row per metric in :data:`ALPHA_METRICS` (continuous: interval on ratings, units = clips;
    ordinal: order-corrected A/Tie/B, units = prompts; nominal: raw screen-position A/Tie/B,
    units = prompts). Coders = participants who passed the attention check; trial 0 dropped.

    * ``alpha_<cond>``: alpha of that condition's coders x units matrix.
    * ``lo_/hi_<cond>``: percentile interval of ``n_boot`` stimulus-bootstrap resamples of that
      condition's units (units drawn twice count twice).
    * ``diff`` = alpha(conditions[0]) - alpha(conditions[1]); ``p_value`` two-sided, by ``test``
      (:data:`ALPHA_TESTS`, named in the ``test`` column): ``studentized`` (default) = the crossed-jackknife t
      of the difference (:func:`alpha_difference_jackknife`: ``t``, ``df``) referred to its distribution over
      ``n_perm`` reassignments of the participants of both conditions to groups of the original sizes,
      (1 + #{``|t*|`` >= ``|t|``}) / (1 + n_valid); ``permutation`` = the paper's, the same reassignments of the
      difference itself, (1 + #{``|d*|`` >= ``|d|``}) / (1 + n_valid). ``null_sd``: the SD of t* (of d* for
      ``permutation``). The permutation of the difference tests exchangeable conditions, not equal alphas: with
      equal alphas but conditions that differ otherwise it need not hold its size; the studentized one is
      asymptotically valid whether or not they are exchangeable (Janssen 1997; Chung & Romano 2013) and
      corrects the jackknife's own bias with it. Measured at 40 prompts x 20 raters per condition x 10 trials
      and at 100 x 53 x 20 (benchmarks/out/alpha_difference_null.md, 500 equal-alpha studies in each of 4-5
      generating models at each size): rejection at .05 continuous 5.7 / 5.5 %, ordinal 5.0 / 5.0 %, nominal
      4.3 / 4.5 % pooled, every cell within 5 % +/- 2 MC SE (the paper's permutation: 8.4 / 12.4, 8.4 / 10.1,
      4.0 / 5.0 %).

    Seeds: ``SeedSequence(seed).spawn(3)`` one per metric (in :data:`ALPHA_METRICS` order), each
    spawning (bootstrap of conditions[0], bootstrap of conditions[1], permutations).
    """
    from modprefs.stats.reliability.resampling import make_rng  # noqa: PLC0415

    if test not in ALPHA_TESTS:
        raise ValueError(f"unknown alpha test {test!r}; expected one of {tuple(ALPHA_TESTS)}")
    if not 0 < ci_level < 1:
        raise ValueError(f"ci_level must be in (0, 1), got {ci_level}")
    rows = []
    for (metric, (level, frame, unit)), stream in zip(
        ALPHA_METRICS.items(), np.random.SeedSequence(seed).spawn(len(ALPHA_METRICS))
    ):
        if metrics is not None and metric not in metrics:
            continue
        rng_a, rng_b, rng_p = (make_rng(s) for s in stream.spawn(3))
        domain = None if level == "interval" else PREFERENCE_DOMAIN
        mat, cond = _pooled_matrix(metric, ratings, trials, assignments, participants, conditions, stimuli)
        row: dict = {
            "metric": metric,
            "level": level,
            "units": unit,
            "frame": frame or "",
            "n_boot": n_boot,
            "n_perm": n_perm,
            "ci_level": ci_level,
        }
        for c, rng in zip(conditions, (rng_a, rng_b)):
            row.update(_condition_alpha(mat[cond == c], c, level, domain, n_boot, rng, ci_level))
        row.update(alpha_difference_test(mat, cond, level, domain, n_perm, rng_p, conditions, test))
        row["note"] = _alpha_note(row, conditions)
        rows.append(row)
    return pd.DataFrame(rows)


def _alpha_note(row: dict, conditions: tuple[str, ...]) -> str:
    """Why a row of :func:`alpha_table` holds NaN ("" when it does not)."""
    notes = []
    for c in conditions:
        if row[f"n_pairable_units_{c}"] == 0:
            notes.append(f"{c}: no unit has two or more values, alpha undefined")
        elif not np.isfinite(row[f"alpha_{c}"]):
            notes.append(f"{c}: every pairable value is the same (expected disagreement 0), alpha undefined")
        elif row["n_boot"] and not (np.isfinite(row[f"lo_{c}"]) and np.isfinite(row[f"hi_{c}"])):
            notes.append(f"{c}: alpha undefined in too many bootstrap resamples for a CI")
    if not np.isfinite(row["p_value"]) and row["n_perm"]:
        notes.append(
            "difference test undefined (alpha or its jackknife undefined in a condition or in every permutation)"
        )
    return "; ".join(notes)

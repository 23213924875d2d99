"""Rater behaviour by condition: §3.2.2's logged indicators and §5.1's re-listening (:func:`behaviour_table`).

Populations, conventions and the shared statistics (Mann–Whitney U, r_rb, Fisher's exact test, M (SD)):
:mod:`modprefs.stats.tables.descriptive`, whose Tables 1 and 3 this module's table accompanies.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from modprefs.stats.tables.descriptive import (
    MW_TEST,
    as_bool,
    as_float,
    join_reasons,
    mann_whitney,
    mean_sd,
    pct_of,
    response_trials,
)
from modprefs.study.terms import PAPER_COLUMN_ORDER as CONDITIONS  # Tables 1 and 3

# --------------------------------------------------------------------------------------------------
# Behaviour (§3.2.2 logged indicators, §5.1 re-listening)
# --------------------------------------------------------------------------------------------------
BEHAVIOUR_COLUMNS = [
    "measure",
    "label",
    "unit",
    "population",
    "text",
    "text_sd",
    "text_median",
    "text_count",
    "n_text",
    "audio",
    "audio_sd",
    "audio_median",
    "audio_count",
    "n_audio",
    "test",
    "statistic",
    "U_text",
    "U_audio",
    "r_rb",
    "p",
    "reason",
]


def first_clip_map(assignments: pd.DataFrame | None = None, ratings: pd.DataFrame | None = None) -> pd.DataFrame:
    """(participant_id, trial, first_clip): the response index presented first on each trial.

    From assignments.csv's ``first_clip`` if given, else from ratings.csv: the row with
    ``presented_first`` true, whose ``response`` column (else its clip_id ``{prompt_id}_{response}``,
    docs/CONTRACTS.md) gives the response.
    """
    if assignments is not None:
        a = assignments[["participant_id", "trial", "first_clip"]].copy()
        a["first_clip"] = pd.to_numeric(a["first_clip"], errors="coerce")
    elif ratings is not None:
        r = ratings[as_bool(ratings["presented_first"]).fillna(False).to_numpy()]
        resp = r["response"] if "response" in r.columns else r["clip_id"].astype(str).str.rsplit("_", n=1).str[-1]
        a = pd.DataFrame(
            {
                "participant_id": r["participant_id"].to_numpy(),
                "trial": r["trial"].to_numpy(),
                "first_clip": pd.to_numeric(resp, errors="coerce").to_numpy(),
            }
        )
    else:
        return pd.DataFrame(columns=["participant_id", "trial", "first_clip"])
    a["trial"] = pd.to_numeric(a["trial"], errors="coerce")
    a = a.dropna(subset=["trial", "first_clip"])
    a = a[a["first_clip"].isin([0, 1])].astype({"trial": int, "first_clip": int})
    return a.drop_duplicates(["participant_id", "trial"])


def behaviour_table(
    trials: pd.DataFrame,
    participants: pd.DataFrame,
    assignments: pd.DataFrame | None = None,
    ratings: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Rater behaviour by condition (§3.2.2's logged indicators; §5.1's re-listening), long numeric form.

    Population: response trials (trial >= 1) of analysed participants (passed the attention check,
    dropouts' completed trials included). Per-trial measures are summarised two ways: ``text``/
    ``audio`` = M over participants' means with ``*_sd`` their between-participant SD, and
    ``*_median`` = the median over trials; tests are on participants' means (one value per person,
    so the units are independent), Mann–Whitney U two-sided with r_rb = (U_text - U_audio)/(n n).

    Rows (audio-only rows have NaN text cells with the reason 'audio only'):

    * ``relisten_first_rate`` — share of audio trials on which the first-presented clip was
      replayed after both had been heard: ``count`` = trials with ``relistened_first`` true
      (where that cell is empty, replays of the first clip >= 1), ``n`` = audio trials; ``audio``
      is the pooled rate count/n (paper §5.1: 214/920 = 23.3 %), not a mean of participant rates.
      No test.
    * ``replays_first`` / ``replays_second`` — mean replays of the first- / second-presented clip
      per trial. ``replays_0``/``replays_1`` are by *response index*; they are mapped to
      presentation order with assignments.csv's ``first_clip`` or, failing that, ratings.csv's
      ``presented_first`` (:func:`first_clip_map`). ``replays_first_minus_second``: the paired
      difference of participants' means, Wilcoxon signed-rank (two-sided, scipy) in the audio
      condition (``statistic`` = W).
    * ``rating_changes`` — intermediate rating reversals per trial; Mann–Whitney text vs audio on
      participants' mean reversals. ``rating_changes_any_pct`` — % of trials with >= 1 reversal
      (pooled count/n; no test).
    * ``deliberation_s`` — audio only: end of the last listen to submission (s), M (SD) over
      participants' means and the median over trials.

    In the mean rows ``*_count`` is the number of trials that contribute; in the pooled rows it is
    the numerator of the rate.
    """
    t, is_audio, rel = _behaviour_trials(trials, participants, assignments, ratings)
    rows = []
    audio_only = ("audio",)
    rows.append(
        _pooled_row(
            t,
            is_audio,
            rel,
            "relisten_first_rate",
            "Re-listened to the first clip (% of audio trials)",
            "%",
            "_relisten",
            audio_only,
        )
    )
    rows += _replay_rows(t)
    rows.append(
        _mean_row(t, "rating_changes", "Rating reversals per trial", "reversals", "_changes", CONDITIONS, test=True)
    )
    rows.append(
        _pooled_row(
            t,
            is_audio,
            rel,
            "rating_changes_any_pct",
            "Trials with >= 1 rating reversal (%)",
            "%",
            "_any_change",
            CONDITIONS,
        )
    )
    rows.append(_mean_row(t, "deliberation_s", "Deliberation time (s)", "s", "_delib", audio_only, test=False))
    return pd.DataFrame(rows, columns=BEHAVIOUR_COLUMNS)


def _replay_rows(t: pd.DataFrame) -> list[dict]:
    """:func:`behaviour_table`'s replay rows: first- and second-presented clip, then their difference."""
    order_reason = (
        ""
        if np.isfinite(t["_rep_first"]).any()
        else "presentation order unknown (pass assignments or ratings) or no replay counts"
    )
    rows = []
    for measure, label, col in (
        ("replays_first", "Replays of the first-presented clip per trial", "_rep_first"),
        ("replays_second", "Replays of the second-presented clip per trial", "_rep_second"),
    ):
        row = _mean_row(t, measure, label, "replays", col, ("audio",), test=False)
        row["reason"] = join_reasons(row["reason"], order_reason)
        rows.append(row)
    rows.append(_replays_difference_row(t, order_reason))
    return rows


def _behaviour_trials(
    trials: pd.DataFrame, participants: pd.DataFrame, assignments: pd.DataFrame | None, ratings: pd.DataFrame | None
) -> tuple[pd.DataFrame, np.ndarray, pd.Series]:
    """(t, is_audio, rel): the response trials with the behaviour columns derived, audio mask, relistened_first.

    ``t`` gains ``_rep_first``/``_rep_second`` (replays by presentation order), ``_rep_diff``,
    ``_relisten``, ``_changes``, ``_any_change`` and ``_delib``; ``rel`` is ``relistened_first`` as
    nullable booleans (all missing when the column is absent).
    """
    t = response_trials(trials, participants)
    is_audio = (t["condition"] == "audio").to_numpy()
    fc = first_clip_map(assignments, ratings)
    t = t.assign(trial=pd.to_numeric(t["trial"], errors="coerce"))
    t = t.merge(fc, on=["participant_id", "trial"], how="left") if len(fc) else t.assign(first_clip=np.nan)
    rep0 = as_float(t["replays_0"]) if "replays_0" in t else pd.Series(np.nan, index=t.index)
    rep1 = as_float(t["replays_1"]) if "replays_1" in t else pd.Series(np.nan, index=t.index)
    first = pd.to_numeric(t["first_clip"], errors="coerce")
    t["_rep_first"] = np.where(first == 0, rep0, np.where(first == 1, rep1, np.nan))
    t["_rep_second"] = np.where(first == 0, rep1, np.where(first == 1, rep0, np.nan))
    t["_rep_diff"] = t["_rep_first"] - t["_rep_second"]
    rel = (
        as_bool(t["relistened_first"]) if "relistened_first" in t else pd.Series(pd.NA, index=t.index, dtype="boolean")
    )
    rel_from_rep = pd.Series(np.where(np.isfinite(t["_rep_first"]), t["_rep_first"] > 0, np.nan), index=t.index)
    t["_relisten"] = rel.astype(float).where(rel.notna(), rel_from_rep)
    t["_changes"] = as_float(t["rating_changes"]) if "rating_changes" in t else np.nan
    t["_any_change"] = np.where(np.isfinite(t["_changes"]), t["_changes"] > 0, np.nan)
    t["_delib"] = as_float(t["deliberation_time_s"]) if "deliberation_time_s" in t else np.nan
    return t, is_audio, rel


def _per_participant(t: pd.DataFrame, col: str, c: str) -> np.ndarray:
    """Condition ``c``'s participants' means of ``col`` (participants without a value left out)."""
    g = t[(t["condition"] == c).to_numpy()].dropna(subset=[col])
    return g.groupby("participant_id")[col].mean().to_numpy(dtype=float)


def _trial_values(t: pd.DataFrame, col: str, c: str) -> np.ndarray:
    """The finite values of ``col`` over condition ``c``'s trials."""
    v = t.loc[(t["condition"] == c).to_numpy(), col].to_numpy(dtype=float)
    return v[np.isfinite(v)]


#: A behaviour row before its measure's cells are filled (copied per row).
_BEHAVIOUR_ROW_BASE = dict(
    text=math.nan,
    text_sd=math.nan,
    text_median=math.nan,
    text_count=math.nan,
    n_text=0,
    audio=math.nan,
    audio_sd=math.nan,
    audio_median=math.nan,
    audio_count=math.nan,
    n_audio=0,
    test="",
    statistic=math.nan,
    U_text=math.nan,
    U_audio=math.nan,
    r_rb=math.nan,
    p=math.nan,
)


def _pooled_row(
    t: pd.DataFrame,
    is_audio: np.ndarray,
    rel: pd.Series,
    measure: str,
    label: str,
    unit: str,
    col: str,
    conds: tuple[str, ...],
) -> dict:
    """A pooled-rate row: per condition in ``conds`` the count of true trials of ``col`` over the trials."""
    row = dict(
        _BEHAVIOUR_ROW_BASE,
        measure=measure,
        label=label,
        unit=unit,
        population="response trials of analysed participants; pooled count / trials",
    )
    reasons = []
    for c in CONDITIONS:
        if c not in conds:
            reasons.append(f"{c}: audio only")
            continue
        v = _trial_values(t, col, c)
        row[f"{c}_count"], row[f"n_{c}"] = float(v.sum()), len(v)
        row[c] = pct_of(v.sum(), len(v))
        if not len(v):
            reasons.append(f"{c}: no trials with this measure")
    if (
        col == "_relisten"
        and "audio" in conds
        and not np.isfinite(t.loc[is_audio, "_rep_first"]).any()
        and not rel[is_audio].notna().any()
    ):
        reasons.append("audio: neither relistened_first nor first-clip replays available")
    reasons.append("pooled rate: no SD, median or test")
    row["reason"] = join_reasons(*reasons)
    return row


def _mean_row(
    t: pd.DataFrame, measure: str, label: str, unit: str, col: str, conds: tuple[str, ...], test: bool
) -> dict:
    """A mean row: M (SD) of participants' means of ``col``, trial median, Mann–Whitney U if ``test``."""
    row = dict(
        _BEHAVIOUR_ROW_BASE,
        measure=measure,
        label=label,
        unit=unit,
        population="response trials of analysed participants; M (SD) over participants' means",
    )
    reasons, means = [], {}
    for c in CONDITIONS:
        if c not in conds:
            reasons.append(f"{c}: audio only")
            means[c] = np.array([])
            continue
        means[c] = _per_participant(t, col, c)
        m, sd, n = mean_sd(means[c])
        v = _trial_values(t, col, c)
        row.update(
            {
                c: m,
                f"{c}_sd": sd,
                f"n_{c}": n,
                f"{c}_median": float(np.median(v)) if len(v) else math.nan,
                f"{c}_count": float(len(v)),
            }
        )
        if n == 0:
            reasons.append(f"{c}: no participants with this measure")
        elif n == 1:
            reasons.append(f"{c}: SD needs at least 2 participants")
    if test:
        res = mann_whitney(means["text"], means["audio"])
        row.update(
            test=MW_TEST,
            statistic=res["U_text"],
            U_text=res["U_text"],
            U_audio=res["U_audio"],
            r_rb=res["r_rb"],
            p=res["p"],
        )
        reasons.append(res["reason"])
    row["reason"] = join_reasons(*reasons)
    return row


def _replays_difference_row(t: pd.DataFrame, order_reason: str) -> dict:
    """The paired first-minus-second replays row, Wilcoxon signed-rank over audio participants' means."""
    row = _mean_row(
        t,
        "replays_first_minus_second",
        "Replays first minus second (paired, per participant)",
        "replays",
        "_rep_diff",
        ("audio",),
        test=False,
    )
    d = _per_participant(t, "_rep_diff", "audio")
    row["test"] = "Wilcoxon signed-rank (two-sided), audio participants' mean differences"
    if len(d) and np.any(d != 0):
        w = stats.wilcoxon(d, alternative="two-sided", zero_method="wilcox")
        row["statistic"], row["p"] = float(w.statistic), float(w.pvalue)
    else:
        row["reason"] = join_reasons(
            row["reason"], order_reason, "no non-zero paired differences: Wilcoxon undefined" if len(d) else ""
        )
    return row

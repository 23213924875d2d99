"""Decision thresholds: rating gaps on decisive vs tie trials by modality (paper §4.1, §5.1, Figure 2).

Per trial, the rating gap is ``|r_0 - r_1|`` between the two responses' ratings (response index,
not presentation order), in the units of the study's rating scale (the paper's 1–100 slider). A
trial is *decisive* when the stated preference is ``0``/``1`` and a *tie* when it is ``tie``.
Population: response trials (trial >= 1) of analysed participants (passed the attention check;
dropouts' trials kept), as in :mod:`modprefs.stats.tables.descriptive`.

Statistics (:func:`gap_table`)
------------------------------
* M, sample SD, Mdn and a **t-based** CI of the mean (at ``stats.ci_level``, default 95 %:
  mean ± t_{.975, n-1} SD/sqrt(n)) per modality, computed **per trial** (the paper: decisive text
  M = 41.7 [39.5, 43.9], Mdn = 34.0; audio 27.9 [26.1, 29.8], Mdn = 20.0; ties text 3.3, audio 3.9).
  Trials are nested in raters and
  prompts, so the CI treats them as independent — as the paper's numbers do.
* Mann–Whitney U text vs audio (two-sided, scipy, continuity-corrected), **per trial**. ``U`` is
  scipy's statistic with audio as the first sample (``U_audio`` = #(audio gap > text gap) + ½ #ties
  over all audio x text pairs) and ``r_rb = 1 - 2 U_audio/(n_a n_t) = (U_text - U_audio)/(n_a n_t)``,
  positive when text gaps tend to be larger. This reproduces both of the paper's pairs: decisive
  U = 150582 with r_rb = .303 implies n_a n_t = 2U/(1 - r) ~ 432,000 (~660 x ~650 decisive
  trials, consistent with ~28 % ties of 920/890 trials), whereas the other reading U = U_text would
  need n_a n_t ~ 231,000; ties U = 34092, r_rb = -.113 give n_a n_t ~ 61,300 under the same
  convention (audio tie gaps larger: U_audio above half of n_a n_t, r_rb negative).

Figure 2 (:func:`prompt_mean_gaps`)
-----------------------------------
The caption says "mean per-prompt rating gap on trials where raters declared a preference", while
the U statistics are per trial. :func:`prompt_mean_gaps` averages the decisive trials' gaps per
prompt and modality; the figure (:func:`modprefs.stats.figures.figure2_gap_cdf`) shows that
per-prompt distribution as its main panel (as captioned) and the per-trial distribution (the
one the tests compare) beside it.

Binarisation thresholds (:func:`threshold_recommendations`)
-----------------------------------------------------------
A threshold tau turns a rating pair into a label: *tie* if ``|r_0 - r_1|`` <= tau, else the higher-rated
response. Rules, per modality, on tau = 0..99 in whole points on the paper's 1-100 scale (ratings are integers);
on another scale tau runs over 0..max-min in its steps (:func:`threshold_grid`):

* ``max_agreement`` — the tau maximising 3-class agreement (0 / 1 / tie) with the stated
  preference on all trials; the smallest such tau when several tie. This is the boundary between
  "tie" and "decisive" most consistent with what raters said, and treats a tie mislabelled as a
  win and a win mislabelled as a tie as equally costly.
* ``precision_80`` / ``precision_90`` — the smallest tau at which, among trials with gap > tau, at
  least 80 % / 90 % have a stated preference for the higher-rated response (label precision for
  pipelines that keep only decisive pairs); ``coverage`` = share of all trials kept.
  NaN with a reason when no tau reaches the target.

Each row also gives the agreement the *other* modality's ``max_agreement`` tau achieves on this
modality's trials (§5.1: "a fixed binarization threshold calibrated on text data may misclassify
audio pairs as ties"). Optional participant-bootstrap percentile intervals for tau (``n_boot``; level
``ci_level``, default 95 %).

A threshold can only be a multiple of the scale's step, so on a scale of few steps it is *degenerate*
(:func:`grid_caveat`, the ``caveat`` column): the grid has at most :data:`COARSE_GRID` values (1-5: 0..4), or
the bootstrap interval collapses to a single grid value (every resample picked the same gap, which shows no
uncertainty finer than one step). "0.0 [0.0, 0.0]" on a 1-5 scale then reads "a pair is a tie only when its
two ratings are equal, and no resample said otherwise", not "a threshold known to be exactly 0".
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from modprefs.scale import RatingScale
from modprefs.stats.tables.descriptive import (
    CONDITIONS,
    MW_TEST,
    as_float,
    join_reasons,
    mann_whitney,
    response_trials,
)

KINDS: tuple[str, ...] = ("decisive", "tie")
GAP_COLUMNS = [
    "participant_id",
    "condition",
    "prompt_id",
    "trial",
    "rating_0",
    "rating_1",
    "diff",
    "gap",
    "preference",
    "kind",
]
GAP_TABLE_COLUMNS = [
    "kind",
    "level",
    "n_text",
    "mean_text",
    "sd_text",
    "ci_lo_text",
    "ci_hi_text",
    "median_text",
    "n_audio",
    "mean_audio",
    "sd_audio",
    "ci_lo_audio",
    "ci_hi_audio",
    "median_audio",
    "test",
    "U",
    "U_text",
    "U_audio",
    "r_rb",
    "p",
    "ci_method",
    "reason",
]
CI_METHOD = "t-based 95% CI of the mean over trials (mean +/- t_.975,n-1 * SD/sqrt(n))"


def ci_method_text(ci_level: float = 0.95) -> str:
    """The gap table's ``ci_method`` at ``ci_level`` (:data:`CI_METHOD` at 95 %)."""
    q = f"{0.5 + ci_level / 2:.10g}".lstrip("0")
    return f"t-based {100 * ci_level:.10g}% CI of the mean over trials (mean +/- t_{q},n-1 * SD/sqrt(n))"


def percentiles(ci_level: float) -> tuple[float, float]:
    """The percentiles (0-100) bounding a two-sided ``ci_level`` percentile interval: (2.5, 97.5) at .95 (exactly)."""
    lo = round(50.0 * (1.0 - ci_level), 10)
    return lo, 100.0 - lo


THRESHOLD_COLUMNS = [
    "condition",
    "rule",
    "target",
    "threshold",
    "threshold_lo",
    "threshold_hi",
    "agreement",
    "precision",
    "coverage",
    "n_trials",
    "n_kept",
    "other_condition_threshold",
    "agreement_at_other_threshold",
    "n_boot",
    "reason",
    "caveat",
]
TAUS = np.arange(0, 100)
#: a threshold grid of at most this many values is *coarse*: a scale of 10 or fewer steps (1-5, 1-7, 1-10)
#: can only place a threshold on a handful of whole-step gaps, so a threshold is resolved to one step at best.
COARSE_GRID = 10


def threshold_grid(scale: RatingScale) -> np.ndarray:
    """The thresholds searched on ``scale``: every possible gap 0, step, ..., max - min (0..99 on the paper's).

    Examples
    --------
    >>> from modprefs.scale import RatingScale
    >>> from modprefs.stats.tables.thresholds import threshold_grid
    >>> threshold_grid(RatingScale(1, 5, 1, "Bad", "Excellent")).tolist()
    [0, 1, 2, 3, 4]
    """
    return np.arange(scale.n_points) * scale.step


def grid_caveat(threshold: float, lo: float, hi: float, taus: np.ndarray) -> str:
    """Why a threshold on the grid ``taus`` (scale units) is degenerate, naming the scale's step; '' when it is not.

    Degenerate: the grid is coarse (at most :data:`COARSE_GRID` values), or the interval [``lo``, ``hi``] collapses
    to one grid value. A missing ``threshold`` (no tau reached the target) has no caveat: its ``reason`` says why.
    """
    grid = np.asarray(taus, dtype=float)
    if not math.isfinite(threshold) or not len(grid):
        return ""
    step = float(grid[1] - grid[0]) if len(grid) > 1 else math.nan
    parts = []
    if len(grid) <= COARSE_GRID:
        parts.append(
            f"the scale's step {step:g} allows only {len(grid)} thresholds ({grid[0]:g}..{grid[-1]:g}), so a "
            "threshold is resolved to one step at best"
        )
    if math.isfinite(lo) and math.isfinite(hi) and lo == hi:
        parts.append(
            f"the interval collapses to the single grid value {lo:g} (every resample picked it): it shows no "
            f"uncertainty finer than the step {step:g}"
        )
    if not parts:
        return ""
    if threshold == grid[0]:
        parts.append(f"threshold {grid[0]:g}: a pair counts as a tie only when its two ratings are equal")
    return "degenerate on this scale: " + "; ".join(parts)


def response_index(ratings: pd.DataFrame) -> pd.Series:
    """Each rating's response index as text ('0', '1', ...): the ``response`` column
    (:func:`modprefs.ratings.read.prepare_study` sets it from the stimuli), else the clip id's ``_N`` suffix."""
    if "response" in ratings.columns:
        values = pd.to_numeric(ratings["response"], errors="coerce")
        return values.map(lambda v: str(int(v)) if pd.notna(v) else "")
    return ratings["clip_id"].astype(str).str.rsplit("_", n=1).str[-1]


def trial_gaps(ratings: pd.DataFrame, trials: pd.DataFrame, participants: pd.DataFrame) -> pd.DataFrame:
    """One row per response trial of an analysed participant with both ratings and a preference.

    ``rating_0``/``rating_1`` are the ratings of response 0/1 (clip_id ``{prompt_id}_{response}``,
    docs/CONTRACTS.md), ``diff`` = rating_0 - rating_1, ``gap`` = ``|diff|``, ``preference`` '0'/'1'/'tie'
    and ``kind`` 'decisive' (0/1) or 'tie'. Trials lacking a rating or a valid preference are dropped.
    """
    t = response_trials(trials, participants)
    t = t.assign(
        trial=pd.to_numeric(t["trial"], errors="coerce").astype("Int64"),
        preference=t["preference"].astype("string").str.strip().str.lower().str.replace(r"\.0$", "", regex=True),
    )
    r = ratings[pd.to_numeric(ratings["trial"], errors="coerce") >= 1]
    r = r.assign(
        trial=pd.to_numeric(r["trial"], errors="coerce").astype("Int64"),
        response=response_index(r),
        rating=as_float(r["rating"]),
    )
    wide = r[r["response"].isin(["0", "1"])].pivot_table(
        index=["participant_id", "trial"], columns="response", values="rating", aggfunc="first"
    )
    wide = wide.reindex(columns=["0", "1"]).rename(columns={"0": "rating_0", "1": "rating_1"}).reset_index()
    wide.columns.name = None
    g = t.merge(wide, on=["participant_id", "trial"], how="inner")
    g = g.dropna(subset=["rating_0", "rating_1"])
    g = g[g["preference"].isin(["0", "1", "tie"]).fillna(False).to_numpy()]
    g = g.assign(diff=g["rating_0"] - g["rating_1"])
    g = g.assign(
        gap=g["diff"].abs(),
        kind=np.where(g["preference"] == "tie", "tie", "decisive"),
        preference=g["preference"].astype(str),
    )
    return g[GAP_COLUMNS].sort_values(["condition", "participant_id", "trial"]).reset_index(drop=True)


def describe_gaps(x: np.ndarray, what: str = "trials", ci_level: float = 0.95) -> dict:
    """n, M, SD, t-based ``ci_level`` CI and median of the finite values; NaN with a reason when undefined.

    ``what`` names the units in the reason ("no decisive trials", ...).
    """
    a = np.asarray(x, dtype=float)
    a = a[np.isfinite(a)]
    n = len(a)
    out: dict[str, Any] = dict(
        n=n, mean=math.nan, sd=math.nan, ci_lo=math.nan, ci_hi=math.nan, median=math.nan, reason=""
    )
    if n == 0:
        out["reason"] = f"no {what}"
        return out
    out["mean"], out["median"] = float(a.mean()), float(np.median(a))
    if n < 2:
        out["reason"] = f"only one of the {what}: SD and CI undefined"
        return out
    sd = float(a.std(ddof=1))
    half = float(stats.t.ppf(0.5 + ci_level / 2, n - 1)) * sd / math.sqrt(n)
    out.update(sd=sd, ci_lo=out["mean"] - half, ci_hi=out["mean"] + half)
    return out


def gap_table(gaps: pd.DataFrame, ci_level: float = 0.95) -> pd.DataFrame:
    """§4.1 "Decision Threshold": per-trial rating gaps by kind (decisive / tie) and modality.

    One row per kind: for text and audio n, M, SD, t-based ``ci_level`` CI, Mdn; Mann–Whitney U text vs
    audio (``U`` = U_audio, the paper's convention; ``U_text`` too), two-sided p and r_rb =
    (U_text - U_audio)/(n_t n_a) (positive: text gaps larger; paper decisive .303, ties -.113).
    A kind with no trials in a condition (e.g. no ties) gives NaN cells and a ``reason``.
    """
    rows = []
    for kind in KINDS:
        row: dict = dict(kind=kind, level="trial", test=MW_TEST, ci_method=ci_method_text(ci_level))
        reasons = []
        vals = {}
        for c in CONDITIONS:
            vals[c] = gaps.loc[(gaps["kind"] == kind) & (gaps["condition"] == c), "gap"].to_numpy(dtype=float)
            d = describe_gaps(vals[c], f"{kind} trials", ci_level)
            row.update(
                {
                    f"n_{c}": d["n"],
                    f"mean_{c}": d["mean"],
                    f"sd_{c}": d["sd"],
                    f"ci_lo_{c}": d["ci_lo"],
                    f"ci_hi_{c}": d["ci_hi"],
                    f"median_{c}": d["median"],
                }
            )
            if d["reason"]:
                reasons.append(f"{c}: {d['reason']}")
        res = mann_whitney(vals["text"], vals["audio"])
        row.update(U=res["U_audio"], U_text=res["U_text"], U_audio=res["U_audio"], r_rb=res["r_rb"], p=res["p"])
        if res["reason"]:
            reasons.append(f"Mann-Whitney: {res['reason']}")
        row["reason"] = join_reasons(*reasons)
        rows.append(row)
    return pd.DataFrame(rows, columns=GAP_TABLE_COLUMNS)


def prompt_mean_gaps(gaps: pd.DataFrame, kind: str = "decisive") -> pd.DataFrame:
    """Figure 2's unit: mean gap per prompt and modality over that prompt's ``kind`` trials.

    Columns prompt_id, condition, n_trials, mean_gap. A prompt with no such trial in a modality
    is absent for that modality.
    """
    g = gaps[gaps["kind"] == kind].groupby(["prompt_id", "condition"], sort=True)["gap"]
    return pd.DataFrame({"n_trials": g.size(), "mean_gap": g.mean()}).reset_index()


# --------------------------------------------------------------------------------------------------
# binarisation thresholds
# --------------------------------------------------------------------------------------------------
def agreement_curve(gaps: pd.DataFrame, condition: str, taus: np.ndarray = TAUS) -> pd.DataFrame:
    """For each tau: 3-class agreement with stated preferences, and precision/coverage of gap > tau.

    Columns tau, agreement, n_kept (trials with gap > tau), precision (share of kept trials whose
    stated preference is the higher-rated response; NaN when none kept), coverage (n_kept / n).
    """
    g = gaps[gaps["condition"] == condition]
    return _curve(g["diff"].to_numpy(dtype=float), g["preference"].to_numpy(dtype=str), taus)


def _curve(diff: np.ndarray, pref: np.ndarray, taus: np.ndarray) -> pd.DataFrame:
    """:func:`agreement_curve` of n trials' rating gaps ``diff`` (n,) and stated preferences ``pref`` (n,),
    all taus at once: a (len(taus), n) mask of the trials kept (``|gap|`` > tau)."""
    n = len(diff)
    taus = np.asarray(taus, dtype=float)
    kept = np.abs(diff)[None, :] > taus[:, None]
    higher_stated = pref == np.where(diff > 0, "0", "1")
    hits = kept & higher_stated[None, :]
    n_kept = kept.sum(axis=1)
    agree = (hits | (~kept & (pref == "tie")[None, :])).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return pd.DataFrame(
            {
                "tau": taus,
                "agreement": agree / n if n else np.full(len(taus), math.nan),
                "n_kept": n_kept.astype(int),
                "precision": np.where(n_kept > 0, hits.sum(axis=1) / np.maximum(n_kept, 1), math.nan),
                "coverage": n_kept / n if n else np.full(len(taus), math.nan),
            }
        )


def _pick(curve: pd.DataFrame, rule: str, target: float) -> float:
    if rule == "max_agreement":
        a = curve["agreement"].to_numpy()
        if not np.isfinite(a).any():
            return math.nan
        return float(curve["tau"].to_numpy()[int(np.nanargmax(a))])  # first = smallest maximiser
    ok = curve[curve["precision"] >= target]
    return float(ok["tau"].iloc[0]) if len(ok) else math.nan


RULES: tuple[tuple[str, float], ...] = (("max_agreement", math.nan), ("precision_80", 0.80), ("precision_90", 0.90))


def threshold_recommendations(
    gaps: pd.DataFrame, n_boot: int = 0, seed: int = 0, taus: np.ndarray = TAUS, ci_level: float = 0.95
) -> pd.DataFrame:
    """Per-modality binarisation thresholds (§5.1) under the rules in the module docstring.

    One row per condition x rule: ``threshold`` (tau; a pair is a tie if ``|gap|`` <= tau), its
    ``agreement`` (3-class), ``precision`` and ``coverage`` of gap > tau, ``n_trials``, ``n_kept``;
    ``other_condition_threshold`` / ``agreement_at_other_threshold`` = the other modality's tau
    under the same rule and the agreement it gives here. With ``n_boot`` > 0 the participants of
    the condition are resampled with replacement and ``threshold_lo``/``threshold_hi`` are the 2.5 /
    97.5 percentiles (at ``ci_level`` .95; :func:`percentiles`) of the re-picked tau (resamples where the rule
    is undefined are skipped). ``taus``: the grid searched, in scale units (:func:`threshold_grid`); ``caveat``
    says where that grid makes the threshold degenerate (:func:`grid_caveat`).
    """
    curves = {c: agreement_curve(gaps, c, taus) for c in CONDITIONS}
    picks = {(c, rule): _pick(curves[c], rule, target) for c in CONDITIONS for rule, target in RULES}
    rng = np.random.default_rng(seed)
    q_lo, q_hi = percentiles(ci_level)
    rows = []
    for c in CONDITIONS:
        other = "audio" if c == "text" else "text"
        n = int((gaps["condition"] == c).sum())
        boot: dict[str, list[float]] = {rule: [] for rule, _ in RULES}
        if n_boot > 0 and n:
            g = gaps[gaps["condition"] == c]
            diff, pref = g["diff"].to_numpy(dtype=float), g["preference"].to_numpy(dtype=str)
            rows_of = list(g.groupby("participant_id", sort=True).indices.values())  # positions in g
            for _ in range(n_boot):
                take = np.concatenate([rows_of[i] for i in rng.integers(len(rows_of), size=len(rows_of))])
                cv = _curve(diff[take], pref[take], taus)
                for rule, target in RULES:
                    boot[rule].append(_pick(cv, rule, target))
        for rule, target in RULES:
            tau = picks[(c, rule)]
            cv = curves[c]
            reason = ""
            at = cv[cv["tau"] == tau]
            if n == 0:
                reason = f"no {c} trials"
            elif not math.isfinite(tau):
                reason = f"no tau in 0..{float(taus[-1]):g} reaches precision {target:.0%}"
            tau_o = picks[(other, rule)]
            at_o = cv[cv["tau"] == tau_o]
            b = np.asarray(boot[rule], dtype=float)
            b = b[np.isfinite(b)]
            notes = [reason] if reason else []
            if target is None or not math.isfinite(float(target)):
                notes.append("max_agreement has no precision target")
            if not len(b):
                notes.append(
                    "no bootstrap interval (n_boot_threshold = 0)"
                    if not boot[rule]
                    else "threshold undefined in every bootstrap resample"
                )
            reason = "; ".join(notes)
            lo = float(np.percentile(b, q_lo)) if len(b) else math.nan
            hi = float(np.percentile(b, q_hi)) if len(b) else math.nan
            rows.append(
                dict(
                    condition=c,
                    rule=rule,
                    target=target,
                    threshold=tau,
                    threshold_lo=lo,
                    threshold_hi=hi,
                    agreement=float(at["agreement"].iloc[0]) if len(at) else math.nan,
                    precision=float(at["precision"].iloc[0]) if len(at) else math.nan,
                    coverage=float(at["coverage"].iloc[0]) if len(at) else math.nan,
                    n_trials=n,
                    n_kept=int(at["n_kept"].iloc[0]) if len(at) else 0,
                    other_condition_threshold=tau_o,
                    agreement_at_other_threshold=float(at_o["agreement"].iloc[0]) if len(at_o) else math.nan,
                    n_boot=len(b),
                    reason=reason,
                    caveat=grid_caveat(tau, lo, hi, taus),
                )
            )
    return pd.DataFrame(rows, columns=THRESHOLD_COLUMNS)

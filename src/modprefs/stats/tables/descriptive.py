"""Descriptive tables: Table 1 (demographics) and Table 3 (session characteristics).

Rater behaviour (§3.2.2, §5.1) is in :mod:`modprefs.stats.tables.behaviour`, on the helpers and conventions here.

Pure functions on the rating tables of docs/CONTRACTS.md (``participants.csv``, ``trials.csv``,
``ratings.csv``, ``assignments.csv``); each returns a tidy DataFrame ready to be written as a table.
Nothing here raises on thin data: a statistic that cannot be computed is NaN and the row's
``reason`` column says why (empty string when everything was computed).

Populations (who enters each number)
------------------------------------
* **recruited**: every row of participants.csv (paper §3.3: 53 per condition).
* **analysed**: ``passed_attention`` true (§3.3: 48 text, 46 audio), dropouts included — the paper
  keeps the trials of the 4 text participants who did not finish.
* **completers**: analysed and ``completed`` true.
* **response trials**: trials.csv rows with ``trial >= 1`` (the attention check, trial 0 / prompt
  ``attn``, is dropped) of analysed participants; the paper's 920 audio trials = 46 x 20.

Conventions
-----------
* SD is the sample SD (ddof = 1); M (SD) of a per-trial measure is over participants' means
  unless a row says otherwise (Table 3's trial-duration U = 255 compares 46 x 48 people).
* Mann–Whitney U (two-sided, scipy ``mannwhitneyu`` with ``method="auto"`` and continuity
  correction, as R's ``wilcox.test``). scipy's U for a first sample x is the number of pairs
  (x_i, y_j) with x_i > y_j plus half the ties; ``U_text`` + ``U_audio`` = n_text x n_audio. The
  rank-biserial correlation is ``r_rb = (U_text - U_audio) / (n_text n_audio)
  = 2 U_text/(n n) - 1 = 1 - 2 U_audio/(n n)``: positive when text values tend to be larger.
  That is the paper's sign (§4.1: decisive gaps text > audio, U = 150582 = U_audio, r_rb = .303;
  ties audio > text, U = 34092 = U_audio, r_rb = -.113). Table 3 lists text first and its U's
  (trial duration 255, difficulty 992) are small/near-half values consistent with ``U_text``; the
  ``U`` column of :func:`session_table` is therefore ``U_text`` and both are in the long form.
* Fisher's exact test: scipy ``fisher_exact`` (two-sided) on a 2 x 2 table of counts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from modprefs.study.terms import ATTENTION_PROMPT, BACHELOR_PLUS
from modprefs.study.terms import PAPER_COLUMN_ORDER as CONDITIONS  # Tables 1 and 3

MW_TEST = "Mann-Whitney U (two-sided)"
FISHER_TEST = "Fisher's exact (two-sided)"


# --------------------------------------------------------------------------------------------------
# helpers shared with thresholds.py
# --------------------------------------------------------------------------------------------------
def as_bool(values: pd.Series) -> pd.Series:
    """Nullable booleans from a column read from CSV (bool, 0/1, 'True'/'False', 'yes'/'no')."""
    if values.dtype == bool:
        return values.astype("boolean")
    text = values.astype("string").str.strip().str.lower()
    out = pd.Series(pd.NA, index=values.index, dtype="boolean")
    out[text.isin(["true", "1", "1.0", "yes", "t", "y"]).fillna(False).to_numpy()] = True
    out[text.isin(["false", "0", "0.0", "no", "f", "n"]).fillna(False).to_numpy()] = False
    return out


def as_float(values: pd.Series) -> pd.Series:
    """Floats (NaN for missing or unparsable cells)."""
    return pd.to_numeric(values, errors="coerce").astype(float)


def analysed_participants(participants: pd.DataFrame) -> pd.DataFrame:
    """Participants who passed the attention check (§3.3), dropouts included."""
    return participants[as_bool(participants["passed_attention"]).fillna(False).to_numpy()]


def response_trials(trials: pd.DataFrame, participants: pd.DataFrame) -> pd.DataFrame:
    """Response trials (trial >= 1, not the attention prompt) of analysed participants, with ``condition``.

    trials.csv has no condition column; it is joined from participants.csv.
    """
    keep = analysed_participants(participants)[["participant_id", "condition"]]
    t = trials.drop(columns=[c for c in ("condition",) if c in trials.columns])
    t = t[
        (pd.to_numeric(t["trial"], errors="coerce") >= 1).to_numpy()
        & (t["prompt_id"].astype(str) != ATTENTION_PROMPT).to_numpy()
    ]
    return t.merge(keep, on="participant_id", how="inner")


def mean_sd(x: Iterable[float]) -> tuple[float, float, int]:
    """(mean, sample SD, n) of the finite values; NaN where undefined (SD needs n >= 2)."""
    a = np.asarray(list(x), dtype=float)
    a = a[np.isfinite(a)]
    n = len(a)
    m = float(a.mean()) if n else math.nan
    sd = float(a.std(ddof=1)) if n >= 2 else math.nan
    return m, sd, n


def mann_whitney(text: Sequence[float] | np.ndarray, audio: Sequence[float] | np.ndarray) -> dict:
    """Two-sided Mann–Whitney U of text vs audio with the rank-biserial correlation.

    Returns ``U_text`` (scipy's statistic for x = text), ``U_audio`` (= n_t n_a - U_text), ``p``,
    ``r_rb`` = (U_text - U_audio)/(n_t n_a) (positive: text larger; the paper's sign, see the
    module docstring), ``n_text``, ``n_audio`` and ``reason`` ('' or why the test is NaN).
    """
    x = np.asarray(text, dtype=float)
    y = np.asarray(audio, dtype=float)
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    out: dict[str, Any] = dict(
        U_text=math.nan, U_audio=math.nan, p=math.nan, r_rb=math.nan, n_text=len(x), n_audio=len(y), reason=""
    )
    if len(x) == 0 or len(y) == 0:
        missing = [c for c, a in (("text", x), ("audio", y)) if len(a) == 0]
        out["reason"] = "no observations in " + " and ".join(missing)
        return out
    pooled = np.concatenate([x, y])
    res = stats.mannwhitneyu(x, y, alternative="two-sided", method="auto")
    nn = len(x) * len(y)
    out["U_text"] = float(res.statistic)
    out["U_audio"] = float(nn - res.statistic)
    out["r_rb"] = float((out["U_text"] - out["U_audio"]) / nn)
    if np.all(pooled == pooled[0]):
        out["reason"] = "all values identical: no rank information, p undefined"
    else:
        out["p"] = float(res.pvalue)
    return out


def fisher_2x2(text_yes: int, text_no: int, audio_yes: int, audio_no: int) -> dict:
    """Two-sided Fisher's exact test on [[text_yes, text_no], [audio_yes, audio_no]].

    Returns ``odds_ratio``, ``p`` and ``reason``. A condition without participants gives NaN.
    """
    out = dict(odds_ratio=math.nan, p=math.nan, reason="")
    if text_yes + text_no == 0 or audio_yes + audio_no == 0:
        out["reason"] = "a condition has no participants"
        return out
    res = stats.fisher_exact([[text_yes, text_no], [audio_yes, audio_no]], alternative="two-sided")
    out["odds_ratio"] = float(res.statistic)
    out["p"] = float(res.pvalue)
    return out


def format_p(p: float) -> str:
    """APA style without the leading zero: '.678', '<.001'; '' for NaN."""
    if p is None or not np.isfinite(p):
        return ""
    if p < 0.001:
        return "<.001"
    return f"{p:.3f}".lstrip("0")


def pct_of(count: float, n: float) -> float:
    return 100.0 * count / n if n else math.nan


def _fmt_m_sd(m: float, sd: float, digits: int) -> str:
    if not np.isfinite(m):
        return ""
    return f"{m:.{digits}f} ({sd:.{digits}f})" if np.isfinite(sd) else f"{m:.{digits}f}"


def _fmt_num(x: float, digits: int) -> str:
    return f"{x:.{digits}f}" if np.isfinite(x) else ""


def join_reasons(*reasons: str) -> str:
    return "; ".join(dict.fromkeys(r for r in reasons if r))


# --------------------------------------------------------------------------------------------------
# Table 1
# --------------------------------------------------------------------------------------------------
#: (measure, label, kind) in Table 1's row order
TABLE1_ROWS: tuple[tuple[str, str, str], ...] = (
    ("n", "$n$", "count"),
    ("age", "Age", "mean_sd"),
    ("woman_pct", "Woman (%)", "pct"),
    ("white_pct", "White (%)", "pct"),
    ("hispanic_latino_pct", "Hispanic/Latino (%)", "pct"),
    ("native_english_pct", "Native English (%)", "pct"),
    ("bachelor_plus_pct", "Bachelor's+ (%)", "pct"),
)
DEMOGRAPHICS_LONG_COLUMNS = ["measure", "label", "condition", "value", "sd", "count", "n", "reason"]


def _str_eq(values: pd.Series, target: str) -> pd.Series:
    """Case- and whitespace-insensitive equality; missing stays missing."""
    s = values.astype("string").str.strip()
    return (s.str.casefold() == target.casefold()).where(s.notna() & (s != ""))


def demographics_long(participants: pd.DataFrame) -> pd.DataFrame:
    """Table 1 (§3.2.1, §3.3) in long numeric form: one row per measure x condition.

    Population: analysed participants (``passed_attention`` true; the paper's 48 text / 46 audio,
    dropouts included). ``value`` is the mean (age) or the percentage; ``sd`` the sample SD of age;
    ``count`` the number with the attribute; ``n`` the denominator = participants with a non-missing
    answer (a missing answer is left out, 'Prefer not to say' is an answer). Definitions:
    Woman = gender 'Woman'; White = race 'White' (single-race answer; 'Multiracial' is not
    counted); Hispanic/Latino = ``hispanic_latino`` true; Native English = ``native_english`` true;
    Bachelor's+ = education Bachelor's, Master's or Doctoral/professional degree.
    No test: Table 1 reports none.
    """
    p = analysed_participants(participants)
    rows = []
    for c in CONDITIONS:
        g = p[p["condition"].astype(str) == c]
        flags = {
            "woman_pct": _str_eq(g["gender"], "Woman") if "gender" in g else None,
            "white_pct": _str_eq(g["race"], "White") if "race" in g else None,
            "hispanic_latino_pct": as_bool(g["hispanic_latino"]) if "hispanic_latino" in g else None,
            "native_english_pct": as_bool(g["native_english"]) if "native_english" in g else None,
            "bachelor_plus_pct": (
                g["education"].astype("string").str.strip().isin(BACHELOR_PLUS).where(g["education"].notna())
            )
            if "education" in g
            else None,
        }
        for measure, label, kind in TABLE1_ROWS:
            reason = ""
            if kind == "count":
                value, sd, count, n = float(len(g)), math.nan, len(g), len(g)
                if not len(g):
                    reason = f"no analysed participants in {c}"
            elif kind == "mean_sd":
                value, sd, n = mean_sd(as_float(g["age"])) if "age" in g else (math.nan, math.nan, 0)
                count = n
                if n == 0:
                    reason = f"no age values in {c}"
                elif n == 1:
                    reason = "SD needs at least 2 participants"
            else:
                f = flags[measure]
                if f is None:
                    value, sd, count, n, reason = math.nan, math.nan, 0, 0, f"column missing for {measure}"
                else:
                    known = f.dropna().astype(bool)
                    count, n = int(known.sum()), int(len(known))
                    value, sd = pct_of(count, n), math.nan
                    if n == 0:
                        reason = f"no answers in {c}"
            rows.append(
                dict(measure=measure, label=label, condition=c, value=value, sd=sd, count=count, n=n, reason=reason)
            )
    return pd.DataFrame(rows, columns=DEMOGRAPHICS_LONG_COLUMNS)


def demographics_table(participants: pd.DataFrame) -> pd.DataFrame:
    """Table 1: participant demographics by condition (analysed participants; see :func:`demographics_long`).

    Columns ``row``, ``text``, ``audio`` (formatted like the paper: n; age M (SD) to 1 decimal;
    percentages to 1 decimal) and ``reason``. Values are M (SD) unless noted.
    """
    long = demographics_long(participants)
    out = []
    for measure, label, kind in TABLE1_ROWS:
        row = {"row": label}
        reasons = []
        for c in CONDITIONS:
            r = long[(long.measure == measure) & (long.condition == c)].iloc[0]
            if kind == "count":
                row[c] = str(int(r.value))
            elif kind == "mean_sd":
                row[c] = _fmt_m_sd(r.value, r.sd, 1)
            else:
                row[c] = _fmt_num(r.value, 1)
            reasons.append(f"{c}: {r.reason}" if r.reason else "")
        row["reason"] = join_reasons(*reasons)
        out.append(row)
    return pd.DataFrame(out, columns=["row", *CONDITIONS, "reason"])


# --------------------------------------------------------------------------------------------------
# Table 3
# --------------------------------------------------------------------------------------------------
SESSION_LONG_COLUMNS = [
    "measure",
    "label",
    "population",
    "text",
    "text_sd",
    "text_count",
    "n_text",
    "audio",
    "audio_sd",
    "audio_count",
    "n_audio",
    "test",
    "U",
    "U_text",
    "U_audio",
    "r_rb",
    "odds_ratio",
    "p",
    "reason",
]


def participant_mean_trial_time(trials: pd.DataFrame, participants: pd.DataFrame) -> pd.DataFrame:
    """Each analysed participant's mean ``decision_time_s`` over their response trials (seconds).

    Columns participant_id, condition, n_trials, mean_trial_s. Participants with no response trial
    (e.g. a dropout right after the attention check) are absent.
    """
    t = response_trials(trials, participants)
    t = t.assign(_t=as_float(t["decision_time_s"])).dropna(subset=["_t"])
    g = t.groupby(["participant_id", "condition"], sort=True)["_t"]
    return pd.DataFrame({"n_trials": g.size(), "mean_trial_s": g.mean()}).reset_index()


def _fisher_row(condition: pd.Series, measure: str, label: str, population: str, event: np.ndarray) -> dict:
    """A :func:`session_long` row of percentages with Fisher's exact test (``event`` per participant)."""
    counts = {}
    for c in CONDITIONS:
        m = (condition == c).to_numpy()
        counts[c] = (int(event[m].sum()), int(m.sum()))
    res = fisher_2x2(
        counts["text"][0],
        counts["text"][1] - counts["text"][0],
        counts["audio"][0],
        counts["audio"][1] - counts["audio"][0],
    )
    empty = [c for c in CONDITIONS if counts[c][1] == 0]
    return dict(
        measure=measure,
        label=label,
        population=population,
        text=pct_of(*counts["text"]),
        text_sd=math.nan,
        text_count=counts["text"][0],
        n_text=counts["text"][1],
        audio=pct_of(*counts["audio"]),
        audio_sd=math.nan,
        audio_count=counts["audio"][0],
        n_audio=counts["audio"][1],
        test=FISHER_TEST,
        U=math.nan,
        U_text=math.nan,
        U_audio=math.nan,
        r_rb=math.nan,
        odds_ratio=res["odds_ratio"],
        p=res["p"],
        reason=join_reasons(res["reason"], *(f"no recruited participants in {c}" for c in empty)),
    )


def _mw_row(measure: str, label: str, population: str, values: dict[str, np.ndarray]) -> dict:
    """A :func:`session_long` row of M (SD) with the Mann-Whitney U test (``values`` per condition)."""
    ms = {c: mean_sd(values[c]) for c in CONDITIONS}
    res = mann_whitney(values["text"], values["audio"])
    thin = [f"SD needs at least 2 participants in {c}" for c in CONDITIONS if ms[c][2] == 1]
    return dict(
        measure=measure,
        label=label,
        population=population,
        text=ms["text"][0],
        text_sd=ms["text"][1],
        text_count=math.nan,
        n_text=ms["text"][2],
        audio=ms["audio"][0],
        audio_sd=ms["audio"][1],
        audio_count=math.nan,
        n_audio=ms["audio"][2],
        test=MW_TEST,
        U=res["U_text"],
        U_text=res["U_text"],
        U_audio=res["U_audio"],
        r_rb=res["r_rb"],
        odds_ratio=math.nan,
        p=res["p"],
        reason=join_reasons(res["reason"], *thin),
    )


def session_long(participants: pd.DataFrame, trials: pd.DataFrame) -> pd.DataFrame:
    """Table 3 (§4.2) in long numeric form, one row per measure, text and audio side by side.

    Rows and populations:

    * ``completed_pct`` — all **recruited** participants. A non-completer is a participant who
      passed the attention check but did not finish (``passed_attention`` & not ``completed``);
      attention-check failures, whose session ends at the check by design, count as completed.
      That is the paper's denominator: 92.5 % text = 49/53 = (53 - 4 dropouts)/53 and 96.2 %
      audio = 51/53; Fisher's exact on [[49, 4], [51, 2]] gives the paper's p = .678.
      ``text_count`` = completed count.
    * ``session_min`` — **completers** (analysed and completed): a dropout's session is truncated.
      M (SD) of ``session_minutes``; Mann–Whitney U on participants.
    * ``trial_s`` — **analysed** participants with at least one response trial (dropouts kept, as
      in the paper's 46 x 48 comparison with U = 255): M (SD) over participants' mean
      ``decision_time_s`` (the SD is between participants, not between trials); Mann–Whitney U on
      those participant means.
    * ``difficulty`` — analysed participants with a difficulty answer (completers: dropouts never
      reach the end-of-session question). M (SD); Mann–Whitney U.
    * ``failed_attention_pct`` — all **recruited**: 5/53 = 9.4 % text, 7/53 = 13.2 % audio;
      Fisher's exact on [[failed, passed]] per condition (paper p = .761). ``text_count`` = failed.

    ``U`` is U_text (Table 3's convention, see the module docstring); ``r_rb`` = (U_text - U_audio)/
    (n_t n_a). For Fisher rows ``odds_ratio`` is text vs audio odds of the row's event.
    """
    p = participants.copy()
    p["condition"] = p["condition"].astype(str)
    passed = as_bool(p["passed_attention"]).fillna(False).to_numpy()
    completed = as_bool(p["completed"]).fillna(False).to_numpy()
    rows = []

    rows.append(
        _fisher_row(
            p["condition"],
            "completed_pct",
            "Completed (%)",
            "all recruited; non-completer = passed, not completed",
            ~(passed & ~completed),
        )
    )
    comp = p[passed & completed]
    rows.append(
        _mw_row(
            "session_min",
            "Session duration, min",
            "completers (passed and completed)",
            {c: as_float(comp.loc[comp.condition == c, "session_minutes"]).to_numpy() for c in CONDITIONS},
        )
    )
    pm = participant_mean_trial_time(trials, p)
    rows.append(
        _mw_row(
            "trial_s",
            "Trial duration, sec",
            "analysed (passed), participants' mean decision_time_s over response trials",
            {c: pm.loc[pm.condition == c, "mean_trial_s"].to_numpy() for c in CONDITIONS},
        )
    )
    ana = p[passed]
    rows.append(
        _mw_row(
            "difficulty",
            "Difficulty rating",
            "analysed with a difficulty answer",
            {c: as_float(ana.loc[ana.condition == c, "difficulty"]).to_numpy() for c in CONDITIONS},
        )
    )
    rows.append(_fisher_row(p["condition"], "failed_attention_pct", "Failed attention (%)", "all recruited", ~passed))
    return pd.DataFrame(rows, columns=SESSION_LONG_COLUMNS)


_SESSION_DIGITS = {"completed_pct": 1, "session_min": 1, "trial_s": 1, "difficulty": 2, "failed_attention_pct": 1}


def session_table(participants: pd.DataFrame, trials: pd.DataFrame) -> pd.DataFrame:
    """Table 3: session and trial characteristics by condition (§4.2; populations in :func:`session_long`).

    Columns ``row``, ``text``, ``audio`` (M (SD) or %), ``p`` (APA format), ``test`` (Fisher's exact
    or Mann–Whitney U), ``U`` (U_text, Mann–Whitney rows only), ``n_text``, ``n_audio``,
    ``population`` and ``reason``. Trial duration's SD is between participants' mean trial times.
    """
    long = session_long(participants, trials)
    out = []
    for r in long.itertuples(index=False):
        d = _SESSION_DIGITS[r.measure]
        if r.test == FISHER_TEST:
            text, audio = _fmt_num(r.text, d), _fmt_num(r.audio, d)
        else:
            text, audio = _fmt_m_sd(r.text, r.text_sd, d), _fmt_m_sd(r.audio, r.audio_sd, d)
        out.append(
            dict(
                row=r.label,
                text=text,
                audio=audio,
                p=format_p(r.p),
                test="Fisher's exact" if r.test == FISHER_TEST else "Mann-Whitney U",
                U=_fmt_num(r.U, 1),
                n_text=r.n_text,
                n_audio=r.n_audio,
                population=r.population,
                reason=r.reason,
            )
        )
    return pd.DataFrame(
        out, columns=["row", *CONDITIONS, "p", "test", "U", "n_text", "n_audio", "population", "reason"]
    )

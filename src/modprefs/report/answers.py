"""The report's answers page: the study's three questions answered from its own tables.

1. *Are my audio labels reliable?* ICC(2,1) and ICC(2,k) per condition (``icc.csv``) placed in Koo & Li's
   (2016) bands (poor < .50 <= moderate < .75 <= good < .90 <= excellent), with their intervals.
2. *How do they differ from text?* Every audio - text comparison the analysis made (Table 4's ICC and alpha
   differences, Table 2's modality term and interactions, the decision thresholds, cross-modality winner
   agreement, the by-prompt modality slope, justification terms), each with the test used and, where a
   benchmark measured it, that test's false-positive rate.
3. *How many raters do I need?* Raters per stimulus for ICC(2,k) = .75 and .90 (``raters_needed.csv``),
   with the range implied by the ICC's interval, and the planner's recommendation when ``modprefs plan`` ran.

Every number shown is an :class:`Shown` that names its table, row and column, so a test can check it
against the CSV. Functions are pure: they take DataFrames (``None`` where the table does not exist) and
return :class:`Answer` objects; :mod:`modprefs.report.study_report` renders them.

Reference: Koo, T. K., & Li, M. Y. (2016). A guideline of selecting and reporting intraclass correlation
coefficients for reliability research. *J Chiropr Med* 15(2), 155-163.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

from modprefs.report.formatting import format_count, format_number, format_p, is_missing

KOO_LI_BANDS = ((0.5, "poor"), (0.75, "moderate"), (0.9, "good"), (float("inf"), "excellent"))
ALPHA = 0.05
SMALL_N_PROMPTS = 30  # below this many prompts per condition the answers carry a small-n caveat


def koo_li_band(icc: float) -> str:
    """Koo & Li's (2016) label for an ICC: poor (< .50), moderate (< .75), good (< .90), excellent."""
    return next(label for upper, label in KOO_LI_BANDS if icc < upper)


@dataclass(frozen=True)
class Shown:
    """One number on the answers page: its text and where it comes from.

    ``table``: the table's file stem (``icc``, ``table4_reliability`` ...); ``row``: the row's key column and
    value(s); ``column``: the CSV column; ``value``: the CSV value; ``decimals``/``bounded``: how it is printed.
    """

    table: str
    row: tuple[tuple[str, str], ...]
    column: str
    value: float
    decimals: int = 3
    bounded: bool = False
    kind: str = "number"  # number, p, count

    @property
    def text(self) -> str:
        if self.kind == "p":
            return format_p(self.value)
        if self.kind == "count":
            return format_count(self.value)
        return format_number(self.value, self.decimals, self.bounded)


@dataclass
class Statement:
    """A sentence whose numbers are :class:`Shown` values: ``template`` holds ``{0}``, ``{1}`` ... for them."""

    template: str
    numbers: list[Shown] = field(default_factory=list)
    supported: bool | None = None  # for a difference: significant at ALPHA (None: not a test)


@dataclass
class Answer:
    """One question's answer: a headline, its statements, caveats; ``missing`` says why it cannot be answered."""

    key: str
    question: str
    headline: Statement | None = None
    statements: list[Statement] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)
    missing: str | None = None


def _shown(table: str, df: pd.DataFrame, index: int, keys: tuple[str, ...], column: str, **fmt) -> Shown | None:
    """The value at ``df.loc[index, column]`` as a :class:`Shown` (None when missing)."""
    if column not in df.columns or is_missing(df.at[index, column]):
        return None
    row = tuple((k, str(df.at[index, k])) for k in keys)
    return Shown(table, row, column, float(df.at[index, column]), **fmt)


def _with_interval(table: str, df: pd.DataFrame, i: int, keys: tuple[str, ...], col: str, lo: str, hi: str, **fmt):
    """(estimate, lo, hi) Shown values; the bounds None where missing."""
    return tuple(_shown(table, df, i, keys, c, **fmt) for c in (col, lo, hi))


def _estimate_template(est: Shown, lo: Shown | None, hi: Shown | None, start: int) -> tuple[str, list[Shown]]:
    """``{start} [{start+1}, {start+2}]`` with the numbers (the interval left out when missing)."""
    if lo is None or hi is None:
        return f"{{{start}}}", [est]
    return f"{{{start}}} [{{{start + 1}}}, {{{start + 2}}}]", [est, lo, hi]


def conditions_of(icc: pd.DataFrame | None) -> list[str]:
    """The conditions with ratings (an ICC row with ``n_ratings`` > 0), audio first (the paper's order)."""
    if icc is None or icc.empty or "condition" not in icc.columns:
        return []
    rated = icc["n_ratings"].fillna(0).astype(float) > 0 if "n_ratings" in icc.columns else icc["condition"].notna()
    present = [str(c) for c in icc.loc[rated, "condition"]]
    return sorted(present, key=lambda c: (c != "audio", c != "text", c))


def reliability_answer(icc: pd.DataFrame | None, ci_level: float = 0.95) -> Answer:
    """Question 1 from ``icc.csv``: each condition's ICC(2,1) and ICC(2,k) in Koo & Li's bands."""
    answer = Answer("reliability", "Are the labels reliable?")
    conditions = conditions_of(icc)
    if not conditions or icc is None:
        answer.missing = "No ICC could be computed (icc.csv has no condition with ratings)."
        return answer
    headline: list[str] = []
    headline_numbers: list[Shown] = []
    for condition in conditions:
        i = int(icc.index[icc["condition"].astype(str) == condition][0])
        one = _with_interval("icc", icc, i, ("condition",), "icc_2_1", "icc_2_1_lo", "icc_2_1_hi", bounded=True)
        many = _with_interval("icc", icc, i, ("condition",), "icc_2_k", "icc_2_k_lo", "icc_2_k_hi", bounded=True)
        k = _shown("icc", icc, i, ("condition",), "k_effective", kind="count")  # "4", or "8.9" (an average)
        if one[0] is None or many[0] is None:
            answer.caveats.append(f"{condition.capitalize()}: the ICC could not be estimated ({icc.at[i, 'note']}).")
            continue
        t1, n1 = _estimate_template(one[0], one[1], one[2], 0)
        t2, n2 = _estimate_template(many[0], many[1], many[2], len(n1))
        band_1, band_k = koo_li_band(one[0].value), koo_li_band(many[0].value)
        k_text = f"the mean of {{{len(n1) + len(n2)}}} raters per clip" if k is not None else "the mean rating"
        template = (
            f"{condition.capitalize()}: a single rating is {band_1} (ICC(2,1) = {t1}); {k_text} is {band_k} "
            f"(ICC(2,k) = {t2})."
        )
        answer.statements.append(Statement(template, [*n1, *n2, *([k] if k is not None else [])]))
        headline.append(f"{condition} {{{len(headline_numbers)}}} ({band_k})")
        headline_numbers.append(many[0])
        spans = [
            f"{label} {koo_li_band(lo.value)} to {koo_li_band(hi.value)}"
            for label, (_, lo, hi) in (("ICC(2,1)", one), ("ICC(2,k)", many))
            if lo is not None and hi is not None and koo_li_band(lo.value) != koo_li_band(hi.value)
        ]
        if spans:
            answer.caveats.append(
                f"{condition.capitalize()}: the {ci_level:.0%} intervals span more than one band ("
                + ", ".join(spans)
                + "): the data do not settle the band; more prompts and raters narrow them."
            )
        n_clips = icc.at[i, "n_clips"] if "n_clips" in icc.columns else None
        if n_clips is not None and not is_missing(n_clips) and float(n_clips) < 2 * SMALL_N_PROMPTS:
            answer.caveats.append(
                f"{condition.capitalize()}: {format_count(n_clips)} clips -- a small study; its intervals are wide."
            )
    if headline:
        answer.headline = Statement(
            "Reliability of the mean rating, ICC(2,k): " + "; ".join(headline) + ".", headline_numbers
        )
    answer.caveats.append("Bands: Koo & Li (2016): poor < .50, moderate < .75, good < .90, excellent above.")
    return answer


def _row(df: pd.DataFrame | None, column: str, value: str) -> int | None:
    if df is None or df.empty or column not in df.columns:
        return None
    hits = df.index[df[column].astype(str) == value]
    return int(hits[0]) if len(hits) else None


def _difference_statement(
    df: pd.DataFrame,
    table: str,
    i: int,
    keys: tuple[str, ...],
    label: str,
    est_col: str,
    lo: str | None,
    hi: str | None,
    p_col: str,
    test: str,
    decimals: int = 3,
    bounded: bool = False,
) -> Statement | None:
    """'<label>: <est> [lo, hi], p = <p> (<test>)' marked supported when p < ALPHA."""
    est = _shown(table, df, i, keys, est_col, decimals=decimals, bounded=bounded)
    p = _shown(table, df, i, keys, p_col, kind="p")
    if est is None or p is None:
        return None
    lo_s = _shown(table, df, i, keys, lo, decimals=decimals, bounded=bounded) if lo else None
    hi_s = _shown(table, df, i, keys, hi, decimals=decimals, bounded=bounded) if hi else None
    t, nums = _estimate_template(est, lo_s, hi_s, 0)
    p_sign = f"p {{{len(nums)}}}" if p.value < 0.001 else f"p = {{{len(nums)}}}"
    return Statement(f"{label}: {t}, {p_sign} ({test}).", [*nums, p], supported=p.value < ALPHA)


# Table 2's modality terms: the paper's labels (modprefs.stats.tables.lmm_table) and what each means
TABLE2_MODALITY_TERMS = {
    "Modality (text)": "Mean rating, text - audio (Table 2)",
    "Presented first x Modality": "Order effect, text - audio (Table 2)",
    "Modality x Char. length": "Length effect, text - audio (Table 2)",
    "Modality x Trial number": "Drift over trials, text - audio (Table 2)",
}


def difference_answer(
    tables: Mapping[str, pd.DataFrame | None], measured_sizes: Mapping[str, str] | None = None
) -> Answer:
    """Question 2: every audio - text comparison, supported (p < .05) or not, with its test.

    ``tables``: table stem -> DataFrame (None or absent when not written); ``measured_sizes``: test key
    (``icc``, ``alpha``, ``table2``) -> a sentence on that test's measured false-positive rate.
    """
    answer = Answer("difference", "How do audio labels differ from text?")
    conditions = conditions_of(tables.get("icc"))
    if len(conditions) < 2:
        only = conditions[0] if conditions else "none"
        answer.missing = (
            f"These ratings hold one condition ({only}): no audio - text difference can be estimated. "
            "A study with both conditions (study.conditions) answers this question."
        )
        return answer
    sizes = measured_sizes or {}
    _reliability_differences(answer, tables.get("table4_reliability"))
    _table2_differences(answer, tables.get("table2_lmm"))
    _threshold_statement(answer, tables.get("thresholds_recommendations"))
    _agreement_statement(answer, tables.get("cross_modality_binomial"))
    slope = tables.get("random_slope")
    if slope is not None and not slope.empty and "lrt_p" in slope.columns and not is_missing(slope.at[0, "lrt_p"]):
        s = _difference_statement(
            slope,
            "random_slope",
            0,
            ("n_trials",),
            "Prompt-specific modality effect (SD of the by-prompt slope)",
            "slope_sd",
            None,
            None,
            "lrt_p",
            "likelihood-ratio test of the random slope",
            decimals=2,
        )
        if s:
            answer.statements.append(s)
    _justification_statement(answer, tables.get("justifications_counts"))
    if not answer.statements:
        answer.missing = "The analysis wrote no audio - text comparison (every comparison table was skipped)."
        return answer
    tests = [s for s in answer.statements if s.supported is not None]
    n_supported = sum(bool(s.supported) for s in tests)
    answer.headline = Statement(
        f"{n_supported} of {len(tests)} audio - text comparisons are supported at p < .05"
        + (" (each at .05, not corrected for multiplicity)." if len(tests) > 1 else ".")
    )
    for key in ("icc", "alpha", "table2"):
        if sizes.get(key):
            answer.caveats.append(sizes[key])
    return answer


def _reliability_differences(answer: Answer, t4: pd.DataFrame | None) -> None:
    """Table 4's audio - text differences of ICC(2,1), ICC(2,k) and continuous alpha, with their tests."""
    rows = (
        ("ICC(2,1)", "ICC(2,1), audio - text"),
        ("ICC(2,k)", "ICC(2,k), audio - text"),
        ("Krippendorff's alpha (cont.)", "Krippendorff's alpha (continuous), audio - text"),
    )
    for metric, label in rows:
        i = _row(t4, "metric", metric)
        if i is None or t4 is None:
            continue
        named = "test" in t4.columns and not is_missing_text(t4.at[i, "test"])
        test = short_test_name(t4.at[i, "test"]) if named else "test"
        s = _difference_statement(
            t4, "table4_reliability", i, ("metric",), label, "diff", None, None, "p_value", test, bounded=True
        )
        if s:
            answer.statements.append(s)


def _table2_differences(answer: Answer, t2: pd.DataFrame | None) -> None:
    """Table 2's modality term and its interactions (omnibus model), b with CI and p."""
    if t2 is None or t2.empty or not {"term", "model"} <= set(t2.columns):
        return
    omnibus = t2[t2["model"].astype(str).str.startswith("omnibus")]
    for term, label in TABLE2_MODALITY_TERMS.items():
        hits = omnibus.index[omnibus["term"].astype(str) == term]
        if not len(hits):
            continue
        s = _difference_statement(
            t2, "table2_lmm", int(hits[0]), ("model", "term"), label, "b", "ci_lo", "ci_hi", "p",
            "omnibus LMM, Satterthwaite t", decimals=2,
        )  # fmt: skip
        if s:
            answer.statements.append(s)


def short_test_name(test: str) -> str:
    """A test's name short enough for a sentence (Table 4 holds the full one)."""
    text = str(test)
    if "calibrated" in text:
        return "crossed-jackknife t, calibrated in null studies"
    if "studentized" in text:
        return "studentized participant permutation"
    if "permutation" in text:
        return "participant permutation"
    if "jackknife" in text:
        return "crossed-jackknife t"
    return text.split(" (")[0]


def is_missing_text(x: object) -> bool:
    return x is None or (isinstance(x, float) and pd.isna(x)) or str(x).strip() == ""


def _threshold_statement(answer: Answer, recs: pd.DataFrame | None) -> None:
    """The max-agreement binarisation threshold per modality with its bootstrap interval (a description)."""
    if recs is None or recs.empty or not {"condition", "rule", "threshold"} <= set(recs.columns):
        return
    rows = recs[recs["rule"].astype(str) == "max_agreement"]
    parts: list[str] = []
    numbers: list[Shown] = []
    for i in rows.index:
        est = _with_interval(
            "thresholds_recommendations",
            recs,
            int(i),
            ("condition", "rule"),
            "threshold",
            "threshold_lo",
            "threshold_hi",
            decimals=1,
        )
        if est[0] is None:
            continue
        t, nums = _estimate_template(est[0], est[1], est[2], len(numbers))
        parts.append(f"{recs.at[i, 'condition']} {t}")
        numbers += nums
    if len(parts) >= 2:
        answer.statements.append(
            Statement(
                "Decision threshold (rating gap above which a preference is decisive, max agreement): "
                + "; ".join(parts)
                + " (participant-bootstrap intervals; a description, not a test).",
                numbers,
            )
        )
        answer.caveats += threshold_caveats(rows)


def threshold_caveats(rows: pd.DataFrame) -> list[str]:
    """The thresholds' ``caveat`` column (:func:`modprefs.stats.tables.thresholds.grid_caveat`: a threshold the
    scale's step makes degenerate) as sentences, one per distinct caveat naming its conditions."""
    if "caveat" not in rows.columns:
        return []
    by_caveat: dict[str, list[str]] = {}
    for condition, caveat in zip(rows["condition"].astype(str), rows["caveat"]):
        if not is_missing_text(caveat):
            by_caveat.setdefault(str(caveat), []).append(condition)
    return [f"Decision threshold ({', '.join(c)}): {caveat}." for caveat, c in by_caveat.items()]


def _agreement_statement(answer: Answer, binomial: pd.DataFrame | None) -> None:
    if binomial is None or binomial.empty or "agreement" not in binomial.columns:
        return
    if is_missing(binomial.at[0, "agreement"]):
        return
    keys = ("n",)
    share = _shown("cross_modality_binomial", binomial, 0, keys, "agreement", decimals=3, bounded=True)
    agree = _shown("cross_modality_binomial", binomial, 0, keys, "n_agree", kind="count")
    n = _shown("cross_modality_binomial", binomial, 0, keys, "n", kind="count")
    p = _shown("cross_modality_binomial", binomial, 0, keys, "p_two_sided", kind="p")
    if share is None or agree is None or n is None or p is None:
        return
    p_sign = "p {3}" if p.value < 0.001 else "p = {3}"
    answer.statements.append(
        Statement(
            "Same winner in both modalities: {0} of prompts ({1} of {2}), "
            + p_sign
            + " (two-sided binomial test against 50 %; a small p means the modalities agree more than chance).",
            [share, agree, n, p],
        )
    )


def _justification_statement(answer: Answer, counts: pd.DataFrame | None) -> None:
    if counts is None or counts.empty or "n_significant" not in counts.columns:
        return
    sig = _shown("justifications_counts", counts, 0, ("n_justifications",), "n_significant", kind="count")
    tested = _shown("justifications_counts", counts, 0, ("n_justifications",), "n_tested", kind="count")
    if sig is None or tested is None:
        return
    answer.statements.append(
        Statement(
            "Justification wording: {0} of {1} terms differ between modalities (participant-level permutation "
            "test, Westfall-Young step-down maxT, family-wise error rate .05).",
            [sig, tested],
            supported=sig.value > 0,
        )
    )


def raters_answer(
    raters: pd.DataFrame | None, plan: pd.DataFrame | None = None, targets: tuple[float, ...] = (0.75, 0.9)
) -> Answer:
    """Question 3 from ``raters_needed.csv`` (and the planner's ``recommendation.csv`` when given)."""
    answer = Answer("raters", "How many raters are needed?")
    if raters is None or raters.empty or "target_icc_2_k" not in raters.columns:
        answer.missing = "No raters-needed table (raters_needed.csv) was written: no ICC to extrapolate from."
        return answer
    headline: list[str] = []
    headline_numbers: list[Shown] = []
    for condition in sorted(set(raters["condition"].astype(str)), key=lambda c: (c != "audio", c != "text", c)):
        parts: list[str] = []
        numbers: list[Shown] = []
        for target in targets:
            hits = raters.index[
                (raters["condition"].astype(str) == condition) & ((raters["target_icc_2_k"] - target).abs() < 1e-9)
            ]
            if not len(hits):
                continue
            i, keys = int(hits[0]), ("condition", "target_icc_2_k")
            need = _shown("raters_needed", raters, i, keys, "raters_needed", kind="count")
            lo = _shown("raters_needed", raters, i, keys, "raters_needed_optimistic", kind="count")
            hi = _shown("raters_needed", raters, i, keys, "raters_needed_pessimistic", kind="count")
            if need is None:
                continue
            n0 = len(numbers)
            text = f"{{{n0}}} for {format_number(target, 2, bounded=True)}"
            numbers.append(need)
            if lo is not None and hi is not None:
                text += f" ({{{n0 + 1}}}-{{{n0 + 2}}} over the ICC's interval)"
                numbers += [lo, hi]
            parts.append(text)
            if abs(target - 0.75) < 1e-9:
                headline.append(f"{condition} {{{len(headline_numbers)}}}")
                headline_numbers.append(need)
        if parts:
            answer.statements.append(
                Statement(f"{condition.capitalize()}, raters per clip for ICC(2,k): " + "; ".join(parts) + ".", numbers)
            )
    if plan is not None and not plan.empty and "scenario" in plan.columns:
        _plan_statement(answer, plan)
    if headline:
        answer.headline = Statement(
            "Raters per clip for a good mean rating (ICC(2,k) = .75): " + "; ".join(headline) + ".", headline_numbers
        )
    answer.caveats.append(
        "Spearman-Brown from the observed ICC(2,1) with the same raters and prompts' spread; the range uses the "
        "ICC's interval bounds."
    )
    if not answer.statements:
        answer.missing = "The raters-needed table holds no target the report asks for (.75, .90)."
    return answer


def _plan_statement(answer: Answer, plan: pd.DataFrame) -> None:
    """The planner's central recommendation (``modprefs plan`` / ``snakemake plan``)."""
    hits = plan.index[plan["scenario"].astype(str) == "central"]
    i = int(hits[0]) if len(hits) else int(plan.index[0])
    if "met" in plan.columns and not bool(plan.at[i, "met"]):
        note = plan.at[i, "note"] if "note" in plan.columns else ""
        answer.statements.append(
            Statement(f"Planner ({plan.at[i, 'scenario']} priors): no design in its grid meets every target ({note}).")
        )
        return
    keys = ("scenario",)
    found = [_shown("recommendation", plan, i, keys, c, kind="count") for c in ("prompts", "raters", "trials")]
    nums = [n for n in found if n is not None]
    if len(nums) < len(found):
        return
    answer.statements.append(
        Statement(
            f"Planner ({plan.at[i, 'scenario']} priors): {{0}} prompts, {{1}} raters per condition, {{2}} trials "
            "each -- the cheapest simulated design meeting every target (results/plan).",
            nums,
        )
    )

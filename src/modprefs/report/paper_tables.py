"""The paper's Tables 1-6 as a reader expects them, from the machine tables the analyses write.

Each ``table<n>_reader`` takes the analysis CSV(s) as DataFrames and returns a :class:`ReaderTable`: text
cells (estimates with CIs in brackets, p-values by convention, labels instead of column names), row groups
where the paper has them, and the method said once in the caption instead of in every row. The machine
tables stay as they are (CSV, and the report's "details"); nothing here computes a statistic.

Every reader takes the study's facts (:class:`StudyFacts`): the rating scale the statistics used, which the
tables in rating units (2, 5, 6) state in their captions and Tables 5-6 in their column names (the paper's 1-100
values as printed, and restated on the study's scale), and the conditions the study has, so that a condition
without ratings gets no column. A table with nothing to show is marked ``skipped`` with the reason, and the report
says that instead of printing a table of dashes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pandas as pd

from modprefs.report.formatting import (
    MISSING,
    format_count,
    format_estimate,
    format_number,
    format_p,
    is_missing,
)
from modprefs.scale import PAPER_SCALE, RatingScale
from modprefs.stats.tables.scale_units import scale_label
from modprefs.study.terms import CONDITIONS, PAPER_COLUMN_ORDER


@dataclass(frozen=True)
class StudyFacts:
    """What a reader needs to know about the study beyond its table.

    ``scale``: the rating scale the statistics used (rating-unit values are in its units; default the paper's
    1..100); ``conditions``: the conditions with ratings (None: every condition the table has).
    """

    scale: RatingScale = PAPER_SCALE
    conditions: Sequence[str] | None = None

    def has(self, condition: str) -> bool:
        """Whether the study has ratings in ``condition`` (every condition when ``conditions`` is None)."""
        return self.conditions is None or condition in self.conditions


#: the facts of a study on the paper's scale with every condition the tables have
PAPER_STUDY = StudyFacts()


@dataclass
class ReaderTable:
    """A table for reading: ``frame`` holds text cells; ``groups``: (row index, group label) headings.

    ``caption``: what the table shows and how (methods, models) -- once; ``notes``: footnotes; ``skipped``: why
    the table is not shown (it has nothing to show), else None.
    """

    key: str
    title: str
    frame: pd.DataFrame
    caption: str = ""
    notes: list[str] = field(default_factory=list)
    groups: list[tuple[int, str]] = field(default_factory=list)
    skipped: str | None = None


def _text(x: object) -> str:
    return "" if x is None or (isinstance(x, float) and pd.isna(x)) else str(x)


def clean_label(label: str) -> str:
    """Row labels without LaTeX: ``$n$`` -> ``n``, ``$k$`` -> ``k``."""
    return _text(label).replace("$", "")


def scale_caption(scale: RatingScale) -> str:
    """The sentence a table in rating units carries: the scale its values are in."""
    return f"Ratings on the scale {scale_label(scale)}: values in rating points are in its units."


def reason_of(reason: str, conditions: Sequence[str]) -> str:
    """The parts of a table's ``reason`` (``"text: ...; audio: ..."``) about ``conditions`` or no condition."""

    def about(part: str) -> bool:
        head = part.split(":", 1)[0]
        return head in conditions or head not in PAPER_COLUMN_ORDER

    return "; ".join(part for part in reason.split("; ") if part and about(part))


def table1_reader(t1: pd.DataFrame, study: StudyFacts = PAPER_STUDY) -> ReaderTable:
    """Table 1 (demographics by condition): the CSV's cells are already M (SD) / % text; n is a count.

    Only the conditions with ratings get a column; a row without a value in any of them is left out (a note
    says which, with the CSV's reason); with nothing left but n, the table is ``skipped`` with that reason.
    """
    conditions = [c for c in PAPER_COLUMN_ORDER if c in t1.columns] or [
        c for c in t1.columns if c not in ("row", "reason")
    ]
    conditions = [c for c in conditions if study.has(c)]
    labels = [clean_label(r) for r in t1["row"]]
    frame = pd.DataFrame({"": labels})
    for c in conditions:
        frame[c.capitalize()] = [
            format_count(v) if label == "n" else (_text(v) or MISSING) for label, v in zip(labels, t1[c])
        ]
    empty = [i for i in range(len(frame)) if labels[i] != "n" and all(frame.iloc[i, 1:] == MISSING)]
    reasons = t1["reason"] if "reason" in t1.columns else pd.Series([""] * len(t1))
    dropped = [f"{labels[i]} ({reason_of(_text(reasons.iloc[i]), conditions) or 'no values'})" for i in empty]
    frame = frame.drop(index=empty).reset_index(drop=True)
    title = "Table 1. Participant demographics by condition"
    if list(frame[""]) in ([], ["n"]):
        n = ", ".join(f"{c} {frame.at[0, c.capitalize()]}" for c in conditions) if len(frame) else "none"
        why = f"the participants table holds no demographics (analysed participants: {n}): " + "; ".join(dropped)
        return ReaderTable("table1", title, frame, skipped=why)
    notes = [f"Not shown, no value in any condition: {'; '.join(dropped)}."] if dropped else []
    return ReaderTable("table1", title, frame, "Values are M (SD) unless noted; n is analysed participants.", notes)


def table2_reader(t2: pd.DataFrame, study: StudyFacts = PAPER_STUDY) -> ReaderTable:
    """Table 2: the omnibus LMM's fixed effects, then each modality's simple effects; b, 95 % CI, p."""
    rows: list[dict[str, str]] = []
    groups: list[tuple[int, str]] = []
    models = list(dict.fromkeys(t2["model"].astype(str)))
    for model in models:
        part = t2[t2["model"].astype(str) == model]
        label = "Omnibus model (reference: audio)" if model.startswith("omnibus") else model.capitalize()
        groups.append((len(rows), label))
        for r in part.itertuples(index=False):
            rows.append(
                {
                    "Predictor": _text(r.term),
                    "b": format_number(r.b, 2),
                    "95 % CI": format_estimate(None, r.ci_lo, r.ci_hi, 2).removeprefix(MISSING + " "),
                    "p": format_p(r.p),
                }
            )
    first = t2.iloc[0] if len(t2) else None
    caption = (
        "Fixed effects predicting raw ratings (REML; p from t tests with Satterthwaite df). "
        f"b in rating points of the scale {scale_label(study.scale)}."
    )
    if first is not None:
        if "random" in t2.columns and _text(first["random"]):
            caption += f" Omnibus random effects: {_text(first['random'])}."
        if "ci" in t2.columns and _text(first["ci"]):
            caption += f" {_text(first['ci'])}."
    notes = sorted({_text(n) for n in t2.get("note", pd.Series(dtype=str)) if _text(n)})
    return ReaderTable(
        "table2",
        f"Table 2. Fixed effects of the linear mixed-effects model (rating scale {scale_label(study.scale)})",
        pd.DataFrame(rows),
        caption,
        [f"Fit: {n}" for n in notes],
        groups,
    )


def table3_reader(t3: pd.DataFrame, study: StudyFacts = PAPER_STUDY) -> ReaderTable:
    """Table 3 (session characteristics): text, audio (the conditions with ratings), p with the test as a footnote
    letter (no rating units)."""
    letters: dict[str, str] = {}
    rows = []
    for r in t3.to_dict("records"):
        test = _text(r.get("test"))
        mark = ""
        if test:
            mark = letters.setdefault(test, "ᵃᵇᶜᵈᵉᶠᵍʰ"[len(letters)])
        p = format_p(r.get("p")) if not isinstance(r.get("p"), str) else _text(r.get("p"))
        row = {"": clean_label(r["row"])}
        for c in PAPER_COLUMN_ORDER:
            if study.has(c):
                row[c.capitalize()] = _text(r.get(c)) or MISSING
        row["p"] = f"{p}{mark}" if p and p != MISSING else MISSING
        rows.append(row)
    notes = [f"{mark}{test}." for test, mark in letters.items()]
    return ReaderTable(
        "table3",
        "Table 3. Session and trial characteristics by condition",
        pd.DataFrame(rows),
        "Values are M (SD) unless noted.",
        notes,
    )


def table4_reader(t4: pd.DataFrame, study: StudyFacts = PAPER_STUDY) -> ReaderTable:
    """Table 4 (reliability by modality): estimate [CI] per modality and p of audio - text (unitless)."""
    conditions = [c for c in CONDITIONS if c in t4.columns and study.has(c)]
    rows = []
    for r in t4.to_dict("records"):
        descriptive = str(r["metric"]).startswith("Avg.")
        row = {"Metric": clean_label(r["metric"])}
        for c in conditions:
            if descriptive:
                row[c.capitalize()] = format_number(r.get(c), 1)
            else:
                row[c.capitalize()] = format_estimate(r.get(c), r.get(f"{c}_lo"), r.get(f"{c}_hi"), 3, bounded=True)
        if "p_value" in t4.columns:
            row["p"] = format_p(r.get("p_value"))
        rows.append(row)
    methods = []
    for label, prefix in (("ICC", "ICC"), ("Krippendorff's alpha", "Krippendorff")):
        part = t4[t4["metric"].astype(str).str.startswith(prefix)]
        if len(part) and "ci_method" in t4.columns:
            level = part["ci_level"].iloc[0] if "ci_level" in t4.columns else 0.95
            level_text = f"{float(level):.0%}" if not is_missing(level) else "95%"
            methods.append(
                f"{label}: {level_text} CIs by {_text(part['ci_method'].iloc[0])}; p of audio - text by "
                f"{_text(part['test'].iloc[0]) if 'test' in t4.columns else 'a test'}."
            )
    return ReaderTable("table4", "Table 4. Inter-rater reliability by modality", pd.DataFrame(rows), " ".join(methods))


def paper_columns(scale: RatingScale) -> tuple[str, ...]:
    """Tables 5-6's paper columns, named by their scale: on the paper's scale one ("Paper (1-100)"); on another
    the paper's value restated on the study's scale, then as printed."""
    if scale.is_paper:
        return ("Paper (1-100)",)
    return (f"Paper on {scale_label(scale)}", "Paper as printed (1-100)")


def _paper_cell(value: object, p: str, decimals: int) -> str:
    text = format_number(value, decimals)
    return text if text == MISSING or not p else f"{text} (p {p})"


def _section_rows(
    table: pd.DataFrame, estimate: str, decimals: int, scale: RatingScale
) -> tuple[pd.DataFrame, list[tuple[int, str]]]:
    """Tables 5-6 (columns section, term, estimate, p, n, paper_estimate_1_100, paper_estimate_on_study_scale,
    paper_p): one group per section; the paper columns as :func:`paper_columns` names them."""
    rows: list[dict[str, str]] = []
    groups: list[tuple[int, str]] = []
    columns = paper_columns(scale)
    for section in dict.fromkeys(table["section"].astype(str)):
        part = table[table["section"].astype(str) == section]
        groups.append((len(rows), section))
        for r in part.to_dict("records"):
            paper_p = _text(r.get("paper_p"))
            printed = _paper_cell(r["paper_estimate_1_100"], paper_p, decimals)
            row = {
                "": _text(r["term"]),
                estimate: format_number(r.get("estimate"), decimals),
                "p": format_p(r.get("p")),
                "n": format_count(r.get("n")) if not is_missing(r.get("n")) and float(r["n"]) > 0 else MISSING,
            }
            if scale.is_paper:
                row[columns[0]] = printed
            else:
                row[columns[0]] = _paper_cell(r["paper_estimate_on_study_scale"], paper_p, decimals)
                row[columns[1]] = printed
            rows.append(row)
    return pd.DataFrame(rows), groups


def paper_note(scale: RatingScale, table: str) -> str:
    """The note under Table 5 or 6 saying the scale of each paper column and how values were restated."""
    if scale.is_paper:
        return "Paper (1-100): the paper's value as printed; the study is on the same 1-100 scale."
    what = (
        f"errors and differences x {scale.span:g}/99: one point of the paper's 1-100 is {scale.span:g}/99 points here"
        if table == "table5"
        else f"slopes per rating point x 99/{scale.span:g}; the modality shift (an ICC) and ρ unchanged"
    )
    return (
        f"Paper on {scale_label(scale)}: the paper's value restated on this study's scale; {what}. Paper as printed "
        "(1-100): the paper's value on its own 1-100 scale, not comparable with this study's values as it stands."
    )


def table5_reader(t5: pd.DataFrame, study: StudyFacts = PAPER_STUDY) -> ReaderTable:
    """Table 5: AI - human absolute error by modality (LMM) and PRISM vs external annotators (paired t)."""
    frame, groups = _section_rows(t5, "d̄ (this study)", 2, study.scale)
    return ReaderTable(
        "table5",
        f"Table 5. AI-human rating comparisons (rating scale {scale_label(study.scale)})",
        frame,
        "AI-human error: d̄ is the mean absolute error between AI and human clip means (rating points of the scale "
        f"{scale_label(study.scale)}; the AI judges' 1-100 ratings and the PRISM scores mapped onto it); the LMM "
        "row tests the modality difference (clip random intercept, Satterthwaite df). PRISM comparisons: d̄ is "
        "the mean signed difference PRISM - group, paired t over clips.",
        [paper_note(study.scale, "table5")],
        groups=groups,
    )


def table6_reader(t6: pd.DataFrame, study: StudyFacts = PAPER_STUDY) -> ReaderTable:
    """Table 6: AI differentiation predicting per-prompt human ICC (OLS), Spearman checks, robustness."""
    frame, groups = _section_rows(t6, "B / ρ (this study)", 3, study.scale)
    return ReaderTable(
        "table6",
        f"Table 6. AI differentiation and human agreement (rating scale {scale_label(study.scale)})",
        frame,
        "DV: per-prompt and modality ICC(2,1). OLS rows: B in ICC units per rating point of AI gap on the scale "
        f"{scale_label(study.scale)}; Spearman rows: rank correlation ρ within each modality; robustness rows refit "
        "without influential points (Cook's D > 4/n).",
        [paper_note(study.scale, "table6")],
        groups=groups,
    )


#: table stem -> its reader
READERS: dict[str, Callable[[pd.DataFrame, StudyFacts], ReaderTable]] = {
    "table1_demographics": table1_reader,
    "table2_lmm": table2_reader,
    "table3_session": table3_reader,
    "table4_reliability": table4_reader,
    "table5_ai_human": table5_reader,
    "table6_ai_diff_icc": table6_reader,
}

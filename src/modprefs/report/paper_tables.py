"""The paper's Tables 1-6 as a reader expects them, from the machine tables the analyses write.

Each ``table<n>_reader`` takes the analysis CSV(s) as DataFrames and returns a :class:`ReaderTable`: text
cells (estimates with CIs in brackets, p-values by convention, labels instead of column names), row groups
where the paper has them, and the method said once in the caption instead of in every row. The machine
tables stay as they are (CSV, and the report's "details"); nothing here computes a statistic.
"""

from __future__ import annotations

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


@dataclass
class ReaderTable:
    """A table for reading: ``frame`` holds text cells; ``groups``: (row index, group label) headings.

    ``caption``: what the table shows and how (methods, models) -- once; ``notes``: footnotes.
    """

    key: str
    title: str
    frame: pd.DataFrame
    caption: str = ""
    notes: list[str] = field(default_factory=list)
    groups: list[tuple[int, str]] = field(default_factory=list)


def _text(x: object) -> str:
    return "" if x is None or (isinstance(x, float) and pd.isna(x)) else str(x)


def clean_label(label: str) -> str:
    """Row labels without LaTeX: ``$n$`` -> ``n``, ``$k$`` -> ``k``."""
    return _text(label).replace("$", "")


def table1_reader(t1: pd.DataFrame) -> ReaderTable:
    """Table 1 (demographics by condition): the CSV's cells are already M (SD) / % text."""
    conditions = [c for c in ("text", "audio") if c in t1.columns] or [
        c for c in t1.columns if c not in ("row", "reason")
    ]
    frame = pd.DataFrame({"": [clean_label(r) for r in t1["row"]]})
    for c in conditions:
        frame[c.capitalize()] = [_text(v) or MISSING for v in t1[c]]
    return ReaderTable(
        "table1", "Table 1. Participant demographics by condition", frame, "Values are M (SD) unless noted."
    )


def table2_reader(t2: pd.DataFrame) -> ReaderTable:
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
    caption = "Fixed effects predicting raw ratings (REML; p from t tests with Satterthwaite df)."
    if first is not None:
        if "random" in t2.columns and _text(first["random"]):
            caption += f" Omnibus random effects: {_text(first['random'])}."
        if "ci" in t2.columns and _text(first["ci"]):
            caption += f" {_text(first['ci'])}."
    notes = sorted({_text(n) for n in t2.get("note", pd.Series(dtype=str)) if _text(n)})
    return ReaderTable(
        "table2",
        "Table 2. Fixed effects of the linear mixed-effects model",
        pd.DataFrame(rows),
        caption,
        [f"Fit: {n}" for n in notes],
        groups,
    )


def table3_reader(t3: pd.DataFrame) -> ReaderTable:
    """Table 3 (session characteristics): text, audio, p with the test as a footnote letter."""
    letters: dict[str, str] = {}
    rows = []
    for r in t3.to_dict("records"):
        test = _text(r.get("test"))
        mark = ""
        if test:
            mark = letters.setdefault(test, "ᵃᵇᶜᵈᵉᶠᵍʰ"[len(letters)])
        p = format_p(r.get("p")) if not isinstance(r.get("p"), str) else _text(r.get("p"))
        rows.append(
            {
                "": clean_label(r["row"]),
                "Text": _text(r.get("text")) or MISSING,
                "Audio": _text(r.get("audio")) or MISSING,
                "p": f"{p}{mark}" if p and p != MISSING else MISSING,
            }
        )
    notes = [f"{mark}{test}." for test, mark in letters.items()]
    return ReaderTable(
        "table3",
        "Table 3. Session and trial characteristics by condition",
        pd.DataFrame(rows),
        "Values are M (SD) unless noted.",
        notes,
    )


def table4_reader(t4: pd.DataFrame) -> ReaderTable:
    """Table 4 (reliability by modality): estimate [CI] per modality and p of audio - text."""
    conditions = [c for c in ("audio", "text") if c in t4.columns]
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


def _section_rows(table: pd.DataFrame, estimate: str, decimals: int) -> tuple[pd.DataFrame, list[tuple[int, str]]]:
    """Tables 5-6 (columns section, term, estimate, p, n, paper_estimate, paper_p): one group per section."""
    rows: list[dict[str, str]] = []
    groups: list[tuple[int, str]] = []
    for section in dict.fromkeys(table["section"].astype(str)):
        part = table[table["section"].astype(str) == section]
        groups.append((len(rows), section))
        for r in part.to_dict("records"):
            paper = format_number(r.get("paper_estimate"), decimals) if "paper_estimate" in r else MISSING
            paper_p = _text(r.get("paper_p"))
            rows.append(
                {
                    "": _text(r["term"]),
                    estimate: format_number(r.get("estimate"), decimals),
                    "p": format_p(r.get("p")),
                    "n": format_count(r.get("n")) if not is_missing(r.get("n")) and float(r["n"]) > 0 else MISSING,
                    "Paper": paper if paper == MISSING or not paper_p else f"{paper} (p {paper_p})",
                }
            )
    return pd.DataFrame(rows), groups


def table5_reader(t5: pd.DataFrame) -> ReaderTable:
    """Table 5: AI - human absolute error by modality (LMM) and PRISM vs external annotators (paired t)."""
    frame, groups = _section_rows(t5, "d̄", 2)
    return ReaderTable(
        "table5",
        "Table 5. AI-human rating comparisons",
        frame,
        "AI-human error: d̄ is the mean absolute error between AI and human clip means (rating-scale points); the "
        "LMM row tests the modality difference (clip random intercept, Satterthwaite df). PRISM comparisons: d̄ is "
        "the mean signed difference PRISM - group, paired t over clips.",
        groups=groups,
    )


def table6_reader(t6: pd.DataFrame) -> ReaderTable:
    """Table 6: AI differentiation predicting per-prompt human ICC (OLS), Spearman checks, robustness."""
    frame, groups = _section_rows(t6, "B / ρ", 3)
    return ReaderTable(
        "table6",
        "Table 6. AI differentiation and human agreement",
        frame,
        "DV: per-prompt and modality ICC(2,1). OLS rows: B in ICC units per rating point of AI gap; Spearman rows: "
        "rank correlation ρ within each modality; robustness rows refit without influential points (Cook's D > 4/n).",
        groups=groups,
    )


READERS = {
    "table1_demographics": table1_reader,
    "table2_lmm": table2_reader,
    "table3_session": table3_reader,
    "table4_reliability": table4_reader,
    "table5_ai_human": table5_reader,
    "table6_ai_diff_icc": table6_reader,
}

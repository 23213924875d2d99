"""The study report (one renderer for the workflow's ``report`` rule and ``modprefs stats --out``).

Reading order: the three answers with their numbers, intervals and caveats (:mod:`modprefs.report.answers`),
the paper's Tables 1-6 as a reader expects them (:mod:`modprefs.report.paper_tables`), figures with captions
saying what to read from them, then every machine table behind a "details" toggle, the reward models, the
method checks, the notes on how the run was made, its configuration and package versions. The page is one
self-contained HTML file (figures as base64 PNG; no script, no network), fits a laptop and a phone without
sideways scrolling (wide tables scroll inside their own box), and escapes every text it shows.

The header states the rating scale the statistics used (:func:`report_scale`: the config's ``study.scale``, which
``modprefs stats`` fills from ``--scale``, checked against the tables' own ``scale`` column, so a report never names
a scale its numbers are not in). A condition the ratings hold none of (a one-condition study) gets no row or column
anywhere (:func:`rated_conditions`, :func:`without_unrated`), and a paper table with nothing to show is replaced by
the reason (:attr:`modprefs.report.paper_tables.ReaderTable.skipped`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from modprefs.io_tables import read_table
from modprefs.report.answers import (
    Answer,
    difference_answer,
    raters_answer,
    reliability_answer,
    threshold_caveats,
)
from modprefs.report.html import markdown_title, package_versions
from modprefs.report.html_pieces import (
    answer_html,
    esc,
    figure_html,
    machine_table_html,
    reader_table_html,
)
from modprefs.report.paper_tables import PAPER_STUDY, READERS, StudyFacts
from modprefs.report.report_figures import reward_accuracy_figure, thresholds_figure
from modprefs.scale import RatingScale, scale_from_config
from modprefs.stats.tables.catalog import OUTPUTS
from modprefs.stats.tables.scale_units import scale_label, scale_text

REPO = Path(__file__).resolve().parents[3]
CAPTIONS_DIR = REPO / "workflow" / "report"

# captions of the figures the report draws itself (the analyses' figures have workflow/report/<name>.rst)
PLAN_CAPTION = (
    "The planner's simulated designs (modprefs plan): the quantity on the y axis against raters per condition, one "
    "line per design; the dashed line is the target. Read off the fewest raters whose line crosses the target."
)
CURVE_CAPTION = (
    "Training curve: loss and accuracy on training and held-out pairs by step. Held-out accuracy rising with the "
    "training loss falling means the model learns; a widening gap means it overfits."
)
OWN_CAPTIONS = {
    "thresholds": (
        "Decision thresholds: the rating gap above which a preference counts as decisive, per modality and rule "
        "(max agreement with the stated preference; lowest gap reaching 80 % / 90 % precision), with "
        "participant-bootstrap intervals. Non-overlapping intervals suggest the modalities binarise differently."
    ),
    "reward_accuracy": (
        "Reward models: held-out accuracy by pair type (share of pairs where the chosen response scores higher), "
        "Wilson 95 % intervals, n pairs beside each bar; the dashed line is chance (.5). Bars whose interval "
        "crosses it are not distinguishable from guessing. The black tick is the length-only baseline (prefer the "
        "longer response) on the same pairs; these Wilson intervals count pairs, the pair-type table's intervals "
        "resample prompts."
    ),
}

CSS = """
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:75rem;margin:0 auto;
padding:0 1rem 3rem;color:#1b1b1b;background:#fff;overflow-wrap:anywhere}
header{padding:.6rem 0 .2rem}
h1{font-size:1.45rem;margin:.2rem 0}
h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ccc;padding-bottom:.2rem}
h3{font-size:1rem;margin:1.4rem 0 .3rem}
.meta{color:#555;font-size:.85rem;margin:.1rem 0}
nav.toc{font-size:.85rem;margin:.3rem 0}
nav.toc a{margin-right:.8rem;white-space:nowrap}
.banner{background:#fff4e0;border-left:4px solid #b36b00;padding:.3rem .7rem;font-size:.85rem;margin:.4rem 0}
.answers{display:grid;grid-template-columns:repeat(auto-fit,minmax(17rem,1fr));gap:.7rem}
.answer{border:1px solid #bbb;border-radius:6px;padding:.5rem .8rem}
.answer h2{font-size:1.05rem;margin:.1rem 0 .3rem;border:0;padding:0}
.answer .headline{font-weight:600;margin:.2rem 0}
.answer ul{padding-left:1.1rem;margin:.3rem 0}
.answer li{margin:.15rem 0;font-size:.9rem}
.answer .caveats{font-size:.8rem;color:#444}
li.yes{list-style-type:"\\2713  "}
li.no{list-style-type:"\\2013  "}
li.yes::marker{color:#1a6b1a;font-weight:700}
.missing{background:#f4f4f4;border-left:4px solid #777;padding:.3rem .7rem}
.num{font-variant-numeric:tabular-nums;white-space:nowrap}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:.85rem;margin:.3rem 0;font-variant-numeric:tabular-nums}
caption{caption-side:top;text-align:left;font-weight:600;padding:.2rem 0}
th,td{padding:.2rem .5rem;text-align:right;border-bottom:1px solid #e2e2e2;vertical-align:top}
th{border-bottom:2px solid #444;font-weight:600}
td:first-child,th:first-child{text-align:left}
tr.group td{font-style:italic;text-align:left;border-bottom:1px solid #999;padding-top:.5rem}
.tcaption{font-size:.82rem;color:#333;margin:.2rem 0}
.tnotes{font-size:.78rem;color:#444;margin:.1rem 0 .6rem}
figure{margin:1rem 0}
figure img{max-width:100%;height:auto;display:block}
figcaption{font-size:.85rem;color:#333}
details{margin:.4rem 0}
summary{cursor:pointer;font-size:.9rem}
details table{font-size:.75rem}
pre{background:#f6f6f6;padding:.6rem;overflow-x:auto;font-size:.75rem}
a{color:#0645ad}
"""


@dataclass
class ReportInputs:
    """What the report reads. ``tables`` / ``figures``: the statistics CSVs (each with its Markdown twin beside it)
    and PNGs (``results/stats/{tables,figures}`` or ``modprefs stats --out``'s; :func:`folder_inputs`);
    everything else optional (None / empty where the run did not make it)."""

    tables: Sequence[Path]
    figures: Sequence[Path]
    config: Mapping[str, Any]
    ratings: Path | None = None
    judges: Path | None = None
    rater_plan: Path | None = None  # results/judges/rater_plan.csv (its figure beside it)
    reward_tables: Sequence[Path] = ()
    reward_curves: Sequence[Path] = ()
    plan: Path | None = None  # a `modprefs plan` folder (recommendation.csv, figures/)
    notes: Sequence[str] = ()  # how the run was made (scale, intervals, judges, stimuli ...)
    measured_sizes: Mapping[str, str] = field(default_factory=dict)
    method_checks: Sequence[tuple[str, pd.DataFrame]] = ()
    title: str = "modprefs report"


def folder_inputs(stats: Path) -> tuple[list[Path], list[Path]]:
    """The CSV tables under ``stats/tables`` and the PNG figures under ``stats/figures`` (sorted)."""
    return sorted((stats / "tables").glob("*.csv")), sorted((stats / "figures").glob("*.png"))


def stats_tables(paths: Sequence[Path]) -> dict[str, pd.DataFrame]:
    """Each CSV by stem (empty tables kept: they say what was skipped)."""
    return {p.stem: read_table(p, allow_empty=True) for p in paths}


def skipped_reason(table: pd.DataFrame | None) -> str | None:
    """The reason of a table the analysis skipped (columns status, reason; or one ``reason`` in every row)."""
    if table is None:
        return "not written"
    if table.empty:
        return "no rows"
    if {"status", "reason"} <= set(table.columns) and (table["status"].astype(str) == "skipped").all():
        return str(table["reason"].iloc[0])
    return None


def figure_caption(name: str) -> str:
    """The caption of an analysis figure (workflow/report/<name>.rst), or one the report wrote for it."""
    if name in OWN_CAPTIONS:
        return OWN_CAPTIONS[name]
    rst = CAPTIONS_DIR / f"{name}.rst"
    if rst.is_file():
        return " ".join(rst.read_text(encoding="utf-8").split())
    return f"{name.replace('_', ' ')} (no caption written for this figure)."


FIGURE_TITLES = {
    "figure4_icc_by_k": "ICC(2,k) by number of raters",
    "figure2_gap_cdf": "Rating gaps on decisive and tie trials",
    "figure3_agreement": "Cross-modality agreement of winners",
    "figure_ai_human": "AI vs human clip ratings",
    "figure_ai_diff_icc": "AI differentiation and human agreement",
    "rater_plan": "AI-guided rater allocation",
    "thresholds": "Decision thresholds by modality",
    "reward_accuracy": "Reward-model accuracy by pair type",
}


# --- the study: its scale and conditions -----------------------------------------------------------------------
def report_scale(config: Mapping[str, Any], tables: Mapping[str, pd.DataFrame]) -> RatingScale:
    """The rating scale the statistics used: the config's ``study.scale`` (the paper's 1..100 when absent), checked
    against the ``scale`` column the analyses write into their tables in rating units on any other scale.

    Raises:
        ValueError: the tables were computed on another scale than the config states (the message names both), so
            that a report never states a scale its numbers are not in.
    """
    scale = scale_from_config(config)
    used = sorted(
        {str(v) for t in tables.values() if "scale" in t.columns for v in t["scale"].dropna().unique() if str(v)}
    )
    expected = [] if scale.is_paper else [scale_label(scale)]
    if used and used != expected:
        raise ValueError(
            f"the statistics tables were computed on the rating scale {' and '.join(used)} (their scale column), but "
            f"the report's config states study.scale {scale_label(scale)}: render the report with the config the "
            "statistics ran with"
        )
    return scale


def rated_conditions(ratings: Path | None) -> tuple[str, ...] | None:
    """The conditions the ratings hold (ratings.csv's ``condition`` values, sorted; without that column every rating
    is in :data:`modprefs.ratings.ingest.DEFAULT_CONDITION`, as ingest reads it); None without a ratings file (then
    every condition a table has is shown)."""
    from modprefs.ratings.ingest import DEFAULT_CONDITION  # noqa: PLC0415 (ingest loads the ratings sources)

    if ratings is None or not Path(ratings).is_file():
        return None
    table = read_table(ratings, allow_empty=True)
    if "condition" not in table.columns:
        return (DEFAULT_CONDITION,) if len(table) else ()
    return tuple(sorted(set(table["condition"].dropna().astype(str))))


def study_facts(inputs: ReportInputs, tables: Mapping[str, pd.DataFrame]) -> StudyFacts:
    """The scale the statistics used (:func:`report_scale`); the conditions with ratings (:func:`rated_conditions`)."""
    return StudyFacts(report_scale(inputs.config, tables), rated_conditions(inputs.ratings))


def without_unrated(table: pd.DataFrame, facts: StudyFacts) -> tuple[pd.DataFrame, list[str]]:
    """``table`` without the rows of conditions the study has no ratings in (a ``condition`` column's), and those
    conditions (empty when nothing was left out)."""
    if "condition" not in table.columns or facts.conditions is None:
        return table, []
    keep = table["condition"].astype(str).map(facts.has)
    return table[keep], sorted(set(table.loc[~keep, "condition"].astype(str)))


# --- the page ---------------------------------------------------------------------------------------------------
def study_summary(tables: Mapping[str, pd.DataFrame], facts: StudyFacts = PAPER_STUDY) -> str:
    """One line: participants, clips and ratings per condition with ratings (from icc.csv), counts as integers.

    A condition without ratings (``facts.conditions``) is left out; one with ratings none of which could be
    analysed says so with the ICC table's note.
    """
    icc = tables.get("icc")
    if icc is None or icc.empty or "condition" not in icc.columns:
        return "No ratings were analysed."
    parts = []
    for r in without_unrated(icc, facts)[0].to_dict("records"):
        if pd.isna(r.get("n_ratings")) or int(r["n_ratings"]) == 0:
            note = str(r.get("note") or "") if pd.notna(r.get("note")) else ""
            parts.append(f"{r['condition']}: no analysable ratings" + (f" ({note})" if note else ""))
            continue
        bits = [
            f"{int(r[c])} {label}"
            for c, label in (("n_participants", "raters"), ("n_clips", "clips"), ("n_ratings", "ratings"))
            if pd.notna(r.get(c))
        ]
        parts.append(f"{r['condition']}: " + ", ".join(bits))
    if not parts:
        return "No ratings were analysed."
    return "Study: " + "; ".join(parts) + "."


def is_simulated(ratings: Path | None) -> bool:
    if ratings is None or not Path(ratings).is_file():
        return False
    table = read_table(ratings, allow_empty=True)
    return "source" in table.columns and bool((table["source"].astype(str) == "simulated").any())


def plan_recommendation(plan: Path | None) -> pd.DataFrame | None:
    if plan is None or not (plan / "recommendation.csv").is_file():
        return None
    return read_table(plan / "recommendation.csv", allow_empty=True)


def render_study_report(inputs: ReportInputs) -> str:
    """The report's HTML (see the module docstring)."""
    tables = stats_tables(inputs.tables)
    facts = study_facts(inputs, tables)
    simulated = is_simulated(inputs.ratings)
    level = float((inputs.config.get("stats") or {}).get("ci_level", 0.95))
    raters = tables.get("raters_needed")
    answers = [
        reliability_answer(tables.get("icc"), level),
        difference_answer(tables, inputs.measured_sizes),
        raters_answer(None if raters is None else without_unrated(raters, facts)[0], plan_recommendation(inputs.plan)),
    ]
    _add_caveats(answers, tables, simulated, inputs)
    sections: list[tuple[str, str, str]] = [("answers", "Answers", "".join(answer_html(a) for a in answers))]
    sections.append(("tables", "Tables 1-6", _paper_tables(tables, facts)))
    sections.append(("figures", "Figures", _figures(inputs, tables)))
    sections.append(("details", "All tables", _all_tables(tables, {p.stem: p for p in inputs.tables}, facts)))
    reward = _reward(inputs)
    if reward:
        sections.append(("reward", "Reward models", reward))
    sections.append(("methods", "How this run was made", _methods(inputs)))
    toc = "".join(f'<a href="#{key}">{esc(title)}</a>' for key, title, _ in sections)
    head = [
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width,initial-scale=1"><title>{esc(inputs.title)}</title>'
        f"<style>{CSS}</style></head><body><header><h1>{esc(inputs.title)}</h1>",
        f'<p class="meta">{esc(study_summary(tables, facts))} Rating scale (study.scale): '
        f"{esc(scale_text(facts.scale))}. Generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC.</p>",
    ]
    if simulated:
        head.append(
            '<p class="banner">SIMULATED ratings: a rater panel drawn from a model calibrated to the paper, '
            "not human judgments (ratings.source: simulate).</p>"
        )
    head.append(f'<nav class="toc" aria-label="Contents">{toc}</nav></header><main>')
    body = []
    for key, title, content in sections:
        if key == "answers":
            body.append(f'<section id="answers" class="answers" aria-label="Answers">{content}</section>')
        else:
            body.append(f'<section id="{key}"><h2>{esc(title)}</h2>{content}</section>')
    return "\n".join([*head, *body, "</main></body></html>"])


def _add_caveats(answers: list[Answer], tables: Mapping[str, pd.DataFrame], simulated: bool, inputs: ReportInputs):
    if simulated:
        for a in answers:
            a.caveats.insert(0, "These ratings are SIMULATED: the numbers check the pipeline, not a study's raters.")
    judges = (inputs.config.get("judges") or {}) if inputs.judges is not None else {}
    if inputs.judges is not None and str(judges.get("backend", "local")).startswith("local"):
        answers[1].caveats.append(
            "AI ratings (Tables 5-6) come from weak offline judges (a small text model; audio via a Whisper "
            "transcript): a pipeline check, not the paper's GPT-4o judges."
        )


def _paper_tables(tables: Mapping[str, pd.DataFrame], facts: StudyFacts) -> str:
    out = []
    for name, reader in READERS.items():
        table = tables.get(name)
        label = {"table5_ai_human": "Table 5", "table6_ai_diff_icc": "Table 6"}.get(
            name, name.split("_")[0].title().replace("Table", "Table ")
        )
        why = skipped_reason(table)
        if why is None and name in ("table5_ai_human", "table6_ai_diff_icc") and table is not None:
            why = None if table["estimate"].notna().any() else "; ".join(sorted(set(table["note"].astype(str))))
        if why is not None or table is None:
            reason = why or "not written"
            if name.startswith(("table5", "table6")) and reason == "not written":
                reason = "no AI judge ratings were given, so there is no AI-human comparison"
            out.append(f'<h3>{esc(label)}</h3><p class="missing">{esc(label)} is missing: {esc(reason)}.</p>')
            continue
        try:
            laid_out = reader(table, facts)
        except (KeyError, ValueError, TypeError) as exc:  # a table whose columns the reader does not know
            out.append(
                f'<p class="missing">{esc(label)} could not be laid out for reading ({esc(exc)}); its full '
                "table is under All tables.</p>"
            )
            continue
        if laid_out.skipped is not None:
            out.append(f'<h3>{esc(label)}</h3><p class="missing">{esc(label)} is missing: {esc(laid_out.skipped)}.</p>')
        else:
            out.append(reader_table_html(laid_out))
    return "".join(out)


def _figures(inputs: ReportInputs, tables: Mapping[str, pd.DataFrame]) -> str:
    order = [
        "figure4_icc_by_k",
        "thresholds",
        "figure2_gap_cdf",
        "figure3_agreement",
        "figure_ai_human",
        "figure_ai_diff_icc",
        "rater_plan",
    ]
    pngs: dict[str, bytes] = {p.stem: p.read_bytes() for p in inputs.figures}
    recs = tables.get("thresholds_recommendations")
    drawn = thresholds_figure(recs) if recs is not None and skipped_reason(recs) is None else None
    if drawn:
        pngs["thresholds"] = drawn
    if inputs.rater_plan is not None and inputs.rater_plan.with_suffix(".png").is_file():
        pngs["rater_plan"] = inputs.rater_plan.with_suffix(".png").read_bytes()
    out = []
    for name in [*order, *sorted(set(pngs) - set(order))]:
        if name not in pngs:
            continue
        why = figure_skipped(name, tables)
        title = FIGURE_TITLES.get(name, name)
        if why:
            out.append(f'<h3>{esc(title)}</h3><p class="missing">{esc(title)} is missing: {esc(why)}.</p>')
        else:
            caption = figure_caption(name)
            if name == "thresholds" and recs is not None:
                caption = " ".join([caption, *threshold_caveats(recs[recs["rule"].astype(str) == "max_agreement"])])
            out.append(figure_html(name, pngs[name], caption, title))
    if inputs.plan is not None and (inputs.plan / "figures").is_dir():
        for p in sorted((inputs.plan / "figures").glob("*.png")):
            out.append(
                figure_html(
                    f"plan-{p.stem}",
                    p.read_bytes(),
                    PLAN_CAPTION,
                    f"Planner: {p.stem.replace('_', ' ')}",
                )
            )
    if not out:
        return '<p class="missing">No figure was written (every analysis with a figure was skipped).</p>'
    return "".join(out)


def figure_skipped(figure: str, tables: Mapping[str, pd.DataFrame]) -> str | None:
    """The reason an analysis figure is a placeholder: its analysis skipped its first table (else None)."""
    for names, figures in OUTPUTS.values():
        if figure in figures and names:
            return skipped_reason(tables.get(names[0])) if names[0] in tables else None
    return None


def _all_tables(tables: Mapping[str, pd.DataFrame], paths: Mapping[str, Path], facts: StudyFacts) -> str:
    out = [
        '<p class="tcaption">Every table the analysis wrote, with all its columns (CSV files beside this '
        "report's tables/ folder; each has a Markdown twin). Values in rating points are on the scale "
        f"{esc(scale_label(facts.scale))}.</p>"
    ]
    left_out: set[str] = set()
    known = [t for names, _ in OUTPUTS.values() for t in names]
    for name in ["icc", *known, *sorted(set(tables) - set(known) - {"icc"})]:
        if name not in tables:
            continue
        title = markdown_title(paths[name].with_suffix(".md"))
        why = skipped_reason(tables[name])
        if why is not None and name != "icc":
            out.append(f'<p class="tnotes">{esc(title or name)}: not computed ({esc(why)}).</p>')
            continue
        shown, unrated = without_unrated(tables[name], facts)
        left_out.update(unrated)
        out.append(machine_table_html(name, shown, title))
    if left_out:
        out.insert(
            1,
            f'<p class="tnotes">Rows of the condition(s) {esc(", ".join(sorted(left_out)))} are left out: the '
            "ratings hold none in them (the CSV files keep those empty rows).</p>",
        )
    return "".join(out)


def _reward(inputs: ReportInputs) -> str:
    if not inputs.reward_tables and not inputs.reward_curves:
        return ""
    out = []
    by_name = {p.stem: p for p in inputs.reward_tables if p.parent.name == "summary"}
    if "pair_types" in by_name:
        out.append(reward_baseline_note(read_table(by_name["pair_types"], allow_empty=True)))
        png = reward_accuracy_figure(read_table(by_name["pair_types"], allow_empty=True))
        if png:
            out.append(
                figure_html("reward_accuracy", png, figure_caption("reward_accuracy"), FIGURE_TITLES["reward_accuracy"])
            )
    for p in inputs.reward_curves:
        out.append(
            figure_html(
                f"curve-{p.parent.name}",
                p.read_bytes(),
                CURVE_CAPTION,
                f"Reward model {p.parent.name}: training curve",
            )
        )
    for p in inputs.reward_tables:
        where = "summary" if p.parent.name == "summary" else f"{p.parents[1].name}/eval"
        out.append(machine_table_html(f"{where}/{p.stem}", read_table(p, allow_empty=True), reward_title(p)))
    return "".join(out)


def reward_baseline_note(pair_types: pd.DataFrame) -> str:
    """The reward section's plain statement: per run, the pair types whose held-out accuracy does not beat the
    length-only baseline (prefer the longer response), and those that do, from ``summary/pair_types.csv``."""
    if pair_types is None or pair_types.empty or "beats_length" not in pair_types:
        return ""
    items = []
    for run in dict.fromkeys(pair_types["run"].astype(str)):
        if run == "-":
            continue
        part = pair_types[pair_types["run"].astype(str) == run]
        beats = part["beats_length"].astype(str)
        fails, wins = (part[beats == v]["pair_type"].astype(str).tolist() for v in ("no", "yes"))
        items.append(
            f"<li><b>{esc(run)}</b>: does <b>not</b> beat length-only on {esc(', '.join(fails) or 'no pair type')}; "
            f"beats it on {esc(', '.join(wins) or 'no pair type')}.</li>"
        )
    return (
        '<p class="tnotes">Each accuracy is shown beside baselines on the same held-out pairs: length-only (prefer '
        "the longer response), position (always response 0), majority (the position that won most training pairs "
        "of the type) and the PRISM score, and, for human labels, the human agreement ceiling (a single rater vs "
        "the other raters' mean preference). A pair type beats length-only when the 95 % interval of model − "
        "length, resampling prompts, lies above 0; with fewer than 2 held-out prompts it cannot.</p><ul>"
        + "".join(items)
        + "</ul>"
    )


def reward_title(path: Path) -> str:
    """'Reward models: <md title>' for the summary tables; 'Reward model <run>: <table>' for one run's."""
    title = markdown_title(path.with_suffix(".md"))
    if path.parent.name == "summary":
        return f"Reward models: {title or path.stem.replace('_', ' ')}"
    return f"Reward model {path.parents[1].name}: {path.stem.replace('_', ' ')}"


def _methods(inputs: ReportInputs) -> str:
    out = ["<ul>" + "".join(f"<li>{esc(n)}</li>" for n in inputs.notes) + "</ul>"] if inputs.notes else []
    for title, table in inputs.method_checks:
        out.append(machine_table_html("method check", table, title))
    config = dict(inputs.config)
    out.append(
        "<details><summary>Configuration</summary><pre>"
        + esc(yaml.safe_dump(json.loads(json.dumps(config, default=str)), sort_keys=False))
        + "</pre></details>"
    )
    versions = pd.DataFrame(sorted(package_versions().items()), columns=["package", "version"])
    out.append(machine_table_html("software versions", versions, "Software versions"))
    return "".join(out)

"""The workflow's report.html: the answers, Tables 1-6, figures, every table, reward models and method checks.

:func:`workflow_report` takes the file paths the ``report`` rule gives it, gathers the notes on how the run was
made and the measured sizes of its tests, and renders with :func:`modprefs.report.study_report.render_study_report`
(the renderer ``modprefs stats`` uses too); the rule's script only reads its inputs and writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from modprefs.io_tables import read_table
from modprefs.report.html import (
    coverage_note,
    coverage_table,
    judges_note,
    table2_note,
    table2_null_table,
)
from modprefs.report.measured import alpha_test_size, icc_test_size, table2_size
from modprefs.report.study_report import ReportInputs, is_simulated, render_study_report
from modprefs.scale import scale_from_config

SIMULATED_NOTE = (
    "The ratings in this report are SIMULATED (ratings.source: simulate): a rater panel drawn from a "
    "crossed random-effects model calibrated to the paper, not human judgments. Point "
    "ratings.source at collected ratings to analyse a real study."
)


def method_checks(coverage: Path | None, table2_null: Path | None) -> list:
    """The benchmark tables behind the notes on the ICC intervals and Table 2 (where they were run)."""
    items = []
    table = coverage_table(coverage)
    if table is not None:
        items.append(
            (
                "ICC interval coverage: nominal 95 % intervals by generating model, design size and method "
                "(benchmarks/validity/icc_coverage.py)",
                table,
            )
        )
    table = table2_null_table(table2_null)
    if table is not None:
        items.append(
            (
                "Table 2 false-positive rates: rejection at alpha = .05 of the modality interactions in null "
                "simulations, by generating model and random-effects structure (benchmarks/validity/table2_null.py)",
                table,
            )
        )
    return items


def stimuli_note(config: Mapping[str, Any], study: Sequence[tuple[str, Any]]) -> str | None:
    """Where the stimuli came from, when not from PRISM: the lab's pairs table, its own audio, and ASR transcripts
    as the text condition (read from the tables' ``transcript`` column, which every table of such a study has)."""
    data, tts = config.get("data") or {}, config.get("tts") or {}
    if data.get("format", "prism") != "pairs":
        return None
    audio = (
        "the lab's own audio (tts.backend given)"
        if tts.get("backend") == "given"
        else f"synthesised by {tts.get('backend')} ({tts.get('voice')})"
    )
    target = (config.get("audio") or {}).get("target_lufs", -23)
    level = f"loudness-normalised to {target:g} LUFS (ITU-R BS.1770)" if target is not None else "at the given level"
    text = f"Stimuli: the pairs table {data.get('source')}; audio {audio}, {level}."
    asr = next((str(t["transcript"].iloc[0]) for _, t in study if "transcript" in t.columns and len(t)), None)
    return f"{text} Text condition: {asr}." if asr else text


def workflow_report(
    tables: Sequence[Path],
    figures: Sequence[Path],
    ratings: Path,
    config: Mapping[str, Any],
    icc_ci_method: str,
    table2_random: str,
    judges: Path | None = None,
    coverage: Path | None = None,
    table2_null: Path | None = None,
    reward_tables: Sequence[Path] | None = None,
    reward_curves: Sequence[Path] | None = None,
    rater_plan: Path | None = None,
    icc_null: Path | None = None,
    table2_null_slopes: Path | None = None,
    plan: Path | None = None,
    alpha_null: Path | None = None,
) -> tuple[str, int]:
    """The report's HTML (:func:`modprefs.report.study_report.render_study_report`) and its number of study tables.

    ``tables`` / ``figures``: the statistics CSVs and PNGs (results/stats/tables, figures); ``coverage`` /
    ``table2_null`` / ``table2_null_slopes`` / ``icc_null`` / ``alpha_null``: the benchmark results behind the
    notes and the measured sizes of the tests (None where they were not run); ``judges``:
    results/judges/ratings.csv (None without judges); ``rater_plan``: results/judges/rater_plan.csv (its PNG
    beside it); ``reward_tables`` / ``reward_curves``: the reward models' tables and training curves; ``plan``: a
    ``modprefs plan`` folder.
    """
    notes = run_notes(config, ratings, icc_ci_method, table2_random, coverage, table2_null, judges, tables)
    sizes = {
        "icc": icc_test_size(str((config.get("stats") or {}).get("icc_test", "calibrated")), icc_null),
        "alpha": alpha_test_size(str((config.get("stats") or {}).get("icc_test", "calibrated")), alpha_null),
        "table2": table2_size(table2_random, [p for p in (table2_null, table2_null_slopes) if p is not None]),
    }
    inputs = ReportInputs(
        tables=list(tables),
        figures=list(figures),
        config=config,
        ratings=ratings,
        judges=judges,
        rater_plan=rater_plan,
        reward_tables=list(reward_tables or ()),
        reward_curves=list(reward_curves or ()),
        plan=plan,
        notes=notes,
        measured_sizes={k: v for k, v in sizes.items() if v},
        method_checks=method_checks(coverage, table2_null),
    )
    return render_study_report(inputs), len(tables)


def run_notes(
    config: Mapping[str, Any],
    ratings: Path,
    icc_ci_method: str,
    table2_random: str,
    coverage: Path | None,
    table2_null: Path | None,
    judges: Path | None,
    tables: Sequence[Path],
) -> list[str]:
    """How the run was made: simulated ratings, the stimuli, the scale, the interval methods, the judges."""
    notes = [SIMULATED_NOTE] if is_simulated(ratings) else []
    notes.append(f"Rating scale (study.scale): {scale_from_config(config).describe()}.")
    notes.append(coverage_note(icc_ci_method, coverage))
    notes.append(table2_note(table2_random, table2_null))
    if judges is not None:
        note = judges_note(read_table(judges, allow_empty=True)[["modality", "kind", "backend", "model"]])
        if note:
            notes.append(note)
    study = [(p.stem, read_table(p, allow_empty=True)) for p in tables]
    source = stimuli_note(config, study)
    if source:
        notes.insert(1, source)
    return notes

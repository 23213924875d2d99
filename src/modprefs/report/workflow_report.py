"""The workflow's report.html: every table (titled by its Markdown twin), figure, reward model and method check.

:func:`workflow_report` takes the file paths the ``report`` rule gives it and returns the HTML
(:func:`modprefs.report.html.build_report`); the rule's script only reads its inputs and writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from modprefs.io_tables import read_table
from modprefs.report.html import (
    build_report,
    coverage_note,
    coverage_table,
    judges_note,
    markdown_title,
    table2_note,
    table2_null_table,
)
from modprefs.scale import scale_from_config

SIMULATED_NOTE = (
    "The ratings in this report are SIMULATED (ratings.source: simulate): a rater panel drawn from a "
    "crossed random-effects model calibrated to the paper, not human judgments. Point "
    "ratings.source at collected ratings to analyse a real study."
)


def reward_title(path: Path) -> str:
    """'Reward models: <md title>' for the summary tables; 'Reward model <run>: <table>' for one run's."""
    title = markdown_title(path.with_suffix(".md"))
    if path.parent.name == "summary":
        return f"Reward models: {title or path.stem.replace('_', ' ')}"
    return f"Reward model {path.parents[1].name}: {path.stem.replace('_', ' ')}"


def method_checks(coverage: Path | None, table2_null: Path | None) -> list:
    """The benchmark tables behind the notes on the ICC intervals and Table 2 (where they were run)."""
    items = []
    table = coverage_table(coverage)
    if table is not None:
        items.append(
            (
                "ICC interval coverage: nominal 95 % intervals by generating model, design size and method "
                "(benchmarks/icc_coverage.py)",
                table,
            )
        )
    table = table2_null_table(table2_null)
    if table is not None:
        items.append(
            (
                "Table 2 false-positive rates: rejection at alpha = .05 of the modality interactions in null "
                "simulations, by generating model and random-effects structure (benchmarks/table2_null.py)",
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
) -> tuple[str, int]:
    """The report's HTML and its number of study tables.

    ``coverage`` / ``table2_null``: the benchmark results behind the notes on the ICC intervals and
    Table 2 (None where they were not run); ``judges``: results/judges/ratings.csv (None without
    judges); ``reward_tables`` / ``reward_curves``: the reward models' tables and training curves.
    """
    notes = [SIMULATED_NOTE] if (read_table(ratings)["source"] == "simulated").any() else []
    notes.append(f"Rating scale (study.scale): {scale_from_config(config).describe()}.")
    notes.append(coverage_note(icc_ci_method, coverage))
    notes.append(table2_note(table2_random, table2_null))
    if judges is not None:
        note = judges_note(read_table(judges, allow_empty=True)[["modality", "kind", "backend", "model"]])
        if note:
            notes.append(note)
    study = [(markdown_title(p.with_suffix(".md")) or p.stem, read_table(p, allow_empty=True)) for p in tables]
    source = stimuli_note(config, study)
    if source:
        notes.insert(1, source)
    sections: list = [("Tables", study), ("Figures", [(p.stem.replace("_", " "), p) for p in figures])]
    if reward_tables is not None:
        reward = [(reward_title(p), read_table(p, allow_empty=True)) for p in reward_tables]
        curves = [(f"Reward model {p.parent.name}: training curve", p) for p in reward_curves or []]
        sections.append(("Reward models", reward + curves))
    checks = method_checks(coverage, table2_null)
    if checks:
        sections.append(("Method checks", checks))
    return build_report(sections, dict(config), notes), len(study)

"""Snakemake adapter: every table (CSV, titled by its Markdown twin) and figure -> report.html."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from modprefs.io import write_text  # noqa: E402
from modprefs.io_tables import read_table  # noqa: E402
from modprefs.report.html import (  # noqa: E402
    build_report,
    coverage_note,
    coverage_table,
    judges_note,
    markdown_title,
    table2_note,
    table2_null_table,
)
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402

SIMULATED_NOTE = ("The ratings in this report are SIMULATED (ratings.source: simulate): a rater panel drawn from a "
                  "crossed random-effects model calibrated to the paper, not human judgments. Point "
                  "ratings.source at collected ratings to analyse a real study.")


def reward_title(path: Path) -> str:
    """'Reward models: <md title>' for the summary tables; 'Reward model <run>: <table>' for one run's."""
    title = markdown_title(path.with_suffix(".md"))
    if path.parent.name == "summary":
        return f"Reward models: {title or path.stem.replace('_', ' ')}"
    return f"Reward model {path.parents[1].name}: {path.stem.replace('_', ' ')}"


def method_checks(coverage: Path, table2_null: Path) -> list:
    """The benchmark tables behind the notes on the ICC intervals and Table 2 (where they were run)."""
    items = []
    table = coverage_table(coverage)
    if table is not None:
        items.append(("ICC interval coverage: nominal 95 % intervals by generating model, design size and method "
                      "(benchmarks/icc_coverage.py)", table))
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


def main(sm) -> None:  # noqa: ANN001
    setup_logging(sm, fmt="%(asctime)s %(name)s %(message)s")
    tables = [Path(p) for p in sm.input.tables]
    figures = [Path(p) for p in sm.input.figures]
    ratings = read_table(sm.input.ratings)
    notes = [SIMULATED_NOTE] if (ratings["source"] == "simulated").any() else []
    notes.append(coverage_note(sm.params.icc_ci_method, Path(sm.params.coverage)))
    notes.append(table2_note(sm.params.table2_random, Path(sm.params.table2_null)))
    if "judges" in sm.input.keys():
        note = judges_note(read_table(sm.input.judges, allow_empty=True)[["modality", "kind", "backend", "model"]])
        if note:
            notes.append(note)
    study = [(markdown_title(p.with_suffix(".md")) or p.stem, read_table(p, allow_empty=True)) for p in tables]
    sections = [("Tables", study), ("Figures", [(p.stem.replace("_", " "), p) for p in figures])]
    if "reward_tables" in sm.input.keys():
        reward = [(reward_title(Path(p)), read_table(p, allow_empty=True)) for p in sm.input.reward_tables]
        curves = [(f"Reward model {Path(p).parent.name}: training curve", Path(p)) for p in sm.input.reward_curves]
        sections.append(("Reward models", reward + curves))
    checks = method_checks(Path(sm.params.coverage), Path(sm.params.table2_null))
    if checks:
        sections.append(("Method checks", checks))
    write_text(build_report(sections, dict(sm.config), notes), sm.output[0])
    logging.info("report with %d tables and %d figures", len(study), len(figures))


if __name__ == "__main__" and "snakemake" in globals():
    run_adapter(main, snakemake)  # noqa: F821

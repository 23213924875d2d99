"""Snakemake adapter: every table (CSV, titled by its Markdown twin) and figure -> report.html."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from modprefs.io import write_text  # noqa: E402
from modprefs.io_tables import read_table  # noqa: E402
from modprefs.report.html import build_report, coverage_note, judges_note, markdown_title  # noqa: E402
from modprefs.workflow_log import setup_logging  # noqa: E402

sm = snakemake  # noqa: F821
setup_logging(sm, fmt="%(asctime)s %(name)s %(message)s")
tables = [Path(p) for p in sm.input.tables]
figures = [Path(p) for p in sm.input.figures]
ratings = read_table(sm.input.ratings)
notes = []
if (ratings["source"] == "simulated").any():
    notes.append("The ratings in this report are SIMULATED (ratings.source: simulate): a rater panel drawn from a "
                 "crossed random-effects model calibrated to the paper, not human judgments. Point "
                 "ratings.source at collected ratings to analyse a real study.")
notes.append(coverage_note(sm.params.icc_ci_method, Path(sm.params.coverage)))
if "judges" in sm.input.keys():
    note = judges_note(read_table(sm.input.judges, allow_empty=True)[["modality", "kind", "backend", "model"]])
    if note:
        notes.append(note)
study = [(markdown_title(p.with_suffix(".md")) or p.stem, read_table(p, allow_empty=True)) for p in tables]
sections = [("Tables", study), ("Figures", [(p.stem.replace("_", " "), p) for p in figures])]


def reward_title(path: Path) -> str:
    """'Reward models: <md title>' for the summary tables; 'Reward model <run>: <table>' for one run's."""
    title = markdown_title(path.with_suffix(".md"))
    if path.parent.name == "summary":
        return f"Reward models: {title or path.stem.replace('_', ' ')}"
    return f"Reward model {path.parents[1].name}: {path.stem.replace('_', ' ')}"


if "reward_tables" in sm.input.keys():
    reward = [(reward_title(Path(p)), read_table(p, allow_empty=True)) for p in sm.input.reward_tables]
    curves = [(f"Reward model {Path(p).parent.name}: training curve", Path(p)) for p in sm.input.reward_curves]
    sections.append(("Reward models", reward + curves))
write_text(build_report(sections, dict(sm.config), notes), sm.output[0])
logging.info("report with %d tables and %d figures", len(study), len(figures))

"""Snakemake adapter for the statistics rules: read the named inputs, run one analysis of
``modprefs.stats.analyses.ANALYSES`` (``params.analysis``), write each table as CSV + Markdown and
each figure as PNG to the rule's outputs of the same name (atomically)."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_csv, write_markdown_table  # noqa: E402
from modprefs.stats.analyses import ANALYSES  # noqa: E402
from modprefs.workflow_log import setup_logging  # noqa: E402

sm = snakemake  # noqa: F821
setup_logging(sm, fmt="%(asctime)s %(name)s %(message)s")
ids = {c: str for c in ("participant_id", "prompt_id", "clip_id", "conversation_id", "preference")}
tables = {name: pd.read_csv(path, dtype=ids) for name, path in sm.input.items() if str(path).endswith(".csv")}
params = dict(sm.params.items())
result = ANALYSES[params.pop("analysis")](tables, params)
outputs = dict(sm.output.items())
for name, table in result.tables.items():
    write_csv(table, outputs[f"{name}_csv"])
    write_markdown_table(table, outputs[f"{name}_md"], title=result.titles.get(name), floatfmt=".4g")
    logging.info("%s: %d rows", name, len(table))
for name, draw in result.figures.items():
    draw(outputs[name])
    logging.info("figure %s", outputs[name])

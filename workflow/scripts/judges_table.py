"""Snakemake adapter (rule judges_table): the modalities' tables -> results/judges/ratings.csv."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_csv  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:  # noqa: ANN001
    setup_logging(smk)
    tables = [pd.read_csv(p, dtype={"prompt_id": str, "clip_id": str}, keep_default_na=False) for p in smk.input]
    table = pd.concat(tables, ignore_index=True)
    write_csv(table, smk.output[0])
    logging.info("%d judge ratings (%d ok) -> %s", len(table), int((table["status"] == "ok").sum()), smk.output[0])


run_adapter(main, snakemake)  # noqa: F821

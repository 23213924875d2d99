"""Snakemake adapter: stimuli.csv -> study/assignments.csv."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_csv  # noqa: E402
from modprefs.study.design import make_assignments  # noqa: E402
from modprefs.workflow_log import setup_logging  # noqa: E402

setup_logging(snakemake)  # noqa: F821
stimuli = pd.read_csv(snakemake.input.stimuli, dtype={"prompt_id": str, "clip_id": str})  # noqa: F821
study = snakemake.params.study  # noqa: F821
prompt_ids = list(dict.fromkeys(stimuli["prompt_id"]))
table = make_assignments(prompt_ids, study["raters_per_condition"], study["trials_per_participant"],
                         snakemake.params.seed)  # noqa: F821
write_csv(table, snakemake.output[0])  # noqa: F821
logging.info("%d participants, %d rows", table["participant_id"].nunique(), len(table))

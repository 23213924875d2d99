"""Snakemake adapter: stimuli.csv (+ judges/ratings.csv under study.allocation: judges) -> study/assignments.csv."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_csv  # noqa: E402
from modprefs.io_tables import read_table  # noqa: E402
from modprefs.study.allocation import judge_weights  # noqa: E402
from modprefs.study.design import make_assignments  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:  # noqa: ANN001
    setup_logging(smk)
    stimuli = pd.read_csv(smk.input.stimuli, dtype={"prompt_id": str, "clip_id": str})
    study, allocation = smk.params.study, smk.params.allocation
    weights = None
    if study.get("allocation", "balanced") == "judges":
        judges = read_table(smk.input.judges[0], allow_empty=True)
        weights = judge_weights(judges, stimuli, allocation, smk.params.judge_by_modality)
    table = make_assignments(
        list(dict.fromkeys(stimuli["prompt_id"])), study["raters_per_condition"], study["trials_per_participant"],
        smk.params.seed, weights, int(allocation.get("min_raters", 1)),
    )  # fmt: skip
    write_csv(table, smk.output[0])
    logging.info("%d participants, %d rows", table["participant_id"].nunique(), len(table))


run_adapter(main, snakemake)  # noqa: F821

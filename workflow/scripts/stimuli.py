"""Snakemake adapter: prompts + conversations + audio manifest -> study/stimuli.csv."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_csv  # noqa: E402
from modprefs.study.stimuli import build_stimuli  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:  # noqa: ANN001
    setup_logging(smk)
    stimuli = build_stimuli(
        pd.read_csv(smk.input.prompts, dtype={"prompt_id": str, "conversation_id": str}),
        pd.read_parquet(smk.input.conversations),
        pd.read_csv(smk.input.manifest, dtype={"clip_id": str, "prompt_id": str}),
    )
    write_csv(stimuli, smk.output[0])
    logging.info("%d stimuli (%d prompts)", len(stimuli), stimuli["prompt_id"].nunique())


run_adapter(main, snakemake)  # noqa: F821

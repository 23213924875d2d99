"""Snakemake adapter: prompts + conversations + audio manifest -> study/stimuli.csv."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_csv  # noqa: E402
from modprefs.study.stimuli import build_stimuli  # noqa: E402
from modprefs.workflow_log import setup_logging  # noqa: E402

setup_logging(snakemake)  # noqa: F821
stimuli = build_stimuli(pd.read_csv(snakemake.input.prompts, dtype={"prompt_id": str, "conversation_id": str}),  # noqa: F821
                        pd.read_parquet(snakemake.input.conversations),  # noqa: F821
                        pd.read_csv(snakemake.input.manifest, dtype={"clip_id": str, "prompt_id": str}))  # noqa: F821
write_csv(stimuli, snakemake.output[0])  # noqa: F821
logging.info("%d stimuli (%d prompts)", len(stimuli), stimuli["prompt_id"].nunique())

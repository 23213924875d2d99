"""Snakemake adapter (rule judges_table): the modalities' tables -> results/judges/ratings.csv, the final study's
prompts and the attention check only (the text judge of a pool used whole rates every item of the first draw)."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_csv  # noqa: E402
from modprefs.speech.clips import read_attention_check  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:  # noqa: ANN001
    setup_logging(smk)
    read = dict(dtype={"prompt_id": str, "clip_id": str}, keep_default_na=False)
    table = pd.concat([pd.read_csv(p, **read) for p in smk.input.tables], ignore_index=True)
    study = {
        *pd.read_csv(smk.input.prompts, **read)["prompt_id"],
        str(read_attention_check(smk.input.attention_check).get("prompt_id", "attn")),
    }
    extra = ~table["prompt_id"].isin(study)
    if extra.any():
        logging.info("left out %d ratings of prompts not in the final study", int(extra.sum()))
    table = table[~extra]
    write_csv(table, smk.output[0])
    logging.info("%d judge ratings (%d ok) -> %s", len(table), int((table["status"] == "ok").sum()), smk.output[0])


run_adapter(main, snakemake)  # noqa: F821

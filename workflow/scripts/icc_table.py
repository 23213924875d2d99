"""Snakemake adapter: ratings + participants + stimuli -> stats/tables/icc.csv and icc.md."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_csv, write_markdown_table  # noqa: E402
from modprefs.stats.icc_ci import icc_with_ci  # noqa: E402
from modprefs.workflow_log import setup_logging  # noqa: E402

setup_logging(snakemake, fmt="%(asctime)s %(name)s %(message)s")  # noqa: F821
ids = {"participant_id": str, "prompt_id": str, "clip_id": str}
ratings = pd.read_csv(snakemake.input.ratings, dtype=ids)  # noqa: F821
participants = pd.read_csv(snakemake.input.participants, dtype={"participant_id": str})  # noqa: F821
stimuli = pd.read_csv(snakemake.input.stimuli, dtype={"prompt_id": str, "clip_id": str})  # noqa: F821
params = snakemake.params  # noqa: F821
logging.info("ICC: %d ratings, %d participants, %d stimuli, n_boot=%s, ci_level=%s, seed=%s", len(ratings),
             len(participants), len(stimuli), params.n_boot, params.ci_level, params.seed)
table = icc_with_ci(ratings, participants, method=params.ci_method, n_boot=int(params.n_boot),
                    seed=int(params.seed), ci_level=float(params.ci_level), stimuli=stimuli)
write_csv(table, snakemake.output.csv)  # noqa: F821
title = (f"ICC per condition ({float(params.ci_level):.0%} CI, {int(params.n_boot)} {params.ci_method} bootstrap "
         "resamples)")
shown = ["condition", "n_ratings", "n_clips", "n_participants", "k_mean_raters", "var_clip", "var_participant",
         "var_resid", "icc_2_1", "icc_2_1_lo", "icc_2_1_hi", "icc_2_k", "icc_2_k_lo", "icc_2_k_hi", "note"]
write_markdown_table(table[shown], snakemake.output.md, title=title, floatfmt=".3f")  # noqa: F821
logging.info("wrote %s\n%s", snakemake.output.csv, table.to_string())  # noqa: F821

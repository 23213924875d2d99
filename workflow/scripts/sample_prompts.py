"""Snakemake adapter: conversations.parquet -> sampling/prompts.csv (the first draw) and its screening removals."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_csv  # noqa: E402
from modprefs.sampling.draw import draw_prompts  # noqa: E402
from modprefs.sampling.screening import screen_from_config  # noqa: E402
from modprefs.workflow_log import setup_logging  # noqa: E402

setup_logging(snakemake)  # noqa: F821
sampling = snakemake.params.sampling  # noqa: F821
interactions = pd.read_parquet(snakemake.input.conversations)  # noqa: F821
screen = screen_from_config(sampling.get("screening", {}), snakemake.input.harmful_terms)  # noqa: F821
prompts, removals, info = draw_prompts(interactions, sampling["n_prompts"], sampling["long_fraction"],
                                       sampling["long_percentile"], snakemake.params.seed, screen)  # noqa: F821
logging.info("strata: %s", info)
for rem in removals.itertuples():
    logging.info("removed %s (%s): %s -> replaced by %s", rem.conversation_id, rem.reason, rem.detail, rem.replaced_by)
write_csv(removals, snakemake.output.removals)  # noqa: F821
write_csv(prompts, snakemake.output.prompts)  # noqa: F821

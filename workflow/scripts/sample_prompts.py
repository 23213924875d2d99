"""Snakemake adapter: conversations.parquet -> sampling/prompts.csv and sampling/removals.csv."""

import logging
import sys
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_csv  # noqa: E402
from modprefs.sampling.draw import draw_prompts  # noqa: E402
from modprefs.sampling.screening import WordListModerator, screen_interaction  # noqa: E402
from modprefs.workflow_log import setup_logging  # noqa: E402

setup_logging(snakemake)  # noqa: F821
sampling = snakemake.params.sampling  # noqa: F821
screening = sampling.get("screening", {})
interactions = pd.read_parquet(snakemake.input.conversations)  # noqa: F821
screen = partial(screen_interaction, moderator=WordListModerator.from_file(snakemake.input.harmful_terms),  # noqa: F821
                 language=screening.get("language", "en"),
                 min_language_confidence=screening.get("min_language_confidence", 0.5))
prompts, removals, info = draw_prompts(interactions, sampling["n_prompts"], sampling["long_fraction"],
                                       sampling["long_percentile"], snakemake.params.seed, screen)  # noqa: F821
logging.info("strata: %s", info)
for rem in removals.itertuples():
    logging.info("removed %s (%s): %s -> replaced by %s", rem.conversation_id, rem.reason, rem.detail, rem.replaced_by)
write_csv(removals, snakemake.output.removals)  # noqa: F821
write_csv(prompts, snakemake.output.prompts)  # noqa: F821

"""Snakemake adapter: conversations.parquet -> sampling/prompts.csv (the first draw) and its screening removals, and
sampling/language_ids.csv: the languages of the candidates review rounds would draw next (lingua is loaded here
anyway; modprefs.sampling.screening)."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_csv  # noqa: E402
from modprefs.sampling.audio_review import upcoming_language_ids  # noqa: E402
from modprefs.sampling.draw import sample_study_prompts  # noqa: E402
from modprefs.sampling.screening import screen_from_config  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:  # noqa: ANN001
    setup_logging(smk)
    sampling = smk.params.sampling
    interactions = pd.read_parquet(smk.input.conversations)
    screen = screen_from_config(sampling.get("screening", {}), smk.input.harmful_terms)
    prompts, removals, info = sample_study_prompts(interactions, sampling, smk.params.seed, screen)
    logging.info("strata: %s", info)
    for rem in removals.itertuples():
        logging.info(
            "removed %s (%s): %s -> replaced by %s", rem.conversation_id, rem.reason, rem.detail, rem.replaced_by
        )
    ids = upcoming_language_ids(interactions, sampling, smk.params.seed, prompts, removals)
    logging.info("languages of %d upcoming candidates' responses identified for the review rounds", len(ids))
    write_csv(ids, smk.output.language_ids)
    write_csv(removals, smk.output.removals)
    write_csv(prompts, smk.output.prompts)


run_adapter(main, snakemake)  # noqa: F821

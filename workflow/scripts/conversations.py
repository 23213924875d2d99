"""Snakemake adapter: PRISM conversations or a lab's pairs table -> results/data/conversations.parquet."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from modprefs.data.pairs_interactions import asr_sides_described, load_pairs, transcript_screen  # noqa: E402
from modprefs.data.prism import prism_interactions  # noqa: E402
from modprefs.io import write_parquet  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:  # noqa: ANN001
    setup_logging(smk)
    data = smk.params.data
    if data.get("format", "prism") == "pairs":
        Path(smk.params.audio_dir).mkdir(parents=True, exist_ok=True)
        screen = transcript_screen(smk.params.screening, smk.input.harmful_terms[0])
        table = load_pairs(data, smk.params.backend, ".", smk.params.audio_dir, smk.threads, screen_text=screen)
        asr = int((table[["transcript_0", "transcript_1"]] == "asr").to_numpy().sum())
        logging.info("pairs %s: %d items; the text of %d sides from ASR", data["source"], len(table), asr)
        for line in asr_sides_described(table):
            logging.info("%s", line)
    else:
        table, counts = prism_interactions(data, smk.params.seed)
        logging.info("source %s: %s", data["source"], counts)
    write_parquet(table, smk.output[0])
    logging.info("wrote %d interactions to %s", len(table), smk.output[0])


run_adapter(main, snakemake)  # noqa: F821

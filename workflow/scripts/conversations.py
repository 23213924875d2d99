"""Snakemake adapter: PRISM conversations -> results/data/conversations.parquet."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from modprefs.data.prism import PrismFormatError, build_interactions, load_prism_rows  # noqa: E402
from modprefs.io import write_parquet  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:  # noqa: ANN001
    setup_logging(smk)
    data = smk.params.data
    rows = load_prism_rows(
        data["source"],
        data.get("hf_dataset", "HannahRoseKirk/prism-alignment"),
        data.get("hf_config", "conversations"),
        data.get("hf_split", "train"),
    )
    ctype = data.get("conversation_type", "unguided")
    table, counts = build_interactions(rows, seed=smk.params.seed, conversation_type=ctype)
    logging.info("source %s: %s", data["source"], counts)
    if table.empty:
        raise PrismFormatError(
            f"data.source {data['source']}: no eligible {ctype!r} conversations "
            f"({counts['rows']} rows, {counts['of_type']} of that type, "
            f"{counts['no_eligible_turn']} without a turn with two responses)"
        )
    write_parquet(table, smk.output[0])
    logging.info("wrote %d interactions to %s", len(table), smk.output[0])


run_adapter(main, snakemake)  # noqa: F821

"""Snakemake adapter: PRISM conversations -> results/data/conversations.parquet."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from modprefs.data.prism import build_interactions, load_prism_rows  # noqa: E402
from modprefs.io import write_parquet  # noqa: E402
from modprefs.workflow_log import setup_logging  # noqa: E402

setup_logging(snakemake)  # noqa: F821
data = snakemake.params.data  # noqa: F821
rows = load_prism_rows(data["source"], data.get("hf_dataset", "HannahRoseKirk/prism-alignment"),
                       data.get("hf_config", "conversations"), data.get("hf_split", "train"))
table, counts = build_interactions(rows, seed=snakemake.params.seed,  # noqa: F821
                                   conversation_type=data.get("conversation_type", "unguided"))
logging.info("source %s: %s", data["source"], counts)
if table.empty:
    raise SystemExit(f"data.source {data['source']}: no eligible {data.get('conversation_type')} conversations")
write_parquet(table, snakemake.output[0])  # noqa: F821
logging.info("wrote %d interactions to %s", len(table), snakemake.output[0])  # noqa: F821

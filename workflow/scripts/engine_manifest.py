"""Snakemake adapter (rule engine_manifest): one engine's shard manifests -> its manifest.csv."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_csv  # noqa: E402
from modprefs.speech.render import combine_manifests  # noqa: E402
from modprefs.workflow_log import setup_logging  # noqa: E402

smk = snakemake  # noqa: F821
setup_logging(smk)
manifest = combine_manifests([pd.read_csv(p, dtype={"clip_id": str, "prompt_id": str}, keep_default_na=False)
                              for p in smk.input])
write_csv(manifest, smk.output[0])
logging.info("%d clips -> %s", len(manifest), smk.output[0])

"""Snakemake adapter (rule audio_manifest): every round's shard manifests and QC -> results/audio/manifest.csv
(the final study's clips, QC joined) and qc.csv (every clip rendered; modprefs.speech.study_manifest)."""

import logging
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_csv  # noqa: E402
from modprefs.speech.clips import read_attention_check  # noqa: E402
from modprefs.speech.study_manifest import study_manifest  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:  # noqa: ANN001
    setup_logging(smk)
    read = dict(dtype={"clip_id": str, "prompt_id": str, "conversation_id": str}, keep_default_na=False)
    shards = [pd.read_csv(path, **read) for path in smk.input.shards]
    qc = [(int(re.search(r"rounds/(\d+)/", str(path)).group(1)), pd.read_csv(path, **read)) for path in smk.input.qc]
    attention_id = str(read_attention_check(smk.input.attention_check).get("prompt_id", "attn"))
    manifest, qc_table = study_manifest(shards, qc, attention_id, pd.read_csv(smk.input.prompts, **read))
    write_csv(qc_table, smk.output.qc)
    write_csv(manifest, smk.output.manifest)
    logging.info(
        "%d clips in the study (%d rendered in %d round(s), %d replaced for audio quality)",
        len(manifest),
        len(qc_table),
        qc_table["round"].max() + 1,
        int((~qc_table["in_study"]).sum()),
    )


run_adapter(main, snakemake)  # noqa: F821

"""Snakemake adapter (rule audio_manifest): shard manifests + shard QC -> results/audio/manifest.csv
(one row per clip, QC metrics joined) and results/audio/qc.csv (the QC table alone)."""

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
try:
    read = dict(dtype={"clip_id": str, "prompt_id": str}, keep_default_na=False)
    manifest = combine_manifests([pd.read_csv(path, **read) for path in smk.input.shards])
    qc = pd.concat([pd.read_csv(path, dtype={"clip_id": str}) for path in smk.input.qc], ignore_index=True)
    missing = sorted(set(manifest["clip_id"]) - set(qc["clip_id"]))
    if missing:
        raise ValueError(f"audio QC has no row for clip(s) {missing}")
    overlap = [c for c in qc.columns if c in manifest.columns and c != "clip_id"]
    manifest = manifest.merge(qc.drop(columns=overlap), on="clip_id", how="left", validate="one_to_one")
    write_csv(qc, smk.output.qc)
    write_csv(manifest, smk.output.manifest)
    failed = qc[~qc["qc_pass"].astype(str).str.lower().eq("true")]
    logging.info("%d clips, %d fail QC: %s", len(manifest), len(failed),
                 "; ".join(f"{r.clip_id}: {r.qc_reasons}" for r in failed.itertuples()))
except Exception:
    logging.exception("audio manifest failed")
    raise

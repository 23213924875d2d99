"""Snakemake adapter (rule audio_manifest): every round's shard manifests and QC -> the final clips.

results/audio/manifest.csv: one row per clip of the final study (the attention check, then the
final prompts in order, response 0 then 1), QC metrics joined. results/audio/qc.csv: every clip
rendered in any round, with its ``round`` and ``in_study`` (False for clips of prompts that were
removed for audio quality).
"""

import json
import logging
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_csv  # noqa: E402
from modprefs.speech.render import combine_manifests  # noqa: E402
from modprefs.workflow_log import setup_logging  # noqa: E402

smk = snakemake  # noqa: F821
setup_logging(smk)


def round_of(path: str) -> int:
    """The review round of a path results/audio/rounds/{round}/..."""
    return int(re.search(r"rounds/(\d+)/", str(path)).group(1))


try:
    read = dict(dtype={"clip_id": str, "prompt_id": str}, keep_default_na=False)
    rendered = combine_manifests([pd.read_csv(path, **read) for path in smk.input.shards])
    qc = pd.concat([pd.read_csv(path, **read).assign(round=round_of(path)) for path in smk.input.qc],
                   ignore_index=True)
    missing = sorted(set(rendered["clip_id"]) - set(qc["clip_id"]))
    if missing:
        raise ValueError(f"audio QC has no row for clip(s) {missing}")
    with open(smk.input.attention_check, encoding="utf-8") as fh:
        attention_id = str(json.load(fh).get("prompt_id", "attn"))
    final = pd.read_csv(smk.input.prompts, dtype={"prompt_id": str, "conversation_id": str}, keep_default_na=False)
    order = {pid: i for i, pid in enumerate([attention_id, *final["prompt_id"]])}
    absent = sorted(set(order) - set(rendered["prompt_id"]))
    if absent:
        raise ValueError(f"no rendered clips for final prompt(s) {absent}")
    qc["in_study"] = qc["clip_id"].isin(rendered.loc[rendered["prompt_id"].isin(order), "clip_id"])
    overlap = [c for c in qc.columns if c in rendered.columns and c != "clip_id"]
    manifest = (rendered[rendered["prompt_id"].isin(order)]
                .assign(_order=lambda t: t["prompt_id"].map(order))
                .sort_values(["_order", "response"], kind="stable").drop(columns="_order")
                .merge(qc.drop(columns=overlap), on="clip_id", how="left", validate="one_to_one"))
    failed = manifest[~manifest["qc_pass"].astype(str).str.lower().eq("true")]
    if len(failed):
        raise ValueError(f"clip(s) in the final study fail QC: {failed['clip_id'].tolist()} (review rounds bug?)")
    write_csv(qc, smk.output.qc)
    write_csv(manifest, smk.output.manifest)
    logging.info("%d clips in the study (%d rendered in %d round(s), %d replaced for audio quality)", len(manifest),
                 len(rendered), qc["round"].max() + 1, int((~qc["in_study"]).sum()))
except Exception:
    logging.exception("audio manifest failed")
    raise

"""The final study's audio manifest from every review round's shard manifests and QC tables.

``results/audio/manifest.csv``: one row per clip of the final study (the attention check, then the
final prompts in order, response 0 then 1), QC metrics joined. ``results/audio/qc.csv``: every clip
rendered in any round, with its ``round`` and ``in_study`` (False for clips of prompts removed for
audio quality) and each clip's loudness normalisation (before/after, gain, limiting). Inconsistent
inputs (a clip without QC, a final prompt without clips, a failing clip in the study that
``audio_qc.on_exhausted: keep`` did not keep) are bugs of the review rounds and raise ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from modprefs.speech.render import LOUDNESS_COLUMNS, combine_manifests


def study_manifest(
    shards: Sequence[pd.DataFrame],
    qc_rounds: Sequence[tuple[int, pd.DataFrame]],
    attention_id: str,
    final_prompts: pd.DataFrame,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(manifest, qc)`` as described in the module docstring.

    Args:
        shards: every round's shard manifests (render MANIFEST_COLUMNS), ids as strings.
        qc_rounds: ``(round, qc table)`` per shard QC file (clip_id, QC_COLUMNS).
        attention_id: the attention check's prompt_id.
        final_prompts: final_prompts.csv (prompt_id in study order).
    """
    rendered = combine_manifests(shards)
    qc = pd.concat([table.assign(round=r) for r, table in qc_rounds], ignore_index=True)
    missing = sorted(set(rendered["clip_id"]) - set(qc["clip_id"]))
    if missing:
        raise ValueError(f"audio QC has no row for clip(s) {missing}")
    order = {pid: i for i, pid in enumerate([attention_id, *final_prompts["prompt_id"]])}
    absent = sorted(set(order) - set(rendered["prompt_id"]))
    if absent:
        raise ValueError(f"no rendered clips for final prompt(s) {absent}")
    qc["in_study"] = qc["clip_id"].isin(rendered.loc[rendered["prompt_id"].isin(order), "clip_id"])
    levels = [c for c in LOUDNESS_COLUMNS if c in rendered.columns and c not in qc.columns]
    qc = qc.merge(rendered[["clip_id", *levels]], on="clip_id", how="left", validate="one_to_one")
    overlap = [c for c in qc.columns if c in rendered.columns and c != "clip_id"]
    manifest = (
        rendered[rendered["prompt_id"].isin(order)]
        .assign(_order=lambda t: t["prompt_id"].map(order))
        .sort_values(["_order", "response"], kind="stable")
        .drop(columns="_order")
        .merge(qc.drop(columns=overlap), on="clip_id", how="left", validate="one_to_one")
    )
    kept = set()
    if "qc_kept_failing" in final_prompts:  # audio_qc.on_exhausted: keep
        flags = final_prompts["qc_kept_failing"].astype(str).str.lower().eq("true")
        kept = set(final_prompts.loc[flags, "prompt_id"].astype(str))
    failed = manifest[
        ~manifest["qc_pass"].astype(str).str.lower().eq("true") & ~manifest["prompt_id"].astype(str).isin(kept)
    ]
    if len(failed):
        raise ValueError(f"clip(s) in the final study fail QC: {failed['clip_id'].tolist()} (review rounds bug?)")
    return manifest, qc

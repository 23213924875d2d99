"""Snakemake adapter (render_shard, render_engine_shard): one shard -> params.clip_dir/{clip_id}.wav + its manifest.

The model loads once per shard; an empty shard (past the last clip) writes a header-only manifest, loading nothing.
"""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from modprefs.io import write_csv  # noqa: E402
from modprefs.speech.clips import study_shard  # noqa: E402
from modprefs.speech.render import render_shard  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:  # noqa: ANN001
    setup_logging(smk, fmt="%(asctime)s %(name)s %(message)s")
    logging.captureWarnings(True)
    index = int(smk.wildcards.shard)
    if smk.params.inject_silence:
        logging.warning("FAULT INJECTION: audio_qc.inject_silence = %s", list(smk.params.inject_silence))
    attention = smk.input.attention_check if smk.params.with_attention_check else None
    part, n_clips = study_shard(
        smk.input.prompts, smk.input.conversations, attention, index, int(smk.params.shard_size), smk.params.balanced
    )
    logging.info("shard %d: %d of %d clips (%s)", index, len(part), n_clips, ", ".join(part["clip_id"]))
    manifest = render_shard(
        part, smk.params.tts, smk.threads, smk.params.clip_dir, smk.params.inject_silence, smk.params.level
    )
    if not part.empty:
        seconds = manifest[["duration_s", "render_seconds"]].sum()
        logging.info("shard %d: %.1f s of audio in %.1f s", index, seconds["duration_s"], seconds["render_seconds"])
    write_csv(manifest, smk.output.manifest)


run_adapter(main, snakemake)  # noqa: F821

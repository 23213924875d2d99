"""Snakemake adapter (rule render_shard): render one shard of study clips -> results/audio/shards/{shard}.csv.

The TTS model is loaded once for the shard; the WAVs go to params.clip_dir/{clip_id}.wav.
An empty shard (past the last clip) writes a header-only manifest without loading a model.
"""

import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from modprefs.io import write_csv  # noqa: E402
from modprefs.speech.backends import get_backend  # noqa: E402
from modprefs.speech.clips import read_study_clips, shard  # noqa: E402
from modprefs.speech.render import empty_manifest, render_clips  # noqa: E402
from modprefs.workflow_log import setup_logging  # noqa: E402

smk = snakemake  # noqa: F821
setup_logging(smk, fmt="%(asctime)s %(name)s %(message)s")
logging.captureWarnings(True)
shard_index = int(smk.wildcards.shard)
if smk.params.inject_silence:
    logging.warning("FAULT INJECTION: audio_qc.inject_silence = %s", list(smk.params.inject_silence))
try:
    clips = read_study_clips(smk.input.prompts, smk.input.conversations,
                             smk.input.attention_check if smk.params.with_attention_check else None)
    part = shard(clips, shard_index, int(smk.params.shard_size))
    logging.info("shard %d: %d of %d clips (%s)", shard_index, len(part), len(clips), ", ".join(part["clip_id"]))
    if part.empty:
        manifest = empty_manifest()
    else:
        start = time.perf_counter()
        backend = get_backend(smk.params.tts, threads=smk.threads)
        logging.info("backend %r ready in %.1f s", backend, time.perf_counter() - start)
        manifest = render_clips(part, backend, Path(smk.params.clip_dir), inject_silence=smk.params.inject_silence)
        logging.info("shard %d: %.1f s of audio in %.1f s of synthesis", shard_index,
                     manifest["duration_s"].sum(), manifest["render_seconds"].sum())
    write_csv(manifest, smk.output.manifest)
except Exception:
    logging.exception("shard %d failed", shard_index)
    raise

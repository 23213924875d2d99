"""Snakemake adapter (rule audio_qc): QC of one shard's clips -> results/audio/rounds/{round}/qc/{shard}.csv.

Round-trip ASR (faster-whisper tiny.en, English forced), DNSMOS and signal metrics per clip, with the
thresholds of config ``audio_qc.thresholds`` over the backend's defaults (modprefs.speech.qc.default_thresholds); a
lab's given clips are also judged by what the manifest says of their source (modprefs.speech.qc.GIVEN_FIELDS); the
models load once per shard job. ``audio_sha256`` names the bytes measured (the offline judges reuse the
transcript and DNSMOS scores of the same audio: modprefs.judges.qc_reuse). A clip whose WAV cannot be read
fails with reason ``unreadable``.
"""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_csv  # noqa: E402
from modprefs.speech.qc import (  # noqa: E402
    GIVEN_FIELDS,
    QC_COLUMNS,
    QualityChecker,
    default_thresholds,
    file_sha256_or_empty,
)
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:  # noqa: ANN001
    setup_logging(smk, fmt="%(asctime)s %(name)s %(message)s")
    manifest = pd.read_csv(smk.input.manifest, dtype={"clip_id": str, "prompt_id": str}, keep_default_na=False)
    cfg = dict(smk.params.qc)
    rows = []
    if len(manifest):
        thresholds = {**default_thresholds(str(smk.params.backend)), **dict(cfg.get("thresholds") or {})}
        checker = QualityChecker(
            thresholds, threads=smk.threads, asr=cfg.get("asr", True), dnsmos=cfg.get("dnsmos", True)
        )
        for clip in manifest.itertuples(index=False):
            given = {k: getattr(clip, k) for k in GIVEN_FIELDS if k in manifest.columns}
            result = checker.check_file(clip.path, clip.spoken_text, given if clip.backend == "given" else None)
            # the bytes QC measured: the judges reuse its transcript and DNSMOS scores for the same audio
            rows.append({"clip_id": clip.clip_id, **result, "audio_sha256": file_sha256_or_empty(clip.path)})
            logging.info("%s: %s %s", clip.clip_id, "pass" if result["qc_pass"] else "FAIL", result["qc_reasons"])
    write_csv(pd.DataFrame(rows, columns=["clip_id", *QC_COLUMNS, "audio_sha256"]), smk.output[0])


run_adapter(main, snakemake)  # noqa: F821

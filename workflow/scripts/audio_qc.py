"""Snakemake adapter (rule audio_qc): QC of one shard's clips -> results/audio/rounds/{round}/qc/{shard}.csv.

Round-trip ASR (faster-whisper tiny.en, English forced), DNSMOS and signal metrics per clip, with the
thresholds of config ``audio_qc.thresholds`` over the backend's defaults (modprefs.speech.qc.default_thresholds); a
lab's given clips are also judged by what the manifest says of their source (modprefs.speech.qc.GIVEN_FIELDS); the
models load once per shard job. ``audio_sha256`` names the bytes measured (the offline judges reuse the
transcript and DNSMOS scores of the same audio: modprefs.judges.qc_reuse). A clip whose WAV cannot be read
fails with reason ``unreadable``.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_csv  # noqa: E402
from modprefs.speech.qc import QC_COLUMNS, check_manifest, checker_from_config  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:  # noqa: ANN001
    setup_logging(smk, fmt="%(asctime)s %(name)s %(message)s")
    manifest = pd.read_csv(smk.input.manifest, dtype={"clip_id": str, "prompt_id": str}, keep_default_na=False)
    cfg = dict(smk.params.qc)
    table = pd.DataFrame(columns=["clip_id", *QC_COLUMNS, "audio_sha256"])
    if len(manifest):
        checker = checker_from_config(cfg, str(smk.params.backend), smk.threads)
        table = check_manifest(manifest, checker)
    write_csv(table, smk.output[0])


run_adapter(main, snakemake)  # noqa: F821

"""Snakemake adapter (rule engine_manifest): one engine's shard manifests -> its manifest.csv.

Every clip the shards list must still be a readable WAV (it is an input of the rule, so a clip damaged
after rendering reruns this check, which then names the shard manifest to delete to re-render it).
"""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_csv  # noqa: E402
from modprefs.speech.render import ClipRenderError, combine_manifests, unreadable_clips  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:  # noqa: ANN001
    setup_logging(smk)
    read = dict(dtype={"clip_id": str, "prompt_id": str}, keep_default_na=False)
    shards = {str(p): pd.read_csv(p, **read) for p in smk.input.shards}
    for path, shard in shards.items():
        bad = unreadable_clips(shard)
        if bad:
            raise ClipRenderError(
                f"unreadable clip(s) of {smk.wildcards.engine}: {'; '.join(bad)}. They changed "
                f"after rendering: delete {path} and rerun to render that shard again"
            )
    manifest = combine_manifests(shards.values())
    write_csv(manifest, smk.output[0])
    logging.info("%d clips -> %s", len(manifest), smk.output[0])


run_adapter(main, snakemake)  # noqa: F821

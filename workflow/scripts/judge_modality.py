"""Snakemake adapter (rule judge_modality): one modality's synthetic ratings -> results/judges/{modality}.csv.
Items: responses 0/1 of every final prompt and of the attention check (text, or the clip: response and audio
quality); backend ``judges.backend``: local (modprefs.judges.local) or openai; records cached in results/judges/raw/.
"""

import json
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from modprefs.io import write_csv  # noqa: E402
from modprefs.judges.dispatch import run_judges  # noqa: E402
from modprefs.judges.items import read_modality_items  # noqa: E402
from modprefs.judges.qc_reuse import read_qc_measures  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:  # noqa: ANN001
    setup_logging(smk, fmt="%(asctime)s %(name)s %(message)s")
    modality = smk.wildcards.modality
    manifest = smk.input.manifest if modality == "audio" else None
    items = read_modality_items(
        modality, smk.input.prompts, manifest, smk.input.attention_check, smk.input.conversations
    )
    judges = dict(smk.params.judges)
    if judges.get("backend") == "local":
        judges["local"] = {**(judges.get("local") or {}), "threads": int(smk.threads)}
    logging.info("%d %s items, backend %s", len(items), modality, judges.get("backend"))
    # audio QC's transcripts and DNSMOS scores of the same bytes: each model runs once per clip
    result = run_judges(items, judges, smk.params.out_dir, qc=read_qc_measures(manifest))
    logging.info("%s judges: %s", modality, json.dumps(result.stats.as_dict(), default=str))
    for r in result.table[result.table["status"] != "ok"].itertuples():
        logging.warning("failed: %s %s sample %s: %s", r.clip_id, r.kind, r.sample, r.reason)
    write_csv(result.table, smk.output[0])


run_adapter(main, snakemake)  # noqa: F821

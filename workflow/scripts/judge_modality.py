"""Snakemake adapter (rule judge_modality): one modality's synthetic ratings -> results/judges/{modality}.csv.

Items: responses 0 and 1 of every final prompt and of the attention check; text items carry the
response text, audio items the clip (response quality, and audio quality). The backend is
``judges.backend``: ``local`` (offline; modprefs.judges.local) or ``openai`` (any OpenAI-compatible
endpoint; modprefs.judges.client). Records are cached under results/judges/raw/.
"""

import json
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_csv  # noqa: E402
from modprefs.judges.client import run_judges  # noqa: E402
from modprefs.judges.items import attention_check_items, study_items  # noqa: E402
from modprefs.workflow_log import setup_logging  # noqa: E402

smk = snakemake  # noqa: F821
setup_logging(smk, fmt="%(asctime)s %(name)s %(message)s")
modality = smk.wildcards.modality
try:
    ids = {"prompt_id": str, "conversation_id": str, "clip_id": str}
    prompts = pd.read_csv(smk.input.prompts, dtype=ids, keep_default_na=False)
    manifest = pd.read_csv(smk.input.manifest, dtype=ids, keep_default_na=False) if modality == "audio" else None
    with open(smk.input.attention_check, encoding="utf-8") as fh:
        attention = json.load(fh)
    items = (attention_check_items(attention, manifest, modality)
             + study_items(pd.read_parquet(smk.input.conversations), prompts, manifest, modality))
    judges = dict(smk.params.judges)
    if judges.get("backend") == "local":
        judges.setdefault("local", {})
        judges["local"] = {**judges["local"], "threads": int(smk.threads)}
    logging.info("%d %s items, backend %s", len(items), modality, judges.get("backend"))
    result = run_judges(items, judges, smk.params.out_dir)
    logging.info("%s judges: %s", modality, json.dumps(result.stats.as_dict(), default=str))
    failed = result.table[result.table["status"] != "ok"]
    for row in failed.itertuples():
        logging.warning("failed: %s %s sample %s: %s", row.clip_id, row.kind, row.sample, row.reason)
    write_csv(result.table, smk.output[0])
except Exception:
    logging.exception("%s judges failed", modality)
    raise

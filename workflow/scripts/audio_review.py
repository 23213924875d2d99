"""Snakemake adapter (checkpoint audio_review): one round's QC -> keep/replace/drop per prompt.

Writes results/audio/review/round{r}/decisions.csv (one row per prompt of the round),
replacements.csv (the prompts round r + 1 renders; empty when every clip passed) and
removals.csv (this round's removals: ``audio_quality`` and text-screened candidates passed over).
"""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_csv  # noqa: E402
from modprefs.sampling.audio_review import review_round  # noqa: E402
from modprefs.sampling.screening import screen_from_config  # noqa: E402
from modprefs.workflow_log import setup_logging  # noqa: E402

smk = snakemake  # noqa: F821
setup_logging(smk)
ids = {"prompt_id": str, "conversation_id": str, "clip_id": str, "replaced_by": str}
read = dict(dtype=ids, keep_default_na=False)
try:
    round_index = int(smk.wildcards.round)
    prompts = pd.read_csv(smk.input.prompts, **read)
    clips = pd.concat([pd.read_csv(p, **read) for p in smk.input.shards], ignore_index=True)
    qc = pd.concat([pd.read_csv(p, **read) for p in smk.input.qc], ignore_index=True)
    used: set[str] = set()
    max_order = -1
    for path in smk.input.used:
        table = pd.read_csv(path, **read)
        used |= set(table["conversation_id"])
        if "draw_order" in table.columns and len(table):
            max_order = max(max_order, int(table["draw_order"].astype(int).max()))
    if len(prompts):
        max_order = max(max_order, int(prompts["draw_order"].astype(int).max()))
    sampling = smk.params.sampling
    screen = screen_from_config(sampling.get("screening", {}), smk.input.harmful_terms)
    decisions, replacements, removals = review_round(
        round_index, prompts, clips, qc, pd.read_parquet(smk.input.conversations), used, sampling,
        int(smk.params.seed), screen, int(smk.params.max_rounds), str(smk.params.on_exhausted),
        first_draw_order=max_order + 1)
    for d in decisions[decisions["action"] != "keep"].itertuples():
        logging.info("round %d: %s %s (%s)%s", round_index, d.action, d.prompt_id, d.detail,
                     f" -> {d.replaced_by}" if d.replaced_by else "")
    logging.info("round %d: %d prompts reviewed, %d kept, %d replacements to render", round_index,
                 len(decisions), int((decisions["action"] == "keep").sum()), len(replacements))
    write_csv(removals, smk.output.removals)
    write_csv(replacements, smk.output.replacements)
    write_csv(decisions, smk.output.decisions)
except Exception:
    logging.exception("audio review failed")
    raise

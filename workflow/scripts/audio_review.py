"""Snakemake adapter (checkpoint audio_review): one round's QC -> results/audio/review/round{r}/decisions.csv,
replacements.csv (what round r + 1 renders; empty = done) and removals.csv (modprefs.sampling.audio_review)."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_csv  # noqa: E402
from modprefs.sampling.audio_review import review_round, used_conversations  # noqa: E402
from modprefs.sampling.screening import screen_from_config  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:  # noqa: ANN001
    setup_logging(smk)
    read = dict(
        dtype={"prompt_id": str, "conversation_id": str, "clip_id": str, "replaced_by": str}, keep_default_na=False
    )
    r, prompts = int(smk.wildcards.round), pd.read_csv(smk.input.prompts, **read)
    clips, qc = (
        pd.concat([pd.read_csv(p, **read) for p in paths], ignore_index=True)
        for paths in (smk.input.shards, smk.input.qc)
    )
    used, first_order = used_conversations([pd.read_csv(p, **read) for p in smk.input.used], prompts)
    screen = screen_from_config(smk.params.sampling.get("screening", {}), smk.input.harmful_terms)
    decisions, replacements, removals = review_round(
        r,
        prompts,
        clips,
        qc,
        pd.read_parquet(smk.input.conversations),
        used,
        smk.params.sampling,
        int(smk.params.seed),
        screen,
        int(smk.params.max_rounds),
        str(smk.params.on_exhausted),
        first_order,
    )
    for d in decisions[decisions["action"] != "keep"].itertuples():
        logging.info(
            "round %d: %s %s (%s)%s",
            r,
            d.action,
            d.prompt_id,
            d.detail,
            f" -> {d.replaced_by}" if d.replaced_by else "",
        )
    logging.info(
        "round %d: %d prompts reviewed, %d kept, %d replacements to render",
        r,
        len(decisions),
        int((decisions["action"] == "keep").sum()),
        len(replacements),
    )
    for table, target in (
        (removals, smk.output.removals),
        (replacements, smk.output.replacements),
        (decisions, smk.output.decisions),
    ):
        write_csv(table, target)


run_adapter(main, snakemake)  # noqa: F821

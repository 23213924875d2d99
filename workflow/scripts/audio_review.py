"""Snakemake adapter (checkpoint audio_review): one round's QC -> results/audio/review/round{r}/decisions.csv,
replacements.csv (what round r + 1 renders; empty = done) and removals.csv (modprefs.sampling.audio_review)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from modprefs.io import write_csv  # noqa: E402
from modprefs.sampling.audio_review import review_round_files  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:  # noqa: ANN001
    setup_logging(smk)
    decisions, replacements, removals = review_round_files(
        int(smk.wildcards.round),
        smk.input.prompts,
        smk.input.shards,
        smk.input.qc,
        smk.input.used,
        smk.input.conversations,
        smk.input.harmful_terms,
        smk.params.sampling,
        int(smk.params.seed),
        int(smk.params.max_rounds),
        str(smk.params.on_exhausted),
        language_ids=smk.input.language_ids,
    )
    for table, target in (
        (removals, smk.output.removals),
        (replacements, smk.output.replacements),
        (decisions, smk.output.decisions),
    ):
        write_csv(table, target)


run_adapter(main, snakemake)  # noqa: F821

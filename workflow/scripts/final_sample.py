"""Snakemake adapter (rule final_sample): the review rounds -> final_prompts.csv, removals.csv, review.csv.

removals.csv holds every removal in order: the first draw's text screening, then each review
round's (``audio_quality`` and text-screened replacement candidates).
"""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from modprefs.io import write_csv  # noqa: E402
from modprefs.sampling.audio_review import final_sample_files  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:  # noqa: ANN001
    setup_logging(smk)
    prompts, removals, review = final_sample_files(
        smk.input.first_draw,
        smk.input.decisions,
        smk.input.replacements,
        [smk.input.screening_removals, *smk.input.removals],
    )
    write_csv(removals, smk.output.removals)
    write_csv(review, smk.output.review)
    write_csv(prompts, smk.output.prompts)
    logging.info(
        "%d review round(s); %d final prompts; %d removals (%d for audio quality)",
        len(smk.input.decisions),
        len(prompts),
        len(removals),
        int((removals["reason"] == "audio_quality").sum()),
    )


run_adapter(main, snakemake)  # noqa: F821

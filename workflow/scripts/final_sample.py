"""Snakemake adapter (rule final_sample): the review rounds -> final_prompts.csv, removals.csv, review.csv.

removals.csv holds every removal in order: the first draw's text screening, then each review
round's (``audio_quality`` and text-screened replacement candidates).
"""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_csv  # noqa: E402
from modprefs.sampling.audio_review import final_prompts  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:  # noqa: ANN001
    setup_logging(smk)
    read = dict(dtype={"prompt_id": str, "conversation_id": str, "replaced_by": str}, keep_default_na=False)
    decisions = [pd.read_csv(p, **read) for p in smk.input.decisions]
    replacements = [pd.read_csv(p, **read) for p in smk.input.replacements]
    prompts = final_prompts(pd.read_csv(smk.input.first_draw, **read), list(zip(decisions, replacements)))
    removals = pd.concat(
        [pd.read_csv(p, **read) for p in [smk.input.screening_removals, *smk.input.removals]], ignore_index=True
    )
    write_csv(removals, smk.output.removals)
    write_csv(pd.concat(decisions, ignore_index=True), smk.output.review)
    write_csv(prompts, smk.output.prompts)
    logging.info(
        "%d review round(s); %d final prompts; %d removals (%d for audio quality)",
        len(decisions),
        len(prompts),
        len(removals),
        int((removals["reason"] == "audio_quality").sum()),
    )


run_adapter(main, snakemake)  # noqa: F821

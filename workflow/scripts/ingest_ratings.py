"""Snakemake adapter: validate collected ratings and copy them into results/ratings/.

Inputs: ratings, trials, participants (the collected CSVs), stimuli. Outputs: [0] ratings.csv,
[1] trials.csv, [2] participants.csv. Every problem is reported (file, row, column) in the
exception and the log; nothing is written unless all three tables are valid. Tables without a
``source`` column get ``source = collected``. Writes are atomic.
"""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_csv  # noqa: E402
from modprefs.ratings.ingest import RatingsValidationError, validate_ratings_dir  # noqa: E402
from modprefs.workflow_log import setup_logging  # noqa: E402


def main(snakemake) -> None:  # noqa: ANN001
    setup_logging(snakemake, fmt="%(asctime)s %(levelname)s %(message)s", filemode="w")
    log = logging.getLogger("ingest_ratings")
    paths = {"ratings": snakemake.input.ratings, "trials": snakemake.input.trials,
             "participants": snakemake.input.participants}
    stimuli = pd.read_csv(snakemake.input.stimuli, dtype={"prompt_id": str, "clip_id": str})
    try:
        tables = validate_ratings_dir(Path(paths["ratings"]).parent, stimuli, paths=paths)
    except RatingsValidationError as exc:
        log.error("%s", exc)
        raise
    for name, target in zip(("ratings", "trials", "participants"), snakemake.output[:3]):
        write_csv(tables[name], target)
    log.info("validated and wrote %s", ", ".join(f"{len(tables[n])} {n}" for n in tables))


if __name__ == "__main__" and "snakemake" in globals():
    main(snakemake)  # noqa: F821

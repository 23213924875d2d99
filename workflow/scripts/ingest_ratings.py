"""Snakemake adapter: validate a ratings source (ratings.source, any format) into results/ratings/.

Inputs: source (every file the source reads), stimuli, assignments. Params: source, columns (the
column map), scale (study.scale: the rating scale every rating must be on). Outputs: [0] ratings.csv,
[1] trials.csv, [2] participants.csv. Every problem is reported (file, row, column) and nothing is
written unless the source is valid; notes (derived columns, participants outside the design) go to
the log. Writes are atomic.
"""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from modprefs.io_tables import read_table  # noqa: E402
from modprefs.ratings.ingest import ingest_ratings, write_valid  # noqa: E402
from modprefs.ratings.read import read_stimuli  # noqa: E402
from modprefs.scale import scale_from_config  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:  # noqa: ANN001
    setup_logging(smk, fmt="%(asctime)s %(levelname)s %(message)s", filemode="w")
    log = logging.getLogger("ingest_ratings")
    stimuli = read_stimuli(smk.input.stimuli)
    design = read_table(smk.input.assignments, allow_empty=True)
    scale = scale_from_config(getattr(smk.params, "scale", {}))
    valid = ingest_ratings(smk.params.source, stimuli, dict(smk.params.columns or {}), design, scale=scale)
    write_valid(valid, dict(zip(("ratings", "trials", "participants"), smk.output[:3])))
    for note in valid.notes:
        log.info("note: %s", note)
    log.info("validated and wrote %s", ", ".join(f"{len(df)} {n}" for n, df in valid.tables.items()))


if __name__ == "__main__" and "snakemake" in globals():
    run_adapter(main, snakemake)  # noqa: F821

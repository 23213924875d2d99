"""Snakemake adapter: simulate the rater panel (rules/ratings.smk, rule simulate_ratings).

Inputs: stimuli, assignments. Outputs: [0] ratings.csv, [1] trials.csv, [2] participants.csv,
truth (simulation_truth.csv). Params: simulation (the ``ratings.simulation`` config dict), seed.
The simulated tables pass through the same validator as collected ratings before anything is
written; every write is atomic.
"""

import logging
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_csv  # noqa: E402
from modprefs.ratings.ingest import validate_ratings_dir  # noqa: E402
from modprefs.ratings.simulate import SimulationParams, simulate_ratings  # noqa: E402
from modprefs.workflow_log import setup_logging  # noqa: E402


def main(snakemake) -> None:  # noqa: ANN001
    setup_logging(snakemake, fmt="%(asctime)s %(levelname)s %(message)s", filemode="w")
    log = logging.getLogger("simulate_ratings")
    try:
        stimuli = pd.read_csv(snakemake.input.stimuli)
        assignments = pd.read_csv(snakemake.input.assignments)
        params = SimulationParams.from_config(dict(snakemake.params.simulation or {}))
        seed = int(snakemake.params.seed)
        log.info("simulating %d participants x %d trials over %d clips (seed %d)",
                 assignments["participant_id"].nunique(), int(assignments["trial"].max()), len(stimuli), seed)
        ratings, trials, participants, truth = simulate_ratings(stimuli, assignments, params, seed)
        with tempfile.TemporaryDirectory() as tmp:  # self-check with the ingest validator
            for name, df in (("ratings", ratings), ("trials", trials), ("participants", participants)):
                df.to_csv(Path(tmp) / f"{name}.csv", index=False)
            validate_ratings_dir(tmp, stimuli)
        for df, target in zip((ratings, trials, participants), snakemake.output[:3]):
            write_csv(df, target)
        write_csv(truth, snakemake.output.truth)
        log.info("wrote %d ratings, %d trials, %d participants", len(ratings), len(trials), len(participants))
    except Exception:
        log.exception("simulate_ratings failed")
        raise


if __name__ == "__main__" and "snakemake" in globals():
    main(snakemake)  # noqa: F821

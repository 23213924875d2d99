"""Adapter (rule simulate_ratings): stimuli + assignments -> ratings, trials, participants (validated as collected
ones before anything is written) and simulation_truth.csv; params simulation (ratings.simulation), seed, scale
(study.scale: the ratings' scale)."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_csv  # noqa: E402
from modprefs.ratings import SimulationParams, simulate_ratings  # noqa: E402
from modprefs.ratings.ingest import validate_as_collected  # noqa: E402
from modprefs.scale import scale_from_config  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:  # noqa: ANN001
    setup_logging(smk, fmt="%(asctime)s %(levelname)s %(message)s", filemode="w")
    log = logging.getLogger("simulate_ratings")
    stimuli, assignments = pd.read_csv(smk.input.stimuli), pd.read_csv(smk.input.assignments)
    params = SimulationParams.from_config(dict(smk.params.simulation or {}))
    seed, scale = int(smk.params.seed), scale_from_config(dict(smk.params.scale or {}))
    n_part, n_trials = assignments["participant_id"].nunique(), int(assignments["trial"].max())
    log.info("simulating %d participants x %d trials, %d clips (seed %d)", n_part, n_trials, len(stimuli), seed)
    log.info("rating scale %s", scale.describe())
    ratings, trials, participants, truth = simulate_ratings(stimuli, assignments, params, seed, scale)
    validate_as_collected(  # self-check, on the study's scale
        {"ratings": ratings, "trials": trials, "participants": participants}, stimuli, scale=scale
    )
    for df, target in zip((ratings, trials, participants), smk.output[:3]):
        write_csv(df, target)
    write_csv(truth, smk.output.truth)
    log.info("wrote %d ratings, %d trials, %d participants", len(ratings), len(trials), len(participants))


if __name__ == "__main__" and "snakemake" in globals():
    run_adapter(main, snakemake)  # noqa: F821

"""A small simulated study written as the CSV files `modprefs stats` reads (ratings, trials, participants, clips)."""

from __future__ import annotations

from modprefs.ratings.simulate import simulate_ratings
from modprefs.ratings.simulation.params import SimulationParams
from modprefs.study.design import make_assignments
from support.recovery_model import paper_stimuli


def write_study(tmp_path):
    stimuli = paper_stimuli(5).head(40)
    a = make_assignments(list(dict.fromkeys(stimuli.prompt_id)), 12, 8, seed=5)
    ratings, trials, participants, _ = simulate_ratings(stimuli, a, SimulationParams(), seed=5)
    d = tmp_path / "collected"
    d.mkdir()
    ratings.to_csv(d / "ratings.csv", index=False)
    trials.to_csv(d / "trials.csv", index=False)
    participants.to_csv(d / "participants.csv", index=False)
    stimuli[["clip_id", "prompt_id", "n_chars"]].to_csv(tmp_path / "clips.csv", index=False)
    return d, stimuli, a, ratings

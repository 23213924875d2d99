"""The planner on the study's rating scale (``--scale``, config study.scale): simulated ratings, pilot fit, CLI."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from modprefs.plan import engine, priors
from modprefs.plan.engine import SimSettings, Task, task_key
from modprefs.plan.fastsim import simulate_study, study_tables
from modprefs.plan.grid import Design
from modprefs.plan.layout import balanced_layout, prism_like_lengths
from modprefs.plan.options import scale_option
from modprefs.plan.pilot import fit_pilot, read_pilot
from modprefs.ratings.simulate import simulate_ratings
from modprefs.ratings.simulation.params import SimulationParams
from modprefs.scale import PAPER_SCALE, RatingScale
from support.ratings_helpers import make_assignments, make_stimuli, write_tables

FIVE = RatingScale(1, 5, 1)


def _study(scale: RatingScale, seed: int = 3, **params):
    rng = np.random.default_rng(seed)
    layout = balanced_layout(20, 12, 8, ("audio", "text"), rng)
    p = dataclasses.replace(SimulationParams(), **params)
    return simulate_study(p, layout, prism_like_lengths(20, rng), rng, attention=True, scale=scale)


def test_fast_simulator_maps_the_same_draws_onto_the_scale():
    paper, default = _study(PAPER_SCALE), _study(PAPER_SCALE)
    five = _study(FIVE)
    half = _study(RatingScale(0, 10, 0.5))
    for c in ("audio", "text"):
        np.testing.assert_array_equal(paper.ratings[c].y, default.ratings[c].y)
        assert set(np.unique(five.ratings[c].y)) <= {1.0, 2.0, 3.0, 4.0, 5.0}
        np.testing.assert_array_equal(five.ratings[c].y, FIVE.from_paper_units(paper.ratings[c].y))
        np.testing.assert_array_equal(five.ratings[c].tie, paper.ratings[c].tie)  # the raters' own judgements
        assert RatingScale(0, 10, 0.5).on_scale(half.ratings[c].y).all()
    ratings = study_tables(half)[0]["rating"]
    assert (ratings % 1 == 0.5).any()  # a fractional scale keeps its half points in the analysis' table
    assert study_tables(five)[0]["rating"].dtype.kind == "i"


def test_unclipped_ratings_round_to_the_step():
    paper = _study(PAPER_SCALE, clip_ratings=False, tie_mode="threshold")
    five = _study(FIVE, clip_ratings=False, tie_mode="threshold")
    for c in ("audio", "text"):
        np.testing.assert_array_equal(five.ratings[c].y, np.round(FIVE.from_paper_units(paper.ratings[c].y, False)))


def test_the_scale_is_part_of_a_tasks_cache_key():
    design = Design(prompts=12, raters=8, trials=6, conditions=("audio", "text"))
    base = Task("central", "main", SimulationParams(), design, SimSettings(n_sims=20))
    assert task_key(base) == task_key(dataclasses.replace(base, scale=RatingScale(1, 100, 1, "a", "b")))
    assert task_key(base) != task_key(dataclasses.replace(base, scale=FIVE))


def test_workflow_scale_option():
    assert scale_option({}) == ["--scale=1:100:1"]
    assert scale_option({"min": -3, "max": 3, "labels": ["no", "yes"]}) == ["--scale=-3:3:1"]
    assert scale_option({"min": 0, "max": 10, "step": 0.5}) == ["--scale=0:10:0.5"]


@pytest.mark.slow  # ~7 s on 2 cores: not in `make test-fast`
def test_pilot_on_a_five_point_scale_is_fitted_in_its_units(tmp_path):
    """A 1..5 pilot: the replicas (on 1..5) reproduce its statistics; the latent parameters stay in 1..100 units."""
    stim = make_stimuli(12, seed=2)
    asg = make_assignments(stim, 10, 6, seed=3)
    ratings, trials, participants, _ = simulate_ratings(stim, asg, SimulationParams(), seed=4, scale=FIVE)
    write_tables(tmp_path / "pilot", ratings, trials, participants)
    fit = fit_pilot(read_pilot(tmp_path / "pilot", scale=FIVE), seed=1, n_boot=20, scale=FIVE)
    for c, target in fit.target.items():
        assert 1 <= target["mean_rating"] <= 5
        sim = fit.fitted[c].mean()
        for v in ("var_clip", "var_resid", "mean_rating"):
            se = fit.boot[c][v].std(ddof=1) / np.sqrt(len(fit.fitted[c]))
            assert abs(sim[v] - target[v]) < 3.5 * se + 0.05 * abs(target[v]), (c, v, sim[v], target[v])
    assert 40 < fit.params.intercept < 130  # latent, in the paper's units (not moved by ~70 points towards 1..5)


def test_plan_on_a_five_point_scale(tmp_path, monkeypatch, capsys):
    """A tiny plan with --scale 1:5 runs, every simulated study's ratings are on 1..5, and the outputs say so."""
    from modprefs.cli import main

    seen: list[np.ndarray] = []

    def recording(*args, **kwargs):
        study = simulate_study(*args, **kwargs)
        seen.extend(r.y for r in study.ratings.values())
        return study

    full_curve = priors.icc_curve

    def small_curve(p, condition, seed, reps=6, multipliers=priors.CURVE_MULTIPLIERS, scale=PAPER_SCALE):
        return full_curve(p, condition, seed, 1, multipliers[::3], scale)  # fewer, smaller studies: a fast test

    monkeypatch.setattr(priors, "icc_curve", small_curve)
    monkeypatch.setattr(engine, "simulate_study", recording)
    argv = ["plan", "--scale", "1:5", "--prompts", "12", "--raters", "8", "--trials", "6", "--target-icc-k", "0.3"]
    argv += ["--target-power-table2", "-0.5", "--scenarios", "central", "--n-sims", "20", "--prior-boot", "10"]
    argv += ["--interval", "sampling", "--jobs", "1", "--no-progress", "--no-cache", "--out", str(tmp_path)]
    assert main(argv) in (0, 3)
    assert len(seen) == 2 * 20
    assert all(set(np.unique(y)) <= {1.0, 2.0, 3.0, 4.0, 5.0} for y in seen)
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert (plan["scale"]["min"], plan["scale"]["max"], plan["scale"]["step"]) == (1, 5, 1)
    assert "rating scale 1-5 (step 1)" in plan["scale"]["units"]
    assert "rating scale 1-5 (step 1)" in (tmp_path / "report.html").read_text()
    assert main([*argv[:1], "--scale", "5:1", *argv[3:]]) == 2
    assert "--scale" in capsys.readouterr().err

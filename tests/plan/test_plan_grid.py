"""modprefs plan's inputs: grid parsing, targets and costs checks, costs arithmetic, CLI errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from modprefs.cli import main
from modprefs.errors import UserInputError
from modprefs.plan.costs import design_cost, expected_trials_done
from modprefs.plan.errors import PlanInputError
from modprefs.plan.grid import Costs, Design, Targets, design_grid, parse_int_list
from modprefs.ratings.simulation.params import SimulationParams


def test_parse_int_list_lists_and_ranges():
    assert parse_int_list("10:40:10", "--raters") == [10, 20, 30, 40]
    assert parse_int_list("40, 10,20,20", "--raters") == [10, 20, 40]
    assert parse_int_list("5:7", "--trials") == [5, 6, 7]


@pytest.mark.parametrize(
    "text, match",
    [
        ("ten", "--raters: 'ten' is not an integer"),
        ("40:10:10", "--raters: range '40:10:10'"),
        ("10:20:0", "--raters: range"),
        ("1", "--raters: 1 is below the minimum 2"),
        ("", "--raters: no values"),
    ],
)
def test_parse_int_list_errors_name_the_argument(text, match):
    with pytest.raises(PlanInputError, match=match):
        parse_int_list(text, "--raters", 2)


def test_design_grid_is_the_product():
    grid = design_grid([20, 40], [10, 20], [10], "audio")
    assert [(d.prompts, d.raters, d.trials, d.conditions) for d in grid] == [
        (20, 10, 10, ("audio",)),
        (20, 20, 10, ("audio",)),
        (40, 10, 10, ("audio",)),
        (40, 20, 10, ("audio",)),
    ]
    assert grid[0].ratings_per_clip == 5.0


@pytest.mark.parametrize(
    "args, match",
    [
        (([10], [10], [20], "both"), "--trials: 20 trials per participant exceeds 10 prompts"),
        (([100], [4], [10], "both"), "--raters: 4 raters x 10 trials cannot give"),
        (([20], [10], [10], "video"), "--conditions: 'video'"),
        (([20], [1], [10], "both"), "--raters: 1 is below the minimum 2"),
    ],
)
def test_bad_grids_name_the_argument(args, match):
    with pytest.raises(PlanInputError, match=match):
        design_grid(*args)


@pytest.mark.parametrize(
    "kwargs, conditions, match",
    [
        ({"ci_half_width": 0.0}, ("audio", "text"), "--target-ci-half-width"),
        ({"ci_half_width": 0.7}, ("audio", "text"), "--target-ci-half-width"),
        ({"icc_k": 1.0}, ("audio", "text"), "--target-icc-k"),
        ({"icc_k": 0.8, "power": 1.0}, ("audio", "text"), "--power"),
        ({"icc_diff": 0.0}, ("audio", "text"), "--target-power-icc-diff"),
        ({"icc_diff": 1.2}, ("audio", "text"), "--target-power-icc-diff"),
        (
            {"icc_diff": 0.1},
            ("audio",),
            "--target-power-icc-diff: compares the modalities, so it needs --conditions both",
        ),
        ({"table2_effect": 3.0}, ("text",), "--target-power-table2: compares"),
        ({"table2_effect": 3.0, "table2_term": "len_z"}, ("audio", "text"), "--table2-term"),
        ({"icc_k": 0.8, "target_conditions": ("text",)}, ("audio",), "--target-conditions"),
        ({}, ("audio", "text"), "no target given"),
    ],
)
def test_impossible_targets_name_the_argument(kwargs, conditions, match):
    with pytest.raises(PlanInputError, match=match):
        Targets(**kwargs).check(conditions)


def test_costs_check_names_the_argument():
    with pytest.raises(PlanInputError, match="--pay-per-hour"):
        Costs(pay_per_hour=-1).check()
    with pytest.raises(PlanInputError, match="--minutes-per-trial-audio"):
        Costs(minutes_per_trial={"audio": 0.0}).check()
    with pytest.raises(PlanInputError, match="--attention-fail-rate-text"):
        Costs(attention_fail_rate={"text": 1.0}).check()
    assert issubclass(PlanInputError, UserInputError)


def test_expected_trials_done_matches_monte_carlo():
    rng = np.random.default_rng(0)
    T, p, mu = 20, 0.1, 2.5
    k = rng.poisson(mu, 200_000)
    drop = rng.random(k.size) < p
    done = np.where(drop, np.minimum(k, T - 1), T)
    assert expected_trials_done(T, p, mu) == pytest.approx(done.mean(), abs=4 * done.std() / math.sqrt(done.size))
    assert expected_trials_done(T, 0.0, mu) == T


def test_design_cost_by_hand():
    p = SimulationParams()
    d = Design(100, 46, 20, ("audio",))
    out = design_cost(d, p, Costs(pay_per_hour=12.0))
    f = p.p_fail_attention_audio
    minutes = p.trial_time_mean_audio / 60
    pass_min = p.session_overhead_min_audio + minutes + minutes * expected_trials_done(20, p.p_incomplete_audio, 2.5)
    fail_min = p.session_overhead_min_audio + minutes
    failures = 46 / (1 - f) - 46
    assert out["recruits"] == math.ceil(46 / (1 - f)) == 53
    assert out["cost"] == pytest.approx(12 / 60 * (46 * pass_min + failures * fail_min))
    unpaid = design_cost(d, p, Costs(pay_per_hour=12.0, pay_failed=False, fee_rate=0.5))
    assert unpaid["cost"] == pytest.approx(12 / 60 * 46 * pass_min * 1.5)
    # the paper's audio session: ~47 minutes (Table 3: 47.3)
    assert 44 < pass_min < 50


@pytest.mark.parametrize(
    "argv, match",
    [
        (["--trials", "30", "--prompts", "20", "--target-icc-k", "0.7"], "--trials: 30 trials per participant"),
        (["--prompts", "20", "--trials", "10", "--raters", "10"], "no target given"),
        (["--prompts", "20", "--trials", "10", "--raters", "10", "--target-icc-k", "1.5"], "--target-icc-k"),
        (
            [
                "--prompts",
                "20",
                "--trials",
                "10",
                "--raters",
                "10",
                "--conditions",
                "audio",
                "--target-power-icc-diff",
                "0.1",
            ],
            "needs --conditions both",
        ),
        (
            ["--prompts", "20", "--trials", "10", "--raters", "10", "--target-icc-k", "0.7", "--scenarios", "rosy"],
            "--scenarios",
        ),
        (
            ["--prompts", "20", "--trials", "10", "--raters", "10", "--target-icc-k", "0.7", "--quantiles", "0.9,0.1"],
            "--quantiles",
        ),
        (
            ["--prompts", "20", "--trials", "10", "--raters", "10", "--target-icc-k", "0.7", "--pilot", "/nonexistent"],
            "--pilot: /nonexistent does not exist",
        ),
    ],
)
def test_cli_bad_arguments_exit_2_with_a_message_naming_them(argv, match, capsys, tmp_path):
    assert main(["plan", *argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err
    assert not (tmp_path / "out" / "designs.csv").exists()


def test_cli_argparse_type_errors_name_the_option(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["plan", "--n-sims", "5"])
    assert exc.value.code == 2
    assert "--n-sims" in capsys.readouterr().err

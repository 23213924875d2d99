"""What a design costs: participants to recruit, their minutes and the pay.

Recruitment policy: a participant who fails the attention check is replaced, so each condition
ends with the design's ``raters`` analysable participants; expected recruits per condition =
raters / (1 - attention failure rate). Those who pass do the attention trial and their trials --
all of them, or, with probability ``p_incomplete``, only K ~ Poisson(``incomplete_trials_mean``)
truncated to 0..T-1 (the simulator's dropout model; their completed trials are analysed). Those who
fail stop after the attention trial. Minutes per trial default to the priors' mean trial duration
(Table 3: 136.4 s audio, 78.8 s text, or the pilot's); the session overhead to the simulator's
``session_overhead_min_audio`` / ``_text``.

cost per condition = pay_per_hour / 60 x (passers x their minutes + failures x theirs [if paid])
x (1 + fee_rate).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from modprefs.plan.grid import Costs, Design
from modprefs.ratings.simulation.params import SimulationParams


def expected_trials_done(trials: int, p_incomplete: float, dropout_mean: float) -> float:
    """Expected rated trials of a participant who passed: T (1 - p) + p E[min(K, T - 1)], K ~ Poisson."""
    if trials <= 1:
        return float(trials) * (1 - p_incomplete)
    j = np.arange(1, trials)  # E[min(K, T-1)] = sum_{j=1}^{T-1} P(K >= j)
    partial = float(stats.poisson.sf(j - 1, dropout_mean).sum())
    return trials * (1 - p_incomplete) + p_incomplete * partial


def resolved(costs: Costs, params: SimulationParams, condition: str) -> dict[str, float]:
    """The cost inputs of one condition: the user's values, else the priors'."""
    minutes = costs.minutes_per_trial.get(condition, params.by_condition("trial_time_mean", condition) / 60.0)
    return {
        "minutes_per_trial": float(minutes),
        "overhead_minutes": float(
            params.by_condition("session_overhead_min", condition)
            if costs.overhead_minutes is None
            else costs.overhead_minutes
        ),
        "attention_fail_rate": float(
            costs.attention_fail_rate.get(condition, params.by_condition("p_fail_attention", condition))
        ),
        "incomplete_rate": float(costs.incomplete_rate.get(condition, params.by_condition("p_incomplete", condition))),
    }


def design_cost(design: Design, params: SimulationParams, costs: Costs) -> dict[str, float]:
    """Expected recruits, participant minutes and cost of a design (both conditions summed).

    Returns keys ``recruits`` (expected participants to recruit, each condition rounded up),
    ``recruits_{condition}``, ``participant_hours``, ``cost``.
    """
    out: dict[str, float] = {"recruits": 0.0, "participant_hours": 0.0, "cost": 0.0}
    for c in design.conditions:
        r = resolved(costs, params, c)
        fail = r["attention_fail_rate"]
        recruits = design.raters / (1.0 - fail)
        failures = recruits - design.raters
        attention_minutes = r["minutes_per_trial"]
        pass_minutes = (
            r["overhead_minutes"]
            + attention_minutes
            + r["minutes_per_trial"]
            * expected_trials_done(design.trials, r["incomplete_rate"], params.incomplete_trials_mean)
        )
        fail_minutes = r["overhead_minutes"] + attention_minutes
        minutes = design.raters * pass_minutes + failures * fail_minutes
        paid = design.raters * pass_minutes + (failures * fail_minutes if costs.pay_failed else 0.0)
        out[f"recruits_{c}"] = float(math.ceil(recruits - 1e-9))
        out["recruits"] += out[f"recruits_{c}"]
        out["participant_hours"] += minutes / 60.0
        out["cost"] += costs.pay_per_hour * paid / 60.0 * (1.0 + costs.fee_rate)
    return out

"""Who rates which prompt, when, in which order: a study's layout as arrays (for the fast simulator).

A :class:`Layout` holds, per condition, one row per rated trial (trial >= 1; the attention check is
not part of it): participant code, prompt code, trial number and the response presented first.
It comes from either

* :func:`balanced_layout`: the design of :func:`modprefs.study.design.make_assignments` drawn
  with arrays instead of a per-participant loop -- per condition, a random permutation of the
  prompts is dealt out cyclically, ``trials`` consecutive prompts per participant (so every
  prompt ends with ``floor`` or ``ceil`` of ``raters * trials / prompts`` raters and no
  participant sees a prompt twice), each participant's block in a random order, and the first
  response counterbalanced within prompt (the prompt's raters in random order alternate 0/1 from
  a random start). The rater-overlap structure differs in detail from ``make_assignments``'s
  least-rated fill; tests/plan/test_plan_fastsim.py checks that the analysed quantities have the
  same distribution.
* :func:`layout_from_assignments`: an assignments table (``results/study/assignments.csv`` or the
  one a ratings table implies) with its prompts coded against a stimulus table.

:func:`prism_like_lengths` draws response lengths like the sampling stage's PRISM prompts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from modprefs.study.terms import CONDITIONS


@dataclass(frozen=True)
class ConditionLayout:
    """Rated trials of one condition (arrays of equal length n_trials; codes start at 0).

    participant: (n,) participant code 0..n_participants-1; prompt: (n,) prompt code 0..n_prompts-1;
    trial: (n,) trial number >= 1; first: (n,) response (0/1) presented first;
    n_assigned: (n_participants,) rated trials assigned to each participant.
    """

    participant: np.ndarray
    prompt: np.ndarray
    trial: np.ndarray
    first: np.ndarray
    n_assigned: np.ndarray

    @property
    def n_participants(self) -> int:
        return int(self.n_assigned.size)


@dataclass(frozen=True)
class Layout:
    """A study's layout: the conditions run, their trials, and the number of prompts and trial positions.

    ``max_trial`` is the largest trial number over all conditions (the simulator standardises the
    trial position over 1..max_trial).
    """

    conditions: dict[str, ConditionLayout]
    n_prompts: int
    max_trial: int


def _counterbalance(prompt: np.ndarray, n_prompts: int, rng: np.random.Generator) -> np.ndarray:
    """First response per trial: each prompt's raters, in random order, alternate 0/1 from a random start."""
    order = np.lexsort((rng.random(prompt.size), prompt))
    sorted_prompt = prompt[order]
    starts = np.flatnonzero(np.r_[True, np.diff(sorted_prompt) != 0])
    lengths = np.diff(np.r_[starts, prompt.size])
    rank = np.arange(prompt.size) - np.repeat(starts, lengths)
    start_bit = rng.integers(0, 2, n_prompts)
    first = np.empty(prompt.size, dtype=np.int64)
    first[order] = (start_bit[sorted_prompt] + rank) % 2
    return first


def balanced_layout(
    n_prompts: int, raters: int, trials: int, conditions: tuple[str, ...], rng: np.random.Generator
) -> Layout:
    """A balanced between-subjects layout: ``raters`` participants per condition, ``trials`` prompts each.

    Args:
        n_prompts: prompts in the study (P >= trials).
        raters: participants per condition.
        trials: rated trials per participant (T <= P).
        conditions: the conditions run (each independently laid out).
        rng: the layout's generator.

    Returns:
        :class:`Layout` with ``raters * trials`` trials per condition.
    """
    if not 1 <= trials <= n_prompts:
        raise ValueError(f"trials per participant ({trials}) must be in 1..{n_prompts} (the number of prompts)")
    out = {}
    for condition in conditions:
        perm = rng.permutation(n_prompts)
        pos = (np.arange(raters)[:, None] * trials + np.arange(trials)[None, :]) % n_prompts
        block = perm[pos]
        order = np.argsort(rng.random((raters, trials)), axis=1)
        prompt = np.take_along_axis(block, order, axis=1).ravel()
        out[condition] = ConditionLayout(
            participant=np.repeat(np.arange(raters), trials),
            prompt=prompt,
            trial=np.tile(np.arange(1, trials + 1), raters),
            first=_counterbalance(prompt, n_prompts, rng),
            n_assigned=np.full(raters, trials),
        )
    return Layout(conditions=out, n_prompts=n_prompts, max_trial=trials)


def layout_from_assignments(assignments: pd.DataFrame, prompt_ids: list[str]) -> Layout:
    """The layout of an assignments table (participant_id, condition, trial, prompt_id, first_clip).

    Trial 0 (the attention check) is dropped; prompts are coded by their position in ``prompt_ids``.
    Raises ValueError naming an unknown prompt or condition.
    """
    code = {str(p): i for i, p in enumerate(prompt_ids)}
    rated = assignments[assignments["trial"].astype(int) >= 1]
    unknown = sorted(set(rated["prompt_id"].astype(str)) - set(code))
    if unknown:
        raise ValueError(f"assignments name prompts that are not in the stimuli: {unknown[:5]}")
    bad = sorted(set(assignments["condition"].astype(str)) - set(CONDITIONS))
    if bad:
        raise ValueError(f"assignments have unknown condition(s) {bad}; expected {CONDITIONS}")
    out = {}
    for condition in CONDITIONS:
        everyone = assignments[assignments["condition"].astype(str) == condition]
        if everyone.empty:
            continue
        people = sorted(everyone["participant_id"].astype(str).unique())
        pcode = {p: i for i, p in enumerate(people)}
        rows = rated[rated["condition"].astype(str) == condition].sort_values(["participant_id", "trial"])
        participant = rows["participant_id"].astype(str).map(pcode).to_numpy(np.int64)
        out[condition] = ConditionLayout(
            participant=participant,
            prompt=rows["prompt_id"].astype(str).map(code).to_numpy(np.int64),
            trial=rows["trial"].to_numpy(np.int64),
            first=rows["first_clip"].to_numpy(np.int64),
            n_assigned=np.bincount(participant, minlength=len(people)),
        )
    max_trial = int(assignments["trial"].astype(int).max()) if len(assignments) else 1
    return Layout(conditions=out, n_prompts=len(prompt_ids), max_trial=max(max_trial, 1))


def prism_like_lengths(n_prompts: int, rng: np.random.Generator, long_fraction: float = 0.25) -> np.ndarray:
    """(n_prompts, 2) response lengths in characters, like the study's PRISM samples.

    The distribution the simulator was calibrated with (benchmarks/validity/ratings_calibration.py draws its
    stimuli with this function, so the planner's paper priors are the calibrated simulator, lengths
    included): both responses lognormal (median 380 characters, log-SD .55); in the long-difference
    stratum (the first ``round(long_fraction * n_prompts)`` prompts, as ``sampling.long_fraction``)
    the second is 449 + Exp(mean 350) characters longer than the first, elsewhere the pair is redrawn
    until the two differ by less than 449; then the two are swapped with probability 1/2.
    """
    n_long = int(round(long_fraction * n_prompts))
    out = np.empty((n_prompts, 2))
    for i in range(n_prompts):
        long = i < n_long
        while True:
            a, b = np.rint(rng.lognormal(np.log(380), 0.55, 2))
            if long:
                b = a + 449 + rng.exponential(350)
            if (abs(a - b) >= 449) == long:
                break
        out[i] = (a, b) if rng.random() < 0.5 else (b, a)
    return out

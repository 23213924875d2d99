"""Between-subjects study design: conditions, trial orders and presentation order (paper §3.2.2).

* ``2 * raters_per_condition`` participants are randomly assigned, half to ``text`` and half to
  ``audio`` (a random permutation, so the split is exact).
* Every participant first sees the attention check (trial 0), then ``trials_per_participant``
  distinct prompts. Within a condition, participants are filled one after another with the
  prompts that have the fewest raters so far (ties broken at random): after every participant the
  per-prompt rater counts differ by at most one, so each prompt ends with ``floor`` or ``ceil`` of
  ``raters * trials / n_prompts`` raters per condition. The participant's prompts are then put
  in random order (block randomisation: each participant's block is a fresh random order).
* Which response is presented first is counterbalanced across the raters of each prompt within
  a condition: the raters of a prompt, in random order, alternate ``first_clip`` 0/1 from a
  random start, so the two orders differ by at most one per prompt and condition. The attention
  check is counterbalanced the same way across each condition's participants.
* ``study.allocation: judges`` (:mod:`modprefs.study.allocation`): per-prompt rater weights per condition replace
  the equal counts; each prompt gets its quota (:func:`~modprefs.study.allocation.capped_quotas`), filled pro rata
  in the order the app hands out the slots (:func:`~modprefs.study.allocation.fill_to_quotas`). Everything else
  (conditions, trial orders, counterbalancing) is as above.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from modprefs.errors import UserInputError
from modprefs.study.allocation import capped_quotas, fill_to_quotas
from modprefs.study.terms import ATTENTION_PROMPT as ATTENTION_PROMPT_ID
from modprefs.study.terms import PAPER_COLUMN_ORDER as CONDITIONS  # the design's draw order

ASSIGNMENT_COLUMNS = ["participant_id", "condition", "trial", "prompt_id", "first_clip"]


def participant_ids(n: int) -> list[str]:
    width = max(4, len(str(n)))
    return [f"P{i + 1:0{width}d}" for i in range(n)]


def _fill_prompts(n_participants: int, prompts: list[str], trials: int, rng: np.random.Generator) -> list[list[str]]:
    """Each participant's set of prompts, least-rated first; counts stay within one of each other."""
    counts = np.zeros(len(prompts), dtype=int)
    sets = []
    for _ in range(n_participants):
        tiebreak = rng.random(len(prompts))
        order = np.lexsort((tiebreak, counts))  # fewest raters first, random among equals
        picked = np.sort(order[:trials])
        counts[picked] += 1
        block = [prompts[i] for i in picked]
        sets.append([block[i] for i in rng.permutation(trials)])
    return sets


def _alternate(n: int, rng: np.random.Generator) -> np.ndarray:
    start = int(rng.integers(2))
    return (start + np.arange(n)) % 2


class DesignError(UserInputError):
    """The study design cannot be built from the final prompts (the message names the config key)."""


def _weighted_sets(
    prompts: list[str], weights: pd.Series, n_participants: int, trials: int, floor: int, rng: np.random.Generator
) -> list[list[str]]:
    """Each participant's prompts under per-prompt rater ``weights`` (indexed by prompt id), in random order."""
    total = n_participants * trials
    if total < len(prompts):
        raise DesignError(
            f"study.allocation: judges gives every prompt raters, but study.raters_per_condition x "
            f"study.trials_per_participant = {n_participants} x {trials} = {total} assignments per condition are "
            f"fewer than the {len(prompts)} prompts; recruit more, give more trials, or set study.allocation: balanced"
        )
    floor = min(floor, total // len(prompts))  # a floor the budget cannot give to every prompt shrinks to what it can
    quotas = capped_quotas(weights.reindex(prompts).to_numpy(float), total, n_participants, max(floor, 1))
    sets = []
    for picked in fill_to_quotas(quotas, trials, rng):
        block = [prompts[i] for i in picked]
        sets.append([block[i] for i in rng.permutation(trials)])
    return sets


def make_assignments(
    prompt_ids: list[str],
    raters_per_condition: int,
    trials_per_participant: int,
    seed: int,
    weights: Mapping[str, pd.Series] | None = None,
    min_raters: int = 1,
) -> pd.DataFrame:
    """The assignments table (:data:`ASSIGNMENT_COLUMNS`), one row per participant × trial.

    ``weights`` (``study.allocation: judges``): per condition, a positive rater weight per prompt (a Series indexed
    by prompt id; :func:`modprefs.study.allocation.judge_weights`); each prompt then gets at least ``min_raters``
    raters where the condition's assignments allow it. None: the balanced design.
    """
    if trials_per_participant > len(prompt_ids):
        raise DesignError(
            f"study.trials_per_participant ({trials_per_participant}) exceeds the number of prompts in the final "
            f"study ({len(prompt_ids)}; fewer than sampling.n_prompts when audio_qc.on_exhausted: drop removed "
            "some); lower study.trials_per_participant"
        )
    if len(set(prompt_ids)) != len(prompt_ids):
        raise ValueError("duplicate prompt ids in the stimulus set")
    rng = np.random.default_rng([seed, 0xD351])
    ids = participant_ids(2 * raters_per_condition)
    conditions = np.array(CONDITIONS).repeat(raters_per_condition)[rng.permutation(2 * raters_per_condition)]
    rows = []
    for condition in CONDITIONS:
        members = [pid for pid, c in zip(ids, conditions) if c == condition]
        attn_first = _alternate(len(members), rng)[rng.permutation(len(members))]
        for pid, first in zip(members, attn_first):
            rows.append((pid, condition, 0, ATTENTION_PROMPT_ID, int(first)))
        if weights is None:
            sets = _fill_prompts(len(members), list(prompt_ids), trials_per_participant, rng)
        else:
            sets = _weighted_sets(
                list(prompt_ids), weights[condition], len(members), trials_per_participant, min_raters, rng
            )
        for pid, block in zip(members, sets):
            rows.extend((pid, condition, t + 1, prompt, -1) for t, prompt in enumerate(block))
    table = pd.DataFrame(rows, columns=ASSIGNMENT_COLUMNS)
    # Counterbalance presentation order within each prompt and condition.
    rated = table["trial"] > 0
    for (_, _), idx in table[rated].groupby(["condition", "prompt_id"]).groups.items():
        idx = np.asarray(idx)
        table.loc[idx[rng.permutation(len(idx))], "first_clip"] = _alternate(len(idx), rng)
    return table.sort_values(["participant_id", "trial"], kind="stable").reset_index(drop=True)

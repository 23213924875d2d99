"""How many raters each prompt gets, per condition: ``study.allocation`` (issue #54, item 3).

``balanced`` (the default, the paper's design)
    Every prompt gets ``floor`` or ``ceil`` of ``raters * trials / n_prompts`` raters per condition
    (:func:`modprefs.study.design.make_assignments` fills participants least-rated prompt first).
``judges``
    The prompts the AI judges find contested get more raters. A prompt's share of the condition's rater
    assignments (``raters_per_condition * trials_per_participant``) is proportional to the raters the judges'
    rater plan asks for it in that modality (:func:`modprefs.stats.tables.rater_allocation.rater_plan`, settings
    ``judges.allocation.*``): the paper's Table 6 line (ICC(2,1) rises 0.014 per point of the judge's rating gap
    between the two responses) predicts each prompt's ICC(2,1), and Spearman-Brown gives the raters it needs for
    ``judges.allocation.target``. Before the study there are no human ratings, so the plan's ``prior`` model is
    used whatever ``judges.allocation.icc_model`` says. Quotas are bounded below by ``judges.allocation.min_raters``
    and above by the condition's participants (a participant rates a prompt once): :func:`capped_quotas`.

Online order: the participants of a condition are filled in the order the app hands out their slots
(:func:`modprefs.app.loader.slot_order`), each taking the ``trials`` prompts furthest behind their pro-rata
quota (:func:`fill_to_quotas`), so at every point of intake each prompt's raters track its final quota (within
one of ``quota * filled / n``) and a study stopped early by the stopping rule has the planned proportions too.
Presentation order stays counterbalanced within each prompt and condition, and conditions alternate, as in the
balanced design. ICC(2,k) of a design with unequal raters per clip is Spearman-Brown at the effective k
(:func:`modprefs.stats.reliability.icc.effective_k`), so the analysis needs no change.

Measured (benchmarks/validity/live_allocation.py, benchmarks/out/live_allocation.md): the precision of ICC(2,1) and
ICC(2,k) per rating under judge-guided against balanced allocation, with a strong and a weak judge link.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from modprefs.errors import UserInputError

ALLOCATIONS = ("balanced", "judges")
DEFAULT_ALLOCATION = "balanced"


class AllocationError(UserInputError):
    """Judge-guided allocation cannot be built (the message names the config key or input)."""


def capped_quotas(weights: Sequence[float], total: int, cap: int, floor: int = 1) -> np.ndarray:
    """Whole quotas proportional to ``weights`` that sum to ``total``, each in [``floor``, ``cap``].

    The real-valued quotas are clip(c * w, floor, cap) with c found by bisection so that they sum to ``total``
    (water-filling: a prompt held at the cap passes its excess to the others); they are then rounded by the largest
    remainder (ties to the earlier prompt). Shapes: ``weights`` (n,) positive; returns (n,) int.
    """
    w = np.asarray(weights, dtype=float)
    n = w.size
    if n == 0 or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError("weights must be positive and finite")
    if not 1 <= floor <= cap:
        raise ValueError(f"need 1 <= floor <= cap, got {floor}, {cap}")
    if not n * floor <= total <= n * cap:
        raise ValueError(f"total {total} is outside [{n * floor}, {n * cap}] for {n} prompts in [{floor}, {cap}]")
    lo, hi = 0.0, cap / float(w.min())
    for _ in range(200):
        c = (lo + hi) / 2
        if np.clip(c * w, floor, cap).sum() < total:
            lo = c
        else:
            hi = c
    q = np.clip(hi * w, floor, cap)
    base = np.minimum(np.floor(q + 1e-9).astype(int), cap)
    short = int(total - base.sum())
    if short < 0:  # q summed over total by the bisection's tolerance: take back the smallest remainders
        take = [i for i in np.lexsort((-np.arange(n), q - base)) if base[i] > floor][:-short]
        base[take] -= 1
    elif short > 0:
        give = [i for i in np.lexsort((np.arange(n), -(q - base))) if base[i] < cap][:short]
        base[give] += 1
    assert base.sum() == total and base.min() >= floor and base.max() <= cap
    return base


def fill_to_quotas(quotas: np.ndarray, trials: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Each participant's ``trials`` prompt indices (sorted), participants in order, so that prompt p is rated by
    exactly ``quotas[p]`` of the ``n = sum(quotas) / trials`` participants and, after participant i, by about
    ``quotas[p] * (i + 1) / n`` (pro-rata: the prompts furthest behind go first, random among equals).

    A prompt whose remaining quota equals the participants left is always taken (else it could not reach it); with
    every quota <= n this greedy never runs out of prompts.
    """
    q = np.asarray(quotas, dtype=int)
    n, rem = divmod(int(q.sum()), trials)
    if rem or q.max() > n or q.min() < 0:
        raise ValueError(f"quotas summing to {q.sum()} cannot be split into participants of {trials} trials")
    counts = np.zeros(q.size, dtype=int)
    sets = []
    for i in range(n):
        left = q - counts
        forced = left >= n - i
        behind = q * (i + 1) / n - counts
        tiebreak = rng.random(q.size)
        eligible = left > 0
        order = np.lexsort((tiebreak, -behind, ~forced, ~eligible))
        picked = np.sort(order[:trials])
        if not eligible[picked].all():
            raise AssertionError("quota fill ran out of prompts")  # impossible when every quota <= n
        counts[picked] += 1
        sets.append(picked)
    return sets


def judge_weights(
    judges: pd.DataFrame,
    stimuli: pd.DataFrame,
    allocation: Mapping[str, Any] | None,
    judge_by_modality: Mapping[str, str | None] | None = None,
) -> dict[str, pd.Series]:
    """Per condition (``audio``, ``text``): the raters the judges' prior rater plan asks for each prompt (a Series
    indexed by prompt_id), from results/judges/ratings.csv and stimuli.csv with ``judges.allocation`` settings and
    the judge per modality of ``stats.ai_alignment.judge_by_modality`` (as the rater_plan table).

    Raises :class:`AllocationError` when the judges' table has no usable rating, or a condition's modality or a
    prompt has no judge differentiation.
    """
    from modprefs.stats.tables.rater_allocation import (
        MODALITIES,
        AllocationConfig,
        RaterPlanInputError,
        plan_from_tables,
    )

    config = AllocationConfig.from_mapping({**(allocation or {}), "icc_model": "prior"})
    try:
        plan, _ = plan_from_tables(judges, stimuli, config, judge_by_modality)
    except RaterPlanInputError as exc:
        raise AllocationError(f"study.allocation: judges needs the judges' ratings: {exc}") from exc
    out = {}
    prompts = list(dict.fromkeys(stimuli["prompt_id"].astype(str)))
    for condition in MODALITIES:  # a condition's raters follow the judge of its modality
        block = plan[plan["modality"] == condition].set_index("prompt_id")
        if block.empty:
            raise AllocationError(
                f"study.allocation: judges: no {condition} judge rated the stimuli (results/judges/ratings.csv); "
                f"enable a {condition} judge or set study.allocation: balanced"
            )
        missing = [p for p in prompts if p not in block.index or not np.isfinite(block.at[p, "ai_diff"])]
        if missing:
            raise AllocationError(
                f"study.allocation: judges: no {condition} judge differentiation for prompt(s) {missing[:5]} "
                "(a response without a judge rating)"
            )
        out[condition] = block.loc[prompts, "raters_planned"].astype(float)
    return out

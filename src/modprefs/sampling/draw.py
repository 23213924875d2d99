"""Stratified draw of study prompts with screening and same-stratum replacement (paper §3.1).

Strata: the ``long_diff`` stratum holds interactions whose absolute character-length difference
between the two responses is at or above the ``long_percentile``-th percentile of all eligible
interactions (paper: top 10 %, i.e. a difference of at least 449 characters in PRISM's unguided
set); the rest are ``other``. ``round(long_fraction * n_prompts)`` prompts come from
``long_diff`` (half-up rounding), the remainder from ``other``.

Draw: each stratum's pool (sorted by conversation_id) is put in a seeded random order and walked
from the start. Each candidate is screened (:mod:`modprefs.sampling.screening`); a candidate that
fails is logged in ``removals`` with its reason, and the next candidate that passes in the same
stratum is its replacement (``replaced_by``). This is the paper's "draw, review, replace from the
same stratum, re-review" procedure made deterministic.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from modprefs.sampling.screening import ScreeningResult

PROMPT_COLUMNS = ["prompt_id", "conversation_id", "stratum", "chars_0", "chars_1", "abs_char_diff",
                  "history_chars", "history_turns", "draw_order"]
REMOVAL_COLUMNS = ["conversation_id", "stratum", "reason", "detail", "replaced_by"]
REMOVAL_REASONS = ("audio_quality", "other_language", "empty", "harmful")
STRATA = ("long_diff", "other")


class SamplingError(ValueError):
    """The requested sample cannot be drawn (e.g. a stratum runs out of passing candidates)."""


def prompt_id_for(conversation_id: str) -> str:
    """A file-name-safe prompt id: the conversation id with other characters replaced by ``-``."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", str(conversation_id))


def assign_strata(abs_char_diff: pd.Series, long_percentile: float) -> tuple[pd.Series, float]:
    """``long_diff``/``other`` labels and the threshold (characters) at the given percentile."""
    if abs_char_diff.empty:
        raise SamplingError("no interactions to stratify")
    threshold = float(np.percentile(abs_char_diff.to_numpy(dtype=float), long_percentile))
    labels = np.where(abs_char_diff.to_numpy(dtype=float) >= threshold, "long_diff", "other")
    return pd.Series(labels, index=abs_char_diff.index, name="stratum"), threshold


def stratum_quotas(n_prompts: int, long_fraction: float) -> dict[str, int]:
    n_long = int(math.floor(long_fraction * n_prompts + 0.5))
    return {"long_diff": n_long, "other": n_prompts - n_long}


def draw_prompts(interactions: pd.DataFrame, n_prompts: int, long_fraction: float, long_percentile: float,
                 seed: int, screen: Callable[[Mapping[str, Any]], ScreeningResult]
                 ) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """Draw the study's prompts. Returns ``(prompts, removals, info)``.

    ``interactions`` is conversations.parquet; ``screen`` maps one of its rows to a
    :class:`ScreeningResult`. ``prompts`` has :data:`PROMPT_COLUMNS` (long_diff first, each stratum
    in draw order); ``removals`` has :data:`REMOVAL_COLUMNS`; ``info`` holds the threshold and
    pool sizes for the log.
    """
    if n_prompts > len(interactions):
        raise SamplingError(
            f"sampling.n_prompts = {n_prompts} but only {len(interactions)} eligible interactions exist"
        )
    table = interactions.sort_values("conversation_id", kind="stable").reset_index(drop=True)
    strata, threshold = assign_strata(table["abs_char_diff"], long_percentile)
    table = table.assign(stratum=strata.to_numpy())
    quotas = stratum_quotas(n_prompts, long_fraction)
    rng = np.random.default_rng([seed, 0x5A3D])
    chosen: list[dict[str, Any]] = []
    removals: list[dict[str, Any]] = []
    for stratum in STRATA:
        pool = table[table["stratum"] == stratum]
        order = rng.permutation(len(pool))
        pending: list[dict[str, Any]] = []  # removals waiting for their replacement
        taken = 0
        for pos in order:
            if taken == quotas[stratum]:
                break
            row = pool.iloc[int(pos)]
            result = screen(row)
            if result.reason is None:
                for rem in pending:
                    rem["replaced_by"] = row["conversation_id"]
                pending = []
                chosen.append({**row.to_dict(), "draw_order": len(chosen)})
                taken += 1
            else:
                if result.reason not in REMOVAL_REASONS:
                    raise ValueError(f"unknown removal reason {result.reason!r}")
                rem = {"conversation_id": row["conversation_id"], "stratum": stratum, "reason": result.reason,
                       "detail": result.detail, "replaced_by": ""}
                removals.append(rem)
                pending.append(rem)
        if taken < quotas[stratum]:
            raise SamplingError(
                f"stratum {stratum!r}: needed {quotas[stratum]} prompts but only {taken} of {len(pool)} "
                f"candidates passed screening ({len(removals)} removed so far); lower sampling.n_prompts "
                "or sampling.long_fraction, or add data"
            )
    prompts = pd.DataFrame.from_records(chosen)
    prompts.insert(0, "prompt_id", prompts["conversation_id"].map(prompt_id_for))
    if prompts["prompt_id"].duplicated().any():
        raise SamplingError("two conversation ids map to the same prompt id after sanitising")
    info = {"threshold_chars": threshold, "quotas": quotas,
            "pool_sizes": table["stratum"].value_counts().to_dict(), "n_removed": len(removals)}
    return prompts[PROMPT_COLUMNS], pd.DataFrame.from_records(removals, columns=REMOVAL_COLUMNS), info

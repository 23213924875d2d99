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

Audio replacement: a prompt whose clips fail audio QC is replaced by :func:`replace_prompts`, which
walks the same seeded order of its stratum past every conversation already drawn or removed (the
review rounds live in :mod:`modprefs.sampling.audio_review`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from modprefs.errors import UserInputError
from modprefs.sampling.screening import ScreeningResult

PROMPT_COLUMNS = [
    "prompt_id",
    "conversation_id",
    "stratum",
    "chars_0",
    "chars_1",
    "abs_char_diff",
    "history_chars",
    "history_turns",
    "draw_order",
]
REMOVAL_COLUMNS = ["conversation_id", "stratum", "reason", "detail", "replaced_by"]
REMOVAL_REASONS = ("audio_quality", "other_language", "empty", "harmful")
STRATA = ("long_diff", "other")


class SamplingError(UserInputError):
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


def has_given_strata(interactions: pd.DataFrame) -> bool:
    """The interactions carry the lab's own strata (a pairs table's ``stratum`` column on every item)."""
    return "stratum_given" in interactions.columns and bool(interactions["stratum_given"].notna().all())


def given_stratum_quotas(sizes: Mapping[str, int], n_prompts: int) -> dict[str, int]:
    """Proportional allocation of ``n_prompts`` over the lab's strata (largest remainder; ties by label).

    Each stratum gets ``floor(n * size / total)``, and the prompts left over go to the largest remainders.
    """
    total = sum(sizes.values())
    exact = {s: n_prompts * size / total for s, size in sizes.items()}
    quotas = {s: int(math.floor(v)) for s, v in exact.items()}
    left = n_prompts - sum(quotas.values())
    for s in sorted(exact, key=lambda s: (-(exact[s] - quotas[s]), s))[:left]:
        quotas[s] += 1
    return quotas


def strata_of(interactions: pd.DataFrame, long_percentile: float) -> tuple[pd.Series, float]:
    """Each interaction's stratum and the length threshold: the lab's strata when given (threshold NaN), else
    ``long_diff``/``other`` at the ``long_percentile`` of ``|chars_0 - chars_1|`` (:func:`assign_strata`)."""
    if has_given_strata(interactions):
        return interactions["stratum_given"].astype(str).rename("stratum"), math.nan
    return assign_strata(interactions["abs_char_diff"], long_percentile)


def quotas_for(interactions: pd.DataFrame, strata: pd.Series, n_prompts: int, long_fraction: float) -> dict[str, int]:
    """Prompts per stratum: proportional over the lab's strata, else ``long_fraction`` of them ``long_diff``."""
    if has_given_strata(interactions):
        return given_stratum_quotas({str(k): int(v) for k, v in strata.value_counts().items()}, n_prompts)
    return stratum_quotas(n_prompts, long_fraction)


def sample_size_problems(
    interactions: pd.DataFrame, n_prompts: int, long_fraction: float, long_percentile: float
) -> list[str]:
    """Why ``n_prompts`` cannot be drawn from ``interactions`` before any screening (empty list: it can).

    The eligible interactions (conversations.parquet) must number at least ``n_prompts``, and each
    stratum at least its quota. Screening can only remove candidates, so this is a necessary
    condition, cheap enough to check when the workflow starts.
    """
    n = len(interactions)
    if n_prompts > n:
        return [
            f"sampling.n_prompts: {n_prompts} prompts requested but only {n} eligible conversations "
            "exist in data.source (before text screening, which can only remove more); lower "
            "sampling.n_prompts or add data"
        ]
    strata, threshold = strata_of(interactions, long_percentile)
    sizes = strata.value_counts().to_dict()
    problems = []
    for stratum, quota in quotas_for(interactions, strata, n_prompts, long_fraction).items():
        have = int(sizes.get(stratum, 0))
        if quota > have:
            problems.append(
                f"sampling.long_fraction: stratum {stratum!r} needs {quota} of the {n_prompts} prompts but holds "
                f"only {have} eligible conversations (|chars_0 - chars_1| "
                f"{'>=' if stratum == 'long_diff' else '<'} {threshold:.0f}, sampling.long_percentile "
                f"{long_percentile}); lower sampling.n_prompts or sampling.long_fraction, or add data"
            )
    return problems


def _ordered_pools(
    interactions: pd.DataFrame, long_percentile: float, seed: int
) -> tuple[dict[str, pd.DataFrame], float, pd.DataFrame]:
    """Each stratum's candidates in their seeded draw order, the stratum threshold, and the table.

    The order is a pure function of (interactions, long_percentile, seed), so the first draw and
    every later replacement round walk the same sequence.
    """
    table = interactions.sort_values("conversation_id", kind="stable").reset_index(drop=True)
    strata, threshold = strata_of(table, long_percentile)
    table = table.assign(stratum=strata.to_numpy())
    rng = np.random.default_rng([seed, 0x5A3D])
    pools = {}
    for stratum in STRATA if not has_given_strata(table) else sorted(table["stratum"].unique()):
        pool = table[table["stratum"] == stratum]
        pools[stratum] = pool.iloc[rng.permutation(len(pool))]
    return pools, threshold, table


def _walk(
    pool: pd.DataFrame,
    stratum: str,
    needed: int,
    skip: set[str],
    screen: Callable[[Mapping[str, Any]], ScreeningResult],
    removals: list[dict[str, Any]],
    pending: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """Take ``needed`` passing candidates from ``pool`` in order, skipping ``skip`` conversation ids.

    Candidates that fail screening are appended to ``removals``; every entry of ``pending`` (removals
    awaiting a replacement, this list included) gets the next passing candidate as ``replaced_by``.
    """
    taken: list[dict[str, Any]] = []
    for _, row in pool.iterrows():
        if len(taken) == needed:
            break
        if str(row["conversation_id"]) in skip:
            continue
        result = screen(row)
        if result.reason is None:
            for rem in pending:
                rem["replaced_by"] = row["conversation_id"]
            pending.clear()
            taken.append(row.to_dict())
        else:
            if result.reason not in REMOVAL_REASONS:
                raise ValueError(f"unknown removal reason {result.reason!r}")
            rem = {
                "conversation_id": row["conversation_id"],
                "stratum": stratum,
                "reason": result.reason,
                "detail": result.detail,
                "replaced_by": "",
            }
            removals.append(rem)
            pending.append(rem)
    return taken


def draw_prompts(
    interactions: pd.DataFrame,
    n_prompts: int,
    long_fraction: float,
    long_percentile: float,
    seed: int,
    screen: Callable[[Mapping[str, Any]], ScreeningResult],
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """Draw the study's prompts. Returns ``(prompts, removals, info)``.

    ``interactions`` is conversations.parquet; ``screen`` maps one of its rows to a
    :class:`ScreeningResult`. ``prompts`` has :data:`PROMPT_COLUMNS` (long_diff first, each stratum
    in draw order); ``removals`` has :data:`REMOVAL_COLUMNS`; ``info`` holds the threshold and
    pool sizes for the log.
    """
    problems = sample_size_problems(interactions, n_prompts, long_fraction, long_percentile)
    if problems:
        raise SamplingError("; ".join(problems))
    pools, threshold, table = _ordered_pools(interactions, long_percentile, seed)
    quotas = quotas_for(table, table["stratum"], n_prompts, long_fraction)
    chosen: list[dict[str, Any]] = []
    removals: list[dict[str, Any]] = []
    for stratum in pools:
        taken = _walk(pools[stratum], stratum, quotas[stratum], set(), screen, removals, [])
        if len(taken) < quotas[stratum]:
            raise SamplingError(
                f"stratum {stratum!r}: needed {quotas[stratum]} prompts but only {len(taken)} of "
                f"{len(pools[stratum])} candidates passed text screening ({removal_summary(removals, stratum)}); "
                "if the screening removed most of them, look at those responses (removals detail) or "
                "sampling.screening, else lower sampling.n_prompts or sampling.long_fraction, or add data"
            )
        chosen.extend({**row, "draw_order": len(chosen) + i} for i, row in enumerate(taken))
    prompts = _prompt_table(chosen)
    info = {
        "threshold_chars": threshold,
        "strata": "given (the pairs table's stratum column)" if has_given_strata(table) else "length difference",
        "quotas": quotas,
        "pool_sizes": table["stratum"].value_counts().to_dict(),
        "n_removed": len(removals),
    }
    return prompts, pd.DataFrame.from_records(removals, columns=REMOVAL_COLUMNS), info


def take_all_prompts(interactions: pd.DataFrame, long_percentile: float, seed: int) -> tuple[pd.DataFrame, dict]:
    """Every interaction as a prompt (a lab's pool no larger than ``sampling.n_prompts``): no draw, no screening.

    Prompts come stratum by stratum in the same seeded order a draw walks (:func:`_ordered_pools`), so that a
    study of the whole pool and a draw of it list prompts alike. Returns ``(prompts, info)``.
    """
    pools, threshold, table = _ordered_pools(interactions, long_percentile, seed)
    chosen: list[dict[str, Any]] = []
    for pool in pools.values():
        chosen.extend({**row.to_dict(), "draw_order": len(chosen) + i} for i, (_, row) in enumerate(pool.iterrows()))
    info = {
        "threshold_chars": threshold,
        "every_item": len(chosen),
        "pool_sizes": table["stratum"].value_counts().to_dict(),
    }
    return _prompt_table(chosen), info


def removal_summary(removals: list[dict[str, Any]], stratum: str) -> str:
    """``"removed: empty 40 (e.g. response 0 has no letter ...), harmful 2"`` for one stratum's removals."""
    rows = [r for r in removals if r["stratum"] == stratum]
    if not rows:
        return "none removed"
    counts: dict[str, int] = {}
    example: dict[str, str] = {}
    for r in rows:
        counts[r["reason"]] = counts.get(r["reason"], 0) + 1
        example.setdefault(r["reason"], str(r["detail"])[:80])
    parts = [f"{reason} {n} (e.g. {example[reason]})" for reason, n in sorted(counts.items(), key=lambda kv: -kv[1])]
    return "removed: " + ", ".join(parts)


def _prompt_table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    prompts = pd.DataFrame.from_records(rows, columns=[c for c in PROMPT_COLUMNS if c != "prompt_id"])
    prompts.insert(0, "prompt_id", prompts["conversation_id"].map(prompt_id_for))
    if prompts["prompt_id"].duplicated().any():
        raise SamplingError("two conversation ids map to the same prompt id after sanitising")
    return prompts[PROMPT_COLUMNS]


def upcoming_candidates(
    interactions: pd.DataFrame, long_percentile: float, seed: int, skip: set[str], per_stratum: int
) -> pd.DataFrame:
    """The next ``per_stratum`` candidates of each stratum in the seeded draw order, ``skip`` (conversation ids
    already drawn or removed) left out: the rows :func:`replace_prompts` would screen first (rows of
    ``interactions``, with ``stratum``)."""
    pools, _, _ = _ordered_pools(interactions, long_percentile, seed)
    heads = [pool[~pool["conversation_id"].astype(str).isin(skip)].head(max(0, per_stratum)) for pool in pools.values()]
    return pd.concat(heads, ignore_index=True) if heads else interactions.iloc[:0]


def replace_prompts(
    interactions: pd.DataFrame,
    failed: Mapping[str, str],
    used: set[str],
    current: pd.DataFrame,
    long_percentile: float,
    seed: int,
    screen: Callable[[Mapping[str, Any]], ScreeningResult],
    first_draw_order: int,
) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Replace prompts whose audio failed QC, each from its own stratum (paper §3.1, "replace").

    Args:
        interactions: conversations.parquet, as given to :func:`draw_prompts`.
        failed: prompt_id -> QC detail (why its clips failed) for prompts in ``current``.
        used: every conversation id already drawn or removed in any earlier round; never redrawn.
        current: the prompts (PROMPT_COLUMNS) of the round under review.
        long_percentile, seed: as for :func:`draw_prompts` (same values -> same candidate order).
        screen: the text screen, applied to replacement candidates as in the first draw.
        first_draw_order: ``draw_order`` of the first replacement (continues the numbering).

    Returns:
        ``(replacements, removals, unreplaced)``: the new prompts (PROMPT_COLUMNS) in the order of the prompts
        they replace; the removals of this round (REMOVAL_COLUMNS): one ``audio_quality`` row per replaced prompt
        with its ``replaced_by``, plus any text-screened candidates passed over; and the failed prompt ids whose
        stratum has no passing candidate left (every one of them, for the caller to report at once;
        :func:`modprefs.sampling.audio_review.review_round`).
    """
    unknown = sorted(set(failed) - set(current["prompt_id"]))
    if unknown:
        raise ValueError(f"failed prompt(s) {unknown} are not in the round's prompts")
    pools, _, _ = _ordered_pools(interactions, long_percentile, seed)
    skip = {str(c) for c in used} | {str(c) for c in current["conversation_id"]}
    removals: list[dict[str, Any]] = []
    chosen: list[dict[str, Any]] = []
    unreplaced: list[str] = []
    for p in current[current["prompt_id"].isin(list(failed))].itertuples(index=False):
        rem = {
            "conversation_id": p.conversation_id,
            "stratum": p.stratum,
            "reason": "audio_quality",
            "detail": failed[p.prompt_id],
            "replaced_by": "",
        }
        removals.append(rem)
        taken = _walk(pools[p.stratum], p.stratum, 1, skip, screen, removals, [rem])
        skip |= {str(r["conversation_id"]) for r in removals}
        if not taken:
            removals.remove(rem)  # not removed here: the caller decides (audio_qc.on_exhausted)
            unreplaced.append(str(p.prompt_id))
            continue
        skip.add(str(taken[0]["conversation_id"]))
        chosen.append({**taken[0], "draw_order": first_draw_order + len(chosen)})
    return _prompt_table(chosen), pd.DataFrame.from_records(removals, columns=REMOVAL_COLUMNS), unreplaced


def sample_study_prompts(
    interactions: pd.DataFrame,
    sampling: Mapping[str, Any],
    seed: int,
    screen: Callable[[Mapping[str, Any]], ScreeningResult],
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """The first draw as the workflow makes it: a lab's pairs pool no larger than ``sampling.n_prompts`` is used
    whole (:func:`take_all_prompts`: no draw, no screening, nothing removed); any other pool is drawn and screened
    (:func:`draw_prompts`). Returns ``(prompts, removals, info)``."""
    pairs = bool((interactions.get("conversation_type") == "pairs").all()) if len(interactions) else False
    if pairs and len(interactions) <= int(sampling["n_prompts"]):
        prompts, info = take_all_prompts(interactions, float(sampling["long_percentile"]), seed)
        return prompts, pd.DataFrame(columns=REMOVAL_COLUMNS), info
    return draw_prompts(
        interactions,
        int(sampling["n_prompts"]),
        float(sampling["long_fraction"]),
        float(sampling["long_percentile"]),
        seed,
        screen,
    )

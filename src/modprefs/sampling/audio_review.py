"""Audio-QC review of one rendering round: keep, replace or drop each prompt (paper §3.1, automated).

The paper listened to every clip and replaced prompts whose audio had artifacts,
mispronunciations, another language or no output. Here a round's clips go through automatic QC
(:mod:`modprefs.speech.qc`); a prompt with any failing clip is removed with reason
``audio_quality`` and replaced from its own stratum (:func:`modprefs.sampling.draw.replace_prompts`),
and the replacements are rendered and reviewed in the next round. The loop is bounded by
``audio_qc.max_rounds`` replacement rounds; prompts still failing in the last round either stop the
workflow (``on_exhausted: error``, the default) or are dropped without replacement and logged
(``on_exhausted: drop``).

The attention check cannot be replaced: if its clips fail QC the review stops with an error.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from modprefs.errors import UserInputError
from modprefs.sampling.draw import REMOVAL_COLUMNS, replace_prompts, upcoming_candidates
from modprefs.sampling.screening import (
    ScreeningResult,
    known_language_detector,
    language_ids,
    read_language_ids,
    screen_from_config,
)

DECISION_COLUMNS = ["round", "prompt_id", "conversation_id", "stratum", "qc_pass", "detail", "action", "replaced_by"]
ON_EXHAUSTED = ("error", "drop")
PathLike = str | os.PathLike[str]

log = logging.getLogger(__name__)


class AudioReviewError(UserInputError, RuntimeError):
    """The review cannot produce a study whose every clip passes QC (the message says why and what to do)."""


def _is_true(values: pd.Series) -> pd.Series:
    return values.astype(str).str.strip().str.lower().isin(["true", "1"])


def failed_prompts(qc: pd.DataFrame, clips: pd.DataFrame) -> dict[str, str]:
    """``prompt_id -> "clip_id: reasons | clip_id: reasons"`` for every prompt with a failing clip.

    Args:
        qc: QC rows (clip_id, qc_pass, qc_reasons) of the round's clips.
        clips: the round's manifest (clip_id, prompt_id).
    Raises:
        ValueError: a clip of the manifest has no QC row.
    """
    missing = sorted(set(clips["clip_id"]) - set(qc["clip_id"]))
    if missing:
        raise ValueError(f"audio QC has no row for clip(s) {missing}")
    table = clips[["clip_id", "prompt_id"]].merge(
        qc[["clip_id", "qc_pass", "qc_reasons"]], on="clip_id", how="left", validate="one_to_one"
    )
    failing = table[~_is_true(table["qc_pass"])]
    detail: dict[str, list[str]] = {}
    for row in failing.itertuples(index=False):
        detail.setdefault(str(row.prompt_id), []).append(f"{row.clip_id}: {row.qc_reasons}")
    return {pid: " | ".join(parts) for pid, parts in detail.items()}


def used_conversations(earlier: Sequence[pd.DataFrame], prompts: pd.DataFrame) -> tuple[set[str], int]:
    """Conversation ids drawn or removed before a round, and the ``draw_order`` its first replacement gets.

    Args:
        earlier: the tables naming every conversation drawn or removed before the round (prompts.csv,
            screening_removals.csv, earlier rounds' replacements and removals; ``conversation_id``,
            optionally ``draw_order``).
        prompts: the round's prompts (their draw_order counts too).
    """
    used: set[str] = set()
    max_order = -1
    for table in [*earlier, prompts]:
        if table is not prompts:
            used |= set(table["conversation_id"].astype(str))
        if "draw_order" in table.columns and len(table):
            max_order = max(max_order, int(table["draw_order"].astype(int).max()))
    return used, max_order + 1


def review_round(
    round_index: int,
    prompts: pd.DataFrame,
    clips: pd.DataFrame,
    qc: pd.DataFrame,
    interactions: pd.DataFrame,
    used: set[str],
    sampling: Mapping[str, Any],
    seed: int,
    screen: Callable[[Mapping[str, Any]], ScreeningResult],
    max_rounds: int,
    on_exhausted: str = "error",
    first_draw_order: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Review one round.

    Args:
        round_index: 0 for the first draw, ``r`` for the r-th replacement round.
        prompts: the round's prompts (``PROMPT_COLUMNS``): the first draw, or the previous round's
            replacements.
        clips: the round's audio manifest (clip_id, prompt_id); round 0 includes the attention check.
        qc: the round's QC table (clip_id, qc_pass, qc_reasons).
        interactions: conversations.parquet (the candidate pool).
        used: conversation ids drawn or removed in any earlier round (never drawn again).
        sampling: config ``sampling`` (long_percentile is read).
        seed: config ``seed`` (the draw order).
        screen: the text screen for replacement candidates.
        max_rounds: replacement rounds allowed (config ``audio_qc.max_rounds``); a failure in round
            ``max_rounds`` cannot be replaced.
        on_exhausted: ``error`` or ``drop`` (see the module docstring).
        first_draw_order: ``draw_order`` for the first replacement.

    Returns:
        ``(decisions, replacements, removals)``: one row per prompt of the round
        (:data:`DECISION_COLUMNS`; action ``keep``/``replace``/``drop``), the prompts to render in
        the next round (empty when every clip passed), and this round's removals (``REMOVAL_COLUMNS``).
    """
    if on_exhausted not in ON_EXHAUSTED:
        raise ValueError(f"audio_qc.on_exhausted must be one of {ON_EXHAUSTED}, got {on_exhausted!r}")
    failed = failed_prompts(qc, clips)
    _check_attention_clips(failed, prompts)
    empty_prompts = prompts.iloc[0:0]
    removals = pd.DataFrame(columns=REMOVAL_COLUMNS)
    if not failed:
        replacements = empty_prompts
    elif round_index < max_rounds:
        replacements, removals = replace_prompts(
            interactions, failed, used, prompts, float(sampling["long_percentile"]), seed, screen, first_draw_order
        )
    elif on_exhausted == "error":
        raise AudioReviewError(
            f"after {max_rounds} replacement round(s), {len(failed)} prompt(s) still fail audio QC: "
            + "; ".join(f"{pid} ({d})" for pid, d in sorted(failed.items()))
            + ". Raise audio_qc.max_rounds, adjust audio_qc.thresholds, or set audio_qc.on_exhausted: drop "
            "to run the study with fewer prompts."
        )
    else:
        replacements = empty_prompts
        removals = _dropped(prompts, failed, max_rounds)
    return _decisions(round_index, prompts, failed, removals), replacements, removals


def _check_attention_clips(failed: Mapping[str, str], prompts: pd.DataFrame) -> None:
    """Raise :class:`AudioReviewError` when a failed prompt is not the round's (the attention check)."""
    round_ids = set(prompts["prompt_id"].astype(str))
    outside = sorted(pid for pid in failed if pid not in round_ids)
    if outside:
        reasons = "; ".join(failed[pid] for pid in outside)
        fix = (
            "A clip file was damaged after rendering: delete results/audio/rounds/0/shards/0.csv (the shard "
            "holding the attention check) and rerun with --forcerun audio_review to render it again"
            if "unreadable" in reasons
            else "Reword the attention check (config attention_check) or adjust audio_qc.thresholds"
        )
        raise AudioReviewError(f"attention-check clip(s) failed audio QC and cannot be replaced: {reasons}. {fix}.")


def _dropped(prompts: pd.DataFrame, failed: Mapping[str, str], max_rounds: int) -> pd.DataFrame:
    """Removals (``REMOVAL_COLUMNS``) of the failed prompts dropped once the replacement rounds are used up."""
    return pd.DataFrame.from_records(
        [
            {
                "conversation_id": p.conversation_id,
                "stratum": p.stratum,
                "reason": "audio_quality",
                "detail": f"{failed[p.prompt_id]} (dropped: audio_qc.max_rounds = {max_rounds} reached)",
                "replaced_by": "",
            }
            for p in prompts.itertuples(index=False)
            if p.prompt_id in failed
        ],
        columns=REMOVAL_COLUMNS,
    )


def _decisions(
    round_index: int, prompts: pd.DataFrame, failed: Mapping[str, str], removals: pd.DataFrame
) -> pd.DataFrame:
    """One decision row per prompt of the round (:data:`DECISION_COLUMNS`): keep, replace or drop."""
    replaced_by = dict(
        zip(
            removals.loc[removals["reason"] == "audio_quality", "conversation_id"].astype(str),
            removals.loc[removals["reason"] == "audio_quality", "replaced_by"].astype(str),
        )
    )
    decisions = []
    for p in prompts.itertuples(index=False):
        ok = p.prompt_id not in failed
        action = "keep" if ok else ("replace" if replaced_by.get(str(p.conversation_id)) else "drop")
        decisions.append(
            {
                "round": round_index,
                "prompt_id": p.prompt_id,
                "conversation_id": p.conversation_id,
                "stratum": p.stratum,
                "qc_pass": ok,
                "detail": failed.get(p.prompt_id, ""),
                "action": action,
                "replaced_by": replaced_by.get(str(p.conversation_id), ""),
            }
        )
    return pd.DataFrame(decisions, columns=DECISION_COLUMNS)


def final_prompts(first_draw: pd.DataFrame, rounds: list[tuple[pd.DataFrame, pd.DataFrame]]) -> pd.DataFrame:
    """The study's final prompt set after every review round.

    Args:
        first_draw: prompts.csv (round 0's prompts).
        rounds: per round, ``(decisions, replacements)`` as returned by :func:`review_round`.
    Returns:
        The prompts whose clips all passed, in draw order (first draw, then replacements by round).
    """
    frames = [first_draw] + [rep for _, rep in rounds]
    candidates = pd.concat([f for f in frames if len(f)], ignore_index=True)
    decisions = pd.concat([d for d, _ in rounds], ignore_index=True)
    kept = set(decisions.loc[decisions["action"] == "keep", "prompt_id"].astype(str))
    undecided = sorted(set(candidates["prompt_id"].astype(str)) - set(decisions["prompt_id"].astype(str)))
    if undecided:
        raise ValueError(f"prompt(s) {undecided} were drawn but never reviewed (is a round missing?)")
    return candidates[candidates["prompt_id"].astype(str).isin(kept)].reset_index(drop=True)


#: review rounds whose candidates the first draw identifies languages for (:func:`upcoming_language_ids`): the
#: default ``audio_qc.max_rounds``. A fixed number, not ``max_rounds`` itself, so that raising ``max_rounds`` (as an
#: exhausted review's message advises) does not change the first draw's job and plan every rendering again; a
#: candidate beyond it is identified by lingua in its review round, with the same result.
LANGUAGE_LOOKAHEAD_ROUNDS = 3


def upcoming_language_ids(
    interactions: pd.DataFrame,
    sampling: Mapping[str, Any],
    seed: int,
    first_draw: pd.DataFrame,
    screening_removals: pd.DataFrame,
    rounds: int = LANGUAGE_LOOKAHEAD_ROUNDS,
) -> pd.DataFrame:
    """The languages (:func:`~modprefs.sampling.screening.language_ids`) of the responses of the candidates the
    review rounds would draw next: each round replaces at most every prompt of a stratum, so ``n_prompts`` x
    ``rounds`` candidates per stratum after the first draw and its screening removals, in draw order."""
    skip = {str(c) for c in first_draw["conversation_id"]} | {str(c) for c in screening_removals["conversation_id"]}
    upcoming = upcoming_candidates(
        interactions, float(sampling["long_percentile"]), seed, skip, int(sampling["n_prompts"]) * int(rounds)
    )
    return language_ids([*upcoming["text_0"], *upcoming["text_1"]])


def review_round_files(
    round_index: int,
    prompts: PathLike,
    shards: Sequence[PathLike],
    qc: Sequence[PathLike],
    used: Sequence[PathLike],
    conversations: PathLike,
    harmful_terms: str | Path,
    sampling: Mapping[str, Any],
    seed: int,
    max_rounds: int,
    on_exhausted: str,
    language_ids: PathLike | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """:func:`review_round` on the workflow's files (the round's prompts, shard manifests, QC tables, the
    tables of earlier draws and removals, the candidate pool); logs each action and the round's counts.
    ``language_ids``: the first draw's language table of upcoming candidates (looked up before lingua).

    Returns ``(decisions, replacements, removals)`` as :func:`review_round` does.
    """
    read: dict[str, Any] = dict(
        dtype={"prompt_id": str, "conversation_id": str, "clip_id": str, "replaced_by": str}, keep_default_na=False
    )
    round_prompts = pd.read_csv(prompts, **read)
    clips, qc_table = (pd.concat([pd.read_csv(p, **read) for p in paths], ignore_index=True) for paths in (shards, qc))
    used_ids, first_order = used_conversations([pd.read_csv(p, **read) for p in used], round_prompts)
    known = read_language_ids(language_ids) if language_ids else None
    screen = screen_from_config(sampling.get("screening", {}), harmful_terms, known_language_detector(known))
    decisions, replacements, removals = review_round(
        round_index,
        round_prompts,
        clips,
        qc_table,
        pd.read_parquet(conversations),
        used_ids,
        sampling,
        seed,
        screen,
        max_rounds,
        on_exhausted,
        first_order,
    )
    for d in decisions[decisions["action"] != "keep"].itertuples():
        log.info(
            "round %d: %s %s (%s)%s",
            round_index,
            d.action,
            d.prompt_id,
            d.detail,
            f" -> {d.replaced_by}" if d.replaced_by else "",
        )
    log.info(
        "round %d: %d prompts reviewed, %d kept, %d replacements to render",
        round_index,
        len(decisions),
        int((decisions["action"] == "keep").sum()),
        len(replacements),
    )
    return decisions, replacements, removals


def final_sample_files(
    first_draw: PathLike, decisions: Sequence[PathLike], replacements: Sequence[PathLike], removals: Sequence[PathLike]
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(final prompts, every removal in order, every round's decisions) from the workflow's files.

    ``removals``: the first draw's screening removals, then each review round's removals.
    """
    read: dict[str, Any] = dict(
        dtype={"prompt_id": str, "conversation_id": str, "replaced_by": str}, keep_default_na=False
    )
    round_decisions = [pd.read_csv(p, **read) for p in decisions]
    round_replacements = [pd.read_csv(p, **read) for p in replacements]
    prompts = final_prompts(pd.read_csv(first_draw, **read), list(zip(round_decisions, round_replacements)))
    all_removals = pd.concat([pd.read_csv(p, **read) for p in removals], ignore_index=True)
    return prompts, all_removals, pd.concat(round_decisions, ignore_index=True)

"""Audio-QC review of one rendering round: keep, replace or drop each prompt (paper §3.1, automated).

The paper listened to every clip and replaced prompts whose audio had artifacts,
mispronunciations, another language or no output. Here a round's clips go through automatic QC
(:mod:`modprefs.speech.qc`); a prompt with any failing clip is removed with reason
``audio_quality`` and replaced from its own stratum (:func:`modprefs.sampling.draw.replace_prompts`),
and the replacements are rendered and reviewed in the next round. The loop is bounded by
``audio_qc.max_rounds`` replacement rounds. A failing prompt that cannot be replaced -- in the last round, or
because its stratum has no candidate left (a lab's pairs table used whole has none at all) -- is *exhausted*, and
every exhausted prompt of the round is handled at once by ``audio_qc.on_exhausted``:

- ``error`` (the default): the workflow stops with one message listing every failing clip: its item and side,
  for a lab's own audio the table's file and row and the audio file, each failed measure with its threshold and
  the ``audio_qc.thresholds`` key that sets it (:func:`exhausted_message`);
- ``drop``: the prompts leave the study without replacement (removals.csv says why);
- ``keep``: the prompts stay in the study with their failing clips, flagged (``action`` ``keep_failing`` in
  review.csv, ``qc_pass`` False in qc.csv and the manifest; the report says how many).

The attention check cannot be replaced: if its clips fail QC the review stops with an error.
"""

from __future__ import annotations

import logging
import os
import re
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
ON_EXHAUSTED = ("error", "drop", "keep")
#: decisions that keep a prompt in the study
KEPT_ACTIONS = ("keep", "keep_failing")
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
        on_exhausted: ``error``, ``drop`` or ``keep`` (see the module docstring).
        first_draw_order: ``draw_order`` for the first replacement.

    Returns:
        ``(decisions, replacements, removals)``: one row per prompt of the round
        (:data:`DECISION_COLUMNS`; action ``keep``/``replace``/``drop``/``keep_failing``), the prompts to render in
        the next round (empty when every clip passed), and this round's removals (``REMOVAL_COLUMNS``).
    """
    if on_exhausted not in ON_EXHAUSTED:
        raise ValueError(f"audio_qc.on_exhausted must be one of {ON_EXHAUSTED}, got {on_exhausted!r}")
    failed = failed_prompts(qc, clips)
    _check_attention_clips(failed, prompts)
    replacements = prompts.iloc[0:0]
    removals = pd.DataFrame(columns=REMOVAL_COLUMNS)
    exhausted: list[str] = sorted(failed) if round_index >= max_rounds else []
    if failed and round_index < max_rounds:
        replacements, removals, exhausted = replace_prompts(
            interactions, failed, used, prompts, float(sampling["long_percentile"]), seed, screen, first_draw_order
        )
    if exhausted and on_exhausted == "error":
        why = _exhaustion(interactions, used, prompts, round_index, max_rounds)
        raise AudioReviewError(exhausted_message(exhausted, prompts, clips, qc, why))
    if exhausted and on_exhausted == "drop":
        dropped = _dropped(
            prompts,
            {pid: failed[pid] for pid in exhausted},
            f"audio_qc.on_exhausted: drop ({why_short(round_index, max_rounds)})",
        )
        removals = (
            pd.concat([df for df in (removals, dropped) if len(df)], ignore_index=True) if len(dropped) else removals
        )
    kept_failing = set(exhausted) if on_exhausted == "keep" else set()
    return _decisions(round_index, prompts, failed, removals, kept_failing), replacements, removals


def why_short(round_index: int, max_rounds: int) -> str:
    """Why a failing prompt was not replaced, in a removal's detail."""
    return f"audio_qc.max_rounds = {max_rounds} reached" if round_index >= max_rounds else "no candidate left"


def _exhaustion(
    interactions: pd.DataFrame, used: set[str], prompts: pd.DataFrame, round_index: int, max_rounds: int
) -> str:
    """Why the round's failing prompts cannot be replaced, as the error says it."""
    ids = set(interactions["conversation_id"].astype(str))
    drawn = used | set(prompts["conversation_id"].astype(str))
    pairs = "conversation_type" in interactions and (interactions["conversation_type"] == "pairs").all()
    if ids <= drawn and pairs:
        return "the pairs table is used whole (sampling.n_prompts >= its items): no other item can take their place"
    if round_index >= max_rounds:
        return f"after {max_rounds} replacement round(s) (audio_qc.max_rounds)"
    return "their strata have no candidate left to draw"


_REASON = re.compile(r"^(?P<metric>\w+) (?P<value>\S+) (?P<op>[<>]) (?P<kind>min|max) (?P<limit>\S+)$")


def reason_with_key(reason: str) -> str:
    """``"wer 0.42 > max 0.15"`` -> ``"wer 0.42 > max 0.15 (audio_qc.thresholds.max_wer)"``; others unchanged."""
    m = _REASON.match(reason.strip())
    return f"{reason.strip()} (audio_qc.thresholds.{m['kind']}_{m['metric']})" if m else reason.strip()


def exhausted_message(
    exhausted: Sequence[str], prompts: pd.DataFrame, clips: pd.DataFrame, qc: pd.DataFrame, why: str
) -> str:
    """One message naming every failing clip of the exhausted prompts: item and side, for a lab's audio its table
    row and file, each failed measure with its threshold and key; then what the lab can do."""
    conversation = dict(zip(prompts["prompt_id"].astype(str), prompts["conversation_id"].astype(str)))
    table = clips.merge(qc[["clip_id", "qc_pass", "qc_reasons"]], on="clip_id", how="left", validate="one_to_one")
    failing = table[table["prompt_id"].astype(str).isin(set(exhausted)) & ~_is_true(table["qc_pass"])]
    lines = []
    for clip in failing.sort_values(["prompt_id", "response"]).itertuples(index=False):
        where = f"item {conversation.get(str(clip.prompt_id), clip.prompt_id)!r} side {clip.response}"
        source_file = str(getattr(clip, "source_file", "") or "")
        if source_file:
            row = getattr(clip, "source_row", "")
            row_text = f"row {int(float(row))}, " if str(row) not in ("", "nan") else ""
            where += f" ({row_text}column audio_{clip.response}: {source_file})"
        reasons = "; ".join(reason_with_key(r) for r in str(clip.qc_reasons).split("; ") if r.strip())
        lines.append(f"  {where}: {reasons}")
    given = failing["source_file"].astype(str).ne("").any() if "source_file" in failing else False
    remedy = (
        "Fix or re-record these files; or set the audio_qc.thresholds keys named above for your recordings "
        "(README, 'Your own study'); or set audio_qc.on_exhausted: drop (the study without these items) or keep "
        "(keep them, flagged as failing QC in results/audio/qc.csv and the report)."
        if given
        else "Raise audio_qc.max_rounds or add data, adjust the audio_qc.thresholds keys named above, or set "
        "audio_qc.on_exhausted: drop (fewer prompts) or keep (keep them, flagged as failing QC)."
    )
    return (
        f"{len(failing)} clip(s) of {len(exhausted)} prompt(s) fail audio QC and cannot be replaced: {why}.\n"
        + "\n".join(lines)
        + f"\n{remedy}"
    )


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


def _dropped(prompts: pd.DataFrame, failed: Mapping[str, str], why: str) -> pd.DataFrame:
    """Removals (``REMOVAL_COLUMNS``) of the failed prompts dropped without replacement (``why``: the detail)."""
    return pd.DataFrame.from_records(
        [
            {
                "conversation_id": p.conversation_id,
                "stratum": p.stratum,
                "reason": "audio_quality",
                "detail": f"{failed[p.prompt_id]} (dropped: {why})",
                "replaced_by": "",
            }
            for p in prompts.itertuples(index=False)
            if p.prompt_id in failed
        ],
        columns=REMOVAL_COLUMNS,
    )


def _decisions(
    round_index: int,
    prompts: pd.DataFrame,
    failed: Mapping[str, str],
    removals: pd.DataFrame,
    kept_failing: set[str] = frozenset(),  # type: ignore[assignment]
) -> pd.DataFrame:
    """One decision row per prompt of the round (:data:`DECISION_COLUMNS`): keep, replace, drop, or keep_failing
    (``audio_qc.on_exhausted: keep``)."""
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
        if p.prompt_id in kept_failing:
            action = "keep_failing"
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
        The prompts whose clips all passed, or that ``audio_qc.on_exhausted: keep`` kept with failing clips
        (``qc_kept_failing`` True), in draw order (first draw, then replacements by round).
    """
    frames = [first_draw] + [rep for _, rep in rounds]
    candidates = pd.concat([f for f in frames if len(f)], ignore_index=True)
    decisions = pd.concat([d for d, _ in rounds], ignore_index=True)
    kept = set(decisions.loc[decisions["action"].isin(KEPT_ACTIONS), "prompt_id"].astype(str))
    undecided = sorted(set(candidates["prompt_id"].astype(str)) - set(decisions["prompt_id"].astype(str)))
    if undecided:
        raise ValueError(f"prompt(s) {undecided} were drawn but never reviewed (is a round missing?)")
    failing = set(decisions.loc[decisions["action"] == "keep_failing", "prompt_id"].astype(str))
    out = candidates[candidates["prompt_id"].astype(str).isin(kept)].reset_index(drop=True)
    return out.assign(qc_kept_failing=out["prompt_id"].astype(str).isin(failing))


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

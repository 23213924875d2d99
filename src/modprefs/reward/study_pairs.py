"""Study pairs (builder (a) of :mod:`modprefs.reward.pairs`): for every prompt and labelling condition (human
text, human audio, AI judge text, AI judge audio) the response with the higher mean rating is chosen, the gap of
the means (in the study's rating-scale units) its margin; the module docstring of :mod:`modprefs.reward.pairs`
gives the details.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from modprefs.reward.pairs import (
    PairDataError,
    normalise_id,
    pair_frame,
    require_columns,
)
from modprefs.scale import RatingScale
from modprefs.study.terms import PAPER_COLUMN_ORDER as MODALITIES

log = logging.getLogger(__name__)


def study_context(conversations: pd.DataFrame, prompts: pd.DataFrame | None = None) -> dict[str, list[dict]]:
    """prompt_id -> context turns (history as {role, text, audio=None}, then the prompt as a user turn)."""
    require_columns(conversations, ["conversation_id", "history", "prompt"], "conversations.parquet")
    by_conv = {str(r.conversation_id): r for r in conversations.itertuples(index=False)}
    if prompts is not None:
        require_columns(prompts, ["prompt_id", "conversation_id"], "prompts.csv")
        mapping = {str(p): str(c) for p, c in zip(prompts["prompt_id"], prompts["conversation_id"])}
    else:
        mapping = {normalise_id(c): c for c in by_conv}
    out = {}
    for pid, cid in mapping.items():
        row = by_conv.get(cid)
        if row is None:
            continue
        history = row.history if row.history is not None else []
        turns = [{"role": str(t["role"]), "text": str(t["content"]), "audio": None} for t in list(history)]
        turns.append({"role": "user", "text": str(row.prompt), "audio": None})
        out[pid] = turns
    return out


def _mean_ratings(df: pd.DataFrame, modality_col: str) -> pd.DataFrame:
    return (
        df.groupby([modality_col, "prompt_id", "clip_id"], as_index=False)
        .agg(rating=("rating", "mean"), n=("rating", "size"))
        .rename(columns={modality_col: "modality"})
    )


def _number(value: Any) -> float | None:
    """A float, or None for a missing value (the pair tables' optional numeric columns)."""
    x = pd.to_numeric(pd.Series([value]), errors="coerce").iloc[0]
    return None if pd.isna(x) else float(x)


def study_criterion(criterion: str, source: str, modality: str, by_modality: bool, by_source: bool) -> str:
    """The instruction a study pair is trained under: ``quality``, ``quality_text`` / ``quality_audio`` per label
    modality, and ``quality_judge`` / ``quality_text_judge`` ... for the AI judges' labels per source (the humans'
    keep the plain name). Conditioned this way no two label sets of a prompt share an instruction."""
    name = f"{criterion}_{modality}" if by_modality else criterion
    return f"{name}_{source}" if by_source and source != "human" else name


def _pairs_from_means(
    means: pd.DataFrame,
    source: str,
    stim: pd.DataFrame,
    manifest: pd.DataFrame,
    context: Mapping[str, list[dict]],
    min_gap: Mapping[str, float],
    criterion: str,
    skipped: dict[str, int],
    by_modality: bool = False,
    by_source: bool = False,
) -> list[dict[str, Any]]:
    clip = manifest.set_index("clip_id")
    by_clip = stim.set_index("clip_id")
    chars = by_clip["n_chars"]
    response = by_clip["response"] if "response" in by_clip else pd.Series(dtype=float)
    prism = by_clip["prism_score"] if "prism_score" in by_clip else pd.Series(dtype=float)
    rows = []
    for (modality, pid), g in means.groupby(["modality", "prompt_id"], sort=True):
        key = f"{source}_{modality}"
        if len(g) != 2:
            skipped[f"{key}: prompt without two rated clips"] = (
                skipped.get(f"{key}: prompt without two rated clips", 0) + 1
            )
            continue
        g = g.sort_values("rating", ascending=False)
        hi, lo = g.iloc[0], g.iloc[1]
        gap = float(hi.rating - lo.rating)
        if gap <= 0:
            skipped[f"{key}: tie"] = skipped.get(f"{key}: tie", 0) + 1
            continue
        if gap < float(min_gap.get(modality, 0.0)):
            skipped[f"{key}: gap below min_gap"] = skipped.get(f"{key}: gap below min_gap", 0) + 1
            continue
        missing = [c for c in (hi.clip_id, lo.clip_id) if c not in clip.index]
        if missing:
            raise PairDataError(f"audio manifest.csv has no row for clip(s) {missing} (rated in the {key} labels)")
        rows.append(
            {
                "pair_id": f"{source}:{modality}:{pid}",
                "criterion": study_criterion(criterion, source, str(modality), by_modality, by_source),
                "category": key,
                "source": source,
                "label_modality": modality,
                "group": str(pid),
                "prompt_id": str(pid),
                "context": context.get(str(pid), []),
                "chosen_audio": str(clip.at[hi.clip_id, "path"]),
                "chosen_text": str(clip.at[hi.clip_id, "spoken_text"]),
                "chosen_transform": None,
                "chosen_clip_id": str(hi.clip_id),
                "chosen_chars": int(chars.get(hi.clip_id, 0)),
                "rejected_audio": str(clip.at[lo.clip_id, "path"]),
                "rejected_text": str(clip.at[lo.clip_id, "spoken_text"]),
                "rejected_transform": None,
                "rejected_clip_id": str(lo.clip_id),
                "rejected_chars": int(chars.get(lo.clip_id, 0)),
                "margin": gap,
                "n_raters": int(min(hi.n, lo.n)),
                "chosen_response": _number(response.get(hi.clip_id)),
                "rejected_response": _number(response.get(lo.clip_id)),
                "chosen_prism": _number(prism.get(hi.clip_id)),
                "rejected_prism": _number(prism.get(lo.clip_id)),
            }
        )
    return rows


def _human_ratings(ratings: pd.DataFrame, stim: pd.DataFrame) -> pd.DataFrame:
    """The human ratings of the study's clips (conditions checked; no attention check, no missing rating)."""
    require_columns(ratings, ["participant_id", "condition", "prompt_id", "clip_id", "rating"], "ratings.csv")
    r = ratings.astype({"prompt_id": str, "clip_id": str})
    bad = sorted(set(r["condition"].dropna().astype(str)) - set(MODALITIES))
    if bad:
        raise PairDataError(f"ratings.csv column condition has value(s) {bad}; expected text/audio")
    r = r[r["clip_id"].isin(stim["clip_id"]) & r["rating"].notna()]
    if "trial" in r.columns:
        r = r[r["trial"] != 0]
    return r


def _judge_ratings(judges: pd.DataFrame, stim: pd.DataFrame, scale: RatingScale | None = None) -> pd.DataFrame:
    """The AI judges' successful numeric response-quality ratings of the study's clips (1–100; on ``scale``
    when one other than the paper's is given)."""
    require_columns(
        judges, ["modality", "kind", "prompt_id", "clip_id", "sample", "rating", "status"], "judges ratings.csv"
    )
    j = judges.astype({"prompt_id": str, "clip_id": str})
    j = j[
        (j["kind"] == "response_quality")
        & (j["status"] == "ok")
        & j["rating"].notna()
        & j["clip_id"].isin(stim["clip_id"])
    ]
    j = j.assign(rating=pd.to_numeric(j["rating"], errors="coerce")).dropna(subset=["rating"])
    if scale is not None and not scale.is_paper:
        j = j.assign(rating=scale.from_paper_units(j["rating"].to_numpy(float), snap=False))
    return j


def study_pairs(
    ratings: pd.DataFrame | None,
    stimuli: pd.DataFrame,
    manifest: pd.DataFrame,
    conversations: pd.DataFrame,
    prompts: pd.DataFrame | None = None,
    judges: pd.DataFrame | None = None,
    min_gap: Mapping[str, float] | None = None,
    criterion: str = "quality",
    sources: Sequence[str] = ("human", "judge"),
    criterion_by_modality: bool = False,
    report: dict[str, Any] | None = None,
    scale: RatingScale | None = None,
    criterion_by_source: bool = False,
) -> pd.DataFrame:
    """Pairs from human text/audio ratings and AI judge ratings (see the module docs).

    ``min_gap``: {"text": x, "audio": y} decisiveness thresholds on the mean-rating gap, in units of the
    study's rating scale (``margin`` is in them too). ``scale``: the study's rating scale (``study.scale``); on
    another scale than the paper's 1–100 the judges' 1–100 ratings are mapped onto it (None: ratings as given).
    ``criterion_by_modality``: label pairs ``{criterion}_text`` / ``{criterion}_audio`` (a reader's vs a
    listener's judgement, two instructions) instead of one shared criterion. Text and audio labels of
    the same prompt often disagree (the study's point); under one instruction they are contradictory
    pairs on identical inputs. ``criterion_by_source``: the AI judges' pairs get their own instruction
    (``{criterion}[_{modality}]_judge``), since judges and humans disagree on some prompts (the workflow's
    defaults turn both on: :func:`contradictions` finds no pair set of them on identical inputs).
    ``report`` (optional dict) receives counts of pairs made and prompts skipped, by reason.
    """
    min_gap = {"text": 0.0, "audio": 0.0, **(min_gap or {})}
    require_columns(stimuli, ["prompt_id", "clip_id", "response", "n_chars"], "stimuli.csv")
    require_columns(manifest, ["clip_id", "path", "spoken_text"], "audio manifest.csv")
    stim = stimuli.astype({"prompt_id": str, "clip_id": str})
    manifest = manifest.astype({"clip_id": str})
    context = study_context(conversations, prompts)
    skipped: dict[str, int] = {}
    rows: list[dict[str, Any]] = []
    if "human" in sources and ratings is not None:
        rows += _pairs_from_means(
            _mean_ratings(_human_ratings(ratings, stim), "condition"),
            "human",
            stim,
            manifest,
            context,
            min_gap,
            criterion,
            skipped,
            criterion_by_modality,
            criterion_by_source,
        )
    if "judge" in sources and judges is not None:
        rows += _pairs_from_means(
            _mean_ratings(_judge_ratings(judges, stim, scale), "modality"),
            "judge",
            stim,
            manifest,
            context,
            min_gap,
            criterion,
            skipped,
            criterion_by_modality,
            criterion_by_source,
        )
    out = pair_frame(rows)
    if report is not None:
        report.update(
            {
                "pairs": int(len(out)),
                "by_category": out["category"].value_counts().to_dict(),
                "skipped": skipped,
                "min_gap": dict(min_gap),
            }
        )
    return out

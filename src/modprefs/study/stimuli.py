"""The final stimulus set: one row per rated clip, joining sampling, data and audio manifest."""

from __future__ import annotations

import pandas as pd

STIMULUS_COLUMNS = [
    "prompt_id",
    "clip_id",
    "response",
    "stratum",
    "n_chars",
    "n_chars_spoken",
    "duration_s",
    "model_name",
    "prism_score",
    "history_chars",
    "history_turns",
]


def clip_id_for(prompt_id: str, response: int) -> str:
    return f"{prompt_id}_{int(response)}"


def build_stimuli(prompts: pd.DataFrame, interactions: pd.DataFrame, manifest: pd.DataFrame) -> pd.DataFrame:
    """Stimuli table (:data:`STIMULUS_COLUMNS`), in prompts.csv order, response 0 then 1.

    ``n_chars`` is the original response text's length (as the paper); ``n_chars_spoken`` and
    ``duration_s`` come from the audio manifest. A pairs source adds ``transcript``: ``given`` (the table's text)
    or ``asr`` (an audio-only side, whose text condition is the ASR transcript). Raises ``ValueError`` naming any
    prompt whose interaction or clip is missing.
    """
    by_conv = interactions.set_index("conversation_id")
    by_clip = manifest.set_index("clip_id")
    missing_conv = sorted(set(prompts["conversation_id"]) - set(by_conv.index))
    if missing_conv:
        raise ValueError(f"prompts.csv: conversation ids not in conversations.parquet: {missing_conv}")
    rows = []
    for p in prompts.itertuples(index=False):
        inter = by_conv.loc[p.conversation_id]
        for r in (0, 1):
            cid = clip_id_for(p.prompt_id, r)
            if cid not in by_clip.index:
                raise ValueError(f"audio manifest: no clip {cid!r} for prompt {p.prompt_id!r}")
            clip = by_clip.loc[cid]
            rows.append(
                {
                    "prompt_id": p.prompt_id,
                    "clip_id": cid,
                    "response": r,
                    "stratum": p.stratum,
                    "n_chars": len(inter[f"text_{r}"]),
                    "n_chars_spoken": int(clip["n_chars_spoken"]),
                    "duration_s": float(clip["duration_s"]),
                    "model_name": inter[f"model_name_{r}"],
                    "prism_score": inter[f"score_{r}"],
                    "history_chars": int(p.history_chars),
                    "history_turns": int(p.history_turns),
                }
            )
    stimuli = pd.DataFrame(rows, columns=STIMULUS_COLUMNS)
    if "transcript_0" in interactions.columns:  # a pairs source: where each clip's text condition came from
        stimuli["transcript"] = [
            by_conv.at[conv, f"transcript_{r}"] for conv in prompts["conversation_id"] for r in (0, 1)
        ]
    return stimuli

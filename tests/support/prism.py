"""PRISM `conversations` rows built by hand, and a JSONL writer for them."""

from __future__ import annotations

import json
from pathlib import Path


def prism_utterance(
    turn: int,
    role: str,
    content: str,
    wid: int = 0,
    model: str | None = None,
    score: int | None = None,
    chosen: bool | None = None,
) -> dict:
    return {
        "turn": turn,
        "role": role,
        "content": content,
        "within_turn_id": wid,
        "model_name": model,
        "model_provider": None if model is None else "provider",
        "score": score,
        "if_chosen": chosen,
    }


def prism_row(cid: str, turns: list[tuple[str, list[tuple[str, str, int]]]], ctype: str = "unguided") -> dict:
    """A PRISM conversations row: turns = [(user_text, [(model, text, score), ...]), ...]."""
    history = []
    for t, (user, responses) in enumerate(turns):
        history.append(prism_utterance(t, "user", user))
        best = max(range(len(responses)), key=lambda i: responses[i][2])
        for w, (model, text, score) in enumerate(responses):
            history.append(prism_utterance(t, "model", text, w, model, score, w == best))
    return {
        "conversation_id": cid,
        "user_id": "u1",
        "conversation_type": ctype,
        "opening_prompt": turns[0][0],
        "conversation_turns": len(turns),
        "conversation_history": history,
    }


def write_jsonl(rows: list[dict], path: Path) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path

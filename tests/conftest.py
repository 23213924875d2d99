"""Shared test helpers.

RECONSTRUCTED by the ratings helper session: this file was accidentally truncated by that session
(a stray shell redirect) and rebuilt from its uses in test_prism.py; the lead should compare it with
the original and restore anything missing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT / "src", Path(__file__).resolve().parent):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))


def prism_row(conversation_id, turns, ctype="unguided"):
    """A PRISM ``conversations`` row.

    ``turns``: list of (user message, [(model_name, content, score), ...]); within each turn the
    highest-scored response is flagged ``if_chosen``.
    """
    history = []
    for t, (user, models) in enumerate(turns):
        history.append({"turn": t, "role": "user", "content": user, "within_turn_id": 0, "model_name": None,
                        "model_provider": None, "score": None, "if_chosen": None})
        best = max(range(len(models)), key=lambda k: models[k][2]) if models else None
        for k, (name, content, score) in enumerate(models):
            history.append({"turn": t, "role": "model", "content": content, "within_turn_id": k,
                            "model_name": name, "model_provider": "provider", "score": score,
                            "if_chosen": k == best})
    return {"conversation_id": conversation_id, "conversation_type": ctype, "conversation_turns": len(turns),
            "conversation_history": history}


def write_jsonl(rows, path):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    return path

"""PRISM ``conversations`` rows → one study interaction per conversation.

PRISM (Kirk et al., 2024; ``HannahRoseKirk/prism-alignment``, config ``conversations``) stores each
conversation as a row whose ``conversation_history`` is a list of utterances
``{turn, role, content, within_turn_id, model_name, model_provider, score, if_chosen}``.
Turn 0 holds the user's opening message and up to four responses from different models; each
later turn holds the next user message and two responses from the model chosen at turn 0.

The interaction rule (the study compares two responses to one user message):

1. keep conversations whose ``conversation_type`` is the configured one (``unguided``);
2. a turn is *eligible* when it has a user message and at least two model responses, and every
   earlier turn has a user message and a chosen response (to rebuild the history);
3. the turn is drawn uniformly from the eligible turns, then two distinct responses of that turn
   are drawn uniformly, in random order (response 0 is the first drawn). The draw uses a
   generator seeded by ``(seed, crc32(conversation_id))``, so a conversation's interaction does not
   depend on which other conversations are in the file;
4. the history is every earlier turn's user message followed by the response the user chose
   (``if_chosen``; the highest-scored response if none is flagged).

Empty model output is PRISM's literal ``"EMPTY STRING"``; it is kept here and screened out at
sampling (reason ``empty``).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from modprefs.errors import UserInputError

EMPTY_STRING = "EMPTY STRING"

REQUIRED_ROW_KEYS = ("conversation_id", "conversation_type", "conversation_history")
REQUIRED_UTTERANCE_KEYS = ("turn", "role", "content", "within_turn_id", "model_name", "score", "if_chosen")

INTERACTION_COLUMNS = [
    "conversation_id", "conversation_type", "turn", "history", "prompt",
    "response_id_0", "text_0", "model_name_0", "score_0",
    "response_id_1", "text_1", "model_name_1", "score_1",
    "chars_0", "chars_1", "abs_char_diff", "history_chars", "history_turns",
]


class PrismFormatError(UserInputError):
    """A row does not follow PRISM's ``conversations`` schema; the message names row and key."""


def load_prism_rows(source: str, hf_dataset: str = "HannahRoseKirk/prism-alignment",
                    hf_config: str = "conversations", hf_split: str = "train") -> Iterable[Mapping[str, Any]]:
    """Rows of PRISM's ``conversations`` table through :mod:`datasets`.

    ``source == "prism"`` loads the hub dataset (needs network access or a populated HF cache);
    any other value is a path to a JSONL file with the same schema, read by the ``json`` builder,
    so that both go through one code path (Arrow rows with the same field types).
    """
    import datasets

    if source == "prism":
        try:
            return datasets.load_dataset(hf_dataset, hf_config, split=hf_split)
        except Exception as exc:  # the hub is unreachable or the dataset is gated
            raise RuntimeError(
                f"data.source 'prism': could not load {hf_dataset!r} (config {hf_config!r}) from the "
                f"Hugging Face hub: {exc}. Log in with `huggingface-cli login` and accept the dataset's "
                "terms, or download it and point data.source at a JSONL export."
            ) from exc
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"data.source: no such file: {source}")
    try:
        return datasets.load_dataset("json", data_files=str(path), split="train")
    except Exception as exc:
        raise PrismFormatError(f"{source}: not a readable JSONL file of PRISM conversations: {exc}") from exc


def _check_row(row: Mapping[str, Any], index: int) -> None:
    missing = [k for k in REQUIRED_ROW_KEYS if k not in row]
    if missing:
        raise PrismFormatError(f"row {index + 1}: missing key(s) {missing}")
    history = row["conversation_history"]
    if not isinstance(history, list):
        raise PrismFormatError(f"row {index + 1} ({row['conversation_id']}): conversation_history is not a list")
    for j, utt in enumerate(history):
        missing = [k for k in REQUIRED_UTTERANCE_KEYS if k not in utt]
        if missing:
            raise PrismFormatError(
                f"row {index + 1} ({row['conversation_id']}): conversation_history[{j}] missing key(s) {missing}"
            )
        if utt["role"] not in ("user", "model"):
            raise PrismFormatError(
                f"row {index + 1} ({row['conversation_id']}): conversation_history[{j}].role is {utt['role']!r}, "
                "expected 'user' or 'model'"
            )


def _turns(history: list[Mapping[str, Any]]) -> dict[int, dict[str, Any]]:
    """Group utterances by turn: ``{turn: {"user": utt|None, "models": [utt, ...] by within_turn_id}}``."""
    turns: dict[int, dict[str, Any]] = {}
    for utt in history:
        t = turns.setdefault(int(utt["turn"]), {"user": None, "models": []})
        if utt["role"] == "user":
            t["user"] = utt
        else:
            t["models"].append(utt)
    for t in turns.values():
        t["models"].sort(key=lambda u: int(u["within_turn_id"]))
    return turns


def _chosen(models: list[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    flagged = [m for m in models if m.get("if_chosen")]
    if flagged:
        return flagged[0]
    scored = [m for m in models if m.get("score") is not None]
    return max(scored, key=lambda m: m["score"]) if scored else None


def conversation_rng(seed: int, conversation_id: str) -> np.random.Generator:
    """The generator for one conversation's draws: independent of every other conversation."""
    return np.random.default_rng([seed, zlib.crc32(str(conversation_id).encode("utf-8"))])


def interaction_from_row(row: Mapping[str, Any], seed: int) -> dict[str, Any] | None:
    """One interaction (see the module docstring), or ``None`` when no turn is eligible."""
    cid = str(row["conversation_id"])
    turns = _turns(row["conversation_history"])
    eligible = []
    history_ok = True
    for t in sorted(turns):
        user, models = turns[t]["user"], turns[t]["models"]
        if history_ok and user is not None and len(models) >= 2:
            eligible.append(t)
        history_ok = history_ok and user is not None and _chosen(models) is not None
    if not eligible:
        return None
    rng = conversation_rng(seed, cid)
    turn = int(eligible[rng.integers(len(eligible))])
    models = turns[turn]["models"]
    i0, i1 = (int(i) for i in rng.choice(len(models), size=2, replace=False))
    history = []
    for t in sorted(k for k in turns if k < turn):
        history.append({"role": "user", "content": str(turns[t]["user"]["content"])})
        history.append({"role": "model", "content": str(_chosen(turns[t]["models"])["content"])})
    out: dict[str, Any] = {
        "conversation_id": cid,
        "conversation_type": row["conversation_type"],
        "turn": turn,
        "history": history,
        "prompt": str(turns[turn]["user"]["content"]),
    }
    for k, idx in enumerate((i0, i1)):
        m = models[idx]
        out[f"response_id_{k}"] = f"{cid}-t{turn}-w{int(m['within_turn_id'])}"
        out[f"text_{k}"] = "" if m["content"] is None else str(m["content"])
        out[f"model_name_{k}"] = m.get("model_name")
        out[f"score_{k}"] = None if m.get("score") is None else float(m["score"])
    out["chars_0"], out["chars_1"] = len(out["text_0"]), len(out["text_1"])
    out["abs_char_diff"] = abs(out["chars_0"] - out["chars_1"])
    out["history_chars"] = sum(len(h["content"]) for h in history)
    out["history_turns"] = turn
    return out


def build_interactions(rows: Iterable[Mapping[str, Any]], seed: int,
                       conversation_type: str = "unguided") -> tuple[pd.DataFrame, dict[str, int]]:
    """Interactions for every conversation of ``conversation_type`` (one row each).

    Returns the table (columns :data:`INTERACTION_COLUMNS`, sorted by conversation_id) and counts
    for the log: rows read, rows of the type, rows without an eligible turn.
    """
    records = []
    counts = {"rows": 0, "of_type": 0, "no_eligible_turn": 0}
    seen: set[str] = set()
    for i, row in enumerate(rows):
        counts["rows"] += 1
        _check_row(row, i)
        cid = str(row["conversation_id"])
        if cid in seen:
            raise PrismFormatError(f"row {i + 1}: duplicate conversation_id {cid!r}")
        seen.add(cid)
        if row["conversation_type"] != conversation_type:
            continue
        counts["of_type"] += 1
        rec = interaction_from_row(row, seed)
        if rec is None:
            counts["no_eligible_turn"] += 1
            continue
        records.append(rec)
    table = pd.DataFrame.from_records(records, columns=INTERACTION_COLUMNS)
    table = table.sort_values("conversation_id", kind="stable").reset_index(drop=True)
    return table, counts

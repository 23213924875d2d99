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

import json
import math
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from modprefs.errors import UserInputError

EMPTY_STRING = "EMPTY STRING"

REQUIRED_ROW_KEYS = ("conversation_id", "conversation_type", "conversation_history")
SCORE_RANGE = (1, 100)  # PRISM's participants rate each response on a 1-100 slider
REQUIRED_UTTERANCE_KEYS = ("turn", "role", "content", "within_turn_id", "model_name", "score", "if_chosen")

INTERACTION_COLUMNS = [
    "conversation_id",
    "conversation_type",
    "turn",
    "history",
    "prompt",
    "response_id_0",
    "text_0",
    "model_name_0",
    "score_0",
    "response_id_1",
    "text_1",
    "model_name_1",
    "score_1",
    "chars_0",
    "chars_1",
    "abs_char_diff",
    "history_chars",
    "history_turns",
]


class PrismFormatError(UserInputError):
    """A row does not follow PRISM's ``conversations`` schema; the message names the file and line (or row) and key."""


#: PRISM's conversation types (``conversation_type``); a row with another value is a format error.
CONVERSATION_TYPES = ("unguided", "values guided", "controversy guided")


@dataclass
class PrismRows:
    """Rows of PRISM's ``conversations`` table, each with where it came from.

    ``locations[i]`` names row ``i`` for error messages: ``"<file> line <n>"`` for a JSONL file,
    ``"<dataset> row <n>"`` for the hub dataset. Iterating yields the rows.
    """

    rows: list[Mapping[str, Any]]
    locations: list[str]

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)


def read_jsonl(path: str | Path) -> PrismRows:
    """Every non-blank line of a JSONL file as a JSON object, located by file and line number.

    Raises:
        PrismFormatError: a line is not UTF-8, not valid JSON, or not a JSON object (the message
            names the file, the line and, where known, the column).
    """
    path = Path(path)
    rows: list[Mapping[str, Any]] = []
    locations: list[str] = []
    with open(path, "rb") as fh:
        for n, raw in enumerate(fh, start=1):
            where = f"{path} line {n}"
            if n == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                text = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as err:
                raise PrismFormatError(
                    f"{where}, column {err.start + 1}: not UTF-8 text (byte 0x{raw[err.start]:02x}); "
                    "save the file as UTF-8"
                ) from None
            if not text.strip():
                continue
            try:
                row = json.loads(text)
            except json.JSONDecodeError as err:
                raise PrismFormatError(
                    f"{where}, column {err.colno}: not valid JSON ({err.msg}); each line must "
                    "hold one conversation as a JSON object"
                ) from None
            if not isinstance(row, dict):
                raise PrismFormatError(
                    f"{where}: expected a JSON object (one conversation per line), got {type(row).__name__}"
                )
            rows.append(row)
            locations.append(where)
    return PrismRows(rows, locations)


def load_prism_rows(
    source: str,
    hf_dataset: str = "HannahRoseKirk/prism-alignment",
    hf_config: str = "conversations",
    hf_split: str = "train",
) -> PrismRows:
    """Rows of PRISM's ``conversations`` table, each located for error messages.

    ``source == "prism"`` loads the hub dataset through :mod:`datasets` (needs network access or a
    populated HF cache); any other value is a path to a JSONL file with the same schema, read line by
    line (:func:`read_jsonl`) so that an error names the line. Both are checked row by row by
    :func:`build_interactions` (:func:`check_row`).
    """
    if source == "prism":
        import datasets

        try:
            table = datasets.load_dataset(hf_dataset, hf_config, split=hf_split)
        except Exception as exc:  # the hub is unreachable or the dataset is gated
            raise PrismFormatError(
                f"data.source 'prism': could not load {hf_dataset!r} (config {hf_config!r}) from the "
                f"Hugging Face hub: {exc}. Log in with `huggingface-cli login` and accept the dataset's "
                "terms, or download it and point data.source at a JSONL export."
            ) from exc
        return PrismRows(list(table), [f"{hf_dataset} row {i + 1}" for i in range(len(table))])
    path = Path(source)
    if not path.is_file():
        raise PrismFormatError(f"data.source: no such file: {source}")
    return read_jsonl(path)


def _is_int(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float) and value.is_integer())


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _utterance_problem(utt: Any) -> str | None:
    """What is wrong with one ``conversation_history`` entry (None when it follows the schema)."""
    if not isinstance(utt, dict):
        return f"is {type(utt).__name__}, expected an object"
    missing = [k for k in REQUIRED_UTTERANCE_KEYS if k not in utt]
    if missing:
        return f"missing key(s) {missing}"
    role = utt["role"]
    if role not in ("user", "model"):
        return f".role is {role!r}, expected 'user' or 'model'"
    checks = [
        ("turn", _is_int(utt["turn"]) and utt["turn"] >= 0, "a whole number >= 0"),
        (
            "content",
            isinstance(utt["content"], str) or (role == "model" and utt["content"] is None),
            "a string" if role == "user" else "a string or null",
        ),
        (
            "within_turn_id",
            (_is_int(utt["within_turn_id"]) and utt["within_turn_id"] >= 0)
            or (role == "user" and utt["within_turn_id"] is None),
            "a whole number >= 0" if role == "model" else "a whole number >= 0 or null",
        ),
        (
            "score",
            utt["score"] is None or (_is_number(utt["score"]) and SCORE_RANGE[0] <= utt["score"] <= SCORE_RANGE[1]),
            f"a number from {SCORE_RANGE[0]} to {SCORE_RANGE[1]} (PRISM's rating scale) or null",
        ),
        ("if_chosen", utt["if_chosen"] is None or isinstance(utt["if_chosen"], bool), "true, false or null"),
        ("model_name", utt["model_name"] is None or isinstance(utt["model_name"], str), "a string or null"),
    ]
    for key, ok, expected in checks:
        if not ok:
            return f".{key} is {utt[key]!r}, expected {expected}"
    return None


def check_row(row: Mapping[str, Any], where: str) -> str:
    """Check one row against PRISM's ``conversations`` schema; return its conversation id as a string.

    Raises:
        PrismFormatError: naming ``where`` (file and line, or row), the conversation and the key.
    """
    if not isinstance(row, Mapping):
        raise PrismFormatError(f"{where}: expected an object, got {type(row).__name__}")
    missing = [k for k in REQUIRED_ROW_KEYS if k not in row or row[k] is None]
    if missing:
        raise PrismFormatError(
            f"{where}: missing key(s) {missing} (a PRISM conversations row needs {', '.join(REQUIRED_ROW_KEYS)})"
        )
    cid = row["conversation_id"]
    if not (isinstance(cid, str) and cid.strip()) and not _is_int(cid):
        raise PrismFormatError(f"{where}: conversation_id is {cid!r}, expected a non-empty string")
    cid = str(cid)
    ctype = row["conversation_type"]
    if ctype not in CONVERSATION_TYPES:
        raise PrismFormatError(
            f"{where} (conversation {cid!r}): conversation_type is {ctype!r}, expected one of "
            f"{', '.join(repr(t) for t in CONVERSATION_TYPES)}"
        )
    history = row["conversation_history"]
    if not isinstance(history, list):
        raise PrismFormatError(
            f"{where} (conversation {cid!r}): conversation_history is {type(history).__name__}, expected a list"
        )
    for j, utt in enumerate(history):
        problem = _utterance_problem(utt)
        if problem:
            sep = "" if problem.startswith(".") else " "
            raise PrismFormatError(f"{where} (conversation {cid!r}): conversation_history[{j}]{sep}{problem}")
    return cid


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
        chosen = _chosen(turns[t]["models"])
        assert chosen is not None  # eligible: every earlier turn has a chosen response
        history.append({"role": "model", "content": str(chosen["content"])})
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


def build_interactions(
    rows: Iterable[Mapping[str, Any]], seed: int, conversation_type: str = "unguided"
) -> tuple[pd.DataFrame, dict[str, int]]:
    """Interactions for every conversation of ``conversation_type`` (one row each).

    Every row is checked first (:func:`check_row`; a :class:`PrismRows` names file and line in the
    error, a plain iterable the row number). Returns the table (columns :data:`INTERACTION_COLUMNS`,
    sorted by conversation_id) and counts for the log: rows read, rows of the type, rows without an
    eligible turn.
    """
    locations = rows.locations if isinstance(rows, PrismRows) else None
    records = []
    counts = {"rows": 0, "of_type": 0, "no_eligible_turn": 0}
    seen: dict[str, str] = {}
    for i, row in enumerate(rows):
        counts["rows"] += 1
        where = locations[i] if locations is not None else f"row {i + 1}"
        cid = check_row(row, where)
        if cid in seen:
            raise PrismFormatError(f"{where}: duplicate conversation_id {cid!r} (first at {seen[cid]})")
        seen[cid] = where
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


def prism_interactions(data: Mapping[str, Any], seed: int) -> tuple[pd.DataFrame, dict[str, int]]:
    """The workflow's data step for PRISM (``data.format: prism``): the rows of ``data.source`` as interactions.

    Raises:
        PrismFormatError: a malformed row (its file and line), or no eligible conversation of the type.
    """
    rows = load_prism_rows(
        str(data["source"]),
        data.get("hf_dataset", "HannahRoseKirk/prism-alignment"),
        data.get("hf_config", "conversations"),
        data.get("hf_split", "train"),
    )
    ctype = data.get("conversation_type", "unguided")
    table, counts = build_interactions(rows, seed=seed, conversation_type=ctype)
    if table.empty:
        raise PrismFormatError(
            f"data.source {data['source']}: no eligible {ctype!r} conversations ({counts['rows']} rows, "
            f"{counts['of_type']} of that type, {counts['no_eligible_turn']} without a turn with two responses)"
        )
    return table, counts

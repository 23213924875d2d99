"""The checks of a lab's pairs table (:mod:`modprefs.data.pairs`), every problem at once.

Checks (:func:`pairs_problems`), each naming the file, row and column: a missing required column, an empty or
duplicate ``item_id``, an empty prompt, a side with neither text nor audio, both sides identical (same text and
same audio), a malformed ``history``, an audio file that is missing or that soundfile cannot read.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from modprefs.data.pairs import DEFAULT_MAX_AUDIO_S, MAX_PROBLEMS, PairsTable
from modprefs.file_access import file_problem, printable
from modprefs.visible_text import invisible_characters, visible_text


def _history_problem(value: Any) -> str | None:
    """What is wrong with a history cell (None when it is empty or a list of {role, content})."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            return f"not valid JSON ({err.msg}); history is a list of {{role, content}} turns"
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, list):
        return f"is {type(value).__name__}, expected a list of {{role, content}} turns"
    for j, turn in enumerate(value):
        if not isinstance(turn, Mapping) or turn.get("role") not in ("user", "model", "assistant"):
            return f"turn {j} needs role 'user' or 'model'"
        if not isinstance(turn.get("content"), str):
            return f"turn {j} needs a content string"
    return None


def parse_history(value: Any) -> list[dict[str, str]]:
    """A checked history cell as ``[{role: user|model, content}]`` (``assistant`` read as ``model``)."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or (isinstance(value, str) and not value):
        return []
    if isinstance(value, str):
        value = json.loads(value)
    turns = value.tolist() if isinstance(value, np.ndarray) else list(value)
    return [
        {"role": "model" if t["role"] == "assistant" else str(t["role"]), "content": str(t["content"])} for t in turns
    ]


def _audio_problem(table: PairsTable, value: Any, max_audio_s: float | None = None) -> str | None:
    """Why an audio cell cannot be used (None: soundfile reads it, it has samples and, with ``max_audio_s``, lasts
    at most that long: its header says so, nothing is decoded)."""
    import soundfile as sf

    try:
        if isinstance(value, dict):
            if value.get("bytes") is None:
                return f"the Audio cell holds no bytes (path {value.get('path')!r} only)"
            data = bytes(value["bytes"])
            try:
                info = sf.info(io.BytesIO(data))
            except (sf.LibsndfileError, RuntimeError) as err:
                return (
                    f"the Audio cell's {len(data):,} bytes are not audio soundfile reads ({_libsndfile_reason(err)}; "
                    f"they begin {data[:16]!r})"
                )
            size = len(data)
        else:
            path = table.audio_path(value)
            problem = file_problem(path)
            if problem:
                found = problem != "file not found"
                return f"audio file {path} {problem}" if found else f"audio file not found: {path}"
            info = sf.info(str(path))
            size = path.stat().st_size
    except (sf.LibsndfileError, RuntimeError, OSError) as err:
        return f"soundfile cannot read the audio ({_libsndfile_reason(err)})"
    if info.frames == 0:
        return "the audio has no samples"
    if max_audio_s is not None and info.frames / info.samplerate > max_audio_s:
        seconds = info.frames / info.samplerate
        return (
            f"the audio lasts {seconds / 60:.1f} min ({seconds:,.0f} s, {size / 1e6:,.0f} MB), longer than "
            f"data.max_audio_s ({max_audio_s:g} s); a stimulus that long is usually the wrong file. To use it, raise "
            "data.max_audio_s and audio_qc.thresholds.max_duration_s (QC's bound on a clip, 600 s by default); long "
            "audio is rendered in blocks"
        )
    return None


def _libsndfile_reason(err: BaseException) -> str:
    """libsndfile's reason without the file object's repr ("Error opening <_io.BytesIO object at 0x..>: ...")."""
    text = printable(err)
    return text.rsplit(": ", 1)[-1] if text.startswith("Error opening") else text


def _audio_digest(table: PairsTable, value: Any) -> str:
    """The SHA-256 of an audio cell's bytes or file (a file read in blocks: any length)."""
    if isinstance(value, dict):
        return hashlib.sha256(value["bytes"]).hexdigest()
    digest = hashlib.sha256()
    with open(table.audio_path(value), "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _same_audio(table: PairsTable, a: Any, b: Any) -> bool:
    """Whether two readable audio cells hold the same bytes (the same file, or files of equal size and digest)."""
    if not isinstance(a, dict) and not isinstance(b, dict):
        pa, pb = table.audio_path(a), table.audio_path(b)
        if pa.resolve() == pb.resolve():
            return True
        if pa.stat().st_size != pb.stat().st_size:
            return False
    return _audio_digest(table, a) == _audio_digest(table, b)


@dataclass(frozen=True)
class PairsChecks:
    """What :func:`pairs_problems` checks beyond the table itself (config ``tts.backend`` and ``data``).

    Attributes:
        backend: ``tts.backend``: ``given`` needs audio on every side, any other backend text.
        allow_identical_audio: ``data.allow_identical_audio``: the same audio on both sides of an item is allowed
            (their texts must still differ).
        max_audio_s: ``data.max_audio_s``: the longest audio a side may have (None: no limit).
    """

    backend: str
    allow_identical_audio: bool = False
    max_audio_s: float | None = DEFAULT_MAX_AUDIO_S

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> PairsChecks:
        data = config.get("data") or {}
        limit = data.get("max_audio_s", DEFAULT_MAX_AUDIO_S)
        return cls(
            str(config["tts"]["backend"]),
            bool(data.get("allow_identical_audio", False)),
            None if limit is None else float(limit),
        )


def _side_problems(table: PairsTable, i: int, row: Any, k: int, checks: PairsChecks) -> tuple[list[str], bool | None]:
    """One side's problems and whether its audio is readable (None: no audio)."""
    from modprefs.speech.render import MAX_SPOKEN_CHARS

    problems = []
    text, audio = getattr(row, f"response_{k}"), getattr(row, f"audio_{k}")
    has_text = bool(visible_text(text).strip())
    if not has_text and audio is None:
        problems.append(f"{table.where(i)}: side {k} has neither text (response_{k}) nor audio (audio_{k})")
    if checks.backend == "given" and audio is None:
        problems.append(f"{table.where(i, f'audio_{k}')}: tts.backend given needs audio for every side")
    if checks.backend != "given":
        if not has_text:
            problems.append(
                f"{table.where(i, f'response_{k}')}: empty; a synthesising tts.backend needs text for every side "
                "(or set tts.backend: given to use the audio)"
            )
        elif len(text) > MAX_SPOKEN_CHARS:
            problems.append(
                f"{table.where(i, f'response_{k}')}: {len(text):,} characters, more than the {MAX_SPOKEN_CHARS:,} a "
                "synthesiser speaks in one clip (about 20 minutes); is the cell right?"
            )
    if audio is None:
        return problems, None
    why = _audio_problem(table, audio, checks.max_audio_s)
    if why:
        problems.append(f"{table.where(i, f'audio_{k}')}: {why}")
    return problems, why is None


def _row_problems(table: PairsTable, i: int, row: Any, checks: PairsChecks) -> list[str]:
    problems = []
    if not visible_text(row.prompt).strip():
        hidden = invisible_characters(row.prompt)
        shown = f" (only invisible characters: {', '.join(hidden)})" if hidden else ""
        problems.append(f"{table.where(i, 'prompt')}: empty prompt{shown}")
    history = _history_problem(row.history)
    if history:
        problems.append(f"{table.where(i, 'history')}: {history}")
    audio_ok = {}
    for k in (0, 1):
        found, audio_ok[k] = _side_problems(table, i, row, k, checks)
        problems += found
    same_text = visible_text(row.response_0).strip() == visible_text(row.response_1).strip()
    same_audio = (audio_ok[0] and audio_ok[1] and _same_audio(table, row.audio_0, row.audio_1)) or (
        row.audio_0 is None and row.audio_1 is None
    )
    if same_text and same_audio:
        problems.append(f"{table.where(i)}: both sides are identical (response_0 = response_1, same audio)")
    elif same_audio and row.audio_0 is not None and not checks.allow_identical_audio:
        problems.append(
            f"{table.where(i, 'audio_1')}: the same audio as audio_0 ({_shown_audio(row.audio_1)}): listeners would "
            "compare a clip with itself; give each side its own audio, or set data.allow_identical_audio: true if "
            "the sides are meant to differ in text only"
        )
    return problems


def _shown_audio(value: Any) -> str:
    return f"an Audio cell, path {value.get('path')!r}" if isinstance(value, dict) else str(value)


def _id_problems(table: PairsTable) -> tuple[dict[int, str], list[str]]:
    """``{row index: problem}`` of empty and duplicate item ids, compared as a reader sees them
    (:func:`modprefs.visible_text.visible_text`), and the distinct ids as given (stripped)."""
    problems: dict[int, str] = {}
    first: dict[str, tuple[int, str]] = {}  # visible id -> (row number, the id as given)
    for i, given in enumerate(table.frame["item_id"]):
        item, hidden = visible_text(given).strip(), invisible_characters(given)
        if not item:
            shown = f" (only invisible characters: {', '.join(hidden)})" if hidden else ""
            problems[i] = f"{table.where(i, 'item_id')}: empty item_id{shown}"
        elif item in first:
            row, other = first[item]
            detail = ""
            if other != given.strip():
                chars = invisible_characters(given + other)
                detail = f" ({given.strip()!r} and {other!r} differ only in what a reader does not see" + (
                    f": {', '.join(chars)})" if chars else ")"
                )
            problems[i] = f"{table.where(i, 'item_id')}: duplicate item_id {item!r} (first at row {row}){detail}"
        else:
            first[item] = (i + table.first_row, given.strip())
    return problems, [given for _, given in first.values()]


def pairs_problems(table: PairsTable, backend: str | PairsChecks) -> list[str]:
    """Every problem of a pairs table (at most :data:`MAX_PROBLEMS`, then a count).

    ``backend``: ``tts.backend`` or the :class:`PairsChecks` of a config. ``given`` needs audio on every side; any
    other backend synthesises and needs text on every side. Emptiness and sameness of ids and texts are judged on
    what a reader sees (NFKC, invisible characters removed; :mod:`modprefs.visible_text`).
    """
    from modprefs.sampling.draw import prompt_id_for

    checks = backend if isinstance(backend, PairsChecks) else PairsChecks(str(backend))
    by_id, ids = _id_problems(table)
    problems: list[str] = []
    for i, row in enumerate(table.frame.itertuples(index=False)):
        problems += [by_id[i]] if i in by_id else []
        problems += _row_problems(table, i, row, checks)
    prompt_ids = pd.Series(ids, dtype=object).map(prompt_id_for)
    clashes = sorted(set(prompt_ids[prompt_ids.duplicated()]))
    if clashes:
        problems.append(
            f"{table.name}: item ids that differ only in characters other than letters, digits, _ and - "
            f"map to the same prompt id {clashes[:5]}"
        )
    if len(problems) > MAX_PROBLEMS:
        problems = [*problems[:MAX_PROBLEMS], f"... and {len(problems) - MAX_PROBLEMS} more problem(s)"]
    return problems

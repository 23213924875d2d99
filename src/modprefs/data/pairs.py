"""A lab's own stimulus table (``data.format: pairs``): one row per item, two responses to compare.

The table is the study's alternative to PRISM. Sources (``data.source``):

* a CSV/TSV (delimiter sniffed), JSONL or Parquet file;
* a ``datasets`` ``save_to_disk`` folder (a Dataset, or a DatasetDict whose split ``data.hf_split`` is read,
  or its only split); a study ``modprefs publish`` wrote (``results/dataset``, or its copy on the hub) is read
  from its ``stimuli`` split, its ``prompt_id`` / ``model_name_k`` columns as ``item_id`` / ``system_k`` and its
  Audio columns as the study's own audio (``tts.backend: given`` replays the published WAVs);
* ``hf://owner/name``: a hub dataset (needs the hub; offline it fails saying so). A published study there loads
  its default config (``ratings``) and then its ``stimuli`` config (modprefs.published_layout).

Columns (canonical names; foreign names are mapped with ``data.columns: {canonical: source column}``):

=============  ========  ===========================================================================
column         needed    meaning
=============  ========  ===========================================================================
item_id        yes       unique id of the item (file-name-safe prompt id derived from it)
prompt         yes       the user message both responses answer
response_0/1   *         the responses' text (the text condition; what a synthesiser speaks)
audio_0/1      *         the responses' audio: a path relative to the table's folder (CSV/TSV/JSONL/
                         Parquet), or a ``datasets`` Audio column (bytes); any format soundfile reads
history        no        earlier turns: a list of ``{role: user|model, content}`` (JSON text in CSV)
system_0/1     no        the system/model that produced each response (``model_name`` downstream)
stratum        no        the lab's own sampling strata (replaces the length-difference strata)
=============  ========  ===========================================================================

\\* each side needs text, audio or both. A side with audio and no text is **audio-only**: its text condition
is the ASR transcript of the audio (:func:`build_pair_interactions`, ``transcript_0/1 = "asr"``), which every
table downstream says (``stimuli.csv``'s ``transcript`` column, the report). A transcript is machine-made, so it
is not trusted as the lab's own text is: Whisper's word probabilities are kept (``asr_words_k``, JSON
``[[word, probability], ...]``; ``asr_confidence_k`` their mean) and the transcript is screened like a drawn
PRISM response (empty, another language, the harmful-term list: ``asr_flag_k``, "" when it passes). Audio QC
fails such a side on a low confidence or a flag instead of comparing ASR with ASR (:mod:`modprefs.speech.qc`).
``source_row`` is each item's row in the lab's table, for messages that name it.

Checks (:func:`pairs_problems`), each naming the file, row and column: a missing required column, an empty or
duplicate ``item_id``, an empty prompt, a side with neither text nor audio, both sides identical (same text and
same audio), a malformed ``history``, an audio file that is missing or that soundfile cannot read.

The interactions this module builds have :data:`modprefs.data.prism.INTERACTION_COLUMNS` (so the draw, the
rendering and the study read them as they read PRISM's) plus :data:`PAIRS_EXTRA_COLUMNS`.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from modprefs.errors import UserInputError
from modprefs.file_access import file_problem, printable
from modprefs.published_layout import (
    folder_read_failure,
    hub_parquet_splits,
    read_parquet_files,
    with_published_configs,
)
from modprefs.visible_text import invisible_characters, visible_text

__all__ = [
    "HUB_PREFIX",
    "PAIRS_COLUMNS",
    "PAIRS_EXTRA_COLUMNS",
    "PairsFormatError",
    "PairsTable",
    "Transcript",
    "asr_sides_described",
    "build_pair_interactions",
    "declared_pairs_files",
    "pairs_problems",
    "read_pairs_table",
    "side_audio",
    "transcript_screen",
]

HUB_PREFIX = "hf://"
REQUIRED_COLUMNS = ("item_id", "prompt")
SIDE_COLUMNS = ("response_0", "response_1", "audio_0", "audio_1", "system_0", "system_1")
PAIRS_COLUMNS = ["item_id", "prompt", "history", *SIDE_COLUMNS, "stratum"]
#: Columns of conversations.parquet beyond PRISM's for a pairs source: where each side's audio is, where its
#: text came from (``given`` / ``asr`` / ``none``), and the lab's stratum (None: the length strata).
PAIRS_EXTRA_COLUMNS = [
    "audio_0",
    "audio_1",
    "transcript_0",
    "transcript_1",
    "stratum_given",
    "source_row",
    "asr_confidence_0",
    "asr_confidence_1",
    "asr_words_0",
    "asr_words_1",
    "asr_flag_0",
    "asr_flag_1",
]
TEXT_SUFFIXES = (".csv", ".tsv", ".txt")
PARQUET_SUFFIXES = (".parquet", ".pq")
MAX_PROBLEMS = 20
#: ``data.max_audio_s``'s default: the longest audio (seconds) a side of a pairs table may have, checked when the
#: workflow starts from the file's header. Ten minutes: a spoken response in a preference study is far shorter, and
#: one this long is usually the wrong file (a whole session); raise it for long audio, which is rendered in chunks.
DEFAULT_MAX_AUDIO_S = 600.0


class PairsFormatError(UserInputError):
    """The pairs table is unreadable or invalid; the message names the file, row and column."""


@dataclass
class PairsTable:
    """A pairs table in canonical columns, with where each row came from.

    Attributes:
        frame: one row per item; text cells are ``str`` ("" = empty); ``history`` a list of turns or None;
            ``audio_0/1`` a path (``str``, relative to ``base_dir``), a ``{"bytes": ..., "path": ...}`` dict
            (a datasets Audio cell) or None.
        name: the source as messages name it (the file, or ``dataset <folder>``).
        first_row: the row number of the first record (2 for a text table with its header, 1 otherwise).
        base_dir: the folder relative audio paths are resolved against (the table's folder).
    """

    frame: pd.DataFrame
    name: str
    first_row: int = 1
    base_dir: Path = field(default_factory=Path)

    def where(self, i: int, column: str | None = None) -> str:
        """``"<name>, row <n>, column '<c>'"`` for row ``i`` (0-based) of the frame."""
        text = f"{self.name}, row {i + self.first_row}"
        return f"{text}, column {column!r}" if column else text

    def audio_path(self, value: Any) -> Path:
        """A path cell resolved against :attr:`base_dir`."""
        path = Path(str(value))
        return path if path.is_absolute() else self.base_dir / path


# ---- reading ----------------------------------------------------------------------------------------------------
def _is_datasets_folder(path: Path) -> bool:
    return (path / "dataset_dict.json").is_file() or (
        (path / "state.json").is_file() and (path / "dataset_info.json").is_file()
    )


def _read_jsonl(path: Path) -> pd.DataFrame:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise PairsFormatError(f"{path} line {n}, column {err.colno}: not valid JSON ({err.msg})") from None
        if not isinstance(row, dict):
            raise PairsFormatError(f"{path} line {n}: expected a JSON object (one item per line)")
        rows.append(row)
    if not rows:
        raise PairsFormatError(f"{path}: no items")
    return pd.DataFrame.from_records(rows)


def _read_file(path: Path) -> tuple[pd.DataFrame, int]:
    """The raw frame of a table file and the row number of its first record."""
    from modprefs.io_tables import TableError, read_table

    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return _read_jsonl(path), 1
    if suffix in PARQUET_SUFFIXES:
        try:
            return pd.read_parquet(path), 1
        except Exception as exc:  # pyarrow raises several types for a corrupt file
            raise PairsFormatError(
                f"{path}: cannot be read as Parquet ({type(exc).__name__}: {printable(exc)})"
            ) from None
    if suffix not in TEXT_SUFFIXES:
        raise PairsFormatError(
            f"data.source {path}: unknown table format {suffix!r} (CSV, TSV, JSONL, Parquet, a datasets folder)"
        )
    try:
        return read_table(path, strings=True), 2
    except TableError as err:
        raise PairsFormatError(str(err)) from None


def _audio_features(ds: Any) -> list[str]:
    import datasets

    return [name for name, feature in ds.features.items() if isinstance(feature, datasets.Audio)]


DEFAULT_SPLIT = "train"  # data.hf_split's default
#: the splits of a study modprefs published (modprefs.publish): its ``stimuli`` split is a pairs table
PUBLISHED_SPLITS = frozenset({"stimuli", "ratings"})
#: how a published ``stimuli`` split's columns map onto the pairs table's (``data.columns`` overrides)
PUBLISHED_COLUMNS = {"item_id": "prompt_id", "system_0": "model_name_0", "system_1": "model_name_1"}


def is_published_study(obj: Any) -> bool:
    """True for a DatasetDict that ``modprefs publish`` wrote (it has the stimuli and ratings splits)."""
    keys = getattr(obj, "keys", None)
    return callable(keys) and PUBLISHED_SPLITS <= set(keys())


def _dataset_frame(obj: Any, name: str, split: str) -> pd.DataFrame:
    """A Dataset (or the chosen split of a DatasetDict) as a frame; Audio cells as undecoded bytes dicts.

    A study modprefs published (:func:`is_published_study`) is read from its ``stimuli`` split unless
    ``data.hf_split`` names another, with its columns mapped onto the pairs table's (:data:`PUBLISHED_COLUMNS`).
    """
    import datasets

    published = not isinstance(obj, datasets.Dataset) and is_published_study(obj) and split == DEFAULT_SPLIT
    if published:
        split = "stimuli"
    if not isinstance(obj, datasets.Dataset):
        splits = list(obj.keys())
        if split in splits:
            obj = obj[split]
        elif len(splits) == 1:
            obj = obj[splits[0]]
        else:
            raise PairsFormatError(f"data.source {name}: {_splits_problem(splits)}")
    for column in _audio_features(obj):
        obj = obj.cast_column(column, datasets.Audio(decode=False))
    frame = pd.DataFrame({column: obj[column] for column in obj.column_names})
    if published:
        frame.attrs["published"] = True
    return frame


def _read_source(source: str, split: str, base: Path) -> tuple[pd.DataFrame, str, int, Path]:
    if source.startswith(HUB_PREFIX):
        import datasets

        repo = source[len(HUB_PREFIX) :]
        try:
            obj = with_published_configs(repo, datasets.load_dataset(repo), ("stimuli",))
        except Exception as exc:  # offline, unknown or gated repository: all end here with the reason
            raise PairsFormatError(
                f"data.source {source}: could not load the Hugging Face dataset {repo!r} "
                f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); the hub must be "
                "reachable, or save_to_disk() it where it is and point data.source at that folder"
            ) from None
        return _dataset_frame(obj, source, split), f"hub dataset {repo}", 1, base
    path = base / source
    if path.is_dir():
        if _is_datasets_folder(path):
            return _datasets_folder_frame(path, source, split), f"dataset {source}", 1, path
        layout = hub_parquet_splits(path)
        if layout:
            frame, shown = _hub_layout_frame(layout, source, split)
            return frame, shown, 1, path
        raise PairsFormatError(
            f"data.source {source}: a folder that is neither a datasets save_to_disk folder nor the hub's data-files "
            "layout (data/<split>/*.parquet); point data.source at the table file"
        )
    problem = file_problem(path)
    if problem:
        raise PairsFormatError(f"data.source {source}: {problem}")
    frame, first = _read_file(path)
    return frame, str(source), first, path.parent


def _datasets_folder_frame(path: Path, source: str, split: str) -> pd.DataFrame:
    """:func:`_dataset_frame` of a ``save_to_disk`` folder; any failure (the Arrow files are memory-mapped: damage
    shows when a column is read) names the damaged file (:func:`modprefs.published_layout.folder_read_failure`)."""
    import datasets

    try:
        return _dataset_frame(datasets.load_from_disk(str(path)), source, split)
    except PairsFormatError:
        raise
    except Exception as exc:  # datasets / pyarrow raise FileNotFoundError, ValueError, ArrowInvalid, UnicodeDecodeError
        raise PairsFormatError(
            f"data.source {source}: cannot read the datasets folder: {folder_read_failure(path, exc)}"
        ) from None


def _hub_layout_frame(layout: Mapping[str, list[Path]], source: str, split: str) -> tuple[pd.DataFrame, str]:
    """The split of a folder in the hub's data-files layout (``data/<split>/*.parquet``) that holds the items: a
    published study's ``stimuli`` (its columns then mapped as :func:`_dataset_frame` maps them), else ``split``
    (``data.hf_split``), else the only one."""
    published = PUBLISHED_SPLITS <= set(layout) and split == DEFAULT_SPLIT
    if published:
        split = "stimuli"
    elif split not in layout:
        if len(layout) != 1:
            raise PairsFormatError(f"data.source {source}: {_splits_problem(list(layout))}")
        split = next(iter(layout))
    try:
        frame = read_parquet_files(layout[split])
    except ValueError as exc:
        raise PairsFormatError(f"data.source {source}: {exc}") from None
    if published:
        frame.attrs["published"] = True
    return frame, f"{source}/data/{split}"


def _splits_problem(splits: list[str]) -> str:
    """Why no split of a dataset with ``splits`` was read: one published without its stimuli, or a choice to make."""
    if "ratings" in splits and "stimuli" not in splits:
        return (
            f"the dataset has the splits {splits}: the ratings of a published study without its stimuli split, which "
            "holds the items and their audio; publish the study again (modprefs publish) or point data.source at the "
            "stimuli"
        )
    return f"the dataset has splits {splits}; set data.hf_split to one"


def _text_cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    return str(value)


def _audio_cell(value: Any) -> Any:
    """A path string, a bytes dict, or None (empty)."""
    if isinstance(value, Mapping):
        return dict(value) if value.get("bytes") is not None or value.get("path") else None
    text = _text_cell(value).strip()
    return text or None


def read_pairs_table(
    source: str, columns: Mapping[str, str] | None = None, split: str = DEFAULT_SPLIT, base_dir: str | Path = "."
) -> PairsTable:
    """Read a pairs source (see the module docstring) into canonical columns; nothing is checked beyond reading.

    Args:
        source: ``data.source``: a file, a datasets folder (relative to ``base_dir``) or ``hf://owner/name``.
        columns: ``{canonical: source column}`` for foreign names (``data.columns``).
        split: the DatasetDict split to read (``data.hf_split``) when there are several.

    Raises:
        PairsFormatError: unreadable source, a mapped column that the table lacks, a missing required column.
    """
    raw, name, first_row, folder = _read_source(str(source), split, Path(base_dir))
    if raw.attrs.get("published"):  # a published study's stimuli: its own column names, unless data.columns says
        given = dict(columns or {})
        columns = {
            **{c: src for c, src in PUBLISHED_COLUMNS.items() if src in raw.columns and c not in raw.columns},
            **given,
        }
        name += " (a published modprefs study: split stimuli)"
    columns = dict(columns or {})
    unknown = sorted(set(columns) - set(PAIRS_COLUMNS))
    if unknown:
        raise PairsFormatError(f"data.columns: unknown canonical column(s) {unknown} (known: {PAIRS_COLUMNS})")
    absent = sorted(src for src in columns.values() if src not in raw.columns)
    if absent:
        raise PairsFormatError(f"{name}: data.columns names column(s) {absent} that the table lacks")
    raw = raw.rename(columns={src: canonical for canonical, src in columns.items()})
    missing = [c for c in REQUIRED_COLUMNS if c not in raw.columns]
    if missing:
        raise PairsFormatError(
            f"{name}: missing column(s) {missing}; a pairs table needs item_id, prompt and, per side, "
            "response_0/response_1 and/or audio_0/audio_1 (map foreign names with data.columns)"
        )
    if not any(c in raw.columns for c in ("response_0", "audio_0")) or not any(
        c in raw.columns for c in ("response_1", "audio_1")
    ):
        raise PairsFormatError(f"{name}: each side needs a response_<k> or an audio_<k> column (k = 0 and 1)")
    frame = pd.DataFrame(index=range(len(raw)))
    for column in PAIRS_COLUMNS:
        values = raw[column].tolist() if column in raw.columns else [None] * len(raw)
        if column.startswith("audio_"):
            values = [_audio_cell(v) for v in values]
        elif column != "history":
            values = [_text_cell(v) for v in values]
        frame[column] = pd.Series(values, index=frame.index, dtype=object)  # None stays None
    return PairsTable(frame, name, first_row, folder)


# ---- checks -----------------------------------------------------------------------------------------------------
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


def declared_pairs_files(
    source: str, base_dir: str | Path = ".", columns: Mapping[str, str] | None = None, audio_only_sides: bool = False
) -> list[str]:
    """The local files a pairs source consists of (the data rule's inputs): the table file or every file of the
    datasets folder; with ``audio_only_sides`` also the audio files of sides without text (their ASR transcript
    is made by the data rule). A hub id gives no file; an unreadable table gives just its path."""
    if str(source).startswith(HUB_PREFIX):
        return []
    path = Path(base_dir) / source
    if path.is_dir():
        return sorted(str(p) for p in path.rglob("*") if p.is_file())
    files = [str(source)]
    if audio_only_sides:
        try:
            table = read_pairs_table(source, columns, base_dir=base_dir)
        except PairsFormatError:
            return files
        for row in table.frame.itertuples(index=False):
            for k in (0, 1):
                audio = getattr(row, f"audio_{k}")
                if isinstance(audio, str) and not visible_text(getattr(row, f"response_{k}")).strip():
                    files.append(str(table.audio_path(audio)))
    return files


def given_audio_files(
    source: str, base_dir: str | Path = ".", columns: Mapping[str, str] | None = None
) -> dict[str, str]:
    """``{clip_id: audio file}`` for every side whose audio is a file (not a datasets cell), keyed by the clip id the
    study gives it (``{prompt_id}_{k}``)."""
    from modprefs.sampling.draw import prompt_id_for

    if str(source).startswith(HUB_PREFIX) or (Path(base_dir) / source).is_dir():
        return {}
    table = read_pairs_table(source, columns, base_dir=base_dir)
    out = {}
    for row in table.frame.itertuples(index=False):
        for k in (0, 1):
            audio = getattr(row, f"audio_{k}")
            if isinstance(audio, str):
                out[f"{prompt_id_for(row.item_id.strip())}_{k}"] = str(table.audio_path(audio))
    return out


# ---- interactions -------------------------------------------------------------------------------------------
def side_audio(table: PairsTable, value: Any, item: str, k: int, audio_dir: Path | None) -> str | None:
    """Where one side's audio is for the rest of the workflow: the resolved file path, or (a datasets cell) the
    bytes written to ``audio_dir/<prompt id>_<k><suffix>``; None without audio."""
    from modprefs.io import atomic_path
    from modprefs.sampling.draw import prompt_id_for

    if value is None:
        return None
    if not isinstance(value, dict):
        return str(table.audio_path(value))
    if audio_dir is None:
        raise ValueError("datasets Audio cells need an audio_dir to be written to")
    suffix = Path(str(value.get("path") or "")).suffix.lower() or ".wav"
    suffix = suffix if re.fullmatch(r"\.[a-z0-9]{1,5}", suffix) else ".wav"
    target = audio_dir / f"{prompt_id_for(item)}_{k}{suffix}"
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(target) as tmp:
        tmp.write_bytes(value["bytes"])
    return str(target)


@dataclass(frozen=True)
class Transcript:
    """An ASR transcript with Whisper's per-word probabilities (0..1), in spoken order."""

    text: str
    words: tuple[tuple[str, float], ...] = ()

    @property
    def confidence(self) -> float:
        """The mean word probability (NaN without words)."""
        return float(np.mean([p for _, p in self.words])) if self.words else float("nan")


#: audio file path -> its transcript (an audio-only side's text condition)
Transcribe = Callable[[str], Transcript]
#: a transcript -> why it cannot be a text condition ("" when it passes; :func:`transcript_screen`)
ScreenText = Callable[[str], str]


def build_pair_interactions(
    table: PairsTable,
    audio_dir: str | Path | None,
    transcribe: Transcribe | None,
    screen_text: ScreenText | None = None,
) -> pd.DataFrame:
    """conversations.parquet for a pairs source: one interaction per item, sorted by item id.

    Args:
        table: a checked pairs table (:func:`pairs_problems` found nothing).
        audio_dir: where a datasets source's audio bytes are written (one file per side).
        transcribe: audio file path -> transcript; used for audio-only sides (their text condition), required
            when there are any.
        screen_text: the screen of an audio-only side's transcript (``asr_flag_k``); None screens nothing.

    Returns:
        :data:`modprefs.data.prism.INTERACTION_COLUMNS` + :data:`PAIRS_EXTRA_COLUMNS`: ``conversation_id`` is the
        item id, ``conversation_type`` ``"pairs"``, ``turn`` the number of earlier user turns, ``score_k`` empty
        (no PRISM score), ``model_name_k`` the system column, ``transcript_k`` ``given``/``asr``, for ASR sides
        ``asr_confidence_k`` / ``asr_words_k`` / ``asr_flag_k`` (NaN / "" / "" for given text), ``source_row``.
    """
    from modprefs.data.prism import INTERACTION_COLUMNS

    folder = Path(audio_dir) if audio_dir is not None else None
    records = []
    for i, row in enumerate(table.frame.itertuples(index=False)):
        item = row.item_id.strip()
        history = parse_history(row.history)
        rec: dict[str, Any] = {
            "conversation_id": item,
            "conversation_type": "pairs",
            "turn": sum(1 for t in history if t["role"] == "user"),
            "history": history,
            "prompt": row.prompt,
            "stratum_given": row.stratum.strip() or None,
            "source_row": i + table.first_row,
        }
        for k in (0, 1):
            audio = side_audio(table, getattr(row, f"audio_{k}"), item, k, folder)
            text = getattr(row, f"response_{k}")
            source, heard = "given", Transcript(text)
            if not visible_text(text).strip():  # an audio-only side (invisible characters are no text)
                if transcribe is None or audio is None:
                    raise PairsFormatError(f"item {item!r} side {k}: audio-only, and no ASR to transcribe it")
                heard = transcribe(audio)
                text, source = heard.text.strip(), "asr"
                if not text:
                    raise PairsFormatError(
                        f"{table.name}, item {item!r}, column 'audio_{k}': audio-only, and ASR heard no words in it "
                        f"({audio}); give its text in response_{k}"
                    )
            system = getattr(row, f"system_{k}").strip()
            asr = source == "asr"
            rec |= {
                f"response_id_{k}": f"{item}-{k}",
                f"text_{k}": text,
                f"model_name_{k}": system or None,
                f"score_{k}": None,
                f"audio_{k}": audio,
                f"transcript_{k}": source,
                f"asr_confidence_{k}": heard.confidence if asr else float("nan"),
                f"asr_words_{k}": json.dumps([[w, round(p, 4)] for w, p in heard.words]) if asr else "",
                f"asr_flag_{k}": (screen_text(text) if screen_text else "") if asr else "",
            }
        rec["chars_0"], rec["chars_1"] = len(rec["text_0"]), len(rec["text_1"])
        rec["abs_char_diff"] = abs(rec["chars_0"] - rec["chars_1"])
        rec["history_chars"] = sum(len(h["content"]) for h in history)
        rec["history_turns"] = rec["turn"]
        records.append(rec)
    columns = [*INTERACTION_COLUMNS, *PAIRS_EXTRA_COLUMNS]
    out = pd.DataFrame.from_records(records, columns=columns)
    return out.sort_values("conversation_id", kind="stable").reset_index(drop=True)


def load_pairs(
    data: Mapping[str, Any],
    backend: str,
    base_dir: str | Path = ".",
    audio_dir: str | Path | None = None,
    threads: int = 1,
    check_audio: bool = True,
    screen_text: ScreenText | None = None,
) -> pd.DataFrame:
    """The workflow's data step for ``data.format: pairs``: read, check (raising every problem at once) and build the
    interactions, transcribing audio-only sides with the QC's ASR (faster-whisper tiny.en, English forced, word
    probabilities kept) and screening their transcripts with ``screen_text`` (:func:`transcript_screen`).

    Raises:
        PairsFormatError: the table's problems (:func:`pairs_problems`), one per line.
    """
    table = read_pairs_table(str(data["source"]), data.get("columns"), str(data.get("hf_split", "train")), base_dir)
    checks = PairsChecks.from_config({"data": data, "tts": {"backend": backend}})
    problems = pairs_problems(table, checks) if check_audio else []
    if problems:
        raise PairsFormatError("the pairs table has problems:\n  " + "\n  ".join(problems))
    audio_only = any(
        not visible_text(getattr(row, f"response_{k}")).strip()
        for row in table.frame.itertuples(index=False)
        for k in (0, 1)
    )
    transcribe = _asr_transcriber(threads) if audio_only else None
    return build_pair_interactions(table, audio_dir, transcribe, screen_text)


def _asr_transcriber(threads: int) -> Transcribe:
    import soundfile as sf

    from modprefs.speech.qc import Transcriber

    model = Transcriber(threads=threads)

    def transcribe(path: str) -> Transcript:
        audio, rate = sf.read(path, dtype="float32", always_2d=True)
        text, words = model.transcribe_words(audio.mean(axis=1), rate)
        return Transcript(text, tuple(words))

    return transcribe


def asr_sides_described(interactions: pd.DataFrame) -> list[str]:
    """One line per audio-only side of a pairs source's interactions: its transcript, mean word probability and
    screening flag (for the data step's log)."""
    lines = []
    for row in interactions.itertuples(index=False):
        for k in (0, 1):
            if getattr(row, f"transcript_{k}") != "asr":
                continue
            flag = getattr(row, f"asr_flag_{k}")
            lines.append(
                f"{row.conversation_id} side {k}: ASR transcript {getattr(row, f'text_{k}')!r} (mean word probability "
                f"{getattr(row, f'asr_confidence_{k}'):.2f}){f'; flagged: {flag}' if flag else ''}"
            )
    return lines


def transcript_screen(screening: Mapping[str, Any], harmful_terms: str | Path) -> ScreenText:
    """The screen of an audio-only side's transcript: the text screen of a drawn PRISM response (config
    ``sampling.screening``, the term list ``harmful_terms``; :func:`modprefs.sampling.screening.screen_interaction`)
    applied to the transcript alone: ``"empty: ..."``, ``"other_language: ..."``, ``"harmful: ..."`` or ""."""
    from modprefs.sampling.screening import screen_from_config

    screen = screen_from_config(screening, harmful_terms)

    def screen_text(text: str) -> str:
        result = screen({"prompt": "", "text_0": text, "text_1": text})
        return f"{result.reason}: {result.detail.replace('response 0 ', 'transcript ', 1)}" if result.reason else ""

    return screen_text


def pool_size(data: Mapping[str, Any], base_dir: str | Path = ".") -> int | None:
    """Items in a pairs source (None when it cannot be read: the config check reports why)."""
    try:
        return len(
            read_pairs_table(
                str(data["source"]), data.get("columns"), str(data.get("hf_split", "train")), base_dir
            ).frame
        )
    except (PairsFormatError, OSError):
        return None

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
is the ASR transcript of the audio (:func:`~modprefs.data.pairs_interactions.build_pair_interactions`,
``transcript_0/1 = "asr"``), which every
table downstream says (``stimuli.csv``'s ``transcript`` column, the report). A transcript is machine-made, so it
is not trusted as the lab's own text is: Whisper's word probabilities are kept (``asr_words_k``, JSON
``[[word, probability], ...]``; ``asr_confidence_k`` their mean) and the transcript is screened like a drawn
PRISM response (empty, another language, the harmful-term list: ``asr_flag_k``, "" when it passes). Audio QC
fails such a side on a low confidence or a flag instead of comparing ASR with ASR (:mod:`modprefs.speech.qc`).
``source_row`` is each item's row in the lab's table, for messages that name it.

Checks (:func:`~modprefs.data.pairs_checks.pairs_problems`), each naming the file, row and column: in
:mod:`modprefs.data.pairs_checks`. The interactions built from the table (the ASR of audio-only sides
included): :mod:`modprefs.data.pairs_interactions`. Here the table's sources, its columns and reading it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
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
from modprefs.visible_text import visible_text

__all__ = [
    "HUB_PREFIX",
    "PAIRS_COLUMNS",
    "PAIRS_EXTRA_COLUMNS",
    "PairsFormatError",
    "PairsTable",
    "declared_pairs_files",
    "read_pairs_table",
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

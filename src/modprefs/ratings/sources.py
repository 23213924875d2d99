"""Any ratings table in: load a ratings source into the canonical tables, remembering where each cell came from.

A *ratings source* (``modprefs stats --ratings``, the workflow's ``ratings.source``) is one of

* a **folder** holding ``ratings.csv`` (or ``.tsv``/``.parquet``) and optionally ``trials.*`` and
  ``participants.*`` -- the workflow's own layout (schemas in ``workflow/schemas/``);
* a **single table** file (CSV/TSV/Parquet): the ratings, with any trial- or participant-level
  columns in it split off into those tables (:func:`split_levels`);
* a Hugging Face ``datasets`` **folder** written by ``save_to_disk`` (a Dataset, or a DatasetDict
  whose splits are ``ratings``/``trials``/``participants`` or a single split of ratings);
* a **data-files folder** (e.g. a dataset repository's ``data/*.parquet``): every CSV/TSV/Parquet
  file under it, files whose names start with ``trials``/``participants`` going to those tables and
  all others concatenated as the ratings; in the hub's own layout, ``data/<split>/*.parquet`` (+ README.md, as a
  clone of a published study's repository holds it), the ``ratings``, ``trials`` and ``participants`` splits are
  those tables and a ``stimuli`` split gives the published stimuli;
* a **hub id** ``hf://owner/name`` (or ``hf://datasets/owner/name``), loaded with
  ``datasets.load_dataset`` where the hub is reachable; otherwise a clear error saying so.

Only four things are required: participant, condition, clip (or prompt + response) and rating.
Foreign column names are mapped with ``columns`` ({canonical: source name}, e.g. ``{"rating":
"score", "clip_id": "stimulus"}``; ``participant``, ``clip``, ``prompt`` are accepted for the
``*_id`` names). A ratings table with ``rating_0`` and ``rating_1`` (after the map) and no
``rating`` is **wide**: one row per trial, with ``prompt_id``, optionally ``first_clip`` (the
response shown first, 0/1; gives ``presented_first``) and ``audio_quality_0``/``_1``; it becomes
two long rows per trial. Clip ids come from the stimuli for (prompt, response) and prompt ids from
the stimuli for a clip when a table lacks them.

Without a stimulus table (``modprefs stats`` without ``--clips``), a study published by ``modprefs
publish`` gives its own (:func:`published_stimuli`: its ``stimuli`` split, ``n_chars`` the response
texts' lengths, as the workflow's); otherwise :func:`stimuli_from_ratings` derives one from the
ratings: from ``prompt_id`` + ``response`` columns; else from a ``prompt_id`` column (the response
from the clip id's ``_N`` suffix, or the clip's rank within its prompt); else from clip ids
``{prompt}_{response}`` (when that gives two or more prompts); otherwise each clip is its own item (a
single-stimulus / MOS design: prompt = clip, response 0).

A published study also records its rating scale (its card's ``rating_scale``): :func:`source_scale` reads it and
:func:`scale_for` makes it ``modprefs stats``' scale when ``--scale`` is not given (and refuses one that disagrees).

Every cell keeps its provenance (:class:`Origin`): validation messages name the user's file, row
and column -- the foreign column name and, for a wide table, the row of the trial.
Nothing here judges values; :mod:`modprefs.ratings.ingest` does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from modprefs.errors import UserInputError
from modprefs.file_access import file_problem
from modprefs.io_tables import PARQUET_SUFFIXES, TABLE_SUFFIXES, read_table, strings_frame
from modprefs.published_layout import (
    folder_read_failure,
    hub_parquet_splits,
    read_parquet_files,
    with_published_configs,
)
from modprefs.ratings.schema import PARTICIPANTS_COLUMNS, RATINGS_COLUMNS, TABLE_FILES, TABLES, TRIALS_COLUMNS
from modprefs.scale import RatingScale
from modprefs.study.terms import ATTENTION_CLIPS as ATTENTION_CLIP_IDS
from modprefs.study.terms import ATTENTION_PROMPT

WIDE_COLUMNS = ("rating_0", "rating_1", "audio_quality_0", "audio_quality_1", "first_clip")
ALIASES = {"participant": "participant_id", "clip": "clip_id", "prompt": "prompt_id"}
MAP_KEYS = tuple(dict.fromkeys([*RATINGS_COLUMNS, *TRIALS_COLUMNS, *PARTICIPANTS_COLUMNS, *WIDE_COLUMNS, "response"]))
HUB_PREFIX = "hf://"
# Columns that belong to one trial / one participant when they appear in the ratings table.
TRIAL_LEVEL = tuple(c for c in TRIALS_COLUMNS if c not in ("participant_id", "prompt_id", "trial", "source"))
PARTICIPANT_LEVEL = tuple(c for c in PARTICIPANTS_COLUMNS if c not in ("participant_id", "condition", "source"))
ATTENTION_CLIPS = {clip: (ATTENTION_PROMPT, response) for response, clip in enumerate(ATTENTION_CLIP_IDS)}


class RatingsSourceError(UserInputError):
    """The ratings source cannot be read or mapped; the message names the source, file and column."""


@dataclass
class Origin:
    """Where the rows and columns of a canonical table came from (for messages).

    ``files``/``rows``: the source file (as shown) and its row label per table row; ``columns``:
    canonical -> source column name; ``row_columns``: per-row source names for columns that differ
    by row (a wide table's ``rating`` comes from ``rating_0`` or ``rating_1``).
    """

    files: list[str]
    rows: list[int]
    columns: dict[str, str] = field(default_factory=dict)
    row_columns: dict[str, list[str]] = field(default_factory=dict)
    name: str = ""  # the file(s) as shown in file-level messages

    @classmethod
    def of_file(cls, name: str, n: int, first_row: int, columns: Mapping[str, str] | None = None) -> Origin:
        return cls([name] * n, list(range(first_row, first_row + n)), dict(columns or {}), name=name)

    def where(self, i: int, column: str | None = None) -> str:
        """``'<file> row <r>, column <c>'`` for table row ``i`` (``'<file>'`` when there are no rows)."""
        if not self.files:
            return "(no rows)"
        text = f"{self.files[i]} row {self.rows[i]}"
        if column is not None:
            text += f", column {self.column(column, i)}"
        return text

    def column(self, name: str, i: int | None = None) -> str:
        if i is not None and name in self.row_columns:
            return self.row_columns[name][i]
        return self.columns.get(name, name)

    def file(self) -> str:
        """The file name(s) of this table, for file-level messages."""
        return self.name or ", ".join(dict.fromkeys(self.files))

    def take(self, idx: list[int] | np.ndarray) -> Origin:
        idx = [int(i) for i in idx]
        return Origin(
            [self.files[i] for i in idx],
            [self.rows[i] for i in idx],
            dict(self.columns),
            {k: [v[i] for i in idx] for k, v in self.row_columns.items()},
            self.name,
        )


@dataclass
class RawTables:
    """Canonical tables as strings ('' = empty); ``ratings`` always, ``trials``/``participants`` if given."""

    tables: dict[str, pd.DataFrame]
    origins: dict[str, Origin]
    source: str
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stimuli: pd.DataFrame | None = None  # derived from the ratings (``derive_stimuli``), else None


# ---- reading ------------------------------------------------------------------------------------------
def _table_file(folder: Path, table: str) -> Path | None:
    for suffix in (".csv", ".tsv", *PARQUET_SUFFIXES):
        path = folder / f"{table}{suffix}"
        if path.is_file():
            return path
    return None


def _first_row(path: Path) -> int:
    """Row label of the first record: 2 for a text table (its header is row 1), 1 for Parquet."""
    return 1 if path.suffix.lower() in PARQUET_SUFFIXES else 2


def is_datasets_folder(path: Path) -> bool:
    """A ``datasets`` ``save_to_disk`` folder (a Dataset or a DatasetDict)."""
    return (path / "dataset_dict.json").is_file() or (
        (path / "state.json").is_file() and (path / "dataset_info.json").is_file()
    )


def source_files(source: str | Path) -> list[Path]:
    """Every file a ratings source reads (the workflow declares them as the ingest rule's inputs).

    A hub id reads no local file (empty list); a missing path gives an empty list (the config check
    reports it).
    """
    text = str(source)
    if text.startswith(HUB_PREFIX):
        return []
    path = Path(text)
    if path.is_file():
        return [path]
    if not path.is_dir():
        return []
    if is_datasets_folder(path):
        return sorted(p for p in path.rglob("*") if p.is_file())
    native = [_table_file(path, t) for t in TABLES]
    if native[0] is not None:
        return [p for p in native if p is not None]
    return _data_files(path)


def _data_files(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and p.suffix.lower() in TABLE_SUFFIXES
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )


def load_ratings_source(
    source: str | Path,
    columns: Mapping[str, str] | None = None,
    stimuli: pd.DataFrame | None = None,
    derive_stimuli: bool = False,
) -> RawTables:
    """Read ``source`` (see the module docstring) into :class:`RawTables` with canonical column names.

    Args:
        source: folder, file, ``datasets`` folder, data-files folder or ``hf://owner/name``.
        columns: {canonical name: source column name} for foreign names (aliases allowed).
        stimuli: the stimulus table (prompt_id, clip_id, response) used to fill clip/prompt ids.
        derive_stimuli: without ``stimuli``, derive them from the ratings (:func:`stimuli_from_ratings`)
            into ``RawTables.stimuli`` and fill the ids from them.

    Raises:
        RatingsSourceError / TableError: unreadable source or files, or a column map that does not fit.
    """
    text = str(source)
    path = Path(text)
    raw: dict[str, tuple[pd.DataFrame, Origin]]
    published: pd.DataFrame | None = None  # a published study's own stimuli
    if text.startswith(HUB_PREFIX):
        raw = _from_hub(text)
        files: list[Path] = []
    elif path.is_file():
        if path.suffix.lower() not in TABLE_SUFFIXES:
            raise RatingsSourceError(
                f"ratings source {text}: unsupported file type {path.suffix!r} "
                f"(expected one of {', '.join(TABLE_SUFFIXES)})"
            )
        raw = {"ratings": _read(path, path.name)}
        files = [path]
    elif path.is_dir() and is_datasets_folder(path):
        raw, published = _from_datasets_folder(path)
        files = source_files(path)
    elif path.is_dir() and "ratings" in (layout := hub_parquet_splits(path)):
        raw, published = _from_hub_layout(path, layout)
        files = source_files(path)
    elif path.is_dir() and _table_file(path, "ratings") is not None:
        raw = {}
        for t in TABLES:
            p = _table_file(path, t)
            if p is not None:
                raw[t] = _read(p, p.name)
        files = source_files(path)
    elif path.is_dir():
        raw, files = _from_data_files(path)
    elif (problem := file_problem(path)) not in (None, "file not found"):  # a link loop, a dangling link, ...
        raise RatingsSourceError(f"ratings source {text}: {problem}")
    else:
        raise RatingsSourceError(
            f"ratings source {text}: no such file or folder (expected a folder with "
            "ratings.csv, a CSV/TSV/Parquet file, a datasets save_to_disk folder, a folder "
            f"of data files, or a Hugging Face hub id {HUB_PREFIX}owner/name)"
        )
    mapped = apply_column_map(raw, columns or {}, text)
    tables = {t: df for t, (df, _) in mapped.items()}
    origins = {t: o for t, (_, o) in mapped.items()}
    notes: list[str] = []
    _drop_practice(tables, origins, notes)
    if _is_wide(tables["ratings"]):
        notes.append("wide ratings table: one row per trial, rating_0/rating_1 turned into two rating rows")
        _wide_to_long(tables, origins, stimuli)
    derived = None
    if derive_stimuli and stimuli is None:
        derived, note = _derived_stimuli(tables["ratings"], origins["ratings"], published)
        notes.append(note)
    _fill_ids(tables, origins, stimuli if stimuli is not None else derived)
    split_levels(tables, origins, notes)
    return RawTables(tables, origins, text, files, notes, derived)


PRACTICE_COLUMN = "practice"  # the annotation app's practice trial: 1 (or true) rows are dropped on reading


def is_practice(values: pd.Series) -> np.ndarray:
    """Which rows are practice rows: ``practice`` 1 / 1.0 / true / yes (any case); bool array."""
    return values.astype(str).str.strip().str.lower().isin(["1", "1.0", "true", "yes"]).to_numpy()


def _drop_practice(tables: dict[str, pd.DataFrame], origins: dict[str, Origin], notes: list[str]) -> None:
    """Drop the practice rows (``practice`` 1/true, the annotation app's practice trial) of ratings and trials:
    they are never analysed (nor validated: the practice trial is numbered -1)."""
    for t in ("ratings", "trials"):
        df = tables.get(t)
        if df is None or PRACTICE_COLUMN not in df.columns:
            continue
        flag = is_practice(df[PRACTICE_COLUMN])
        if flag.any():
            keep = np.flatnonzero(~flag)
            tables[t] = df.iloc[keep].reset_index(drop=True)
            origins[t] = origins[t].take(keep)
            notes.append(f"{origins[t].file() or t}: {int(flag.sum())} practice row(s) (practice = 1) left out")


def _read(path: Path, name: str) -> tuple[pd.DataFrame, Origin]:
    df = read_table(path, strings=True, allow_empty=True, what=name)
    return df, Origin.of_file(name, len(df), _first_row(path))


def _from_data_files(folder: Path) -> tuple[dict[str, tuple[pd.DataFrame, Origin]], list[Path]]:
    files = _data_files(folder)
    if not files:
        raise RatingsSourceError(
            f"ratings source {folder}: the folder holds no ratings.csv and no CSV/TSV/Parquet data files"
        )
    groups: dict[str, list[Path]] = {t: [] for t in TABLES}
    for p in files:
        table = next((t for t in ("trials", "participants") if p.name.lower().startswith(t)), "ratings")
        groups[table].append(p)
    if not groups["ratings"]:
        raise RatingsSourceError(
            f"ratings source {folder}: no ratings data file (only {', '.join(p.name for p in files)})"
        )
    out = {}
    for table, paths in groups.items():
        if not paths:
            continue
        parts = []
        for p in paths:
            shown = str(p.relative_to(folder))
            df, origin = _read(p, shown)
            parts.append((df, origin, shown))
        cols = list(parts[0][0].columns)
        for df, _, shown in parts[1:]:
            if list(df.columns) != cols:
                raise RatingsSourceError(
                    f"ratings source {folder}: {shown} has columns {list(df.columns)}, but "
                    f"{parts[0][2]} has {cols}; data files of one table must agree"
                )
        merged = pd.concat([d for d, _, _ in parts], ignore_index=True)
        origin = Origin(
            sum((o.files for _, o, _ in parts), []),
            sum((o.rows for _, o, _ in parts), []),
            name=", ".join(shown for _, _, shown in parts),
        )
        out[table] = (merged, origin)
    return out, files


def _dataset_frames(obj, name: str) -> dict[str, tuple[pd.DataFrame, Origin]]:
    """A Dataset or DatasetDict as canonical tables (see the module docstring)."""
    import datasets  # noqa: PLC0415 - optional path

    if isinstance(obj, datasets.Dataset):
        splits = {"ratings": ("", obj)}
    else:
        names = list(obj.keys())
        if "ratings" in names:
            splits = {t: (t, obj[t]) for t in TABLES if t in names}
        elif len(names) == 1:
            splits = {"ratings": (names[0], obj[names[0]])}
        else:
            raise RatingsSourceError(
                f"ratings source {name}: the dataset has splits {names}; name them ratings "
                "(and optionally trials, participants) or keep a single split"
            )
    out = {}
    for table, (split, ds) in splits.items():
        df = strings_frame(_without_audio(ds).to_pandas())
        if table == "ratings":
            df = published_ratings(df)
        shown = f"{name} (split {split})" if split else name
        out[table] = (df, Origin.of_file(shown, len(df), 1))
    return out


def _without_audio(ds):  # noqa: ANN001, ANN202 - a datasets.Dataset
    """The dataset without its Audio columns (a ratings table has none; decoding them would need torchcodec)."""
    import datasets  # noqa: PLC0415

    audio = [name for name, feature in ds.features.items() if isinstance(feature, datasets.Audio)]
    return ds.remove_columns(audio) if audio else ds


#: ``source`` values of a dataset published by ``modprefs publish`` (modprefs.publish) -> the canonical ones
PUBLISHED_SOURCES = {"human": "collected", "simulated": "simulated"}


def published_ratings(df: pd.DataFrame) -> pd.DataFrame:
    """A ratings split as ``modprefs publish`` writes it, in canonical terms: its AI judge rows (``source``
    ``judge``) left out and ``human`` read as ``collected``. Other tables pass unchanged."""
    if "source" not in df.columns or not df["source"].isin(["judge", "human"]).any():
        return df
    df = df[df["source"] != "judge"].reset_index(drop=True)
    df["source"] = df["source"].map(lambda s: PUBLISHED_SOURCES.get(s, s))
    return df


def _from_datasets_folder(path: Path) -> tuple[dict[str, tuple[pd.DataFrame, Origin]], pd.DataFrame | None]:
    """The tables of a ``save_to_disk`` folder and, for a published study, its stimuli (:func:`published_stimuli`)."""
    import datasets  # noqa: PLC0415

    try:  # the Arrow files are memory-mapped: damage shows when the columns are read, so all of it is guarded
        obj = datasets.load_from_disk(str(path))
        return _dataset_frames(obj, f"dataset {path.name}"), published_stimuli(obj)
    except RatingsSourceError:
        raise
    except Exception as exc:  # datasets / pyarrow raise FileNotFoundError, ValueError, ArrowInvalid, UnicodeDecodeError
        raise RatingsSourceError(
            f"ratings source {path}: cannot read the datasets folder: {folder_read_failure(path, exc)}"
        ) from None


def _from_hub_layout(
    path: Path, splits: Mapping[str, list[Path]]
) -> tuple[dict[str, tuple[pd.DataFrame, Origin]], pd.DataFrame | None]:
    """The tables of a folder in the hub's data-files layout whose splits include ``ratings`` (a published study as
    the hub holds it, ``data/<split>/train-*.parquet``): its ratings, trials and participants splits, and for a
    published study its stimuli (:func:`published_stimuli_frame`)."""
    out = {}
    try:
        for table in TABLES:
            if table in splits:
                df = strings_frame(read_parquet_files(splits[table]))
                if table == "ratings":
                    df = published_ratings(df)
                shown = f"{path.name}/data/{table}"
                out[table] = (df, Origin.of_file(shown, len(df), 1))
        stimuli = None
        if "stimuli" in splits:
            split = read_parquet_files(splits["stimuli"], PUBLISHED_STIMULI_COLUMNS)
            stimuli = published_stimuli_frame(split)
    except ValueError as exc:  # a file pyarrow cannot read (named) or a split without the published columns
        raise RatingsSourceError(f"ratings source {path}: {exc}") from None
    return out, stimuli


#: the columns of a published study's ``stimuli`` split (modprefs.publish) its stimulus table is made of
PUBLISHED_STIMULI_COLUMNS = ("prompt_id", "clip_id_0", "clip_id_1", "response_0", "response_1")


def published_stimuli(obj) -> pd.DataFrame | None:  # noqa: ANN001 - a datasets.Dataset(Dict)
    """The stimulus table of a study published by ``modprefs publish`` (a DatasetDict with ``ratings`` and a
    ``stimuli`` split of :data:`PUBLISHED_STIMULI_COLUMNS`): clip_id, prompt_id, response, n_chars -- the length
    of the response text, as the workflow's results/study/stimuli.csv (:func:`modprefs.study.stimuli.build_stimuli`)
    -- two rows per prompt in the split's order. None for any other dataset."""
    import datasets  # noqa: PLC0415

    if not isinstance(obj, datasets.DatasetDict) or not {"ratings", "stimuli"} <= set(obj):
        return None
    if not set(PUBLISHED_STIMULI_COLUMNS) <= set(obj["stimuli"].column_names):
        return None
    split = obj["stimuli"].select_columns(list(PUBLISHED_STIMULI_COLUMNS)).to_pandas()  # no Audio cell decoded
    return published_stimuli_frame(split)


def published_stimuli_frame(split: pd.DataFrame) -> pd.DataFrame:
    """:func:`published_stimuli` of a published ``stimuli`` split read as a frame (its
    :data:`PUBLISHED_STIMULI_COLUMNS`)."""
    rows = [
        {
            "clip_id": str(row[f"clip_id_{k}"]),
            "prompt_id": str(row["prompt_id"]),
            "response": k,
            "n_chars": len(row[f"response_{k}"]) if isinstance(row[f"response_{k}"], str) else np.nan,
        }
        for _, row in split.iterrows()
        for k in (0, 1)
    ]
    return pd.DataFrame(rows, columns=[*STIMULI_COLUMNS, "n_chars"])


def _derived_stimuli(ratings: pd.DataFrame, origin: Origin, published: pd.DataFrame | None) -> tuple[pd.DataFrame, str]:
    """A published study's own stimuli when it has them, else those derived from the ratings; and a note."""
    if published is None:
        return stimuli_from_ratings(ratings, origin)
    return published, (
        f"no clips table: the published dataset's stimuli split gives {len(published)} clips "
        "(n_chars = the length of each response text)"
    )


def source_scale(source: str | Path) -> RatingScale | None:
    """The rating scale a study published by ``modprefs publish`` records (its card's header, README.md:
    ``rating_scale``), for a published folder or ``hf://owner/name``; None for any other source, a dataset that
    records none, or a hub card that cannot be fetched.

    Raises:
        RatingsSourceError: the recorded scale is not a valid one (the card named).
    """
    from modprefs.publish.card import recorded_scale  # noqa: PLC0415

    text = str(source)
    if text.startswith(HUB_PREFIX):
        card, shown = _hub_card(text), f"the card of {text}"
    else:
        path = Path(text) / "README.md"
        folder = Path(text)
        published_folder = folder.is_dir() and (is_datasets_folder(folder) or "ratings" in hub_parquet_splits(folder))
        is_published = published_folder and path.is_file()
        card, shown = (_card_text(path, text) if is_published else None), str(path)
    if card is None:
        return None
    try:
        return recorded_scale(card)
    except ValueError as exc:
        raise RatingsSourceError(f"ratings source {text}: {shown}: rating_scale: {exc}") from None


def _card_text(path: Path, source: str) -> str:
    """A published folder's card (README.md) as text; one that is not UTF-8 is named (its scale cannot be read)."""
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RatingsSourceError(
            f"ratings source {source}: {path}: the dataset card is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} "
            f"at offset {exc.start}), so the rating scale it records cannot be read; save it as UTF-8"
        ) from None


def _hub_card(source: str) -> str | None:
    """The README.md (dataset card) of the hub dataset ``source``; None when it cannot be fetched."""
    repo = source[len(HUB_PREFIX) :].removeprefix("datasets/")
    try:
        import huggingface_hub  # noqa: PLC0415

        return Path(huggingface_hub.hf_hub_download(repo, "README.md", repo_type="dataset")).read_text("utf-8")
    except Exception:  # noqa: BLE001 - offline, no such repo or card: the scale is then not recorded
        return None


def scale_for(source: str | Path, given: RatingScale | None, default: RatingScale) -> RatingScale:
    """``modprefs stats``' rating scale for ``source``: ``given`` (``--scale``) when set, else the scale the
    source records (:func:`source_scale`), else ``default``.

    Raises:
        RatingsSourceError: ``given`` disagrees with the recorded scale (both named).
    """
    recorded = source_scale(source)
    if given is None:
        return recorded if recorded is not None else default
    if recorded is not None and not np.allclose(
        [given.min, given.max, given.step], [recorded.min, recorded.max, recorded.step]
    ):
        raise RatingsSourceError(
            f"--scale {given.min:g}:{given.max:g}:{given.step:g} disagrees with the rating scale the published "
            f"dataset {source} records, {recorded.min:g}:{recorded.max:g}:{recorded.step:g} ({recorded.describe()}); "
            "leave --scale out to use the recorded one"
        )
    return given


def _from_hub(source: str) -> dict[str, tuple[pd.DataFrame, Origin]]:
    repo = source[len(HUB_PREFIX) :]
    repo = repo[len("datasets/") :] if repo.startswith("datasets/") else repo
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo):
        raise RatingsSourceError(f"ratings source {source}: a hub id is {HUB_PREFIX}owner/name")
    import datasets  # noqa: PLC0415

    try:
        obj = with_published_configs(repo, datasets.load_dataset(repo), ("trials", "participants"))
    except Exception as exc:  # offline, unknown repo, gated, ...: all end here with the reason
        raise RatingsSourceError(
            f"ratings source {source}: could not load the Hugging Face dataset {repo!r} from the hub "
            f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}). The hub must be reachable "
            "(and the dataset's terms accepted); or load it where it is and save_to_disk(), then point the "
            "source at that folder"
        ) from None
    return _dataset_frames(obj, f"hub dataset {repo}")


# ---- column map, wide format, derived ids -----------------------------------------------------------------
def parse_column_map(items: list[str] | str | None) -> dict[str, str]:
    """``["rating=score,clip_id=stimulus", ...]`` (the CLI's ``--map``) -> ``{"rating": "score", ...}``."""
    if not items:
        return {}
    items = [items] if isinstance(items, str) else items
    out: dict[str, str] = {}
    for item in items:
        for pair in str(item).split(","):
            if not pair.strip():
                continue
            if "=" not in pair:
                raise RatingsSourceError(f"--map {pair!r}: expected canonical=source (e.g. rating=score)")
            key, value = (s.strip() for s in pair.split("=", 1))
            if not key or not value:
                raise RatingsSourceError(f"--map {pair!r}: expected canonical=source (e.g. rating=score)")
            if key in out:
                raise RatingsSourceError(f"--map: {key!r} is mapped twice ({out[key]!r} and {value!r})")
            out[key] = value
    return out


def check_column_map(columns: Mapping[str, str], where: str) -> dict[str, str]:
    """The map with aliases resolved; unknown canonical names or a source used twice are errors."""
    problems, out = [], {}
    for key, value in columns.items():
        canon = ALIASES.get(key, key)
        if canon not in MAP_KEYS:
            problems.append(
                f"{where}: unknown column {key!r} (known: {', '.join(MAP_KEYS)}; aliases {', '.join(ALIASES)})"
            )
            continue
        if not isinstance(value, str) or not value.strip():
            problems.append(f"{where}.{key}: the source column name must be a non-empty string")
            continue
        if canon in out:
            problems.append(f"{where}: {canon!r} is mapped twice")
            continue
        out[canon] = value
    used = [v for v in out.values()]
    for v in sorted({v for v in used if used.count(v) > 1}):
        problems.append(f"{where}: source column {v!r} is mapped to more than one column")
    if problems:
        raise RatingsSourceError("\n".join(problems))
    return out


def apply_column_map(
    raw: dict[str, tuple[pd.DataFrame, Origin]], columns: Mapping[str, str], source: str
) -> dict[str, tuple[pd.DataFrame, Origin]]:
    """Rename source columns to canonical ones in every table holding them (see :func:`check_column_map`)."""
    mapping = check_column_map(columns, "column map") if columns else {}
    problems = []
    found = set()
    out = {}
    for table, (df, origin) in raw.items():
        rename = {src: canon for canon, src in mapping.items() if src in df.columns}
        for src, canon in rename.items():
            if canon in df.columns and canon not in rename:
                problems.append(
                    f"{origin.file()}: column map {canon}={src}, but the table already has a column {canon!r}"
                )
        found |= set(rename)
        origin.columns.update({canon: src for src, canon in rename.items()})
        out[table] = (df.rename(columns=rename), origin)
    for canon, src in mapping.items():
        if src not in found:
            shown = "; ".join(f"{o.file()}: {', '.join(map(str, df.columns))}" for df, o in raw.values())
            problems.append(
                f"ratings source {source}: column map {canon}={src}, but no table has a column {src!r} "
                f"(columns: {shown})"
            )
    if problems:
        raise RatingsSourceError("\n".join(problems))
    return out


def _is_wide(df: pd.DataFrame) -> bool:
    if "rating" in df.columns:
        return False
    present = [c for c in ("rating_0", "rating_1") if c in df.columns]
    if len(present) == 1:
        missing = "rating_1" if present[0] == "rating_0" else "rating_0"
        raise RatingsSourceError(
            f"the ratings table has {present[0]!r} but no {missing!r}: a wide table needs both "
            "(or a long table a 'rating' column)"
        )
    return len(present) == 2


def _clip_lookup(stimuli: pd.DataFrame | None) -> tuple[dict[tuple[str, str], str], dict[str, tuple[str, str]]]:
    """{(prompt_id, response as text): clip_id} and {clip_id: (prompt_id, response)}, attention check included."""
    by_pair = {(p, str(r)): c for c, (p, r) in ATTENTION_CLIPS.items()}
    by_clip = {c: (p, str(r)) for c, (p, r) in ATTENTION_CLIPS.items()}
    if stimuli is not None and {"prompt_id", "clip_id", "response"} <= set(stimuli.columns):
        for p, c, r in zip(stimuli["prompt_id"].astype(str), stimuli["clip_id"].astype(str), stimuli["response"]):
            r = str(int(r)) if pd.notna(r) else ""
            by_pair[(p, r)] = c
            by_clip[c] = (p, r)
    return by_pair, by_clip


def _wide_to_long(tables: dict[str, pd.DataFrame], origins: dict[str, Origin], stimuli: pd.DataFrame | None) -> None:
    """Two long rating rows per wide row; the wide row's trial-level columns stay for :func:`split_levels`."""
    wide, origin = tables["ratings"], origins["ratings"]
    if "prompt_id" not in wide.columns:
        raise RatingsSourceError(
            f"{origin.file()}: a wide ratings table (rating_0, rating_1) needs a prompt_id column "
            "(map yours, e.g. --map prompt_id=item)"
        )
    by_pair, _ = _clip_lookup(stimuli)
    n = len(wide)
    idx = np.repeat(np.arange(n), 2)
    resp = np.tile([0, 1], n)
    long = wide.iloc[idx].reset_index(drop=True)
    prompts = long["prompt_id"].astype(str).str.strip()
    long["clip_id"] = [by_pair.get((p, str(r)), f"{p}_{r}") if p else "" for p, r in zip(prompts, resp)]
    long["rating"] = np.where(resp == 0, wide["rating_0"].to_numpy()[idx], wide["rating_1"].to_numpy()[idx])
    row_columns = {
        "rating": [origin.column(f"rating_{r}") for r in resp],
        "clip_id": [origin.column("prompt_id")] * 2 * n,
    }
    if "audio_quality_0" in wide.columns or "audio_quality_1" in wide.columns:
        aq = {
            r: wide[f"audio_quality_{r}"].to_numpy()[idx]
            if f"audio_quality_{r}" in wide.columns
            else np.full(2 * n, "", dtype=object)
            for r in (0, 1)
        }
        long["audio_quality"] = np.where(resp == 0, aq[0], aq[1])
        row_columns["audio_quality"] = [origin.column(f"audio_quality_{r}") for r in resp]
    if "first_clip" in wide.columns:
        first = wide["first_clip"].astype(str).str.strip().to_numpy()[idx]
        long["presented_first"] = [
            ("" if f == "" else ("true" if f == str(r) else ("false" if f in ("0", "1") else f"first_clip={f}")))
            for f, r in zip(first, resp)
        ]
        row_columns["presented_first"] = [origin.column("first_clip")] * 2 * n
    long = long.drop(columns=[c for c in WIDE_COLUMNS if c in long.columns])
    o = origin.take(idx)
    o.row_columns.update(row_columns)
    tables["ratings"], origins["ratings"] = long, o


_SUFFIX = r"^(.+)_(\d+)$"  # a clip id {prompt}_{response}
STIMULI_COLUMNS = ["clip_id", "prompt_id", "response"]


def _stripped(df: pd.DataFrame, name: str) -> pd.Series | None:
    return df[name].astype(str).str.strip() if name in df.columns else None


def _derived_ids(r: pd.DataFrame) -> tuple[pd.Series, pd.Series, pd.Series, str]:
    """(clip, prompt, response as text, how) of every ratings row, per :func:`stimuli_from_ratings`' rules."""
    clip, prompt, resp = _stripped(r, "clip_id"), _stripped(r, "prompt_id"), _stripped(r, "response")
    if resp is not None:
        resp = resp.str.replace(r"\.0$", "", regex=True)
    if prompt is not None and resp is not None:
        if clip is None:
            clip = pd.Series([f"{p}_{x}" if p and x else "" for p, x in zip(prompt, resp)], index=r.index)
        return clip, prompt, resp, "from the ratings' prompt_id and response columns"
    assert clip is not None  # the caller checked
    parts = clip.str.extract(_SUFFIX)
    numbered = bool(len(clip)) and parts[1].notna().all()
    if prompt is not None:
        if numbered:
            return clip, prompt, parts[1], "prompt from the prompt_id column, response from the clip id's _N suffix"
        rank = clip.groupby(prompt).rank(method="dense").astype(int) - 1
        return clip, prompt, rank.astype(str), "prompt from the prompt_id column, responses numbered within it"
    if numbered and 1 < parts[0].nunique() < clip.nunique():
        return clip, parts[0], parts[1], "clip ids read as {prompt}_{response}"
    zeros = pd.Series("0", index=r.index)
    return clip, clip, zeros, "each clip its own item (a single-stimulus design: no prompt_id, response 0)"


def stimuli_from_ratings(ratings: pd.DataFrame, origin: Origin) -> tuple[pd.DataFrame, str]:
    """A stimulus table (clip_id, prompt_id, response) derived from a ratings table (strings), and a note.

    Rules (module docstring): ``prompt_id`` + ``response`` columns; else a ``prompt_id`` column with the
    response from the clip id's ``_N`` suffix (every clip has one) or the clip's rank within its prompt;
    else clip ids ``{prompt}_{response}`` when that gives two or more prompts, each with fewer clips than
    all; else each clip its own item. Attention-check rows (``attn``, ``attn_0``/``attn_1``) are left out.
    A ratings table without clip ids (and without prompt + response) gives an empty table: validation
    reports the missing column.

    Raises:
        RatingsSourceError: a response that is not a whole number, one clip given two prompts or responses,
            or two clips given the same prompt and response (each naming the rows and columns).
    """
    if "clip_id" not in ratings.columns and not {"prompt_id", "response"} <= set(ratings.columns):
        return pd.DataFrame(columns=STIMULI_COLUMNS), "no clips table and no clip ids in the ratings"
    clip, prompt, resp, how = _derived_ids(ratings)
    attn = clip.isin(list(ATTENTION_CLIPS)) | prompt.eq(ATTENTION_PROMPT)
    keep = ~attn & clip.ne("") & prompt.ne("")
    problems: list[str] = []
    seen: dict[str, tuple[int, str, str]] = {}
    slot: dict[tuple[str, str], tuple[int, str]] = {}
    for i in np.flatnonzero(keep.to_numpy()):
        c, p, x = clip.iat[i], prompt.iat[i], resp.iat[i]
        if not x.isdigit():
            problems.append(f"{origin.where(int(i), 'response')}: {x!r} is not a response index (a whole number >= 0)")
            continue
        x = str(int(x))
        if c in seen:
            j, p0, x0 = seen[c]
            if (p0, x0) != (p, x) and len(problems) < 20:
                problems.append(
                    f"{origin.where(int(i), 'clip_id')}: clip {c!r} is prompt {p!r} response {x}, but at "
                    f"{origin.where(j)} prompt {p0!r} response {x0}"
                )
            continue
        seen[c] = (int(i), p, x)
        if (p, x) in slot and len(problems) < 20:
            j, c0 = slot[(p, x)]
            problems.append(
                f"{origin.where(int(i), 'clip_id')}: clip {c!r} and clip {c0!r} (at {origin.where(j)}) are both "
                f"prompt {p!r} response {x}"
            )
        slot.setdefault((p, x), (int(i), c))
    if problems:
        raise RatingsSourceError("\n".join(problems))
    stimuli = pd.DataFrame([(c, p, int(x)) for c, (_, p, x) in seen.items()], columns=STIMULI_COLUMNS).astype(
        {"response": int}
    )
    counts = stimuli.groupby("prompt_id")["response"].size().value_counts().sort_index()
    design = ", ".join(f"{n} prompt(s) with {k} response(s)" for k, n in counts.items())
    return stimuli, f"no clips table: {len(stimuli)} clips derived from the ratings ({how}): {design or 'none'}"


def _fill_ids(tables: dict[str, pd.DataFrame], origins: dict[str, Origin], stimuli: pd.DataFrame | None) -> None:
    """clip_id from (prompt_id, response) and prompt_id from clip_id, via the stimuli, where absent."""
    r, origin = tables["ratings"], origins["ratings"]
    by_pair, by_clip = _clip_lookup(stimuli)
    if "clip_id" not in r.columns and {"prompt_id", "response"} <= set(r.columns):
        resp = r["response"].astype(str).str.strip().str.replace(r"\.0$", "", regex=True)
        r["clip_id"] = [
            by_pair.get((p.strip(), x), f"{p.strip()}_{x}") if p.strip() and x else ""
            for p, x in zip(r["prompt_id"].astype(str), resp)
        ]
        origin.columns.setdefault("clip_id", f"{origin.column('prompt_id')} + {origin.column('response')}")
    if "prompt_id" not in r.columns and "clip_id" in r.columns:
        r["prompt_id"] = [by_clip.get(c.strip(), ("", ""))[0] for c in r["clip_id"].astype(str)]
        origin.columns.setdefault("prompt_id", f"{origin.column('clip_id')} (prompt from the stimuli)")
    tables["ratings"] = r


def split_levels(tables: dict[str, pd.DataFrame], origins: dict[str, Origin], notes: list[str]) -> None:
    """Move trial- and participant-level columns of the ratings table into trials / participants tables.

    Only when that table was not given. A trial-level column needs the trial's key (``trial``, or in
    a wide table the row itself); its value must be the same on every rating row of the trial, as a
    participant-level column must be on every row of the participant -- otherwise a
    :class:`RatingsSourceError` names both rows and the column.
    """
    r, origin = tables["ratings"], origins["ratings"]
    for table, level_cols, keys in (
        ("trials", TRIAL_LEVEL, ["participant_id", "trial"]),
        ("participants", PARTICIPANT_LEVEL, ["participant_id"]),
    ):
        cols = [c for c in level_cols if c in r.columns]
        if table in tables or not cols:
            continue
        if table == "trials" and "trial" not in r.columns:
            keys = ["participant_id", "prompt_id"]
        missing = [k for k in keys if k not in r.columns]
        if missing:
            raise RatingsSourceError(
                f"{origin.file()}: column(s) {cols} hold one value per {table[:-1]}, which needs "
                f"the column(s) {missing} to tell them apart"
            )
        carry = ["prompt_id"] if table == "trials" and "prompt_id" in r.columns and "prompt_id" not in keys else []
        if table == "participants" and "condition" in r.columns:
            carry = ["condition"]
        key = ["\x1f".join(parts) for parts in zip(*(r[k].astype(str).str.strip() for k in keys))]
        first_of: dict[str, int] = {}
        rows: list[int] = []
        problems: list[str] = []
        for i, k in enumerate(key):
            j = first_of.get(k)
            if j is None:
                first_of[k] = i
                rows.append(i)
                continue
            for c in cols:
                a, b = str(r.iat[j, r.columns.get_loc(c)]).strip(), str(r.iat[i, r.columns.get_loc(c)]).strip()
                if a != b and len(problems) < 20:
                    problems.append(
                        f"{origin.where(i, c)}: {b!r}, but {origin.where(j)} of the same {table[:-1]} "
                        f"({', '.join(f'{kk}={r.iat[i, r.columns.get_loc(kk)]!r}' for kk in keys)}) has "
                        f"{a!r}; a {table[:-1]}-level column must agree on every row"
                    )
        if problems:
            raise RatingsSourceError("\n".join(problems))
        tables[table] = r.iloc[rows][keys + carry + cols].reset_index(drop=True)
        origins[table] = origin.take(rows)
        tables["ratings"] = r = r.drop(columns=cols)
        notes.append(f"{', '.join(cols)}: taken from the ratings table into {TABLE_FILES[table]}")


def ratings_config_problems(ratings: Mapping, base_dir: str | Path = ".") -> list[str]:
    """Config-time checks of the ``ratings`` block: the source exists, lies outside ``results/`` (the
    workflow's own outputs: ``results/ratings`` is what ingest writes, a cycle), and the column map
    names known columns. One message per problem, each naming its key."""
    source = str(ratings.get("source", "simulate"))
    problems: list[str] = []
    if source != "simulate":
        if source.startswith(HUB_PREFIX):
            repo = source[len(HUB_PREFIX) :].removeprefix("datasets/")
            if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo):
                problems.append(f"ratings.source: {source!r} is not a hub id ({HUB_PREFIX}owner/name)")
        else:
            base = Path(base_dir)
            path = base / source
            results = (base / "results").resolve()
            resolved = path.resolve()
            if resolved == results or results in resolved.parents:
                problems.append(
                    f"ratings.source: {source!r} is inside results/, the workflow's own output folder "
                    "(ingest writes results/ratings from the source): copy the collected ratings "
                    "elsewhere and point ratings.source there"
                )
            elif resolved in results.parents:
                problems.append(
                    f"ratings.source: {source!r} is the workflow's working directory or a folder above it (it holds "
                    "results/): point ratings.source at the folder or file of the collected ratings"
                )
            elif not path.exists():
                problems.append(
                    f"ratings.source: not found: {source!r} (a folder, a CSV/TSV/Parquet file, a datasets "
                    f"folder, or {HUB_PREFIX}owner/name)"
                )
    columns = ratings.get("columns") or {}
    if columns:
        try:
            check_column_map(columns, "ratings.columns")
        except RatingsSourceError as exc:
            problems += str(exc).splitlines()
    return problems

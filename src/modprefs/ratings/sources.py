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

Without a stimulus table (``modprefs stats`` without ``--clips``), a study published by ``modprefs publish`` gives its
own (:func:`~modprefs.ratings.sources_published.published_stimuli`: its ``stimuli`` split, ``n_chars`` the response
texts' lengths, as the workflow's); otherwise :func:`~modprefs.ratings.sources_stimuli.stimuli_from_ratings` derives
one from the ratings: from ``prompt_id`` + ``response`` columns; else from a ``prompt_id`` column (the response from
the clip id's ``_N`` suffix, or the clip's rank within its prompt); else from clip ids ``{prompt}_{response}`` (when
that gives two or more prompts); otherwise each clip is its own item (a single-stimulus / MOS design: prompt = clip,
response 0).

A published study also records its rating scale (its card's ``rating_scale``):
:func:`~modprefs.ratings.sources_published.source_scale` reads it and
:func:`~modprefs.ratings.sources_published.scale_for` makes it ``modprefs stats``' scale when ``--scale`` is not given
(and refuses one that disagrees).

Every cell keeps its provenance (:class:`~modprefs.ratings.source_tables.Origin`): validation messages name the user's
file, row and column -- the foreign column name and, for a wide table, the row of the trial. Nothing here judges
values; :mod:`modprefs.ratings.ingest` does.

Where the parts live: the tables, their provenance and the error in :mod:`modprefs.ratings.source_tables`;
``datasets`` folders, the hub and a published study's stimuli and scale in :mod:`modprefs.ratings.sources_published`;
wide tables, ids and derived stimuli in :mod:`modprefs.ratings.sources_stimuli`; here finding the files, reading
them, the column map, splitting the levels and the config's checks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from modprefs.file_access import file_problem
from modprefs.io_tables import PARQUET_SUFFIXES, TABLE_SUFFIXES, read_table
from modprefs.published_layout import (
    hub_parquet_splits,
)
from modprefs.ratings.schema import TABLE_FILES, TABLES
from modprefs.ratings.source_tables import (
    ALIASES,
    HUB_PREFIX,
    MAP_KEYS,
    PARTICIPANT_LEVEL,
    TRIAL_LEVEL,
    Origin,
    RatingsSourceError,
    RawTables,
)
from modprefs.ratings.sources_published import from_datasets_folder, from_hub, from_hub_layout, is_datasets_folder
from modprefs.ratings.sources_stimuli import derived_stimuli, fill_ids, is_wide, wide_to_long


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
        raw = from_hub(text)
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
        raw, published = from_datasets_folder(path)
        files = source_files(path)
    elif path.is_dir() and "ratings" in (layout := hub_parquet_splits(path)):
        raw, published = from_hub_layout(path, layout)
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
    if is_wide(tables["ratings"]):
        notes.append("wide ratings table: one row per trial, rating_0/rating_1 turned into two rating rows")
        wide_to_long(tables, origins, stimuli)
    derived = None
    if derive_stimuli and stimuli is None:
        derived, note = derived_stimuli(tables["ratings"], origins["ratings"], published)
        notes.append(note)
    fill_ids(tables, origins, stimuli if stimuli is not None else derived)
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


# ---- column map -----------------------------------------------------------------
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

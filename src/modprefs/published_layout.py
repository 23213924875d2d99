"""How a study published by ``modprefs publish`` (modprefs.publish) loads back from the Hugging Face hub.

On the hub the study is one config per table (the card's ``configs``), each with one ``train`` split:
``datasets.load_dataset(repo)`` gives only the default config, ``ratings``. :func:`with_published_configs`
recognises that config by its columns and loads the other tables a reader needs, returned as one
``DatasetDict`` whose splits are named after the tables, the same shape ``load_from_disk`` gives for the
published folder. Used by the ratings source (``trials``, ``participants``) and the pairs source (``stimuli``).

On disk a published folder holds the ``save_to_disk`` copy and the hub's data-files layout
(:func:`hub_parquet_splits`), either of which the readers take; :func:`folder_read_failure` names the damaged file
of a folder that cannot be read.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: columns the default (``ratings``) config of a published study always has
PUBLISHED_RATINGS_COLUMNS = frozenset({"participant_id", "source"})


def is_published_ratings_config(obj: Any) -> bool:
    """True for what ``load_dataset`` returns for a published study's default config: a DatasetDict with one
    ``train`` split holding :data:`PUBLISHED_RATINGS_COLUMNS`."""
    import datasets

    return (
        isinstance(obj, datasets.DatasetDict)
        and list(obj) == ["train"]
        and PUBLISHED_RATINGS_COLUMNS <= set(obj["train"].column_names)
    )


def with_published_configs(repo: str, obj: Any, tables: Sequence[str]) -> Any:
    """``obj`` (``load_dataset(repo)``) with the published study's ``tables`` configs loaded beside its ratings,
    as ``DatasetDict(ratings=..., <table>=...)``; a config the dataset lacks is left out. Any other dataset, or
    one where none of ``tables`` exists, is returned as loaded."""
    import datasets

    if not is_published_ratings_config(obj):
        return obj
    loaded = {"ratings": obj["train"]}
    for table in tables:
        try:
            loaded[table] = datasets.load_dataset(repo, table, split="train")
        except Exception:  # noqa: BLE001, S112 - the config is absent: a plain single-table dataset
            continue
    return datasets.DatasetDict(loaded) if len(loaded) > 1 else obj


# ---- a published folder on disk -----------------------------------------------------------------------------------
def hub_parquet_splits(folder: Path) -> dict[str, list[Path]]:
    """``{split: its Parquet files}`` of a folder in the hub's data-files layout, ``data/<split>/*.parquet`` (what
    ``modprefs publish`` writes beside its ``save_to_disk`` copy, and what a clone of a dataset repository holds);
    ``{}`` for any other folder."""
    data = Path(folder) / "data"
    if not data.is_dir():
        return {}
    splits = {}
    for sub in sorted(p for p in data.iterdir() if p.is_dir() and not p.name.startswith(".")):
        files = sorted(sub.glob("*.parquet"))
        if files:
            splits[sub.name] = files
    return splits


def read_parquet_files(files: Sequence[Path], columns: Sequence[str] | None = None) -> Any:
    """The rows of ``files`` (one split's Parquet files) as one pandas frame, optionally only ``columns``.

    Raises:
        ValueError: a file pyarrow cannot read, named (with pyarrow's reason).
    """
    import pandas as pd

    from modprefs.file_access import printable

    frames = []
    for path in files:
        try:
            frames.append(pd.read_parquet(path, columns=list(columns) if columns else None))
        except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a corrupt file
            raise ValueError(f"{path}: cannot be read as Parquet ({type(exc).__name__}: {printable(exc)})") from None
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def folder_read_failure(folder: Path, exc: BaseException) -> str:
    """Why a ``datasets`` folder could not be read (``exc`` was raised reading it), naming the damaged file where one
    is found: the first JSON file that is not UTF-8 JSON, or ``.arrow`` file pyarrow cannot read in full (schema,
    offsets, UTF-8 of its strings); else ``exc`` itself, its raw bytes shown as ``?``."""
    import json

    import pyarrow as pa  # type: ignore[import-untyped]

    from modprefs.file_access import printable

    folder = Path(folder)
    for path in sorted(folder.rglob("*.json")):
        try:
            json.loads(path.read_bytes().decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as err:
            return f"{path}: not a readable JSON file ({type(err).__name__}: {printable(err)})"
    for path in sorted(folder.rglob("*.arrow")):
        try:
            with pa.memory_map(str(path)) as source:
                pa.ipc.open_stream(source).read_all().validate(full=True)
        except Exception as err:  # noqa: BLE001 - any failure names the file
            return f"{path}: a damaged Arrow file ({type(err).__name__}: {printable(err)})"
    return f"{type(exc).__name__}: {printable(exc)}"

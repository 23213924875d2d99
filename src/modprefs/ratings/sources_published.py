"""Ratings sources published as datasets: a ``datasets`` folder, the hub's layout, ``hf://`` ids.

The ``ratings``/``trials``/``participants`` splits become the canonical tables (:func:`published_ratings`); a
study ``modprefs publish`` wrote also gives its stimuli (:func:`published_stimuli`) and its rating scale
(:func:`source_scale`, :func:`scale_for`). Loading a source of any kind: :mod:`modprefs.ratings.sources`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from modprefs.io_tables import strings_frame
from modprefs.published_layout import (
    folder_read_failure,
    hub_parquet_splits,
    read_parquet_files,
    with_published_configs,
)
from modprefs.ratings.schema import TABLES
from modprefs.ratings.source_tables import HUB_PREFIX, Origin, RatingsSourceError
from modprefs.ratings.sources_stimuli import STIMULI_COLUMNS
from modprefs.scale import RatingScale


def is_datasets_folder(path: Path) -> bool:
    """A ``datasets`` ``save_to_disk`` folder (a Dataset or a DatasetDict)."""
    return (path / "dataset_dict.json").is_file() or (
        (path / "state.json").is_file() and (path / "dataset_info.json").is_file()
    )


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


def from_datasets_folder(path: Path) -> tuple[dict[str, tuple[pd.DataFrame, Origin]], pd.DataFrame | None]:
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


def from_hub_layout(
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


def from_hub(source: str) -> dict[str, tuple[pd.DataFrame, Origin]]:
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

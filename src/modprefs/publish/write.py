"""The splits as a ``datasets.DatasetDict`` and the files of a published dataset folder.

Folder layout (docs/CONTRACTS.md, "results/dataset/"): ``README.md`` (the card), ``data/<split>/train-00000-of-00001
.parquet`` (one Hub config per split: the splits differ in columns) and the ``save_to_disk`` copy at the top
(``dataset_dict.json``, ``<split>/``), which ``datasets.load_from_disk`` and ``modprefs stats --ratings`` read.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import datasets
import numpy as np
import pandas as pd

from modprefs.publish.build import AUDIO_COLUMNS
from modprefs.publish.card import data_file

MESSAGES = datasets.List({"role": datasets.Value("string"), "content": datasets.Value("string")})
INTEGER_COLUMNS = (
    "trial",
    "response",
    "judge_sample",
    "rating",
    "audio_quality",
    "rating_changes",
    "replays_0",
    "replays_1",
    "n_raters",
    "chosen_response",
)


def _integers(df: pd.DataFrame) -> pd.DataFrame:
    """Whole-number float columns of :data:`INTEGER_COLUMNS` (NaN where a judge row has none) as Int64."""
    df = df.copy()
    for c in INTEGER_COLUMNS:
        if c in df.columns and df[c].dtype.kind == "f":
            v = df[c].dropna()
            if np.all(np.equal(np.mod(v, 1), 0)):
                df[c] = df[c].astype("Int64")
    return df


def _features(name: str, df: pd.DataFrame) -> datasets.Features | None:
    """Explicit features where inference cannot know them (message lists, audio, an empty split)."""
    if not name.startswith("preferences_"):
        return None
    return datasets.Features(
        {
            "prompt_id": datasets.Value("string"),
            "prompt": MESSAGES,
            "chosen": MESSAGES,
            "rejected": MESSAGES,
            "chosen_audio": datasets.Audio(),
            "rejected_audio": datasets.Audio(),
            "chosen_response": datasets.Value("int64"),
            "margin": datasets.Value("float64"),
            "agreement": datasets.Value("float64"),
            "n_raters": datasets.Value("int64"),
            "mean_chosen": datasets.Value("float64"),
            "mean_rejected": datasets.Value("float64"),
        }
    )


def to_dataset_dict(frames: Mapping[str, pd.DataFrame]) -> datasets.DatasetDict:
    """One ``datasets.Dataset`` per split; audio columns typed ``datasets.Audio`` (the WAV bytes kept as they are)."""
    out = {}
    for name, df in frames.items():
        df = _integers(df).reset_index(drop=True)
        features = _features(name, df)
        if features is not None:
            ds = datasets.Dataset.from_pandas(df, features=features, preserve_index=False)
        else:
            ds = datasets.Dataset.from_pandas(df, preserve_index=False)
            for c in AUDIO_COLUMNS.get(name, ()):
                ds = ds.cast_column(c, datasets.Audio())
        out[name] = ds
    return datasets.DatasetDict(out)


def write_dataset(dd: datasets.DatasetDict, card: str, folder: Path) -> None:
    """``save_to_disk`` into ``folder`` plus the Parquet data files and README.md (``folder`` should be new/empty:
    callers build it in a staged folder and move it into place)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    dd.save_to_disk(str(folder))
    for name, ds in dd.items():
        target = folder / data_file(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        ds.to_parquet(str(target))
    (folder / "README.md").write_text(card, encoding="utf-8")

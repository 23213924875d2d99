"""How a study published by ``modprefs publish`` (modprefs.publish) loads back from the Hugging Face hub.

On the hub the study is one config per table (the card's ``configs``), each with one ``train`` split:
``datasets.load_dataset(repo)`` gives only the default config, ``ratings``. :func:`with_published_configs`
recognises that config by its columns and loads the other tables a reader needs, returned as one
``DatasetDict`` whose splits are named after the tables, the same shape ``load_from_disk`` gives for the
published folder. Used by the ratings source (``trials``, ``participants``) and the pairs source (``stimuli``).
"""

from __future__ import annotations

from collections.abc import Sequence
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

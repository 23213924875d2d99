"""What a ratings source loads into (:mod:`modprefs.ratings.sources`): the canonical tables as strings
(:class:`RawTables`), where each cell came from (:class:`Origin`), the error that names the source, and the
column sets the readers share.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from modprefs.errors import UserInputError
from modprefs.ratings.schema import PARTICIPANTS_COLUMNS, RATINGS_COLUMNS, TRIALS_COLUMNS
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

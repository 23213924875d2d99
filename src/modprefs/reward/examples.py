"""What a reward model scores: one candidate final turn in its dialogue context, under a criterion.

An :class:`Example` is one side of a pair: the criterion's instruction (a text prefix, as
SDiaReward's ``inst``), the context turns (text, and audio where there is some), and the
candidate turn (transcript + audio, optionally with a degradation spec applied on load).
``features`` carries precomputed vectors for the ``features`` backbone (tests, external embeddings).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Turn:
    role: str
    text: str
    audio: str | None = None


@dataclass(frozen=True)
class Example:
    instruction: str = ""
    context: tuple[Turn, ...] = ()
    text: str = ""
    audio: str | None = None
    transform: str | None = None
    features: Any = field(default=None, compare=False, hash=False)


def content_key(*parts: Any) -> str:
    """A stable cache key (sha256 hex) of strings/numbers; a file path part adds size and mtime."""
    h = hashlib.sha256()
    for p in parts:
        h.update(repr(p).encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def file_stamp(path: str | os.PathLike[str]) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


class FeatureCache:
    """In-memory (and optionally on-disk, ``.npy`` per key, atomic) cache of frozen features.

    Several runs of the workflow share the directory, so the frozen text encoder and the
    log-mel front end run once per distinct input.
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None):
        self.directory = Path(directory) if directory else None
        self.memory: dict[str, np.ndarray] = {}
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> np.ndarray | None:
        if key in self.memory:
            self.hits += 1
            return self.memory[key]
        if self.directory is not None:
            path = self.directory / key[:2] / f"{key}.npy"
            if path.is_file():
                try:
                    arr = np.load(path)
                except (OSError, ValueError):
                    arr = None
                if arr is not None:
                    self.memory[key] = arr
                    self.hits += 1
                    return arr
        self.misses += 1
        return None

    def put(self, key: str, value: np.ndarray) -> None:
        self.memory[key] = value
        if self.directory is not None:
            from modprefs.io import atomic_path

            with atomic_path(self.directory / key[:2] / f"{key}.npy") as tmp:
                with open(tmp, "wb") as fh:
                    np.save(fh, value)

"""The judges' shared types: what is rated (:class:`JudgeItem`), a run's outcome and its errors.

Every backend (:mod:`.client` the API judge, :mod:`.local` the offline one) and the dispatcher
(:mod:`.dispatch`) import these; this module imports no backend.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from modprefs.errors import UserInputError
from modprefs.study.terms import PAPER_COLUMN_ORDER as MODALITIES

if TYPE_CHECKING:  # for the annotation only: no backend is imported at run time
    from modprefs.judges.local import LocalRunStats

KINDS = ("response_quality", "audio_quality")


class JudgeSetupError(UserInputError, RuntimeError):
    """Configuration or endpoint problem found before any request was made."""


class JudgeAbort(RuntimeError):
    """A problem that makes every further request pointless (bad key, quota exhausted)."""


@dataclass
class JudgeItem:
    """One thing to rate: a response (``clip_id``) to ``prompt`` after ``history``.

    ``modality`` text: the response is ``response_text``; audio: the response is the WAV file at
    ``audio_path``. ``kind`` is response_quality (both modalities) or audio_quality (audio only).
    """

    prompt_id: str
    clip_id: str
    modality: str
    kind: str
    history: list = field(default_factory=list)
    prompt: str = ""
    response_text: str | None = None
    audio_path: str | None = None

    def __post_init__(self) -> None:
        if self.modality not in MODALITIES:
            raise ValueError(f"{self.clip_id}: modality must be one of {MODALITIES}, got {self.modality!r}")
        if self.kind not in KINDS:
            raise ValueError(f"{self.clip_id}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.kind == "audio_quality" and self.modality != "audio":
            raise ValueError(f"{self.clip_id}: audio_quality is rated in the audio modality only")
        if self.modality == "text" and self.response_text is None:
            raise ValueError(f"{self.clip_id}: a text item needs response_text")
        if self.modality == "audio" and not self.audio_path:
            raise ValueError(f"{self.clip_id}: an audio item needs audio_path")

    @property
    def audio_file(self) -> str:
        """``audio_path`` of an audio item (set: checked at construction)."""
        assert self.audio_path is not None, f"{self.clip_id}: not an audio item"
        return self.audio_path


@dataclass
class RunStats:
    units: int = 0
    cached: int = 0
    pending: int = 0
    http_calls: int = 0  # chat-completions HTTP attempts (incl. retries and re-asks)
    retries: int = 0  # transport retries (429, 5xx, timeouts, connection errors)
    reasks: int = 0
    ok: int = 0
    failed: int = 0
    spend_usd: float = 0.0
    wall_s: float = 0.0

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class RunResult:
    table: Any  # pandas DataFrame (records.TABLE_COLUMNS)
    stats: RunStats | LocalRunStats  # the API judge's or the local judge's counters
    records: list = field(default_factory=list)

"""Versioned judge prompts.

Each prompt is a UTF-8 text file under ``resources/judges/prompts/``; its *version* is the file
stem plus the first 12 hex digits of the sha256 of its bytes (``response_quality_text_v1@3f2a...``),
so editing a file without renaming it still changes the version, the request hashes, and hence the
cache. Placeholders are ``{{name}}`` (plain string replacement, so JSON braces in the text are safe).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

PROMPTS_DIR = Path(__file__).resolve().parents[3] / "resources" / "judges" / "prompts"

#: (modality, kind) -> default prompt file stem
DEFAULT_PROMPTS: dict[tuple[str, str], str] = {
    ("text", "response_quality"): "response_quality_text_v1",
    ("audio", "response_quality"): "response_quality_audio_v1",
    ("audio", "audio_quality"): "audio_quality_v1",
}
DEFAULT_REASK = "reask_v1"

ROLE_NAMES = {"user": "USER", "model": "ASSISTANT", "assistant": "ASSISTANT"}


@dataclass(frozen=True)
class Prompt:
    name: str  # file stem
    text: str
    sha256: str  # of the file's bytes

    @property
    def version(self) -> str:
        return f"{self.name}@{self.sha256[:12]}"

    def render(self, **fields: str) -> str:
        out = self.text
        for key, value in fields.items():
            out = out.replace("{{" + key + "}}", value)
        if "{{" in out and "}}" in out:
            start = out.index("{{")
            raise ValueError(f"prompt {self.name}: unfilled placeholder near {out[start : start + 40]!r}")
        return out


def load_prompt(name: str, prompts_dir: str | Path | None = None) -> Prompt:
    """Load ``<prompts_dir>/<name>.txt`` (``name`` may also be a path to a .txt file)."""
    path = Path(name)
    if path.suffix != ".txt":
        path = Path(prompts_dir or PROMPTS_DIR) / f"{name}.txt"
    if not path.is_file():
        raise FileNotFoundError(f"judge prompt file not found: {path}")
    data = path.read_bytes()
    return Prompt(name=path.stem, text=data.decode("utf-8").strip() + "\n", sha256=hashlib.sha256(data).hexdigest())


def format_conversation(history: list[dict], prompt: str) -> str:
    """Render the earlier turns and the user's latest message as plain text."""
    lines = []
    if history:
        lines.append("CONVERSATION HISTORY:")
        for turn in history:
            role = ROLE_NAMES.get(str(turn.get("role")), str(turn.get("role")).upper())
            lines.append(f"{role}: {turn.get('content', '')}")
        lines.append("")
    else:
        lines.append("CONVERSATION HISTORY: (none, this is the first turn)")
        lines.append("")
    lines.append("USER'S LATEST MESSAGE:")
    lines.append(prompt)
    return "\n".join(lines)

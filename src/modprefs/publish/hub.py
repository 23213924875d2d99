"""Push a published dataset folder to the Hugging Face Hub (``modprefs publish --push-to-hub OWNER/NAME``)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from modprefs.errors import UserInputError

#: what goes to the hub: the card and the Parquet data files (not the save_to_disk Arrow copy)
UPLOAD_PATTERNS = ["README.md", "data/**"]


class PushError(UserInputError):
    """The push could not happen (offline, no token, hub error); the dataset stays written locally."""


def offline() -> bool:
    """HF_HUB_OFFLINE (or HF_DATASETS_OFFLINE) set to a true value."""
    return any(
        os.environ.get(k, "").strip().lower() in ("1", "true", "yes", "on")
        for k in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    )


def check_repo_id(repo_id: str) -> str:
    """``OWNER/NAME`` (an optional ``hf://`` / ``datasets/`` prefix removed); PushError otherwise."""
    repo = repo_id.removeprefix("hf://").removeprefix("datasets/")
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo):
        raise PushError(f"--push-to-hub {repo_id!r}: expected OWNER/NAME")
    return repo


def push(folder: Path, repo_id: str, private: bool = False) -> str:
    """Upload ``folder``'s README.md and data/ to the dataset repository ``repo_id``; its URL.

    Raises:
        PushError: offline (HF_HUB_OFFLINE), no token (HF_TOKEN or ``hf auth login``), or the hub refused.
    """
    repo = check_repo_id(repo_id)
    if offline():
        raise PushError(f"not pushed to {repo}: offline (HF_HUB_OFFLINE is set)")
    import huggingface_hub  # noqa: PLC0415

    token = huggingface_hub.get_token()
    if not token:
        raise PushError(f"not pushed to {repo}: no Hugging Face token (set HF_TOKEN or run `hf auth login`)")
    try:
        api = huggingface_hub.HfApi(token=token)
        api.create_repo(repo, repo_type="dataset", private=private, exist_ok=True)
        info = api.upload_folder(
            folder_path=str(folder),
            repo_id=repo,
            repo_type="dataset",
            allow_patterns=UPLOAD_PATTERNS,
            commit_message="modprefs publish",
        )
    except Exception as exc:  # network down, 401, 403, ...: the reason in one line
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise PushError(f"not pushed to {repo}: {type(exc).__name__}: {first}") from None
    return str(getattr(info, "repo_url", f"https://huggingface.co/datasets/{repo}"))

"""Shared checks for the bad-input suites (issue #13): a bad input fails cleanly and changes nothing.

A clean failure is: exit status != 0 (or a documented, labelled partial result, checked by the
caller), a message on stderr/stdout that names what is wrong (file, row/column or key — the
caller passes the fragments it must contain), no Python traceback, and no file under the watched
output folders created, changed or removed (hashed before and after).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path


def tree_digest(*roots: Path) -> dict[str, str]:
    """{relative path: sha256} of every file under ``roots`` (missing roots count as empty)."""
    out: dict[str, str] = {}
    for root in roots:
        root = Path(root)
        if not root.exists():
            continue
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            out[f"{root.name}/{path.relative_to(root)}"] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@dataclass
class Failure:
    returncode: int
    output: str  # stdout + stderr


def run_command(cmd: Sequence[str], cwd: Path | None = None, env: dict | None = None, timeout: float = 600) -> Failure:
    proc = subprocess.run(
        list(cmd), cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=timeout
    )
    return Failure(proc.returncode, proc.stdout + proc.stderr)


def assert_clean_failure(
    cmd: Sequence[str],
    *,
    watch: Iterable[Path],
    must_mention: Iterable[str] = (),
    cwd: Path | None = None,
    env: dict | None = None,
    timeout: float = 600,
) -> Failure:
    """Run ``cmd``; assert exit != 0, every fragment of ``must_mention`` in the output (case-insensitive),
    no traceback, and the files under ``watch`` byte-identical before and after. Returns the result."""
    watch = [Path(w) for w in watch]
    before = tree_digest(*watch)
    result = run_command(cmd, cwd=cwd, env=env, timeout=timeout)
    after = tree_digest(*watch)
    text = result.output
    assert result.returncode != 0, f"expected a failure, got exit 0:\n{text[-3000:]}"
    assert "Traceback (most recent call last)" not in text, f"traceback in the output:\n{text[-3000:]}"
    for fragment in must_mention:
        assert fragment.lower() in text.lower(), f"message does not mention {fragment!r}:\n{text[-3000:]}"
    changed = sorted(set(before) ^ set(after) | {k for k in before.keys() & after.keys() if before[k] != after[k]})
    assert not changed, f"outputs changed by a failed run: {changed[:20]}"
    return result

"""The code blocks of the project's documentation, as a test copies them (never retyped in a test).

``section(path, title)`` is the text of one Markdown section (from its heading to the next heading of the same or a
higher level); ``fenced_blocks(text, lang)`` the bodies of its fenced blocks in that language; ``commands(block)``
a shell block's commands without their trailing comments.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def section(path: Path, title: str) -> str:
    """The Markdown section headed ``title`` (any level), up to the next heading of its level or higher."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(#+)\s+(.*?)\s*$", line)
        if m and m.group(2) == title:
            level = len(m.group(1))
            out = []
            for rest in lines[i + 1 :]:
                h = re.match(r"^(#+)\s", rest)
                if h and len(h.group(1)) <= level:
                    break
                out.append(rest)
            return "\n".join(out)
    raise AssertionError(f"{path.name} has no section {title!r}")


def fenced_blocks(text: str, lang: str) -> list[str]:
    """The bodies of the ```` ```lang ```` blocks of ``text``, in order."""
    return re.findall(rf"^```{re.escape(lang)}\n(.*?)^```\s*$", text, flags=re.S | re.M)


def commands(block: str) -> list[str]:
    """A shell block's commands: one per non-empty line, a trailing ``# comment`` removed."""
    out = []
    for line in block.splitlines():
        line = re.sub(r"\s+#.*$", "", line).strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out

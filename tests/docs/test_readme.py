"""README.md is a landing page (issue #53): short, its links lead somewhere, its one timing is the benchmark's."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def test_readme_is_a_landing_page() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    for heading in ("Two commands", "Which path are you on?", "Citation", "Licence"):
        assert re.search(rf"^## {re.escape(heading)}$", text, flags=re.M), heading
    assert "make run" in text and "make test" in text


def test_every_link_of_the_readme_and_the_docs_exists() -> None:
    """Relative Markdown links (README.md, CONTRIBUTING.md, docs/*.md) name files of the checkout."""
    broken = []
    for doc in [README, ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text(encoding="utf-8")):
            if re.match(r"^[a-z]+://", target):
                continue
            if not (doc.parent / target).exists():
                broken.append(f"{doc.relative_to(ROOT)} -> {target}")
    assert broken == []


def test_the_path_table_links_a_page_for_every_path() -> None:
    text = README.read_text(encoding="utf-8")
    table = text.split("## Which path are you on?", 1)[1].split("\n\n")[1]
    rows = [r for r in table.splitlines()[2:] if r.startswith("|")]
    assert len(rows) >= 6
    for row in rows:
        assert re.search(r"\]\(docs/[\w-]+\.md\)", row), row


def test_the_default_run_time_is_the_benchmarks() -> None:
    """The README's "about N minutes" is benchmarks/out/default_run.json's total, rounded."""
    minutes = json.loads((ROOT / "benchmarks/out/default_run.json").read_text())["total_minutes"]
    assert f"about {round(minutes)} minutes" in " ".join(README.read_text(encoding="utf-8").split())


def test_every_benchmark_and_test_path_the_docs_name_exists() -> None:
    """A script or output of benchmarks/, or a file of tests/, named in the README, CONTRIBUTING.md, the docs or a
    docstring in src/ exists (scripts move between benchmarks/performance, validity and tools; tests mirror src)."""
    texts = [
        README,
        ROOT / "CONTRIBUTING.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "src").rglob("*.py")),
    ]
    missing = []
    for path in texts:
        text = path.read_text(encoding="utf-8")
        for name in re.findall(r"(?:benchmarks|tests)/[\w/.*-]+\.(?:py|json|md|sh)", text):
            if not list(ROOT.glob(name)):
                missing.append(f"{path.relative_to(ROOT)}: {name}")
    assert missing == []

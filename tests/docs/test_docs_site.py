"""The docs site's pages (issue #53): the validation page shows every benchmark table, the toctree every page."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_the_validation_page_includes_every_benchmark_table() -> None:
    """Every Markdown table a benchmark writes (benchmarks/out/*.md) is included, not copied, by docs/validation.md."""
    included = set(
        re.findall(
            r"^```\{include\} \.\./benchmarks/out/([\w-]+\.md)$", (DOCS / "validation.md").read_text(), flags=re.M
        )
    )
    written = {p.name for p in (ROOT / "benchmarks/out").glob("*.md")}
    assert written and included == written


def test_every_page_is_in_the_toctree() -> None:
    index = (DOCS / "index.md").read_text()
    listed = set(re.findall(r"^([\w/-]+)$", index, flags=re.M))
    pages = {
        p.relative_to(DOCS).with_suffix("").as_posix()
        for p in DOCS.rglob("*.md")
        if not any(part.startswith("_") for part in p.relative_to(DOCS).parts)  # _build, _generated
    }
    pages |= {"reference/config", "reference/cli"}  # written by the build (docs/_ext/generated_pages.py)
    pages -= {"index"}
    assert pages <= listed, pages - listed

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


#: numbers of the methods page that are targets or bands derived from a benchmark, not figures in its outputs
DERIVED = {
    "97.5": "the upper end of the 92.5-97.5 % coverage band the interval benchmarks accept",
    "5.97": "the upper end of 5 % +- 2 MC SE at 2,000 studies (4.03-5.97 %)",
}


def test_the_methods_pages_percentages_are_benchmark_figures() -> None:
    """Every decimal percentage docs/methods.md quotes is in a file of benchmarks/out (as its benchmark wrote it),
    except the declared bands: a rerun that changes a figure fails here until the page quotes the new one."""
    outputs = " ".join(
        p.read_text(encoding="utf-8", errors="ignore")
        for p in (ROOT / "benchmarks" / "out").glob("*")
        if p.is_file() and p.suffix in (".md", ".json")
    )
    quoted = re.findall(r"(?<![\w.])(\d+\.\d+)\s?%", (DOCS / "methods.md").read_text(encoding="utf-8"))
    assert len(quoted) >= 40
    missing = sorted({n for n in quoted if n not in outputs} - set(DERIVED))
    assert missing == [], f"docs/methods.md quotes figures no benchmark output holds: {missing}"

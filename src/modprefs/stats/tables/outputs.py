"""Write an :class:`~modprefs.stats.tables.analyses.AnalysisResult`: each table as CSV + Markdown, each figure as PNG.

Outputs are named as the rules of ``rules/stats.smk`` name them: ``<table>_csv``, ``<table>_md``
and ``<figure>``. The workflow's adapter passes the rule's outputs; ``modprefs stats`` passes
:func:`output_paths` under its ``--out`` folder. Every write is atomic (:mod:`modprefs.io`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from modprefs.io import write_csv, write_markdown_table
from modprefs.stats.tables.analyses import AnalysisResult

log = logging.getLogger(__name__)


def output_paths(tables: Iterable[str], figures: Iterable[str], out: str | os.PathLike[str]) -> dict[str, Path]:
    """``{<t>_csv: out/tables/<t>.csv, <t>_md: out/tables/<t>.md, <f>: out/figures/<f>.png}``."""
    out = Path(out)
    paths = {}
    for t in tables:
        paths[f"{t}_csv"] = out / "tables" / f"{t}.csv"
        paths[f"{t}_md"] = out / "tables" / f"{t}.md"
    for f in figures:
        paths[f] = out / "figures" / f"{f}.png"
    return paths


def write_result(
    result: AnalysisResult,
    outputs: Mapping[str, str | os.PathLike[str]],
    staged: tuple[Path, Path] | None = None,
) -> None:
    """Write every table and figure of ``result`` to its output (KeyError: an output the caller did not declare).

    ``staged``: (the staging folder the outputs lie in, the folder it becomes): the log lines name a figure where
    it will be once the run ends, not in the staging folder, which is gone by then."""
    for name, table in result.tables.items():
        write_csv(table, outputs[f"{name}_csv"])
        shown = table[result.md_columns[name]] if name in result.md_columns else table
        write_markdown_table(shown, outputs[f"{name}_md"], title=result.titles.get(name), floatfmt=".4g")
        log.info("%s: %d rows", name, len(table))
    for name, draw in result.figures.items():
        Path(outputs[name]).parent.mkdir(parents=True, exist_ok=True)
        draw(str(outputs[name]))
        shown = Path(outputs[name])
        if staged is not None and staged[0] in shown.parents:
            shown = staged[1] / shown.relative_to(staged[0])
        log.info("figure %s", shown)

"""What the benchmarks measured of the tests the answers page cites: their false-positive rates under nulls.

* ICC differences (Table 4): ``benchmarks/out/icc_difference_null_v2.json`` (cells ``<size>/<model>``; ``alt``
  models are alternatives and left out), rejections pooled over the null cells;
* alpha differences (Table 4): ``benchmarks/out/alpha_difference_null.json`` (the same layout, alpha tests only);
* Table 2's modality interactions: ``benchmarks/out/table2_null.json`` and ``table2_null_slopes.json``
  (cells ``<model>`` or ``<model>/<size>``, one block per random-effects structure).

Each function returns one sentence, or None when the benchmark was not run on this installation.

The summaries these sentences (and :mod:`modprefs.report.html`'s notes) quote ship with the package as
``measured_figures.json`` (written from benchmarks/out by ``benchmarks/tools/measured_figures.py``; a test keeps
the two equal), so that an installed wheel, which has no benchmarks/out, still quotes them:
:func:`benchmark_summary` reads a benchmark output where it exists and the shipped copy of it (by file name) where
it does not.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

#: the shipped copy of the benchmark summaries the report quotes: {file name: {"summary": ...}}
FIGURES = Path(__file__).with_name("measured_figures.json")
#: the benchmark outputs (benchmarks/out/<name>) whose summaries the report quotes
QUOTED = (
    "icc_coverage.json",
    "table2_null.json",
    "table2_null_slopes.json",
    "icc_difference_null_v2.json",
    "alpha_difference_null.json",
)

ICC_TEST_KEYS = {"calibrated": "icc/calibrated", "jackknife": "icc/jackknife", "permutation": "icc/permutation"}
#: Table 4's alpha test for a ``stats.icc_test`` (the paper's permutation goes with the paper's ICC test)
ALPHA_TEST_FOR_ICC_TEST = {"calibrated": "studentized", "jackknife": "studentized", "permutation": "permutation"}


@cache
def shipped_figures() -> dict:
    """The package's copy of the quoted benchmark summaries ({} when it is missing)."""
    if not FIGURES.is_file():
        return {}
    return dict(json.loads(FIGURES.read_text(encoding="utf-8")))


def benchmark_summary(path: Path | None) -> dict | None:
    """The ``summary`` of the benchmark output ``path``: read from the file where it exists (a checkout), else the
    shipped copy of the output of that name (an installed package); None when ``path`` is None or neither has it."""
    if path is None:
        return None
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8")).get("summary") or {}
    shipped = shipped_figures().get(path.name)
    return shipped.get("summary") or {} if shipped is not None else None


def pooled_rejections(null_json: Path | None, key: str) -> tuple[int, int, int] | None:
    """(rejected, studies, cells) of ``key`` (e.g. ``icc/calibrated/icc_2_1``) over the benchmark's null cells."""
    summary = benchmark_summary(null_json)
    if summary is None:
        return None
    rejected = n = cells = 0
    for cell, block in summary.items():
        if "alt" in cell.split("/")[-1] or key not in block:
            continue
        rejected += int(block[key].get("rejected", 0))
        n += int(block[key].get("n", 0))
        cells += 1
    return (rejected, n, cells) if n else None


def icc_test_size(icc_test: str, null_json: Path | None) -> str | None:
    """The measured rejection rate at .05 of Table 4's ICC-difference test under equal ICCs."""
    prefix = ICC_TEST_KEYS.get(icc_test)
    if prefix is None:
        return None
    parts = []
    for stat, label in (("icc_2_1", "ICC(2,1)"), ("icc_2_k", "ICC(2,k)")):
        pooled = pooled_rejections(null_json, f"{prefix}/{stat}")
        if pooled:
            rejected, n, cells = pooled
            parts.append(f"{label} {rejected}/{n}")
    if not parts:
        return None
    return (
        f"Measured size of the ICC-difference test ({icc_test}) at .05 with equal ICCs: rejected in "
        + ", ".join(parts)
        + " simulated null studies (several generating models; benchmarks/out/icc_difference_null_v2.json)."
    )


def table2_size(structure: str, null_jsons: list[Path]) -> str | None:
    """The measured false-positive rates of Table 2's modality x length and x order interactions under
    ``structure`` (stats.table2_random), pooled over the cells of every benchmark file that ran it."""
    rates: dict[str, list[int]] = {}
    models: set[str] = set()
    for path in null_jsons:
        summary = benchmark_summary(path) or {}
        for cell, block in summary.items():
            for term in ("modality_x_length", "modality_x_order"):
                t = (block.get(structure) or {}).get(term)
                if t and block.get("n_studies"):
                    counts = rates.setdefault(term, [0, 0])
                    counts[0] += int(t["rejections"])
                    counts[1] += int(block["n_studies"])
                    models.add(cell.split("/")[0])
    if not rates:
        return None
    parts = [f"{term.replace('modality_x_', 'x ')} {r}/{n}" for term, (r, n) in rates.items()]
    return (
        f"Measured false positives of Table 2's modality interactions ({structure}) at .05: "
        + ", ".join(parts)
        + f" null studies over {len(models)} generating model{'s' if len(models) != 1 else ''} "
        "(benchmarks/out/table2_null*.json)."
    )


def alpha_test_size(icc_test: str, null_json: Path | None) -> str | None:
    """The measured rejection rate at .05 of Table 4's alpha-difference test (the one ``icc_test`` selects) under
    equal alphas, per alpha (continuous, ordinal, nominal), pooled over the benchmark's null cells and sizes."""
    test = ALPHA_TEST_FOR_ICC_TEST.get(icc_test)
    if test is None:
        return None
    parts = []
    for metric in ("continuous", "ordinal", "nominal"):
        pooled = pooled_rejections(null_json, f"alpha/{test}/{metric}")
        if pooled:
            rejected, n, _ = pooled
            parts.append(f"{metric} {rejected}/{n} ({100 * rejected / n:.1f} %)")
    if not parts:
        return None
    return (
        f"Measured size of the alpha-difference test ({test} participant permutation) at .05 with equal alphas: "
        "rejected in " + ", ".join(parts) + " simulated null studies (several generating models and sizes; "
        "benchmarks/out/alpha_difference_null.json)."
    )

"""Column specifications of the three rating tables, read from their JSON Schemas.

The canonical schemas are ``workflow/schemas/{ratings,trials,participants}.schema.yaml`` (row-wise
JSON Schemas, usable with ``snakemake.utils.validate`` on a DataFrame). This module turns their
``properties`` into :class:`ColumnSpec` objects and parses CSV cells (read as strings) column by
column, reporting every cell that does not fit with its 0-based row index. Set
``MODPREFS_SCHEMA_DIR`` to use schemas from elsewhere (e.g. an installed package without the
repository).
"""

from __future__ import annotations

import functools
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

TABLES = ("ratings", "trials", "participants")
TABLE_FILES = {t: f"{t}.csv" for t in TABLES}

# Column order of the tables the workflow writes (simulator, annotation-app export); the schemas
# in workflow/schemas/ define each column.
RATINGS_COLUMNS = [
    "participant_id",
    "condition",
    "prompt_id",
    "clip_id",
    "trial",
    "presented_first",
    "rating",
    "audio_quality",
    "source",
]
TRIALS_COLUMNS = [
    "participant_id",
    "prompt_id",
    "trial",
    "preference",
    "justification",
    "decision_time_s",
    "deliberation_time_s",
    "rating_changes",
    "replays_0",
    "replays_1",
    "relistened_first",
    "source",
]
PARTICIPANTS_COLUMNS = [
    "participant_id",
    "condition",
    "age",
    "gender",
    "race",
    "hispanic_latino",
    "birthplace",
    "education",
    "employment",
    "country",
    "primary_language",
    "native_english",
    "english_proficiency",
    "other_languages",
    "timezone",
    "passed_attention",
    "completed",
    "session_minutes",
    "difficulty",
    "source",
]

_TRUE = {"true", "1", "yes", "t", "y"}
_FALSE = {"false", "0", "no", "f", "n"}
_INT_RE = re.compile(r"^[+-]?\d+(\.0*)?$")


def schema_dir() -> Path:
    env = os.environ.get("MODPREFS_SCHEMA_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[3] / "workflow" / "schemas"


@functools.cache
def _load(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def load_table_schema(table: str) -> dict[str, Any]:
    """The JSON Schema (a dict) of ``table`` (one of :data:`TABLES`)."""
    if table not in TABLES:
        raise ValueError(f"unknown ratings table {table!r}; expected one of {TABLES}")
    return _load(str(schema_dir() / f"{table}.schema.yaml"))


@dataclass(frozen=True)
class ColumnSpec:
    name: str
    kind: str  # integer | number | boolean | string
    nullable: bool
    required: bool
    enum: tuple[Any, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    pattern: str | None = None


def column_specs(table: str) -> list[ColumnSpec]:
    """One :class:`ColumnSpec` per property of the table's schema, in schema order."""
    schema = load_table_schema(table)
    required = set(schema.get("required", []))
    out = []
    for name, prop in schema["properties"].items():
        types = prop.get("type", "string")
        types = [types] if isinstance(types, str) else list(types)
        kinds = [t for t in types if t != "null"]
        enum = prop.get("enum")
        nullable = "null" in types or (enum is not None and None in enum)
        out.append(
            ColumnSpec(
                name=name,
                kind=kinds[0] if kinds else "string",
                nullable=nullable,
                required=name in required,
                enum=tuple(e for e in enum if e is not None) if enum is not None else None,
                minimum=prop.get("minimum"),
                maximum=prop.get("maximum"),
                pattern=prop.get("pattern"),
            )
        )
    return out


def _describe(value: str) -> str:
    return repr(value) if len(value) <= 40 else repr(value[:37] + "...")


def parse_column(raw: pd.Series, spec: ColumnSpec) -> tuple[pd.Series, list[tuple[int, str]]]:
    """Parse a column of CSV strings per ``spec``; return (typed series, [(row index, problem)]).

    Empty cells are null. Types: integer -> Int64 (``5`` or ``5.0``), number -> Float64 (finite),
    boolean -> boolean (true/false, 1/0, yes/no, any case), string -> object with NA for empty.
    """
    problems: list[tuple[int, str]] = []
    values: list[Any] = []
    for i, cell in enumerate(raw.tolist()):
        cell = "" if cell is None or (isinstance(cell, float) and math.isnan(cell)) else str(cell)
        text = cell.strip()
        if text == "":
            if not spec.nullable:
                problems.append((i, "empty value (a value is required)"))
            values.append(None)
            continue
        value: Any
        if spec.kind == "integer":
            if not _INT_RE.match(text):
                problems.append((i, f"{_describe(cell)} is not an integer"))
                values.append(None)
                continue
            value = int(float(text))
        elif spec.kind == "number":
            try:
                value = float(text)
            except ValueError:
                problems.append((i, f"{_describe(cell)} is not a number"))
                values.append(None)
                continue
            if not math.isfinite(value):
                problems.append((i, f"{_describe(cell)} is not a finite number"))
                values.append(None)
                continue
        elif spec.kind == "boolean":
            low = text.lower()
            if low in _TRUE:
                value = True
            elif low in _FALSE:
                value = False
            else:
                problems.append((i, f"{_describe(cell)} is not a boolean (true/false)"))
                values.append(None)
                continue
        else:
            value = cell
        if spec.enum is not None and value not in spec.enum:
            allowed = ", ".join(str(e) for e in spec.enum)
            problems.append((i, f"{_describe(cell)} is not one of: {allowed}"))
            values.append(None)
            continue
        if spec.minimum is not None and value < spec.minimum:
            problems.append((i, f"{_describe(cell)} is below the minimum {spec.minimum}"))
            values.append(None)
            continue
        if spec.maximum is not None and value > spec.maximum:
            problems.append((i, f"{_describe(cell)} is above the maximum {spec.maximum}"))
            values.append(None)
            continue
        if spec.pattern is not None and spec.kind == "string" and not re.search(spec.pattern, value):
            problems.append((i, f"{_describe(cell)} does not match the pattern {spec.pattern}"))
            values.append(None)
            continue
        values.append(value)
    dtype = {"integer": "Int64", "number": "Float64", "boolean": "boolean"}.get(spec.kind, "object")
    series = pd.Series(values, index=raw.index, dtype=dtype if dtype != "object" else object)
    if dtype == "object":
        series = series.where(series.notna(), pd.NA)
    return series, problems

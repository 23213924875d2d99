"""Checks of a rendered study report shared by the report tests: the answers page's numbers against their tables.

:func:`answer_numbers` reads every number span of the answers page (``data-table``, ``data-row``,
``data-column``, ``data-value`` and the text shown); :func:`check_against_tables` reads each named CSV itself
(pandas, not the report's reader), finds the row by its key columns and checks that the span's value is the
CSV's and that the text shown is that value rounded as printed -- parsed back from the text, so the check does
not reuse the report's formatter.
"""

from __future__ import annotations

import math
import re
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd


class _Spans(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.spans: list[dict] = []
        self._open: dict | None = None
        self.in_answers = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section" and a.get("id") == "answers":
            self.in_answers = 1
        elif tag == "section" and self.in_answers:
            self.in_answers += 1
        if tag == "span" and "data-table" in a:
            self._open = {**a, "text": "", "in_answers": bool(self.in_answers)}

    def handle_endtag(self, tag):
        if tag == "span" and self._open is not None:
            self.spans.append(self._open)
            self._open = None
        if tag == "section" and self.in_answers:
            self.in_answers -= 1

    def handle_data(self, data):
        if self._open is not None:
            self._open["text"] += data


def answer_numbers(html: str) -> list[dict]:
    parser = _Spans()
    parser.feed(html)
    return [s for s in parser.spans if s["in_answers"]]


def shown_value(text: str) -> tuple[float, float]:
    """(value, half the last printed digit) parsed from text such as ``.244``, ``−15.67``, ``1,214``."""
    clean = text.replace("−", "-").replace(",", "")
    if clean == "<.001":
        return 0.0, 0.001
    decimals = len(clean.split(".")[1]) if "." in clean else 0
    return float(clean), 0.5 * 10 ** (-decimals) + 1e-12


def check_against_tables(html: str, tables: Path) -> int:
    """Assert every answers-page number equals its table's value; return how many were checked."""
    spans = answer_numbers(html)
    assert spans, "the answers page shows no number"
    for s in spans:
        df = pd.read_csv(tables / f"{s['data-table']}.csv", keep_default_na=False, na_values=[""])
        mask = pd.Series(True, index=df.index)
        for pair in s["data-row"].split(";"):
            key, _, value = pair.partition("=")
            column = df[key]
            if pd.api.types.is_numeric_dtype(column):
                mask &= (column.astype(float) - float(value)).abs() < 1e-9
            else:
                mask &= column.astype(str) == value
        rows = df[mask]
        assert len(rows) >= 1, f"{s['data-table']}: no row {s['data-row']}"
        expected = float(rows[s["data-column"]].iloc[0])
        assert math.isclose(float(s["data-value"]), expected, rel_tol=1e-12, abs_tol=1e-12), s
        value, tol = shown_value(s["text"])
        if s["text"] == "<.001":
            assert expected < 0.001, s
        else:
            assert abs(value - expected) <= tol, (s, expected)
    return len(spans)


LATEX_OR_E = re.compile(r"\$|\\[a-zA-Z]+\{|\b\d+(?:\.\d+)?[eE][+-]?\d+\b")


def reading_flow_problems(text: str) -> list[str]:
    """Raw LaTeX (``$``, ``\\cmd{``) or e-notation numbers in the text a reader reads (details removed)."""
    return sorted({m.group(0) for m in LATEX_OR_E.finditer(text)})

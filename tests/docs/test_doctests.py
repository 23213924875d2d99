"""The examples in the library's docstrings run (issue #53): Sybil collects every ``>>>`` example under src/modprefs.

The main public statistics functions carry pingouin-style examples whose expected values come from an independent
source written beside them (Shrout & Fleiss 1979's table, the ``krippendorff`` package, scipy, closed forms);
a change that alters a printed value fails here.
"""

from __future__ import annotations

import ast
import doctest
from pathlib import Path
from typing import Any

import pytest
from sybil import Sybil
from sybil.parsers.rest import DocTestParser

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "modprefs"
SYBIL = Sybil(parsers=[DocTestParser(optionflags=doctest.NORMALIZE_WHITESPACE)])


def _examples() -> list[Any]:
    cases = []
    for path in sorted(SRC.rglob("*.py")):
        if ">>> " not in path.read_text(encoding="utf-8"):
            continue
        document = SYBIL.parse(path)
        for example in document.examples():
            cases.append(pytest.param(example, id=f"{path.relative_to(SRC)}:{example.line}"))
    return cases


EXAMPLES = _examples()


@pytest.mark.parametrize("example", EXAMPLES)
def test_docstring_example(example: Any) -> None:
    example.evaluate()


def test_the_main_statistics_have_examples() -> None:
    """At least 19 public functions show an example (the list grows; it may not shrink)."""
    with_examples = [
        f"{path.relative_to(SRC)}:{node.name}"
        for path in sorted(SRC.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef) and ">>> " in (ast.get_docstring(node) or "")
    ]
    assert len(with_examples) >= 19, with_examples
    assert len(EXAMPLES) >= len(with_examples)

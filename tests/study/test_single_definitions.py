"""Each study constant and each shared statistic is defined once in src/ (issue #53, item 4): the attention
prompt's id, the two conditions' orders and the questionnaire's options live in modprefs.study.terms;
Spearman-Brown is rater_scaling.icc_k, the jackknife variance resampling.jackknife_variance."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "modprefs"
TERMS = SRC / "study" / "terms.py"
CONDITION_TUPLES = {("audio", "text"), ("text", "audio")}


def _modules() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(encoding="utf-8"))) for p in sorted(SRC.rglob("*.py"))]


def test_study_constants_are_written_only_in_terms():
    found = []
    for path, tree in _modules():
        if path == TERMS:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in ("attn", "attn_0", "attn_1", "Bachelor's degree"):
                found.append(f"{path.relative_to(SRC)}:{node.lineno} {node.value!r}")
            if isinstance(node, ast.Tuple) and all(isinstance(e, ast.Constant) for e in node.elts):
                if tuple(e.value for e in node.elts) in CONDITION_TUPLES:  # type: ignore[attr-defined]
                    found.append(f"{path.relative_to(SRC)}:{node.lineno} conditions tuple")
    assert not found, "use modprefs.study.terms: " + "; ".join(found)


def test_spearman_brown_and_jackknife_variance_are_defined_once():
    names: dict[str, list[str]] = {}
    for path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                names.setdefault(node.name, []).append(str(path.relative_to(SRC)))
    assert names["icc_k"] == ["stats/reliability/rater_scaling.py"]
    assert names["jackknife_variance"] == ["stats/reliability/resampling.py"]
    for gone in ("spearman_brown", "_jackknife_var"):
        assert gone not in names, names.get(gone)


def test_the_found_constants_would_be_caught():
    tree = ast.parse('X = ("audio", "text")\nY = "attn"\n')
    consts = [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value == "attn"]
    tuples = [n for n in ast.walk(tree) if isinstance(n, ast.Tuple)]
    assert consts and tuple(e.value for e in tuples[0].elts) in CONDITION_TUPLES  # type: ignore[attr-defined]

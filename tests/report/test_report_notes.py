"""The report's method checks: the ICC coverage and Table 2 null benchmarks' JSON as tables and notes."""

from __future__ import annotations

import json
from pathlib import Path

from modprefs.report.html import coverage_note, coverage_table, table2_note, table2_null_table


def _coverage_json(path: Path) -> Path:
    def block(cov: float) -> dict:
        return {"coverage": cov, "coverage_ci95_clopper_pearson": [cov - 0.02, cov + 0.02], "mean_width": 0.1}

    summary = {
        f"{model}/{size}": {
            "n_studies": 500,
            "truth_icc_2_1": 0.3,
            "methods": {
                "jackknife": {"icc_2_1": block(cov), "icc_2_k": block(cov + 0.001)},
                "two_way": {"icc_2_1": block(0.6), "icc_2_k": block(0.61)},
            },
        }
        for (model, size), cov in zip([("simulator", "small"), ("gaussian_crossed", "paper")], [0.931, 0.962])
    }
    path.write_text(json.dumps({"summary": summary}), encoding="utf-8")
    return path


def test_coverage_table_and_note_quote_the_benchmark(tmp_path):
    path = _coverage_json(tmp_path / "icc_coverage.json")
    table = coverage_table(path)
    assert len(table) == 4 and set(table["method"]) == {"jackknife", "two_way"}
    assert (
        table.loc[(table["model"] == "simulator") & (table["method"] == "jackknife"), "icc_2_1_coverage"].item()
        == 0.931
    )
    note = coverage_note("jackknife", path)
    assert "crossed jackknife" in note and "0.931-0.963" in note and "500+ simulated studies" in note
    assert "has not been measured" in coverage_note("jackknife", tmp_path / "missing.json")
    assert "does not include this method" in coverage_note("parametric", path)


def test_table2_null_table_and_note_name_both_structures(tmp_path):
    def term(rate: float) -> dict:
        return {"rate": rate, "rate_ci95": [rate - 0.01, rate + 0.01]}

    summary = {
        "gaussian_crossed": {
            "n_studies": 500,
            "stimulus_modality": {"modality_x_length": term(0.048), "modality_x_order": term(0.038)},
            "paper": {"modality_x_length": term(0.244), "modality_x_order": term(0.224)},
        }
    }
    path = tmp_path / "table2_null.json"
    path.write_text(json.dumps({"summary": summary}), encoding="utf-8")
    table = table2_null_table(path)
    assert len(table) == 4 and set(table["table2_random"]) == {"stimulus_modality", "paper"}
    note = table2_note("stimulus_modality", path)
    assert "stats.table2_random = stimulus_modality" in note
    assert "stimulus_modality: 0.038-0.048" in note and "paper: 0.224-0.244" in note
    assert "has not been measured" in table2_note("paper", tmp_path / "missing.json")


def test_a_labs_stimuli_are_named_with_their_transcript_source():
    import pandas as pd

    from modprefs.report.workflow_report import stimuli_note

    assert stimuli_note({"data": {"format": "prism", "source": "x.jsonl"}}, []) is None
    cfg = {"data": {"format": "pairs", "source": "lab/pairs.csv"}, "tts": {"backend": "given"}, "audio": {}}
    note = stimuli_note(
        cfg, [("icc", pd.DataFrame({"icc_2_1": [0.3], "transcript": ["transcript: asr (6 of 6 clips)"]}))]
    )
    assert note == (
        "Stimuli: the pairs table lab/pairs.csv; audio the lab's own audio (tts.backend given), loudness-normalised "
        "to -23 LUFS (ITU-R BS.1770). Text condition: transcript: asr (6 of 6 clips)."
    )
    cfg |= {"tts": {"backend": "piper", "voice": "joe"}, "audio": {"target_lufs": None}}
    assert (
        stimuli_note(cfg, [])
        == "Stimuli: the pairs table lab/pairs.csv; audio synthesised by piper (joe), at the given level."
    )


def test_alpha_test_size_pools_the_null_cells_per_alpha_and_follows_the_icc_test(tmp_path):
    """The answers page's alpha caveat: rejections of the test Table 4 runs, pooled over the null cells (not the
    alternatives), per alpha; the paper's permutation when stats.icc_test is the paper's; None when not measured."""
    from modprefs.report.measured import alpha_test_size

    def cell(stud: int, perm: int, n: int) -> dict:
        return {
            f"alpha/{t}/{m}": {"rejected": k, "n": n}
            for t, k in (("studentized", stud), ("permutation", perm))
            for m in ("continuous", "ordinal", "nominal")
        }

    path = tmp_path / "alpha_difference_null.json"
    summary = {"small/gaussian_same": cell(3, 9, 100), "paper/heavy_same": cell(4, 12, 50)}
    summary["small/gaussian_alt10"] = cell(80, 80, 100)  # an alternative: power, not size
    path.write_text(json.dumps({"summary": summary}))
    text = alpha_test_size("calibrated", path)
    assert "studentized" in text and "ordinal 7/150 (4.7 %)" in text and "continuous 7/150" in text
    assert "permutation" in text and "21/150 (14.0 %)" in alpha_test_size("permutation", path)
    assert alpha_test_size("calibrated", tmp_path / "absent.json") is None
    assert alpha_test_size("unknown", path) is None

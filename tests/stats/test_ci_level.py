"""``modprefs stats --ci-level`` reaches every interval of the ICC, raters-needed, decision-threshold and per-prompt
ICC tables, and their titles state the level and the method."""

from __future__ import annotations

import pandas as pd
import pytest

from modprefs.cli import main
from support.study_files import write_study

#: table -> the interval columns that must move with the level
INTERVALS = {
    "icc": ["icc_2_1_lo", "icc_2_1_hi", "icc_2_k_lo", "icc_2_k_hi"],
    "raters_needed": ["raters_needed_optimistic", "raters_needed_pessimistic"],
    "thresholds_gaps": ["ci_lo_text", "ci_hi_text", "ci_lo_audio", "ci_hi_audio"],
    "thresholds_recommendations": ["threshold_lo", "threshold_hi"],
    "per_prompt_icc": ["icc_2_1_lo", "icc_2_1_hi"],
}


@pytest.mark.slow  # two `modprefs stats` runs, ~25 s each on 2 cores
def test_ci_level_changes_every_interval_and_titles_state_it(tmp_path, capsys):
    d, *_ = write_study(tmp_path)
    out = {}
    for level in ("0.95", "0.9"):
        out[level] = tmp_path / f"out{level}"
        args = ["stats", "--ratings", str(d), "--clips", str(tmp_path / "clips.csv"), "--out", str(out[level])]
        counts = ["--n-boot", "10", "--n-perm", "0", "--n-boot-alpha", "0", "--n-perm-alpha", "0"]
        rc = main([*args, *counts, "--n-boot-threshold", "40", "--ci-level", level])
        assert rc == 0, capsys.readouterr().err
    for name, columns in INTERVALS.items():
        wide = pd.read_csv(out["0.95"] / "tables" / f"{name}.csv")
        narrow = pd.read_csv(out["0.9"] / "tables" / f"{name}.csv")
        assert list(wide.columns) == list(narrow.columns), name
        changed = (wide[columns] != narrow[columns]) & wide[columns].notna()
        assert changed.any().all() if name != "raters_needed" else changed.any().any(), (name, changed.sum())
        if name != "raters_needed" and "thresholds" not in name:  # counts and grid thresholds move in steps
            lo, hi = columns[0], columns[1]
            ok = wide[[lo, hi]].notna().all(axis=1) & (wide[hi] > wide[lo])
            assert ((narrow[hi] - narrow[lo])[ok] <= (wide[hi] - wide[lo])[ok] + 1e-12).all(), name
        for level, text in (("0.95", "95 %"), ("0.9", "90 %")):
            title = (out[level] / "tables" / f"{name}.md").read_text(encoding="utf-8").splitlines()[0]
            assert text in title, (name, title)
    icc_title = (out["0.9"] / "tables" / "icc.md").read_text(encoding="utf-8").splitlines()[0]
    assert "90 % CIs: auto: logit-t, crossed jackknife" in icc_title  # the method auto chose (incomplete ratings)
    assert "participant-bootstrap percentile" in (out["0.9"] / "tables" / "thresholds_recommendations.md").read_text()
    assert (pd.read_csv(out["0.9"] / "tables" / "icc.csv")["ci_level"] == 0.9).all()
    assert (pd.read_csv(out["0.9"] / "tables" / "per_prompt_icc.csv")["ci_level"] == 0.9).all()

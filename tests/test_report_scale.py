"""The workflow report states the study's rating scale in its header."""

from __future__ import annotations

import pandas as pd

from modprefs.report.workflow_report import workflow_report


def test_report_states_the_rating_scale(tmp_path):
    ratings = tmp_path / "ratings.csv"
    pd.DataFrame({"participant_id": ["a"], "rating": [3], "source": ["collected"]}).to_csv(ratings, index=False)
    config = {"study": {"scale": {"min": 1, "max": 5, "step": 1, "labels": ["Bad", "Excellent"]}}}
    html, _ = workflow_report([], [], ratings, config, "jackknife", "stimulus_modality")
    note = "Rating scale (study.scale): 1-5 (step 1; 1 = Bad, 5 = Excellent)."
    assert note in html and html.index(note) < html.index("<nav")  # in the header, above the contents
    html, _ = workflow_report([], [], ratings, {}, "jackknife", "stimulus_modality")
    assert "Rating scale (study.scale): 1-100 (step 1; 1 = Terrible, 100 = Perfect)." in html

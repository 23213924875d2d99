"""The report and the tables state the scale their numbers are in (issues "the scale everywhere", #47).

* the workflow report states ``study.scale`` in its header; so does ``modprefs stats --scale`` (1:5 and 1:10): the
  report's header names the scale the statistics used, never the paper's 1-100 by default; a report rendered with a
  config whose scale is not the tables' is refused;
* Tables 5 and 6 carry the paper's values twice, as printed (``paper_estimate_1_100``) and restated on the study's
  scale (``paper_estimate_on_study_scale``, by their unit); the report's columns name both scales; no table has a
  paper column without its scale in its name;
* a threshold the scale's step makes degenerate (1-5: five thresholds; an interval collapsed to one grid value)
  carries a caveat naming the step, in the table, its title and the report;
* Shrout & Fleiss' (1979) 6 targets x 4 judges on 1-10, one condition: the ICCs (.2898 / .6201), no row for the
  condition without ratings, Table 1 of nothing but n skipped with its reason, counts as integers.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from modprefs.report.paper_tables import StudyFacts, table1_reader, table5_reader, table6_reader
from modprefs.report.study_report import study_summary
from modprefs.report.workflow_report import workflow_report
from modprefs.scale import PAPER_SCALE, RatingScale
from modprefs.stats.tables.ai_alignment import PAPER_TABLE5, TABLE_COLUMNS, with_paper_reference
from modprefs.stats.tables.scale_units import conversion_text, paper_on_scale, scale_text
from modprefs.stats.tables.thresholds import grid_caveat, threshold_grid
from support.any_design import any_judges, any_study, write_any_study

FAST = ["--n-boot", "0", "--n-perm", "0", "--n-boot-alpha", "0", "--n-perm-alpha", "0"]
ONE_TO_FIVE = RatingScale(min=1, max=5, label_min="1", label_max="5")
#: Shrout & Fleiss (1979), Table 2: targets 1..6 (rows) rated by judges 1..4 (columns) on 1..10
SHROUT_FLEISS = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]


def _stats(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``modprefs stats ARGS`` as a user runs it (a fresh interpreter; the entry point of the console script)."""
    proc = subprocess.run(
        [sys.executable, "-m", "modprefs.cli", "stats", *args], capture_output=True, text=True, cwd=cwd
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc


def _header(html: str) -> str:
    return html[html.index("<header>") : html.index("</header>")]


def _section(html: str, key: str) -> str:
    """The report's top-level section ``key`` (up to the next one; the answers hold a section per answer)."""
    start = html.index(f'<section id="{key}"')
    end = html.find('\n<section id="', start)
    return html[start : end if end > 0 else html.index("</main>")]


# ---- the header: the workflow's study.scale ------------------------------------------------------------------
def test_report_states_the_rating_scale(tmp_path):
    ratings = tmp_path / "ratings.csv"
    pd.DataFrame({"participant_id": ["a"], "rating": [3], "source": ["collected"]}).to_csv(ratings, index=False)
    config = {"study": {"scale": {"min": 1, "max": 5, "step": 1, "labels": ["Bad", "Excellent"]}}}
    html, _ = workflow_report([], [], ratings, config, "jackknife", "stimulus_modality")
    note = "Rating scale (study.scale): 1-5 (step 1; 1 = Bad, 5 = Excellent)."
    assert note in html and html.index(note) < html.index("<nav")  # in the header, above the contents
    html, _ = workflow_report([], [], ratings, {}, "jackknife", "stimulus_modality")
    assert "Rating scale (study.scale): 1-100 (step 1; 1 = Terrible, 100 = Perfect)." in html


def test_a_scale_without_end_labels_is_stated_by_its_range():
    assert scale_text(ONE_TO_FIVE) == "1-5 (step 1)"  # --scale 1:5's labels are its end numbers
    assert scale_text(PAPER_SCALE) == "1-100 (step 1; 1 = Terrible, 100 = Perfect)"


# ---- Tables 5 and 6: the paper's values on the study's scale and as printed -----------------------------------
def test_paper_values_are_restated_on_the_study_scale_by_their_unit():
    assert paper_on_scale(12.27, "difference", ONE_TO_FIVE) == pytest.approx(12.27 * 4 / 99)  # an error: span/99
    assert paper_on_scale(0.014, "per_point", ONE_TO_FIVE) == pytest.approx(0.014 * 99 / 4)  # ICC per point
    assert paper_on_scale(0.23, "unitless", ONE_TO_FIVE) == 0.23
    assert paper_on_scale(100.0, "level", ONE_TO_FIVE) == 5.0 and paper_on_scale(1.0, "level", ONE_TO_FIVE) == 1.0
    for unit in ("level", "difference", "per_point", "unitless"):
        assert paper_on_scale(12.27, unit, PAPER_SCALE) == pytest.approx(12.27)  # the paper's scale: as printed
    assert conversion_text("difference", ONE_TO_FIVE) == "rating difference: 1-100 value x 4/99"
    with pytest.raises(ValueError, match="unit must be one of"):
        paper_on_scale(1.0, "points", ONE_TO_FIVE)


def test_a_paper_value_without_a_unit_is_refused():
    row = dict.fromkeys(TABLE_COLUMNS, "") | {"term": "A new term", "paper_estimate_1_100": 1.0}
    with pytest.raises(ValueError, match="A new term"):
        with_paper_reference(pd.DataFrame([row], columns=TABLE_COLUMNS), ONE_TO_FIVE)


def _table5(scale: RatingScale) -> pd.DataFrame:
    rows = [
        dict.fromkeys(TABLE_COLUMNS, "")
        | {"section": "AI-Human absolute error", "term": term, "estimate": 1.17, "p": np.nan, "n": 16}
        | {"paper_estimate_1_100": value, "paper_p": p}
        for term, (value, p) in PAPER_TABLE5.items()
    ]
    return with_paper_reference(pd.DataFrame(rows, columns=TABLE_COLUMNS), scale)


def test_table5_reader_names_each_paper_column_by_its_scale():
    table = table5_reader(_table5(ONE_TO_FIVE), StudyFacts(ONE_TO_FIVE))
    assert list(table.frame.columns) == ["", "d̄ (this study)", "p", "n", "Paper on 1-5 (step 1)",
                                         "Paper as printed (1-100)"]  # fmt: skip
    audio = table.frame.set_index("").loc["Audio MAE"]
    assert (audio["d̄ (this study)"], audio["Paper on 1-5 (step 1)"], audio["Paper as printed (1-100)"]) == (
        "1.17",
        "0.50",
        "12.27",
    )  # 12.27 x 4/99 = 0.496
    assert "1-5 (step 1)" in table.title and "x 4/99" in " ".join(table.notes)
    paper = table5_reader(_table5(PAPER_SCALE), StudyFacts(PAPER_SCALE))
    assert list(paper.frame.columns)[-1] == "Paper (1-100)" and "1-100" in paper.title


def test_table6_reader_restates_slopes_per_point_and_keeps_correlations():
    rows = [
        dict.fromkeys(TABLE_COLUMNS, "")
        | {"section": "OLS", "term": term, "estimate": 0.3, "p": 0.1, "n": 16, "paper_estimate_1_100": value}
        for term, value in (("AI Differentiation", 0.014), ("Spearman: text", 0.38), ("Intercept", np.nan))
    ]
    table = table6_reader(with_paper_reference(pd.DataFrame(rows), ONE_TO_FIVE), StudyFacts(ONE_TO_FIVE))
    shown = table.frame.set_index("")
    assert shown.loc["AI Differentiation", "Paper on 1-5 (step 1)"] == "0.347"  # 0.014 x 99/4
    assert shown.loc["Spearman: text", "Paper on 1-5 (step 1)"] == "0.380"
    assert shown.loc["Intercept", "Paper as printed (1-100)"] == "–"


# ---- thresholds the scale's step makes degenerate -------------------------------------------------------------
def test_a_threshold_on_a_coarse_or_collapsed_grid_says_so_naming_the_step():
    five = threshold_grid(ONE_TO_FIVE)
    assert five.tolist() == [0, 1, 2, 3, 4]
    caveat = grid_caveat(0.0, 0.0, 0.0, five)
    assert caveat.startswith("degenerate on this scale") and "step 1 allows only 5 thresholds (0..4)" in caveat
    assert "collapses to the single grid value 0" in caveat and "only when its two ratings are equal" in caveat
    assert "step 1 allows only 5" in grid_caveat(2.0, np.nan, np.nan, five)  # coarse, no interval
    paper = threshold_grid(PAPER_SCALE)
    assert grid_caveat(12.0, 8.0, 17.0, paper) == ""  # 100 thresholds, an interval of several steps
    assert "collapses to the single grid value 3" in grid_caveat(3.0, 3.0, 3.0, paper)
    assert grid_caveat(np.nan, np.nan, np.nan, five) == ""  # no threshold: its reason says why
    half = threshold_grid(RatingScale(min=1, max=7, step=0.5))
    assert "step 0.5" in grid_caveat(1.5, 1.5, 1.5, half) and "allows only" not in grid_caveat(1.5, 1.5, 1.5, half)


# ---- one condition ---------------------------------------------------------------------------------------------
def test_table1_of_nothing_but_n_is_skipped_with_its_reason_and_counts_are_integers():
    t1 = pd.DataFrame(
        {
            "row": ["$n$", "Age"],
            "text": [4.0, np.nan],
            "audio": [0.0, np.nan],
            "reason": ["audio: no analysed participants in audio", "text: no age values in text; audio: no age"],
        }
    )
    table = table1_reader(t1, StudyFacts(ONE_TO_FIVE, ("text",)))
    assert table.skipped is not None and "analysed participants: text 4)" in table.skipped
    assert "Age (text: no age values in text)" in table.skipped and "audio" not in table.skipped
    ages = t1.assign(text=[4.0, "35.2 (4.1)"])
    table = table1_reader(ages, StudyFacts(ONE_TO_FIVE, ("text",)))
    assert table.skipped is None and list(table.frame.columns) == ["", "Text"]
    assert table.frame.iloc[0].tolist() == ["n", "4"]


def test_the_summary_leaves_out_a_condition_without_ratings():
    icc = pd.DataFrame(
        {"condition": ["audio", "text"], "n_ratings": [0, 24], "n_clips": [0, 6], "n_participants": [0, 4.0],
         "note": ["no analysable ratings", ""]}
    )  # fmt: skip
    assert study_summary({"icc": icc}, StudyFacts(ONE_TO_FIVE, ("text",))) == (
        "Study: text: 4 raters, 6 clips, 24 ratings."
    )
    both = study_summary({"icc": icc}, StudyFacts(ONE_TO_FIVE, ("audio", "text")))
    assert both.startswith("Study: audio: no analysable ratings (no analysable ratings); text: 4 raters")


# ---- modprefs stats, as a user runs it -------------------------------------------------------------------------
@pytest.mark.slow  # a whole CLI run (about 12 s on 2 cores)
def test_shrout_fleiss_on_1_to_10_one_condition(tmp_path):
    rows = [
        {"target": t + 1, "judge": j + 1, "score": score}
        for t, scores in enumerate(SHROUT_FLEISS)
        for j, score in enumerate(scores)
    ]
    pd.DataFrame(rows).to_csv(tmp_path / "sf.csv", index=False)
    out = tmp_path / "out"
    args = ["--ratings", "sf.csv", "--map", "participant_id=judge,clip_id=target,rating=score", "--scale", "1:10"]
    _stats(*args, "--out", str(out), *FAST, cwd=tmp_path)
    icc = pd.read_csv(out / "tables" / "icc.csv").set_index("condition").loc["text"]
    assert round(icc["icc_2_1"], 4) == 0.2898 and round(icc["icc_2_k"], 4) == 0.6201  # Shrout & Fleiss' ICC(2,1/k)
    html = (out / "report.html").read_text(encoding="utf-8")
    header = _header(html)
    assert "Study: text: 4 raters, 6 clips, 24 ratings." in header and "audio" not in header
    assert "Rating scale (study.scale): 1-10 (step 1)." in header and "1-100" not in header
    tables = _section(html, "tables")
    assert "Table 1 is missing: the participants table holds no demographics (analysed participants: text 4)" in tables
    assert "<table" not in tables  # no table of dashes
    details = _section(html, "details")
    assert "<td>audio</td>" not in details and "Rows of the condition(s) audio are left out" in details
    answers = _section(html, "answers")
    assert re.search(r"the mean of <span[^>]*>4</span> raters per clip", answers), answers
    assert "rating scale 1-10 (step 1): means, gaps" in _section(html, "methods")


@pytest.fixture(scope="module")
def one_to_five(tmp_path_factory) -> Path:
    """``modprefs stats --scale 1:5`` on a small pairwise study with AI judges (their 1..100 ratings mapped)."""
    root = tmp_path_factory.mktemp("one_to_five")
    study = any_study(n_prompts=8, raters=4, lo=1, hi=5, seed=1)
    src, clips = write_any_study(root, study)
    any_judges(study["stimuli"]).to_csv(root / "judges.csv", index=False)
    args = ["--ratings", str(src), "--clips", str(clips), "--judges", "judges.csv", "--scale", "1:5"]
    _stats(*args, "--out", str(root / "out"), *FAST, "--n-boot-threshold", "10", cwd=root)
    return root


@pytest.mark.slow  # a whole CLI run (about 18 s on 2 cores)
def test_a_1_to_5_report_states_its_scale_and_labels_every_paper_value(one_to_five):
    out = one_to_five / "out"
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "Rating scale (study.scale): 1-5 (step 1)." in _header(html) and "1-100" not in _header(html)
    assert "scale:\n    min: 1\n    max: 5\n" in html  # the configuration shown is the one the statistics used
    t5 = pd.read_csv(out / "tables" / "table5_ai_human.csv").set_index("term")
    assert t5.loc["Audio MAE", "paper_estimate_1_100"] == 12.27
    assert t5.loc["Audio MAE", "paper_estimate_on_study_scale"] == pytest.approx(12.27 * 4 / 99)
    t6 = pd.read_csv(out / "tables" / "table6_ai_diff_icc.csv").drop_duplicates("term").set_index("term")
    assert t6.loc["AI Differentiation", "paper_estimate_on_study_scale"] == pytest.approx(0.014 * 99 / 4)
    # no table has a paper column without its scale in its name; the paper tables' titles state the scale
    labelled = {"paper_estimate_1_100", "paper_estimate_on_study_scale", "paper_p", "paper_conversion"}
    for csv in (out / "tables").glob("*.csv"):
        paper = {c for c in pd.read_csv(csv, nrows=0).columns if "paper" in c.lower()}
        assert paper <= labelled, (csv.name, paper - labelled)
    for name in ("table5_ai_human", "table6_ai_diff_icc"):
        title = (out / "tables" / f"{name}.md").read_text().splitlines()[0]
        assert "study values on the scale 1-5 (step 1)" in title and "paper_estimate_1_100" in title, title
    tables = _section(html, "tables")
    for caption in re.findall(r"<table id=\"table[256]\"><caption>(.*?)</caption>", tables):
        assert "1-5 (step 1)" in caption, caption
    heads = re.findall(r'<th scope="col">([^<]*Paper[^<]*)</th>', tables)
    assert heads and set(heads) == {"Paper on 1-5 (step 1)", "Paper as printed (1-100)"}, heads


@pytest.mark.slow  # shares the CLI run of one_to_five
def test_a_1_to_5_report_says_its_thresholds_are_degenerate(one_to_five):
    out = one_to_five / "out"
    recs = pd.read_csv(out / "tables" / "thresholds_recommendations.csv", keep_default_na=False)
    found = recs[recs["threshold"] != ""]
    assert len(found) and found["caveat"].str.contains("step 1 allows only 5 thresholds (0..4)", regex=False).all()
    title = (out / "tables" / "thresholds_recommendations.md").read_text().splitlines()[0]
    assert f"{len(found)} of {len(found)} thresholds degenerate on the scale 1-5 (step 1)" in title, title
    html = (out / "report.html").read_text(encoding="utf-8")
    caveats = re.findall(r'<ul class="caveats">(.*?)</ul>', _section(html, "answers"), flags=re.S)
    assert any("degenerate on this scale: the scale&#x27;s step 1 allows only 5" in c for c in caveats)


@pytest.mark.slow  # shares the CLI run of one_to_five
def test_the_workflow_report_refuses_a_config_of_another_scale(one_to_five):
    out = one_to_five / "out"
    tables, figures = sorted((out / "tables").glob("*.csv")), sorted((out / "figures").glob("*.png"))
    ratings = out / "ratings" / "ratings.csv"
    with pytest.raises(ValueError, match=r"computed on the rating scale 1-5 \(step 1\).*study.scale 1-100"):
        workflow_report(tables, figures, ratings, {}, "jackknife", "participant_slopes")
    config = {"study": {"scale": {"min": 1, "max": 5, "labels": ["Bad", "Excellent"]}}}
    html, _ = workflow_report(tables, figures, ratings, config, "jackknife", "participant_slopes")
    assert "Rating scale (study.scale): 1-5 (step 1; 1 = Bad, 5 = Excellent)." in _header(html)

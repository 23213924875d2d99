"""The study report (issue 29): answers first, paper-quality tables, figures with captions, what is missing said.

* unit: Koo & Li's bands at their boundaries; numbers by convention (p-values, no e-notation, no leading
  zero for ICCs); the reader tables carry labels, brackets and the method once;
* ``modprefs stats`` on a simulated two-condition study: every number on the answers page equals the value in
  its source CSV (read here with pandas; the text parsed back, not re-formatted);
* ``modprefs stats`` on pingouin's wine table (one condition, one response per item, no justifications): the
  answers page says that no audio - text difference can be estimated, the missing tables and figures say why,
  and no empty table is shown.

The browser checks of the default run's report are in tests/report/test_report_browser.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from modprefs.report.answers import difference_answer, koo_li_band, raters_answer, reliability_answer
from modprefs.report.formatting import format_estimate, format_number, format_p
from modprefs.report.paper_tables import table2_reader, table4_reader
from support.report_checks import answer_numbers, check_against_tables, reading_flow_problems


def test_koo_li_bands_at_their_boundaries():
    assert [koo_li_band(x) for x in (0.0, 0.4999, 0.5, 0.7499, 0.75, 0.8999, 0.9, 1.0)] == [
        "poor", "poor", "moderate", "moderate", "good", "good", "excellent", "excellent",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("p", "text"), [(8.0e-23, "<.001"), (0.0004999, "<.001"), (0.001, ".001"), (0.0125, ".013"), (0.99996, "1.000"),
                    (1.0, "1.000"), (float("nan"), "–"), (None, "–")],
)  # fmt: skip
def test_p_values_by_convention(p, text):
    assert format_p(p) == text


def test_numbers_never_in_e_notation_and_bounded_without_leading_zero():
    assert format_number(5.069e-22, 3) == "0.000"
    assert format_number(1.437e4, 2) == "14,370.00"
    assert format_number(-0.0001, 2) == "0.00"  # no "-0.00"
    assert format_number(0.333, 3, bounded=True) == ".333"
    assert format_number(-0.007, 3, bounded=True) == "−.007"
    assert format_estimate(0.2437, 0.0074, 0.9333, 3, bounded=True) == ".244 [.007, .933]"
    assert not reading_flow_problems(" ".join(format_number(x, 2) for x in (1e-30, 1e30, -1e-9, 123456789.0)))


def test_reader_tables_label_bracket_and_say_the_method_once():
    t4 = pd.DataFrame(
        {
            "metric": ["Avg. raters per stimulus", "ICC(2,1)"],
            "audio": [9.2, 0.333], "audio_lo": [None, 0.286], "audio_hi": [None, 0.365],
            "text": [8.9, 0.295], "text_lo": [None, 0.25], "text_hi": [None, 0.325],
            "p_value": [None, 0.127], "ci_level": [None, 0.95], "ci_method": [None, "stimulus bootstrap"],
            "test": [None, "participant permutation"],
        }
    )  # fmt: skip
    table = table4_reader(t4)
    assert list(table.frame.columns) == ["Metric", "Audio", "Text", "p"]
    assert table.frame.iloc[1].tolist() == ["ICC(2,1)", ".333 [.286, .365]", ".295 [.250, .325]", ".127"]
    assert table.frame.iloc[0].tolist() == ["Avg. raters per stimulus", "9.2", "8.9", "–"]
    assert "stimulus bootstrap" in table.caption and "participant permutation" in table.caption
    random = "(1 | participant_id) + (1 | clip_id)"
    t2 = pd.DataFrame(
        {
            "model": ["omnibus (random: x)"] * 2 + ["simple: audio"],
            "term": ["Intercept", "Modality (text)", "Intercept"],
            "b": [74.8, -6.21, 70.0], "se": [2.0, 2.5, 2.1], "ci_lo": [70.72, -11.28, 66.0],
            "ci_hi": [78.87, -1.14, 74.0],
            "p": [1e-40, 0.017, 1e-30], "random": [random] * 3, "ci": ["95 % CI: Wald"] * 3, "note": [""] * 3,
        }
    )  # fmt: skip
    table = table2_reader(t2)
    assert table.frame.iloc[1].tolist() == ["Modality (text)", "−6.21", "[−11.28, −1.14]", ".017"]
    assert table.frame.iloc[0, 3] == "<.001"
    assert [g for _, g in table.groups] == ["Omnibus model (reference: audio)", "Simple: audio"]
    assert table.caption.count(random) == 1 and random not in table.frame.to_string()


def test_answers_from_tables_name_bands_supported_differences_and_missing_parts():
    icc = pd.DataFrame(
        {
            "condition": ["audio", "text"], "n_ratings": [900, 880], "n_clips": [200, 200], "k_effective": [9.2, 8.9],
            "icc_2_1": [0.333, 0.295], "icc_2_1_lo": [0.286, 0.25], "icc_2_1_hi": [0.365, 0.325],
            "icc_2_k": [0.821, 0.788], "icc_2_k_lo": [0.787, 0.748], "icc_2_k_hi": [0.841, 0.811], "note": ["", ""],
        }
    )  # fmt: skip
    first = reliability_answer(icc)
    assert first.missing is None and "audio {0} (good)" in first.headline.template
    assert "a single rating is poor" in first.statements[0].template
    assert first.statements[0].numbers[0].text == ".333"
    t4 = pd.DataFrame({"metric": ["ICC(2,1)"], "diff": [0.038], "p_value": [0.127], "test": ["permutation"]})
    t2 = pd.DataFrame(
        {"model": ["omnibus (random: x)"], "term": ["Modality x Char. length"], "b": [1.53], "ci_lo": [0.03],
         "ci_hi": [3.02], "p": [0.045]}
    )  # fmt: skip
    second = difference_answer({"icc": icc, "table4_reliability": t4, "table2_lmm": t2})
    assert [s.supported for s in second.statements] == [False, True]
    assert second.headline.template.startswith("1 of 2 audio - text comparisons are supported")
    one = difference_answer({"icc": icc.head(1)})
    assert one.missing and "one condition (audio)" in one.missing
    raters = pd.DataFrame(
        {"condition": ["audio", "audio"], "target_icc_2_k": [0.75, 0.9], "raters_needed": [6, 18],
         "raters_needed_optimistic": [5, 15], "raters_needed_pessimistic": [8, 23]}
    )  # fmt: skip
    third = raters_answer(raters)
    assert [n.text for n in third.statements[0].numbers] == ["6", "5", "8", "18", "15", "23"]
    assert raters_answer(None).missing


def _cli_study(tmp_path: Path) -> Path:
    from modprefs.cli import main
    from support.study_files import write_study

    d, *_ = write_study(tmp_path)
    out = tmp_path / "out"
    args = ["--n-boot", "30", "--n-perm", "20", "--n-boot-alpha", "40", "--n-perm-alpha", "40",
            "--n-boot-threshold", "40"]  # fmt: skip
    assert main(["stats", "--ratings", str(d), "--clips", str(tmp_path / "clips.csv"), "--out", str(out), *args]) == 0
    return out


@pytest.mark.slow  # a whole analysis: over 5 s on 2 cores
def test_every_number_on_the_answers_page_equals_its_source_table(tmp_path):
    out = _cli_study(tmp_path)
    html = (out / "report.html").read_text(encoding="utf-8")
    checked = check_against_tables(html, out / "tables")
    tables = {s["data-table"] for s in answer_numbers(html)}
    print(f"{checked} numbers checked against {sorted(tables)}")
    assert checked >= 30 and {"icc", "table4_reliability", "table2_lmm", "raters_needed"} <= tables
    # the answers come first, before any table; every figure is captioned
    assert html.index('id="answers"') < html.index('id="tables"') < html.index('id="figures"')
    figures = re.findall(r"<figure\b.*?</figure>", html, flags=re.S)
    assert len(figures) >= 4 and all("<figcaption>" in f for f in figures)


@pytest.mark.slow  # a whole analysis: over 5 s on 2 cores
def test_one_condition_without_justifications_says_what_is_missing(tmp_path):
    """pingouin's wine table: one condition (text), one response per item, no trials, no justifications."""
    pg = pytest.importorskip("pingouin")
    from modprefs.cli import main

    pg.read_dataset("icc").to_csv(tmp_path / "wine.csv", index=False)
    out = tmp_path / "out"
    args = ["--map", "participant_id=Judge,clip_id=Wine,rating=Scores", "--scale", "0:10", "--n-boot", "20"]
    assert main(["stats", "--ratings", str(tmp_path / "wine.csv"), "--out", str(out), *args]) == 0
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "These ratings hold one condition (text): no audio - text difference can be estimated" in html
    # the reliability and raters answers still stand, on the one condition, and match their tables
    assert check_against_tables(html, out / "tables") >= 6
    assert "Table 2 is missing: needs" in html and "Table 4 is missing: needs" in html
    assert "Table 5 is missing: no AI judge ratings were given" in html
    assert "Justification terms by modality" in html and "not computed (needs" in html
    assert "Rating gaps on decisive and tie trials is missing: needs" in html  # a skipped figure is not drawn
    for table in re.findall(r"<table\b.*?</table>", html, flags=re.S):
        assert "<td>" in table, table[:200]  # no empty table anywhere


def test_the_planners_recommendation_joins_the_raters_answer():
    raters = pd.DataFrame(
        {"condition": ["text"], "target_icc_2_k": [0.75], "raters_needed": [6], "raters_needed_optimistic": [5],
         "raters_needed_pessimistic": [8]}
    )  # fmt: skip
    plan = pd.DataFrame(
        {"scenario": ["pessimistic", "central"], "met": [True, True], "prompts": [80, 60], "raters": [30, 24],
         "trials": [20, 20], "note": ["", ""]}
    )  # fmt: skip
    statement = raters_answer(raters, plan).statements[-1]
    assert statement.template.startswith("Planner (central priors)")
    assert [n.text for n in statement.numbers] == ["60", "24", "20"]
    unmet = plan.assign(met=False, note="power_icc_diff")
    assert (
        "no design in its grid meets every target (power_icc_diff)"
        in raters_answer(raters, unmet).statements[-1].template
    )

"""The default run's report in a real browser (Playwright driving Debian's chromium), as a lab lead opens it.

* the first screen at 1280x800 shows the three answers, each headline with a number;
* no horizontal scrolling of the page at 1280 and at 390 px (wide tables scroll inside their own box);
* no raw LaTeX and no e-notation in the reading flow (the page's text without the "details" toggles);
* every figure has a caption; every number on the answers page equals its source table
  (tests/support/report_checks.py reads the CSVs itself).

Skipped without chromium or Playwright unless MODPREFS_REQUIRE_BROWSER=1 (tests/support/browser_kit.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.report_checks import check_against_tables, reading_flow_problems

pytestmark = pytest.mark.integration  # the default run and a browser: not in `make test-fast`

READING_FLOW_TEXT = """() => {
  const body = document.body.cloneNode(true);
  body.querySelectorAll('details').forEach(d => d.remove());
  return body.innerText;
}"""


@pytest.fixture(scope="module")
def report(default_run: Path) -> Path:
    return default_run / "results" / "report" / "report.html"


def test_first_screen_answers_the_three_questions_with_numbers(browser, report):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(report.as_uri())
    for key in ("reliability", "difference", "raters"):
        headline = page.locator(f"#answer-{key} .headline")
        box = headline.bounding_box()
        assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 800, (key, box)
        text = headline.inner_text()
        assert any(ch.isdigit() for ch in text), (key, text)
        question = page.locator(f"#answer-{key} h2").bounding_box()
        assert question is not None and question["y"] + question["height"] <= 800
    page.close()


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)])
def test_no_sideways_scrolling_and_no_latex_or_e_notation(browser, report, width, height):
    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto(report.as_uri())
    scroll, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert scroll <= inner, f"the page scrolls sideways at {width} px: {scroll} > {inner}"
    # open every toggle too: a wide machine table must scroll in its box, not the page
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    scroll, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert scroll <= inner, f"an opened table makes the page scroll sideways at {width} px: {scroll} > {inner}"
    text = page.evaluate(READING_FLOW_TEXT)
    assert "Table 2" in text and "Are the labels reliable?" in text
    assert reading_flow_problems(text) == []
    page.close()


def test_every_figure_has_a_caption_and_the_answers_match_their_tables(browser, report, default_run):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(report.as_uri())
    figures = page.locator("figure")
    assert figures.count() >= 8  # Figures 2-4, thresholds, AI-human (2), rater plan, reward accuracy, curve
    for i in range(figures.count()):
        caption = figures.nth(i).locator("figcaption").inner_text().strip()
        assert len(caption) > 40, caption
        assert figures.nth(i).locator("img").get_attribute("alt")
    page.close()
    html = report.read_text(encoding="utf-8")
    assert check_against_tables(html, default_run / "results" / "stats" / "tables") >= 40

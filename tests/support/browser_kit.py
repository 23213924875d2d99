"""Shared parts of the browser tests: Debian's chromium under Playwright (headless), page helpers.

Without chromium or Playwright the browser tests are skipped, unless MODPREFS_REQUIRE_BROWSER=1
(CI), which makes their absence a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("MODPREFS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--autoplay-policy=no-user-gesture-required",
    "--mute-audio",
    "--disable-dev-shm-usage",
]


def require_browser() -> None:
    problems = []
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        problems.append("the playwright Python package is not installed (pip install -e '.[test]')")
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        problems.append(f"chromium not found at {CHROMIUM} (tests/app/install_deps.sh installs it)")
    if problems:
        if os.environ.get("MODPREFS_REQUIRE_BROWSER") == "1":
            pytest.fail("MODPREFS_REQUIRE_BROWSER=1 but " + "; ".join(problems))
        pytest.skip("; ".join(problems))


@pytest.fixture(scope="module")
def browser():
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


def data_of(page) -> dict:
    return json.loads(page.locator("#page-data").text_content())


def events_of(page) -> list[dict]:
    return page.evaluate("window.__modprefs.events")


def wait_until(page, expression: str, timeout: float = 15.0) -> None:
    """Poll a JS expression (wait_for_function evaluates strings, which the page's CSP forbids)."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        assert time.monotonic() < deadline, f"timed out waiting for {expression}"
        time.sleep(0.05)


def tab_to(page, selector: str, limit: int = 80) -> None:
    """Press Tab until ``selector`` has the focus (keyboard only: no click, no programmatic focus)."""
    for _ in range(limit):
        if page.evaluate(f"document.activeElement && document.activeElement.matches({selector!r})"):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached {selector}")


def axe_all_rules(page) -> list[dict]:
    """axe-core's violations on the page with every rule of axe enabled: the WCAG 2.0-2.2 A/AA/AAA rules, the
    best practices and the experimental rules, not only those a WCAG tag selects or those on by default."""
    from axe_playwright_python.sync_playwright import Axe

    page.evaluate(Axe().axe_script)
    res = page.evaluate(
        """async () => {
            const rules = Object.fromEntries(axe.getRules().map(r => [r.ruleId, {enabled: true}]));
            const out = await axe.run(document, {rules: rules, resultTypes: ['violations']});
            return {n: Object.keys(rules).length, violations: out.violations.map(v => ({id: v.id, impact: v.impact,
                nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ': ' + n.failureSummary)}))};
        }"""
    )
    assert res["n"] >= 90, res["n"]  # axe-core 4.x has ~100 rules: all of them ran
    return res["violations"]


AX_ROLES = {"button", "slider", "radio", "textbox", "combobox", "checkbox", "link", "radiogroup", "group", "dialog"}


def ax_controls(page) -> list[dict]:
    """The page's controls as chromium's accessibility tree exposes them (CDP ``Accessibility.getFullAXTree``):
    role, name, description, value (a slider's value text when it has one), whether disabled or checked, and the
    names of the groups around each (nearest first)."""
    cdp = page.context.new_cdp_session(page)
    try:
        nodes = cdp.send("Accessibility.getFullAXTree")["nodes"]
    finally:
        cdp.detach()
    by_id = {n["nodeId"]: n for n in nodes}

    def val(n: dict, key: str) -> str:
        return str((n.get(key) or {}).get("value", "") or "")

    def prop(n: dict, name: str):
        return next((p["value"].get("value") for p in n.get("properties", []) if p["name"] == name), None)

    out = []
    for n in nodes:
        role = val(n, "role")
        if n.get("ignored") or role not in AX_ROLES:
            continue
        groups, parent = [], n.get("parentId")
        while parent in by_id:
            p = by_id[parent]
            if val(p, "role") in ("group", "radiogroup") and val(p, "name"):
                groups.append(val(p, "name"))
            parent = p.get("parentId")
        out.append(
            {
                "role": role,
                "name": val(n, "name"),
                "description": val(n, "description"),
                "value": prop(n, "valuetext") or val(n, "value"),  # a slider's aria-valuetext, as announced
                "disabled": bool(prop(n, "disabled")),
                "checked": prop(n, "checked") in (True, "true"),
                "groups": groups,
            }
        )
    return out


def headings(page) -> list[tuple[int, str]]:
    """The page's headings (level, text) in document order."""
    return page.evaluate(
        "[...document.querySelectorAll('h1, h2, h3')].filter(h => h.offsetParent !== null)"
        ".map(h => [Number(h.tagName[1]), h.textContent.trim()])"
    )

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

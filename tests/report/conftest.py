"""The report's tests: the chromium ``browser`` fixture (support/browser_kit.py) for test_report_browser.py."""

from support.browser_kit import browser  # noqa: F401 (a fixture: pytest finds it in this conftest)

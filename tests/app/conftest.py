"""The app's tests: the chromium ``browser`` fixture (support/browser_kit.py) for the browser tests here."""

from support.browser_kit import browser  # noqa: F401 (a fixture: pytest finds it in this conftest)

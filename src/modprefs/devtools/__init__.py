"""Checks of the code base itself (not of data): run as modules, used by tests."""

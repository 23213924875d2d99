"""Helpers shared by the test modules (and by a few benchmark scripts): fixtures' machinery, reference
implementations, simulated studies, the app's and the cluster's test kits. Importable as ``support`` because
pyproject.toml's ``[tool.pytest.ini_options] pythonpath`` puts tests/ on the path (tests/README.md)."""

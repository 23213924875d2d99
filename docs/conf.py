"""Sphinx configuration of the modprefs documentation site (built by ``make docs`` with warnings as errors).

Sphinx rather than MkDocs: the library's docstrings are reStructuredText with Sphinx roles (``:func:``,
``:mod:``, ...), which autodoc renders as links and mkdocstrings would print raw; myst-parser reads the
Markdown pages (README.md and docs/*.md stay readable on a forge). The configuration reference is written from
the config schema at build time (modprefs.config_reference), the CLI reference from the argparse parsers
(modprefs.cli_reference: the help as the terminal prints it; sphinx-argparse parses help text as RST outside
the build's environment and fails on the Sphinx roles the commands' descriptions carry), the API reference from
the docstrings (autodoc + autosummary).
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

project = "modprefs"
author = "The modprefs authors"
copyright = "2026, The modprefs authors"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "generated_pages",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
autosummary_generate = True
# SQLAlchemy's declarative attributes carry its own docs, with labels of its own site
# ignore-module-all: a module documents what it defines, not what its __all__ re-exports (no duplicate entries)
autodoc_default_options = {
    "members": True,
    "show-inheritance": True,
    "exclude-members": "metadata, registry",
    "ignore-module-all": True,
}
autodoc_typehints = "description"
autodoc_member_order = "bysource"
html_theme = "furo"
html_title = "modprefs"

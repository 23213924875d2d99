"""Pages the docs build writes before reading the sources (not tracked; .gitignore): the configuration reference
from the config schema (modprefs.config_reference) and the command-line reference from the argparse tree
(modprefs.cli_reference)."""

from __future__ import annotations

from pathlib import Path

from pygments.lexers.shell import BashLexer
from sphinx.application import Sphinx


def write_reference_pages(app: Sphinx) -> None:
    """docs/reference/config.md and docs/reference/cli.md, written atomically."""
    from modprefs import cli_reference, config_reference

    reference = Path(app.srcdir) / "reference"
    for module, page in ((config_reference, "config.md"), (cli_reference, "cli.md")):
        if module.main([str(reference / page)]) != 0:
            raise RuntimeError(f"{module.__name__} could not write docs/reference/{page}")


def setup(app: Sphinx) -> dict[str, bool]:
    app.connect("builder-inited", write_reference_pages)
    app.add_lexer("cron", BashLexer)  # a crontab's commands are shell; Pygments has no crontab lexer
    return {"parallel_read_safe": True, "parallel_write_safe": True}

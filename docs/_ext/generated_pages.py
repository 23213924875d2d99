"""Pages the docs build writes before reading the sources: the configuration reference from the config schema."""

from __future__ import annotations

from pathlib import Path

from sphinx.application import Sphinx


def write_config_reference(app: Sphinx) -> None:
    """docs/reference/config.md from workflow/schemas/config.schema.yaml and config.yaml's defaults."""
    from modprefs.config_reference import main

    if main([str(Path(app.srcdir) / "reference" / "config.md")]) != 0:
        raise RuntimeError("modprefs.config_reference could not write docs/reference/config.md")


def setup(app: Sphinx) -> dict[str, bool]:
    app.connect("builder-inited", write_config_reference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

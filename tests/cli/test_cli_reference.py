"""The docs' command-line reference (modprefs.cli_reference) names every command and option of the real parser."""

from __future__ import annotations

import argparse

from modprefs.cli import build_parser
from modprefs.cli_help import CommandParser
from modprefs.cli_reference import argument_rows, render_cli_reference, subcommands


def _walk(prog: str, parser: argparse.ArgumentParser):
    yield prog, parser
    for name, sub in subcommands(parser):
        yield from _walk(f"{prog} {name}", sub)


def test_every_command_and_option_is_in_the_page() -> None:
    parser = build_parser()
    page = render_cli_reference(parser)
    commands = list(_walk("modprefs", parser))
    assert len(commands) >= 12
    for prog, sub in commands:
        assert f"`{prog}`" in page, prog
        for action in sub._actions:
            for option in action.option_strings:
                assert f"`{option}" in page or f", {option}" in page or option in ("-h", "--help"), (prog, option)
    prose = page.replace("```text", "").replace("```", "")
    for role in (":mod:", ":func:", ":class:", "``"):
        assert role not in prose


def test_a_small_parser_renders_its_rows() -> None:
    parser = CommandParser(prog="tool", description="Runs :func:`modprefs.x.y` on ``FILE``.")
    parser.add_argument("file", help="the input")
    parser.add_argument("--level", type=float, default=0.95, help="interval level")
    parser.add_argument("--fast", action="store_true", help="fewer refits | faster")
    sub = parser.add_subparsers(dest="cmd")
    sub.add_parser("go", help="go on")
    assert argument_rows(parser) == [
        ("file", "the input"),
        ("--level LEVEL", "interval level (default: 0.95)"),
        ("--fast", "fewer refits | faster (default: off)"),
    ]
    page = render_cli_reference(parser)
    assert "## `tool`" in page and "### `tool go`" in page
    assert "Runs modprefs.x.y on FILE." in page and "fewer refits \\| faster" in page

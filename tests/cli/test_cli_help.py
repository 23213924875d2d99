"""`modprefs ... --help` is written for the terminal (issue #53, item 3): no Sphinx roles or double-backtick
literals from the docstrings, every option with help and its default."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

import pytest

from modprefs.cli import build_parser
from modprefs.cli_help import TerminalHelp, terminal_text

RST = re.compile(r":(mod|func|class|data|meth|attr|obj|exc):|``")


def _commands(parser: argparse.ArgumentParser, name: str = "modprefs") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _commands(sub, f"{name} {sub_name}")


COMMANDS = dict(_commands(build_parser()))


def test_every_command_is_reached():
    assert {"modprefs stats", "modprefs plan", "modprefs publish", "modprefs app load", "modprefs app serve",
            "modprefs app status", "modprefs app export", "modprefs check-judges"} <= set(COMMANDS)  # fmt: skip


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_is_plain_text_with_every_option_explained(name):
    parser = COMMANDS[name]
    assert parser.formatter_class is TerminalHelp
    text = parser.format_help()
    assert not RST.search(text), RST.search(text)
    formatter = parser._get_formatter()
    for action in parser._actions:
        if not action.option_strings or action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        assert action.help, f"{name} {action.option_strings[0]} has no help"
        shown = formatter._get_help_string(action)
        assert action.required or re.search(r"\bdefaults?\b", shown, re.I), (name, action.option_strings, shown)


def test_stats_help_names_modules_without_roles(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["stats", "--help"])
    out = capsys.readouterr().out
    assert "modprefs.ratings.sources" in out and ":mod:" not in out


def test_terminal_text():
    assert terminal_text("see :func:`~modprefs.stats.icc_now.icc_of_source` and ``--scale``") == (
        "see icc_of_source and --scale"
    )
    assert terminal_text(":mod:`modprefs.ratings.sources`") == "modprefs.ratings.sources"
    assert terminal_text(":class:`Foo <modprefs.a.Foo>`") == "Foo"

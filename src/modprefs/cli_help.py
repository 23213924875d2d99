"""Help text for the terminal: the argparse formatter every ``modprefs`` command uses.

The commands' descriptions come from their modules' docstrings, which are written for the API reference (Sphinx
roles such as ``:mod:`x``` and double-backtick literals). :func:`terminal_text` turns them into plain text, and
:class:`TerminalHelp` applies it to descriptions, epilogs and option help and ends every optional argument's help
with its default.
"""

from __future__ import annotations

import argparse
import re

_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`(~?)([^`<]*?)(?:\s*<[^`>]*>)?`")
_LITERAL = re.compile(r"``([^`]+)``")
#: the help already gives its default: "(default 8000)", "default: the packaged one"
_SAYS_DEFAULT = re.compile(r"\(defaults?\b|\bdefaults?:", re.I)


def _role_text(match: re.Match[str]) -> str:
    tilde, target = match.group(1), match.group(2).strip()
    return target.rsplit(".", 1)[-1] if tilde else target


def terminal_text(text: str) -> str:
    """``text`` with Sphinx roles reduced to their target (``:func:`~a.b`` -> ``b``, ``:mod:`a.b``` -> ``a.b``)
    and double-backtick literals to the bare text."""
    return _LITERAL.sub(r"\1", _ROLE.sub(_role_text, text))


class TerminalHelp(argparse.RawDescriptionHelpFormatter):
    """Plain-text descriptions and help (:func:`terminal_text`); every optional argument's help ends with its
    default (``none``/``off`` when unset). Descriptions keep their line breaks (usage blocks in docstrings)."""

    def _format_text(self, text: str) -> str:
        return super()._format_text(terminal_text(text))

    def _get_help_string(self, action: argparse.Action) -> str:
        text = terminal_text(action.help or "")
        if action.required or not action.option_strings or action.default is argparse.SUPPRESS:
            return text
        if _SAYS_DEFAULT.search(text):  # the help states its default in its own words
            return text
        default = action.default
        shown = "off" if default is False else "none" if default in (None, []) else "%(default)s"
        return f"{text} (default: {shown})"


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser whose help is :class:`TerminalHelp` unless told otherwise; subcommands' parsers are of the
    parent's class (argparse's ``parser_class``), so the whole ``modprefs`` tree formats its help alike."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", TerminalHelp)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

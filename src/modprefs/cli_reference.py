"""The command-line reference page of the docs site, written from the ``modprefs`` argparse tree.

Every command and subcommand gets a section: its usage and description as the terminal shows them
(:func:`modprefs.cli_help.terminal_text`), then a table of its arguments with the help text ``--help`` prints,
defaults included. Because the page is rendered from :func:`modprefs.cli.build_parser` at docs build time, it
cannot drift from the program. ``python -m modprefs.cli_reference OUT.md`` writes it (the docs build does).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence

from modprefs.cli_help import terminal_text


def subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """(name, parser) of each direct subcommand of ``parser``, in the order they were added (aliases once)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen: set[int] = set()
            for name, sub in action.choices.items():
                if id(sub) not in seen:
                    seen.add(id(sub))
                    yield name, sub


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def argument_rows(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    """(argument, help) for each argument of ``parser`` except help and subcommand groups; the help as the
    terminal prints it (``%(default)s`` expanded, the default appended by the parser's formatter)."""
    formatter = parser._get_formatter()
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            metavar = formatter._format_args(action, action.dest.upper()) if action.nargs != 0 else ""
            name = ", ".join(f"{opt} {metavar}".strip() for opt in action.option_strings)
        else:
            name = formatter._metavar_formatter(action, action.dest)(1)[0]
        help_text = formatter._expand_help(action) if action.help is not None else ""
        rows.append((name, terminal_text(help_text)))
    return rows


def _sections(prog: str, parser: argparse.ArgumentParser, level: int) -> Iterator[str]:
    yield f"{'#' * level} `{prog}`\n"
    yield "```text\n" + parser.format_usage().strip() + "\n```\n"
    if parser.description:
        yield "```text\n" + terminal_text(parser.description).strip() + "\n```\n"
    rows = argument_rows(parser)
    if rows:
        yield "| argument | what it does |\n|---|---|\n" + "".join(f"| `{_cell(a)}` | {_cell(h)} |\n" for a, h in rows)
    for name, sub in subcommands(parser):
        yield from _sections(f"{prog} {name}", sub, min(level + 1, 4))


def render_cli_reference(parser: argparse.ArgumentParser) -> str:
    """The Markdown page: an introduction, then one section per command, depth-first."""
    intro = (
        "# Command-line reference\n\n"
        "Every command and option of `modprefs`, written from the parsers the program itself uses when the docs are\n"
        "built (`python -m modprefs.cli_reference`), so it says what `modprefs COMMAND --help` says.\n"
    )
    return intro + "\n" + "\n".join(_sections(parser.prog, parser, 2))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m modprefs.cli_reference OUT.md``: write the page to OUT.md (atomically)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: python -m modprefs.cli_reference OUT.md", file=sys.stderr)
        return 2
    from modprefs.cli import build_parser
    from modprefs.io import write_text

    write_text(render_cli_reference(build_parser()), args[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())

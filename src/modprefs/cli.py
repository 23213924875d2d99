"""Command line: ``modprefs COMMAND``, the dispatcher of every command.

``modprefs stats ...`` runs the statistics and report on ratings collected anywhere: see modprefs.stats.cli.

``modprefs app ...`` (load, serve, invite, export, status) runs the annotation web app that collects
such ratings with the paper's protocol: see docs/app.md and modprefs.app.cli.

``modprefs check-judges [--configfile F ...]`` checks the API judges' key, endpoint and models of the
workflow's config (config.yaml, then each file, later ones winning), as a real ``snakemake`` run does at
its start; ``snakemake -n``, ``--lint`` and ``--report`` do not.

``modprefs fetch-weights [--configfile F ...] [--dry-run]`` downloads the hub weights and data the config's jobs
load (Kokoro, Qwen2.5-Omni, PRISM) into ``$HF_HOME``, as a SLURM run does on the submitting host at its start
(modprefs.weights; docs/cluster.md).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import re
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from modprefs.cli_args import add_threads_arg, pinned_threads
from modprefs.cli_help import CommandParser
from modprefs.cores import capped_at_cores
from modprefs.errors import UserInputError

log = logging.getLogger("modprefs")

REPO = Path(__file__).resolve().parents[2]


def _merged_judges(files: list[Path]) -> dict[str, Any]:
    """The ``judges`` section of config.yaml overlaid by each file's (nested mappings merged, as Snakemake does)."""
    from snakemake.utils import update_config  # noqa: PLC0415 (Snakemake's own merge of --configfile layers)

    from modprefs.config_files import load_config_file  # noqa: PLC0415

    judges: dict[str, Any] = {}
    for path in [REPO / "config.yaml", *files]:
        section = load_config_file(path).get("judges") or {}
        if not isinstance(section, dict):
            raise UserInputError(f"{path}: judges must be a mapping, got {type(section).__name__}")
        update_config(judges, section)
    return judges


def check_judges(files: list[Path]) -> int:
    """``modprefs check-judges``: 0 when the judges can start, 2 with the problem printed otherwise."""
    from modprefs.judges.startup import check_judges_at_start  # noqa: PLC0415

    try:
        judges = _merged_judges(files)
        check_judges_at_start(judges)
    except UserInputError as exc:
        print(f"modprefs check-judges: error: {exc}", file=sys.stderr)
        return 2
    backend = judges.get("backend", "local")
    print(
        f"judges: backend {backend}: "
        + ("key, endpoint and models ok" if backend == "openai" else "offline, nothing to check before the run")
    )
    return 0


#: a value that starts with a minus sign: a negative number or a range such as ``-3:3`` (``--scale``)
_DASH_VALUE = re.compile(r"^-\.?\d[\d.:eE+-]*$")


def attach_dash_values(argv: Sequence[str]) -> list[str]:
    """``["--scale", "-3:3"]`` -> ``["--scale=-3:3"]``: argparse reads a token that starts with ``-`` and is not a
    plain negative number as an option, so ``--scale -2:2`` would fail with "expected one argument" (``--scale=-2:2``
    works). A long option followed by such a value is joined to it; every other token is left as it is."""
    out: list[str] = []
    for token in argv:
        if out and _DASH_VALUE.match(token) and out[-1].startswith("--") and "=" not in out[-1]:
            out[-1] = f"{out[-1]}={token}"
        else:
            out.append(token)
    return out


COMMANDS_DESCRIPTION = textwrap.fill(
    "modprefs: cross-modal preference studies for speech alignment. The workflow runs with snakemake (README); "
    "these commands work on their own: stats (the statistics and report on ratings collected anywhere), plan "
    "(how many raters and prompts a study needs), app (run the rating study in a browser), publish (the study as "
    "a dataset), check-judges and fetch-weights (before a run). `modprefs COMMAND --help` for each.",
    width=100,
)


def build_parser() -> argparse.ArgumentParser:
    """The whole ``modprefs`` command tree (every subcommand's parser is a :class:`CommandParser`)."""
    parser = CommandParser(prog="modprefs", description=COMMANDS_DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    from modprefs.stats.cli import add_parser as add_stats_parser  # `modprefs stats ...`

    add_stats_parser(sub)
    from modprefs.app.cli import add_parser as add_app_parser  # `modprefs app ...` (docs/app.md)

    add_app_parser(sub)
    from modprefs.plan.cli import add_parser as add_plan_parser  # `modprefs plan ...` (docs/plan.md)

    add_threads_arg(add_plan_parser(sub))
    from modprefs.publish.cli import add_parser as add_publish_parser  # `modprefs publish ...` (README)

    add_publish_parser(sub)
    cj = sub.add_parser("check-judges", help="check the API judges' key, endpoint and models (as a run's start does)")
    cj.add_argument(
        "--configfile",
        type=Path,
        nargs="*",
        default=[],
        help="config files over config.yaml, later ones winning (default: none)",
    )
    fw = sub.add_parser("fetch-weights", help="download the hub weights the config's jobs load into $HF_HOME")
    fw.add_argument("--configfile", type=Path, nargs="*", default=[], help="config files over config.yaml")
    fw.add_argument("--dry-run", action="store_true", help="list what would be downloaded")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(attach_dash_values(sys.argv[1:] if argv is None else argv))
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if hasattr(args, "threads"):
        args.threads, note = capped_at_cores(args.threads, "--threads")
        if note:
            print(note, file=sys.stderr)
    if args.command == "app":
        from modprefs.app.commands import run as run_app

        return run_app(args)
    if args.command == "plan":
        from modprefs.plan.cli import run as run_plan

        with pinned_threads(args.threads):
            return run_plan(args)
    if args.command == "check-judges":
        return check_judges(args.configfile)
    if args.command == "fetch-weights":
        from modprefs.weights import fetch_weights  # noqa: PLC0415

        return fetch_weights(args.configfile, args.dry_run)
    if args.command == "publish":
        from modprefs.publish.cli import run as run_publish

        return run_publish(args)
    from modprefs.stats.cli import run as run_stats_command

    return run_stats_command(args)


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())

"""``modprefs publish --results DIR --out DIR [--push-to-hub OWNER/NAME]``: a finished study as a dataset.

Writes a ``datasets.DatasetDict`` (``save_to_disk``), its Parquet data files and a dataset card into ``--out``
(:mod:`modprefs.publish`), built in a temporary folder beside it and moved into place whole. The card shows the
config the run used, ``--results``' ``config.yaml`` (written by the workflow's rule ``run_config``), and records
its rating scale. Participant ids are salted hashes (``--salt``, the ``publish.salt`` of ``--config``,
``$MODPREFS_PUBLISH_SALT``; a random salt otherwise, never written). With ``--push-to-hub`` the card and data
files are uploaded when a token is set; offline or without a token the dataset is still written and the command
says so and exits 1. A missing or incomplete ``--results`` (``config.yaml`` included) exits 2 naming the missing
file; so do an ``--out`` inside ``--results`` (or holding it), a ``--config`` with a key the workflow's schema does not
know, and a manifest clip that is not audio.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from modprefs.errors import UserInputError

EXIT_PUSH_FAILED = 1
#: the workflow's config schema: ``--config`` is checked against it as a ``--configfile`` would be
SCHEMA = Path(__file__).resolve().parents[3] / "workflow" / "schemas" / "config.schema.yaml"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``modprefs publish``."""
    p = sub.add_parser(
        "publish",
        help="publish a finished study (results/) as a Hugging Face dataset",
        description=__doc__.split("\n\n")[1],
    )
    p.add_argument("--results", type=Path, required=True, help="the finished run's results/ folder")
    p.add_argument(
        "--out", type=Path, required=True, help="dataset folder to write (empty or absent unless --overwrite)"
    )
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty --out as a whole")
    p.add_argument(
        "--config",
        type=Path,
        default=None,
        help="a config file whose publish: block gives the defaults of the options below (salt included); default: "
        "the run's record --results/config.yaml, which the card always shows (it never holds the salt)",
    )
    p.add_argument("--license", default=None, help="Hub license id (default: publish.license, else cc-by-4.0)")
    p.add_argument(
        "--drop",
        action="append",
        default=[],
        metavar="FIELD",
        help="participant/rating field to leave out (repeatable)",
    )
    p.add_argument(
        "--salt", default=None, help="pseudonym salt (default: publish.salt, $MODPREFS_PUBLISH_SALT, random)"
    )
    p.add_argument("--no-scrub", action="store_true", help="keep e-mail addresses and URLs in justifications")
    p.add_argument("--push-to-hub", default=None, metavar="OWNER/NAME", help="also upload to this dataset repository")
    p.add_argument("--private", action="store_true", help="create the hub repository private")
    return p


def _options_config(args: argparse.Namespace, record: dict[str, Any]) -> dict[str, Any]:
    """The config whose ``publish`` block gives the options' defaults: ``--config`` when given, else the record."""
    from modprefs.config_checks import validate_overlay  # noqa: PLC0415
    from modprefs.file_access import file_problem  # noqa: PLC0415

    if args.config is None:
        return record
    problem = file_problem(args.config)
    if problem:
        raise UserInputError(f"--config {args.config}: {problem}")
    # checked as the workflow checks a --configfile: a key it does not know (licence: for license:) is an error,
    # not an option silently left at its default
    try:
        return validate_overlay(args.config, SCHEMA)
    except UserInputError as exc:
        raise UserInputError(f"--config {args.config}: {exc}") from None


def options(args: argparse.Namespace, config: dict[str, Any] | None) -> Any:
    """The :class:`~modprefs.publish.PublishOptions` of the config's ``publish`` block overridden by the flags."""
    from modprefs.publish.build import PublishOptions  # noqa: PLC0415

    opts = PublishOptions.from_config((config or {}).get("publish"))
    if args.license:
        opts.license = args.license
    opts.drop_fields = (*opts.drop_fields, *args.drop)
    if args.no_scrub:
        opts.scrub_emails = opts.scrub_urls = False
    salt = args.salt if args.salt is not None else (opts.salt or os.environ.get("MODPREFS_PUBLISH_SALT", ""))
    opts.salt = salt
    return opts


def check_out(out: Path, overwrite: bool, results: Path) -> None:
    """``--out`` is writable (:func:`modprefs.output_folder.output_folder_problem`), lies outside ``--results`` and
    does not hold it, and is absent, empty, or (with ``--overwrite``) a folder that is not the working directory nor
    holds it; else UserInputError. Nothing under ``--results`` is ever replaced: a dataset written inside it would
    be a file of the run (``--overwrite`` of ``results/stats`` once deleted its tables)."""
    from modprefs.output_folder import output_folder_problem  # noqa: PLC0415

    problem = output_folder_problem(out)
    if problem:
        raise UserInputError(problem)
    target, run = out.resolve(), results.resolve()
    if target == run or target in run.parents:
        raise UserInputError(f"--out {out}: holds --results {results} (or is it); choose a folder outside the run")
    if run in target.parents:
        raise UserInputError(
            f"--out {out}: lies inside --results {results}, the run's own folder, whose files publishing must not "
            "replace or add to; choose a folder outside it (the workflow's `snakemake publish` writes "
            "results/dataset itself)"
        )
    if out.is_dir() and any(out.iterdir()):
        if not overwrite:
            raise UserInputError(f"--out {out}: the folder is not empty; pass --overwrite to replace it as a whole")
        if target == Path.cwd().resolve() or target in Path.cwd().resolve().parents:
            raise UserInputError(f"--out {out}: is the working directory or holds it; --overwrite would replace it")


def run(args: argparse.Namespace) -> int:
    """``modprefs publish``: 0 written (and pushed if asked), 1 written but not pushed, 2 bad input."""
    from modprefs.output_folder import Terminated, report_stopped, staged_folder, terminate_raises  # noqa: PLC0415

    try:
        check_out(args.out, args.overwrite, Path(args.results))
        if args.push_to_hub:
            from modprefs.publish.hub import check_repo_id  # noqa: PLC0415

            check_repo_id(args.push_to_hub)
        from modprefs.publish.build import missing_inputs  # noqa: PLC0415

        if not Path(args.results).is_dir():
            raise UserInputError(f"--results {args.results}: no such folder (a finished run's results/)")
        missing = missing_inputs(Path(args.results))
        if missing:
            raise UserInputError(f"--results {args.results}: missing {missing[0]}; run the workflow to the end first")
        from modprefs.publish.run_config import read_run_config  # noqa: PLC0415

        config = read_run_config(args.results)  # the config the run used: shown in the card, gives the scale
        opts = options(args, _options_config(args, config))
        from modprefs.publish import publish  # noqa: PLC0415

        with terminate_raises(), staged_folder(args.out) as tmp:
            rows = publish(args.results, tmp, opts, config)
    except UserInputError as exc:
        print(f"modprefs publish: error: {exc}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Terminated) as exc:
        return report_stopped("modprefs publish", exc, args.out)
    print(f"wrote {args.out}: " + ", ".join(f"{k} {v}" for k, v in rows.items()))
    if args.push_to_hub:
        from modprefs.publish.hub import PushError, push  # noqa: PLC0415

        try:
            url = push(args.out, args.push_to_hub, private=args.private)
        except PushError as exc:
            print(f"modprefs publish: {exc}; the dataset is written at {args.out}", file=sys.stderr)
            return EXIT_PUSH_FAILED
        print(f"pushed to {url}")
    return 0

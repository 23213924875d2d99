"""``modprefs app ...``: load a study, serve it, invite participants, export the data.

    modprefs app load   --db URL [--results results] [--assignments F --stimuli F --conversations F
                        --prompts F --manifest F] [--attention-check F] [--completion-code C] [--seed N]
                        [--configfile config.yaml | --scale MIN:MAX[:STEP]] [--scale-labels LOW HIGH]
                        [--headphone-check off|record|require (default record)] [--calibration on|off]
                        [--practice on|off] [--no-consent-code C] [--expired-code C] [--error-code C]
                        [--point-labels L1 .. Ln] [--consent F.md --instructions F.md
                        --debrief F.md --payment P --contact C --ethics E] [--replace [--force]]
    modprefs app serve  --db URL [--host 127.0.0.1] [--port 8000] [--abandon-minutes 30] [--leave-grace 60]
                        [--entry any|prolific|invite] [--workers N] [--root-path /prefix] [--timing-tolerance 0.5]
                        [--text-reveal next|auto|off] [--text-min-read 3] [--headphone-check off|record|require]
                        [--rate-window 60 --rate-start-ip 60 --rate-start-pid 10 --rate-session-ip 1200
                         --rate-session-token 300]
    modprefs app invite --db URL -n N [--base-url URL] [--csv FILE]
    modprefs app export --db URL --out DIR [--validate stimuli.csv] [--exclude-headphone-failed]
    modprefs app status --db URL [--stats]

The rating scale of the sliders (and of the exported ratings) is the study's ``study.scale`` of the workflow
config given with ``--configfile``, or ``--scale``; the paper's 1..100 ("Terrible".."Perfect") without either.
It is stored with the study (app_meta ``rating_scale``).

``--db`` defaults to $MODPREFS_APP_DB, then ``sqlite:///study.db``; ``postgresql://user@host/db``
uses psycopg 3. Only ``load`` creates a database: the other commands refuse one that does not exist
or holds no loaded study, naming it and the command to run first. Every argument is checked before
any work (ports 1-65535, counts > 0, minutes > 0, one worker on SQLite); expected errors print one
message and exit 2, without a traceback. The admin secret for the dashboard and the HTTP export is read
from $MODPREFS_ADMIN_SECRET (at least 16 characters: serve refuses a shorter one). Only argparse is imported
at module level: the server's dependencies load when a command runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from modprefs.cli_args import base_url, label, number, scale_arg, whole

if TYPE_CHECKING:
    from modprefs.scale import RatingScale

REPO = Path(__file__).resolve().parents[3]


def _errors() -> tuple[type[Exception], ...]:
    """The expected errors of the app commands (printed without a traceback)."""
    from modprefs.errors import UserInputError
    from modprefs.ratings.ingest import RatingsValidationError

    return AppCliError, UserInputError, RatingsValidationError


class AppCliError(Exception):
    """A bad argument combination or environment of an app command (the message says which)."""


APP_ROUTES = ("p", "static", "admin", "start", "healthz")  # first path segments of the app's own routes


def root_path_arg(raw: str) -> str:
    """``--root-path``: '' or ``/seg[/seg...]`` (a trailing / is dropped), not starting with a route of the app."""
    value = raw.strip().rstrip("/")
    if value == "":
        return ""
    if not re.fullmatch(r"(/[A-Za-z0-9._~-]+)+", value) or "/." in value:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a URL path prefix such as /study")
    if value.split("/")[1] in APP_ROUTES:
        raise argparse.ArgumentTypeError(
            f"{raw!r} starts like a route of the app ({', '.join('/' + r for r in APP_ROUTES)}); choose another prefix"
        )
    return value


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    app = sub.add_parser(
        "app",
        help="the annotation web app: load a study, serve it, export its data",
        description=__doc__.split("\n\n")[0],
    )
    cmds = app.add_subparsers(dest="app_command", required=True)
    _add_load_parser(cmds)
    _add_serve_parser(cmds)
    _add_invite_parser(cmds)
    _add_export_parser(cmds)
    _add_status_parser(cmds)
    return app


def _db_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", default=None, help="database URL (default $MODPREFS_APP_DB or sqlite:///study.db)")


def _add_load_parser(cmds: argparse._SubParsersAction) -> None:
    ld = cmds.add_parser("load", help="load assignments, stimuli, conversations and audio into the database")
    _db_arg(ld)
    ld.add_argument(
        "--results",
        type=Path,
        default=Path("results"),
        help="the workflow's results folder (default locations of every input)",
    )
    ld.add_argument("--assignments", type=Path, help="assignments.csv (default: RESULTS/study/assignments.csv)")
    ld.add_argument("--stimuli", type=Path, help="stimuli.csv (default: RESULTS/study/stimuli.csv)")
    ld.add_argument("--conversations", type=Path, help="conversations.parquet (or a CSV/parquet keyed by prompt_id)")
    ld.add_argument("--prompts", type=Path, help="prompts.csv: prompt_id -> conversation_id")
    ld.add_argument(
        "--manifest",
        type=Path,
        help="audio manifest.csv (clip_id, path, duration_s); every WAV "
        "is decoded and its duration checked against duration_s (0.1 s)",
    )
    ld.add_argument(
        "--attention-check",
        type=Path,
        default=REPO / "resources/attention_check.json",
        help="the attention check's prompt and responses (JSON)",
    )
    ld.add_argument("--base-dir", type=Path, help="resolve relative audio paths against this (default: results/..)")
    ld.add_argument("--completion-code", help="code shown on completion (default: random)")
    ld.add_argument("--screenout-code", default="", help="code for screened-out participants (Prolific)")
    ld.add_argument("--attention-fail-code", default="", help="code for attention-check failures (Prolific)")
    ld.add_argument("--title", default=None, help="study title shown on every page")
    ld.add_argument(
        "--seed",
        type=whole(0, 2**31 - 1),
        default=1,
        help="seed of the app's random steps: the headphone check's tone orders",
    )
    _add_scale_args(ld)
    _add_load_step_args(ld)
    ld.add_argument("--replace", action="store_true", help="replace a study already in the database")
    ld.add_argument("--force", action="store_true", help="with --replace: also delete collected data")
    ld.add_argument("--summary", type=Path, default=None, help="write the loaded counts as JSON here")


def _add_load_step_args(ld: argparse.ArgumentParser) -> None:
    """``load``'s options on the steps before the trials, the study texts and the Prolific codes."""
    ld.add_argument(
        "--headphone-check",
        choices=["off", "record", "require"],
        default="record",
        help="audio condition: the antiphase headphone screening before the first trial; record keeps "
        "everyone and records the result (exclude at export), require ends the session on a fail, off skips "
        "it (default record; serve --headphone-check overrides it)",
    )
    ld.add_argument(
        "--calibration",
        choices=["on", "off"],
        default="on",
        help="audio condition: the level-setting step (a sample at the study's level; the participant sets a "
        "comfortable volume and confirms) before the headphone check and the first trial (default on)",
    )
    ld.add_argument(
        "--practice",
        choices=["on", "off"],
        default="on",
        help="the instructions page and a practice trial (exported with practice=1, never analysed) before "
        "the first task (default on)",
    )
    ld.add_argument("--no-consent-code", default="", help="Prolific's code for those who decline consent")
    ld.add_argument(
        "--expired-code",
        default="",
        help="Prolific's code shown when a session expired (no page of it open for --abandon-minutes, or closed "
        "and not reopened within the leave grace): the 'timed out' code (serve --expired-code overrides it)",
    )
    ld.add_argument(
        "--error-code",
        default="",
        help="the code shown when the study cannot go on for a technical reason (a clip that does not load after "
        "its retries), so the participant can be paid for their time (serve --error-code overrides it)",
    )
    for name in ("consent", "instructions", "debrief"):
        ld.add_argument(
            f"--{name}",
            type=Path,
            default=None,
            metavar="FILE.md",
            help=f"the lab's {name} text (Markdown with placeholders; default: the packaged one)",
        )
    for name, what in (
        ("payment", "the payment, for {payment} (e.g. '£2.50')"),
        ("contact", "the researchers' contact, for {contact}"),
        ("ethics", "the ethics approval, for {ethics}"),
    ):
        ld.add_argument(f"--{name}", default="", help=f"the texts' placeholder value: {what}")
    from modprefs.app.texts import MAX_MINUTES_PER_TRIAL, MAX_OVERHEAD_MINUTES

    ld.add_argument(
        "--minutes-per-trial",
        type=number(0, strict=True, maximum=MAX_MINUTES_PER_TRIAL),
        default=None,
        metavar="MIN",
        help=f"the timing prior of one task for {{minutes}}, at most {MAX_MINUTES_PER_TRIAL:g} (default 1.5)",
    )
    ld.add_argument(
        "--overhead-minutes",
        type=number(0, maximum=MAX_OVERHEAD_MINUTES),
        default=None,
        metavar="MIN",
        help=f"the minutes outside the tasks for {{minutes}}, at most {MAX_OVERHEAD_MINUTES:g} (default 6)",
    )


def _add_scale_args(ld: argparse.ArgumentParser) -> None:
    scale = ld.add_mutually_exclusive_group()
    scale.add_argument(
        "--configfile",
        type=Path,
        help="the workflow config (YAML) whose study.scale is the sliders' rating scale (default: the paper's 1..100), "
        "whose study.stopping is the declared stopping rule and live-statistics cadence, and whose seed and "
        "stats.n_boot, icc_ci_method, ci_level the live ICC uses (default: modprefs stats' defaults)",
    )
    scale.add_argument(
        "--scale", type=scale_arg, metavar="MIN:MAX[:STEP]", help="the rating scale itself, e.g. 1:5 or 0:10:0.5"
    )
    ld.add_argument(
        "--point-labels",
        nargs="+",
        type=label,
        metavar="LABEL",
        help="a short scale's (<= 11 points) label of every point, lowest first (default on 1..5: ITU-T P.808's "
        "ACR labels Bad Poor Fair Good Excellent; on another short scale the end labels at its ends)",
    )
    ld.add_argument(
        "--scale-labels",
        nargs=2,
        type=label,
        metavar=("LOW", "HIGH"),
        help="the labels at the scale's ends (default: the config's; with --scale its end values)",
    )


def study_scale(args: argparse.Namespace) -> RatingScale:
    """The rating scale ``app load`` stores: --configfile's study.scale or --scale, relabelled by --scale-labels."""
    import dataclasses

    import yaml

    from modprefs.scale import PAPER_SCALE, scale_from_config

    scale = args.scale or PAPER_SCALE
    if args.configfile is not None:
        try:
            config = yaml.safe_load(args.configfile.read_text(encoding="utf-8"))
            scale = scale_from_config(config if isinstance(config, dict) else None)
        except (OSError, yaml.YAMLError, ValueError, TypeError, AttributeError) as exc:
            raise AppCliError(f"app load --configfile {args.configfile}: {exc}") from None
    if args.scale_labels:
        scale = dataclasses.replace(scale, label_min=args.scale_labels[0], label_max=args.scale_labels[1])
    return scale


def _add_serve_parser(cmds: argparse._SubParsersAction) -> None:
    sv = cmds.add_parser("serve", help="run the participant site and the admin export")
    _db_arg(sv)
    sv.add_argument("--host", default="127.0.0.1", help="address to listen on (behind a proxy: keep 127.0.0.1)")
    sv.add_argument("--port", type=whole(1, 65535), default=8000, help="TCP port 1-65535 (default 8000)")
    sv.add_argument(
        "--abandon-minutes",
        type=number(0, strict=True),
        default=None,
        metavar="MIN",
        help="a slot holder silent this long is abandoned; the slot is reissued (default 30)",
    )
    sv.add_argument(
        "--entry",
        choices=["any", "prolific", "invite"],
        default=None,
        help="who may enter at /start: anyone, only with PROLIFIC_PID, or nobody (invitations only)",
    )
    sv.add_argument("--completion-code", default=None, help="overrides the study's (app load --completion-code)")
    sv.add_argument("--expired-code", default=None, help="overrides the study's (app load --expired-code)")
    sv.add_argument("--error-code", default=None, help="overrides the study's (app load --error-code)")
    sv.add_argument(
        "--leave-grace",
        type=number(0, strict=True),
        default=None,
        dest="leave_grace_s",
        metavar="S",
        help="seconds a page that was closed (its leave beacon) has to come back before its slot is reissued; an "
        "open page's heartbeat comes at least 3 times within it (default 60)",
    )
    sv.add_argument(
        "--workers",
        type=whole(1, 256),
        default=1,
        help="uvicorn worker processes (default 1; more than 1 needs PostgreSQL)",
    )
    sv.add_argument(
        "--root-path",
        type=root_path_arg,
        default="",
        help="the path prefix a reverse proxy serves the app under (e.g. /study); every URL the app writes "
        "starts with it, and the proxy may strip it or pass it on",
    )
    sv.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug", "trace"],
        help="the server's log level",
    )
    sv.add_argument(
        "--keep-alive",
        type=whole(1, 3600),
        default=30,
        help="seconds an idle HTTP connection is kept open (default 30)",
    )
    _add_serve_trial_args(sv)
    _add_serve_rate_args(sv)


def _add_serve_trial_args(sv: argparse.ArgumentParser) -> None:
    """``serve``'s options on the trials: timing tolerance, the text reveal, the headphone check."""
    sv.add_argument(
        "--timing-tolerance",
        type=number(0),
        default=None,
        dest="timing_tolerance_s",
        metavar="S",
        help="seconds an `ended` may arrive before the clip's duration has passed since its `play` "
        "(server clock), and a text reveal before the reading time (default 0.5)",
    )
    sv.add_argument(
        "--text-reveal",
        choices=["next", "auto", "off"],
        default=None,
        help="text condition: Response B appears after Response A was read, by a button (next) or "
        "by itself (auto) after --text-min-read; off shows both at once (default next)",
    )
    sv.add_argument(
        "--text-min-read",
        type=number(0),
        default=None,
        dest="text_min_read_s",
        metavar="S",
        help="seconds Response A is shown before B can appear (default 3)",
    )
    sv.add_argument(
        "--headphone-check",
        choices=["off", "record", "require"],
        default=None,
        help="audio condition: the antiphase headphone screening before the first trial; record "
        "keeps everyone (exclude at export), require ends the session on a fail, off skips it (default: "
        "the study's, set by app load --headphone-check, itself record by default)",
    )


def _add_serve_rate_args(sv: argparse.ArgumentParser) -> None:
    """``serve``'s rate-limit options: the window and the per-IP, per-id and per-session limits."""
    sv.add_argument(
        "--rate-window",
        type=number(0, strict=True),
        default=None,
        dest="rate_window_s",
        metavar="S",
        help="seconds of the rate-limit window (default 60)",
    )
    for name, default, what in (
        ("start-ip", 60, "/start requests per client IP"),
        ("start-pid", 10, "/start requests per PROLIFIC_PID"),
        ("session-ip", 1200, "/p/... requests per client IP"),
        ("session-token", 300, "/p/... requests per session (one per Prolific id)"),
    ):
        sv.add_argument(
            f"--rate-{name}",
            type=whole(0, 10**7),
            default=None,
            dest=f"rate_{name.replace('-', '_')}",
            metavar="N",
            help=f"{what} per window; beyond: 429 with Retry-After; 0 disables (default {default})",
        )


def _add_invite_parser(cmds: argparse._SubParsersAction) -> None:
    iv = cmds.add_parser("invite", help="create personal invitation links")
    _db_arg(iv)
    iv.add_argument("-n", type=whole(1, 100_000), required=True, help="number of links (1-100000)")
    iv.add_argument(
        "--base-url",
        type=base_url,
        default="http://127.0.0.1:8000",
        help="the site's public address, with the proxy's prefix if any (https://your.host/study); "
        "the links are BASE-URL/p/TOKEN",
    )
    iv.add_argument(
        "--csv", type=Path, default=None, metavar="FILE", help="also write the links as CSV (n, token, url) to FILE"
    )


def _add_export_parser(cmds: argparse._SubParsersAction) -> None:
    ex = cmds.add_parser(
        "export", help="write ratings.csv, trials.csv, participants.csv (+ sessions, events, incidents)"
    )
    _db_arg(ex)
    ex.add_argument("--out", type=Path, required=True, help="folder for ratings.csv, trials.csv, participants.csv")
    ex.add_argument(
        "--validate", type=Path, default=None, help="stimuli.csv: validate the export with the workflow's ingest checks"
    )
    ex.add_argument(
        "--exclude-headphone-failed",
        action="store_true",
        help="leave participants who failed the headphone check out of ratings, trials and "
        "participants (they stay in sessions.csv)",
    )


def _add_status_parser(cmds: argparse._SubParsersAction) -> None:
    st = cmds.add_parser("status", help="counts of participants by state and slots by status")
    _db_arg(st)
    st.add_argument(
        "--stats",
        action="store_true",
        help="also the live reliability (key live): ICC(2,1), ICC(2,k), intervals, raters per clip and still needed "
        "per condition computed now as modprefs stats does on the export, the dashboard's last update, the "
        "stopping rule and its looks",
    )


SERVE_SETTINGS = (
    "abandon_minutes",
    "entry",
    "completion_code",
    "expired_code",
    "error_code",
    "leave_grace_s",
    "timing_tolerance_s",
    "text_reveal",
    "text_min_read_s",
    "headphone_check",
    "rate_window_s",
    "rate_start_ip",
    "rate_start_pid",
    "rate_session_ip",
    "rate_session_token",
)


def run(args: argparse.Namespace) -> int:
    """Run an ``app`` command; expected errors print their message and return 2."""
    try:
        return _run(args)
    except _errors() as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _is_sqlite(url: str) -> bool:
    from modprefs.app.db import normalise_url

    return normalise_url(url).startswith("sqlite")


def _check_port_free(host: str, port: int) -> None:
    try:
        with socket.create_server((host, port)):
            pass
    except OSError as exc:
        raise AppCliError(f"app serve: cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def _run(args: argparse.Namespace) -> int:
    from modprefs.app.db import default_url

    url = args.db or default_url()
    cmd = args.app_command
    if cmd == "load":
        return _run_load(args, url)
    if cmd == "serve":
        return _run_serve(args, url)
    if cmd == "invite":
        return _run_invite(args, url)
    if cmd == "export":
        return _run_export(args, url)
    if cmd == "status":
        return _run_status(args, url)
    raise SystemExit(f"unknown app command {cmd!r}")


def _run_load(args: argparse.Namespace, url: str) -> int:
    from modprefs.app import service
    from modprefs.app.db import Database
    from modprefs.app.loader import StudyFiles, load_study
    from modprefs.app.texts import StudyTexts

    files = StudyFiles.from_results(args.results, args.attention_check, args.base_dir)
    for name in ("assignments", "stimuli", "conversations", "prompts", "manifest"):
        if getattr(args, name) is not None:
            setattr(files, name, getattr(args, name))
    meta = {
        "screenout_code": args.screenout_code,
        "attention_fail_code": args.attention_fail_code,
        "no_consent_code": args.no_consent_code,
        "headphone_seed": str(args.seed),
        "headphone_check": args.headphone_check,
        "calibration": args.calibration,
        "practice": args.practice,
    }
    if args.completion_code:
        meta["completion_code"] = args.completion_code
    if args.title:
        meta["study_title"] = args.title
    scale = study_scale(args)
    meta[service.SCALE_KEY] = json.dumps(scale.as_config())
    meta[LIVE_CONFIG_KEY] = live_config(args.configfile)
    for name in ("expired_code", "error_code"):
        if getattr(args, name):
            meta[name] = getattr(args, name)
    if args.point_labels:
        if scale.n_points > service.POINTS_MAX:
            raise AppCliError(
                f"app load --point-labels: the scale has {scale.n_points} points; labelled points are for scales "
                f"of at most {service.POINTS_MAX} (a longer one is a slider with end labels: --scale-labels)"
            )
        service.scale_points(scale, args.point_labels)  # the count: one label per point
        meta[service.POINT_LABELS_KEY] = json.dumps(args.point_labels)
    try:
        db = Database(url, create=False)
    except Exception as exc:  # sqlalchemy's ArgumentError (not a URL), a missing driver
        raise AppCliError(f"app load: cannot use --db {url!r}: {exc}") from None
    texts = StudyTexts(
        files={name: getattr(args, name) for name in ("consent", "instructions", "debrief")},
        values={name: getattr(args, name) for name in ("payment", "contact", "ethics") if getattr(args, name)},
    )
    if args.minutes_per_trial is not None:
        texts.minutes_per_trial = args.minutes_per_trial
    if args.overhead_minutes is not None:
        texts.overhead_minutes = args.overhead_minutes
    counts = load_study(db, files, replace=args.replace, force=args.force, meta=meta, texts=texts)
    print(f"loaded into {db.redacted_url()}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    if args.summary is not None:
        from modprefs.io import write_text

        write_text(json.dumps({"db": db.redacted_url(), **counts}, indent=2) + "\n", args.summary)
    return 0


def _run_serve(args: argparse.Namespace, url: str) -> int:
    import uvicorn

    from modprefs.app import service
    from modprefs.app.db import Database, open_database

    if args.workers > 1 and _is_sqlite(url):
        raise AppCliError(
            f"app serve: --workers {args.workers} needs PostgreSQL; a SQLite database "
            f"({url}) is served by one worker (--workers 1)"
        )
    overrides = {k: getattr(args, k) for k in SERVE_SETTINGS if getattr(args, k) is not None}
    # the admin secret, the database, the settings and the port are checked before anything is served or printed
    from modprefs.app.server import ADMIN_SECRET_ENV, check_admin_secret

    check_admin_secret(os.environ.get(ADMIN_SECRET_ENV, ""))
    if args.workers > 1:
        db = open_database(url, "serve")
        service.read_settings(db, **overrides)
        db.dispose()
        _check_port_free(args.host, args.port)
        os.environ["MODPREFS_APP_DB"] = url
        os.environ["MODPREFS_APP_SETTINGS"] = json.dumps(overrides)
        print(f"serving {db.redacted_url()} on http://{args.host}:{args.port}/ with {args.workers} workers", flush=True)
        uvicorn.run(
            "modprefs.app.server:app_from_env",
            factory=True,
            host=args.host,
            port=args.port,
            workers=args.workers,
            root_path=args.root_path,
            log_level=args.log_level,
            proxy_headers=True,
            timeout_keep_alive=args.keep_alive,
        )
        return 0
    from modprefs.app.server import create_app

    app = create_app(url, settings_overrides=overrides)
    _check_port_free(args.host, args.port)
    print(f"serving {Database(url, create=False).redacted_url()} on http://{args.host}:{args.port}/", flush=True)
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        root_path=args.root_path,
        log_level=args.log_level,
        proxy_headers=True,
        timeout_keep_alive=args.keep_alive,
    )
    return 0


def _run_invite(args: argparse.Namespace, url: str) -> int:
    from modprefs.app.db import open_database
    from modprefs.app.sessions import invite

    db = open_database(url, "invite")
    links = [(token, f"{args.base_url.rstrip('/')}/p/{token}") for token in invite(db, args.n)]
    for _, link in links:
        print(link)
    if args.csv is not None:
        import csv
        import io

        from modprefs.io import write_text

        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["n", "token", "url"])
        w.writerows((i + 1, token, link) for i, (token, link) in enumerate(links))
        write_text(buf.getvalue(), args.csv)
        print(f"wrote {len(links)} links to {args.csv}", file=sys.stderr)
    return 0


def _run_export(args: argparse.Namespace, url: str) -> int:
    from modprefs.app.db import open_database
    from modprefs.app.export import export_dir

    db = open_database(url, "export")
    stimuli = None
    if args.validate is not None:
        stimuli = _read_stimuli(args.validate)
    counts = export_dir(db, args.out, exclude_headphone_failed=args.exclude_headphone_failed)
    print(f"wrote {args.out}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    if stimuli is not None:
        from modprefs.app.service import read_settings
        from modprefs.ratings.ingest import validate_ratings_dir

        # on the study's rating scale; RatingsValidationError is a UserInputError
        validate_ratings_dir(args.out, stimuli, scale=read_settings(db).scale)
        print("the export passes the ingest validation")
    return 0


def _run_status(args: argparse.Namespace, url: str) -> int:
    from modprefs.app.db import open_database
    from modprefs.app.service import status_counts

    db = open_database(url, "status")
    out = status_counts(db)
    if args.stats:
        from modprefs.app.live_runner import live_now

        out["live"] = live_now(db)
    print(json.dumps(out, indent=2))
    return 0


LIVE_CONFIG_KEY = "live_config"  # modprefs.app.live_stats.CONFIG_KEY (this module imports only argparse at load)


def live_config(configfile: Path | None) -> str:
    """app_meta ``live_config``: ``--configfile``'s study.stopping, stats and seed (without it, or for a key it
    lacks, the defaults: rule off, modprefs stats' settings); a bad study.stopping value names the file and key."""
    import yaml

    from modprefs.app.live_stats import live_config_meta
    from modprefs.stats.sequential import StoppingRuleError

    config: dict = {}
    where = f"app load --configfile {configfile}"
    if configfile is not None:
        try:
            loaded = yaml.safe_load(configfile.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise AppCliError(f"{where}: {exc}") from None
        config = loaded if isinstance(loaded, dict) else {}
    study = config.get("study")
    study = study if isinstance(study, dict) else {}
    stats = config.get("stats")
    stats = stats if isinstance(stats, dict) else None
    try:
        return live_config_meta(study.get("stopping"), stats, config.get("seed"), where)
    except StoppingRuleError as exc:
        raise AppCliError(str(exc)) from None


def _read_stimuli(path: Path):  # noqa: ANN202 (pandas is imported lazily)
    import pandas as pd

    try:
        return pd.read_csv(path, dtype={"prompt_id": str, "clip_id": str})
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise AppCliError(f"app export --validate {path}: cannot read the stimuli table: {exc}") from None

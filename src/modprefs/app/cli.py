"""``modprefs app ...``: load a study, serve it, invite participants, export the data.

Commands::

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
at module level: the server's dependencies load when a command runs (:mod:`modprefs.app.commands` runs them).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import TYPE_CHECKING

from modprefs.cli_args import base_url, label, number, scale_arg, whole

if TYPE_CHECKING:
    pass

REPO = Path(__file__).resolve().parents[3]


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

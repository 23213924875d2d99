"""``modprefs app ...``: load a study, serve it, invite participants, export the data.

    modprefs app load   --db URL [--results results] [--assignments F --stimuli F --conversations F
                        --prompts F --manifest F] [--attention-check F] [--completion-code C] [--replace]
    modprefs app serve  --db URL [--host 127.0.0.1] [--port 8000] [--abandon-minutes 30]
                        [--entry any|prolific|invite] [--workers N]
    modprefs app invite --db URL -n N [--base-url URL]
    modprefs app export --db URL --out DIR
    modprefs app status --db URL

``--db`` defaults to $MODPREFS_APP_DB, then ``sqlite:///study.db``; ``postgresql://user@host/db``
uses psycopg 3. The admin secret for the HTTP export is read from $MODPREFS_ADMIN_SECRET.
Only argparse is imported at module level: the server's dependencies load when a command runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    app = sub.add_parser("app", help="the annotation web app: load a study, serve it, export its data",
                         description=__doc__.split("\n\n")[0])
    cmds = app.add_subparsers(dest="app_command", required=True)

    def db_arg(p: argparse.ArgumentParser) -> None:
        p.add_argument("--db", default=None,
                       help="database URL (default $MODPREFS_APP_DB or sqlite:///study.db)")

    ld = cmds.add_parser("load", help="load assignments, stimuli, conversations and audio into the database")
    db_arg(ld)
    ld.add_argument("--results", type=Path, default=Path("results"),
                    help="the workflow's results folder (default locations of every input)")
    ld.add_argument("--assignments", type=Path)
    ld.add_argument("--stimuli", type=Path)
    ld.add_argument("--conversations", type=Path, help="conversations.parquet (or a CSV/parquet keyed by prompt_id)")
    ld.add_argument("--prompts", type=Path, help="prompts.csv: prompt_id -> conversation_id")
    ld.add_argument("--manifest", type=Path, help="audio manifest.csv (clip_id, path)")
    ld.add_argument("--attention-check", type=Path, default=REPO / "resources/attention_check.json")
    ld.add_argument("--base-dir", type=Path, help="resolve relative audio paths against this (default: results/..)")
    ld.add_argument("--completion-code", help="code shown on completion (default: random)")
    ld.add_argument("--screenout-code", default="", help="code for screened-out participants (Prolific)")
    ld.add_argument("--attention-fail-code", default="", help="code for attention-check failures (Prolific)")
    ld.add_argument("--title", default=None, help="study title shown on every page")
    ld.add_argument("--replace", action="store_true", help="replace a study already in the database")
    ld.add_argument("--force", action="store_true", help="with --replace: also delete collected data")
    ld.add_argument("--summary", type=Path, default=None, help="write the loaded counts as JSON here")

    sv = cmds.add_parser("serve", help="run the participant site and the admin export")
    db_arg(sv)
    sv.add_argument("--host", default="127.0.0.1")
    sv.add_argument("--port", type=int, default=8000)
    sv.add_argument("--abandon-minutes", type=float, default=None,
                    help="a slot holder silent this long is abandoned; the slot is reissued (default 30)")
    sv.add_argument("--entry", choices=["any", "prolific", "invite"], default=None,
                    help="who may enter at /start: anyone, only with PROLIFIC_PID, or nobody (invitations only)")
    sv.add_argument("--completion-code", default=None)
    sv.add_argument("--workers", type=int, default=1, help="uvicorn worker processes (PostgreSQL only)")
    sv.add_argument("--root-path", default="", help="ASGI root_path behind a reverse proxy")
    sv.add_argument("--log-level", default="info")
    sv.add_argument("--keep-alive", type=int, default=30, help="seconds an idle HTTP connection is kept open")

    iv = cmds.add_parser("invite", help="create personal invitation links")
    db_arg(iv)
    iv.add_argument("-n", type=int, required=True)
    iv.add_argument("--base-url", default="http://127.0.0.1:8000")

    ex = cmds.add_parser("export", help="write ratings.csv, trials.csv, participants.csv (+ sessions, events)")
    db_arg(ex)
    ex.add_argument("--out", type=Path, required=True)
    ex.add_argument("--validate", type=Path, default=None,
                    help="stimuli.csv: validate the export with the workflow's ingest checks")

    st = cmds.add_parser("status", help="counts of participants by state and slots by status")
    db_arg(st)
    return app


def run(args: argparse.Namespace) -> int:
    from modprefs.app.db import Database, default_url

    url = args.db or default_url()
    cmd = args.app_command
    if cmd == "load":
        from modprefs.app.loader import StudyFiles, StudyLoadError, load_study

        files = StudyFiles.from_results(args.results, args.attention_check, args.base_dir)
        for name in ("assignments", "stimuli", "conversations", "prompts", "manifest"):
            if getattr(args, name) is not None:
                setattr(files, name, getattr(args, name))
        meta = {"screenout_code": args.screenout_code, "attention_fail_code": args.attention_fail_code}
        if args.completion_code:
            meta["completion_code"] = args.completion_code
        if args.title:
            meta["study_title"] = args.title
        db = Database(url)
        try:
            counts = load_study(db, files, replace=args.replace, force=args.force, meta=meta)
        except StudyLoadError as exc:
            print(exc, file=sys.stderr)
            return 2
        print(f"loaded into {db.redacted_url()}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
        if args.summary is not None:
            args.summary.parent.mkdir(parents=True, exist_ok=True)
            args.summary.write_text(json.dumps({"db": db.redacted_url(), **counts}, indent=2) + "\n")
        return 0
    if cmd == "serve":
        import uvicorn

        overrides = {k: v for k, v in {"abandon_minutes": args.abandon_minutes, "entry": args.entry,
                                       "completion_code": args.completion_code}.items() if v is not None}
        if args.workers > 1:
            os.environ["MODPREFS_APP_DB"] = url
            os.environ["MODPREFS_APP_SETTINGS"] = json.dumps(overrides)
            uvicorn.run("modprefs.app.server:app_from_env", factory=True, host=args.host, port=args.port,
                        workers=args.workers, root_path=args.root_path, log_level=args.log_level,
                        proxy_headers=True, timeout_keep_alive=args.keep_alive)
            return 0
        from modprefs.app.server import create_app

        app = create_app(url, settings_overrides=overrides)
        print(f"serving {Database(url).redacted_url()} on http://{args.host}:{args.port}/", flush=True)
        uvicorn.run(app, host=args.host, port=args.port, root_path=args.root_path, log_level=args.log_level,
                    proxy_headers=True, timeout_keep_alive=args.keep_alive)
        return 0
    if cmd == "invite":
        from modprefs.app.service import invite

        db = Database(url)
        db.create_all()
        for token in invite(db, args.n):
            print(f"{args.base_url.rstrip('/')}/p/{token}")
        return 0
    if cmd == "export":
        from modprefs.app.export import export_dir

        db = Database(url)
        counts = export_dir(db, args.out)
        print(f"wrote {args.out}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
        if args.validate is not None:
            import pandas as pd

            from modprefs.ratings.ingest import RatingsValidationError, validate_ratings_dir

            try:
                validate_ratings_dir(args.out, pd.read_csv(args.validate, dtype={"prompt_id": str, "clip_id": str}))
            except RatingsValidationError as exc:
                print(exc, file=sys.stderr)
                return 2
            print("the export passes the ingest validation")
        return 0
    if cmd == "status":
        from modprefs.app.service import status_counts

        print(json.dumps(status_counts(Database(url)), indent=2))
        return 0
    raise SystemExit(f"unknown app command {cmd!r}")

"""``modprefs app ...`` run: load, serve, invite, export and status from their parsed options
(:mod:`modprefs.app.cli` declares the options). Only the standard library is imported at module level: the
server's dependencies load when a command runs.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from modprefs.scale import RatingScale


def _errors() -> tuple[type[Exception], ...]:
    """The expected errors of the app commands (printed without a traceback)."""
    from modprefs.errors import UserInputError
    from modprefs.ratings.ingest import RatingsValidationError

    return AppCliError, UserInputError, RatingsValidationError


class AppCliError(Exception):
    """A bad argument combination or environment of an app command (the message says which)."""


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

"""The ASGI app (Starlette): participant pages, event log, audio, admin export.

Routes (``{token}`` is the participant's personal, unguessable link)::

    GET /start?PROLIFIC_PID=&STUDY_ID=&SESSION_ID=
                                        entry: a new session (or the Prolific id's own) -> 303
    GET /p/{token}                      the current step: consent, demographics, trial, difficulty, end
    POST /p/{token}/consent             form: csrf, agree
    POST /p/{token}/demographics        form: csrf + the §3.2.1 questionnaire
    POST /p/{token}/headphones          form: csrf, q0..q5 (the headphone screening's answers)
    GET /p/{token}/headphones/{i}.wav   the screening's sounds (calibration or question 0..5)
    POST /p/{token}/events              JSON {trial, events: [...]}, header X-CSRF-Token; answers what became of each
                                        event (stored, duplicate, conflict, refused)
    POST /p/{token}/leave               JSON {csrf, tab} (the pagehide beacon): the slot is released after the leave
                                        grace unless the participant (or another open tab) comes back
    POST /p/{token}/ping                JSON {csrf, tab, claim}: a page's claim of the session for its tab on load (the
                                        last page opened wins) and its heartbeat while it is open
    POST /p/{token}/problem, GET        JSON {csrf, tab, trial, what: media, detail}: a clip that did not load after its
                                        retries (an incident); the GET is the problem page
    POST /p/{token}/trial/{n}           form: csrf, rating_A/B, audio_quality_A/B, preference, ...
    POST /p/{token}/difficulty          form: csrf, difficulty 1..5
    GET /p/{token}/audio/{clip}.wav     the current trial's clips only; HTTP Range (206/416)
    GET /admin, /admin/export.zip, /admin/export/{table}.csv, /admin/status.json, /admin/live.json,
    /admin/responses, /admin/participants.csv, /admin/clips.csv, /admin/prolific/{approve,reject}.txt,
    POST /admin/intake                  need the admin secret (env var, >= 16 characters): Authorization: Bearer S or
                                        HTTP Basic with password S; failed logins throttled per client IP

Security: state-changing requests carry the participant's CSRF token (a secret that is only in the
participant's pages, never in a URL) and are refused (403) without it; request bodies are limited to
:data:`~modprefs.app.middleware.MAX_BODY` bytes (413), text fields to fixed lengths; templates escape every value
(Jinja autoescape) and the Content-Security-Policy allows scripts from this site only (no inline
script), so submitted text is never executed; ``Referrer-Policy: no-referrer`` keeps tokens out of
other sites' logs; participant pages are ``no-store``. ``/start`` and every ``/p/...`` request are
rate-limited per client IP and per Prolific id (``/start``) or session token (``/p/...``, one per
Prolific id); beyond a limit the answer is 429 with ``Retry-After`` (:mod:`modprefs.app.ratelimit`).

Behind a reverse proxy under a prefix (``serve --root-path /study``, the ASGI ``root_path``) every URL
the app writes starts with the prefix: pages, stylesheet and script, form actions, audio, the page
script's event URL (from the page data), redirects, the ``next`` of a JSON submission
(:func:`~modprefs.app.pages.app_url`). They are paths, not absolute URLs, so the browser resolves them
against the proxy's address. The proxy may strip the prefix or pass it on
(:class:`~modprefs.app.middleware.RootPathMiddleware`); the rules by path (no-store, rate limits) read the path
inside the app (:func:`~modprefs.app.middleware.route_path`). The middleware is in :mod:`modprefs.app.middleware`,
the participant pages in :mod:`modprefs.app.pages`; this module assembles the app and holds the admin pages.
"""

from __future__ import annotations

import base64
import hmac
import json
import os
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from modprefs.app import dashboard, service
from modprefs.app.db import open_database
from modprefs.app.live_runner import live_view
from modprefs.app.middleware import (
    MAX_BODY,
    BodyTooLarge,
    LimitsMiddleware,
    RateLimitMiddleware,
    RootPathMiddleware,
    SlashMiddleware,
)
from modprefs.app.pages import ParticipantPages, app_url, check_fetch_site, field, read_form
from modprefs.app.service import AppError, Forbidden, SettingsError, TooLarge

HERE = Path(__file__).resolve().parent
ADMIN_SECRET_ENV = "MODPREFS_ADMIN_SECRET"
ADMIN_SECRET_MIN = 16  # characters: a shorter admin secret is refused (serve does not start)
ADMIN_FAIL_LIMIT, ADMIN_FAIL_WINDOW_S = 5, 300.0  # failed admin logins per client IP: 5, then 1 a minute


def _env() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(HERE / "templates")),
        autoescape=select_autoescape(default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["fmt3"] = fmt3
    return env


def fmt3(value: Any) -> str:
    """A statistic as the dashboard shows it: a whole number as such, another number to 3 decimals, none as a dash."""
    if value is None or (isinstance(value, float) and value != value):
        return "–"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.3f}"


def create_app(
    db_url: str | None = None,
    *,
    admin_secret_env: str = ADMIN_SECRET_ENV,
    settings_overrides: dict[str, Any] | None = None,
    max_body: int = MAX_BODY,
) -> Any:
    """The ASGI application for the study in ``db_url`` (loaded with ``modprefs app load``).

    Raises :class:`modprefs.errors.UserInputError` (before serving anything) when the database holds no
    loaded study or a setting is invalid.
    """
    check_admin_secret(os.environ.get(admin_secret_env, ""), admin_secret_env)
    db = open_database(db_url, "serve")
    overrides = dict(settings_overrides or {})
    templates = _env()
    site = _Site(db, templates, service.read_settings(db, **overrides), admin_secret_env)
    routes = [
        *_participant_routes(site),
        *_admin_routes(site),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]

    async def too_large(request: Request, exc: Exception) -> Response:
        return PlainTextResponse("Request too large.", status_code=413)

    app = Starlette(routes=routes, exception_handlers={TooLarge: too_large, BodyTooLarge: too_large})
    app.router.redirect_slashes = False  # Starlette's are absolute URLs (the proxy's port lost): SlashMiddleware
    app.state.db = db
    inner = SlashMiddleware(RateLimitMiddleware(app, site.settings))
    return RootPathMiddleware(LimitsMiddleware(inner, max_body=max_body))


def check_admin_secret(secret: str, env: str = ADMIN_SECRET_ENV) -> None:
    """Refuse an admin secret under :data:`ADMIN_SECRET_MIN` characters (unset: the admin pages are disabled)."""
    if secret and len(secret) < ADMIN_SECRET_MIN:
        raise SettingsError(
            f"${env} is {len(secret)} characters long: the admin secret needs at least {ADMIN_SECRET_MIN} "
            "(e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(24))'), or unset it to disable the admin "
            "pages"
        )


def _participant_routes(site: _Site) -> list[Route]:
    return [
        Route("/", site.index),
        Route("/healthz", site.health),
        Route("/start", site.start),
        Route("/p/{token}", site.page),
        Route("/p/{token}/consent", site.consent, methods=["POST"]),
        Route("/p/{token}/demographics", site.demographics, methods=["POST"]),
        Route("/p/{token}/events", site.events, methods=["POST"]),
        Route("/p/{token}/leave", site.leave, methods=["POST"]),
        Route("/p/{token}/ping", site.ping, methods=["POST"]),
        Route("/p/{token}/problem", site.problem_post, methods=["POST"]),
        Route("/p/{token}/problem", site.problem_page, methods=["GET"]),
        Route("/p/{token}/trial/{n}", site.trial, methods=["POST"]),  # n: -1 (the practice trial), 0, 1, ...
        Route("/p/{token}/difficulty", site.difficulty, methods=["POST"]),
        Route("/p/{token}/headphones", site.headphones_post, methods=["POST"]),
        Route("/p/{token}/headphones/{which}.wav", site.headphones_wav),
        Route("/p/{token}/calibration", site.calibration_post, methods=["POST"]),
        Route("/p/{token}/calibration.wav", site.calibration_wav),
        Route("/p/{token}/instructions", site.instructions_post, methods=["POST"]),
        Route("/p/{token}/audio/{clip}.wav", site.audio),
    ]


def _admin_routes(site: _Site) -> list[Route]:
    return [
        Route("/admin", site.admin_dashboard),
        Route("/admin/export.zip", site.admin_export_zip),
        Route("/admin/export/{table}.csv", site.admin_export_table),
        Route("/admin/status.json", site.admin_status),
        Route("/admin/live.json", site.admin_live),
        Route("/admin/responses", site.admin_responses),
        Route("/admin/participants.csv", site.admin_participants_csv),
        Route("/admin/clips.csv", site.admin_clips_csv),
        Route("/admin/prolific/{decision}.txt", site.admin_prolific_list),
        Route("/admin/intake", site.admin_intake, methods=["POST"]),
    ]


class _Site(ParticipantPages):
    """Every handler; the admin routes need the admin secret (env var ``admin_secret_env``, >= 16 characters).

    Failed admin logins (a wrong secret) are throttled per client IP: :data:`ADMIN_FAIL_LIMIT` in a burst, then one
    per ``ADMIN_FAIL_WINDOW_S / ADMIN_FAIL_LIMIT`` seconds; beyond, every admin request of that IP is answered 429
    with ``Retry-After`` (the right secret too, until the wait is over)."""

    def admin_ok(self, request: Request) -> Response | None:
        secret = os.environ.get(self.admin_secret_env, "")
        if not secret or len(secret) < ADMIN_SECRET_MIN:
            why = "set" if not secret else f"its value is shorter than {ADMIN_SECRET_MIN} characters; set"
            return PlainTextResponse(f"Admin access is disabled: {why} {self.admin_secret_env}.", status_code=403)
        ip = request.client.host if request.client else "unknown"
        key = f"admin-fail:{ip}"
        if wait := self.admin_failures.wait(key, ADMIN_FAIL_LIMIT, ADMIN_FAIL_WINDOW_S):
            msg = f"Too many failed logins. Please wait {wait} seconds and try again."
            return PlainTextResponse(msg, status_code=429, headers={"Retry-After": str(wait)})
        supplied = _admin_credential(request.headers.get("authorization", ""))
        if not supplied or not hmac.compare_digest(supplied.encode(), secret.encode()):
            if supplied:  # a wrong secret (a request without one is a browser's first try: not a failure)
                self.admin_failures.hit(key, ADMIN_FAIL_LIMIT, ADMIN_FAIL_WINDOW_S)
            return PlainTextResponse(
                "Admin secret required.", status_code=401, headers={"WWW-Authenticate": 'Basic realm="modprefs admin"'}
            )
        return None

    def admin_csrf(self) -> str:
        """The dashboard forms' CSRF token: derived from the admin secret (a cross-site form cannot know it)."""
        secret = os.environ.get(self.admin_secret_env, "")
        return hmac.new(secret.encode(), b"modprefs-admin-form", "sha256").hexdigest()

    async def admin_export_zip(self, request: Request) -> Response:
        if (denied := self.admin_ok(request)) is not None:
            return denied
        from modprefs.app.export import export_zip

        data = await run_in_threadpool(export_zip, self.db)
        return Response(
            data,
            media_type="application/zip",
            headers={"Content-Disposition": 'attachment; filename="modprefs-export.zip"'},
        )

    async def admin_export_table(self, request: Request) -> Response:
        if (denied := self.admin_ok(request)) is not None:
            return denied
        from modprefs.app.export import COLUMNS, export_csv_texts

        table = request.path_params["table"]
        if table not in COLUMNS:
            return PlainTextResponse("Unknown table.", status_code=404)
        texts = await run_in_threadpool(export_csv_texts, self.db)
        return Response(texts[table], media_type="text/csv; charset=utf-8")

    async def admin_status(self, request: Request) -> Response:
        if (denied := self.admin_ok(request)) is not None:
            return denied
        return JSONResponse(await run_in_threadpool(service.status_counts, self.db, self.settings()))

    async def admin_live(self, request: Request) -> Response:
        """The live statistics and the stopping rule (:func:`modprefs.app.live_runner.live_view`)."""
        if (denied := self.admin_ok(request)) is not None:
            return denied
        return JSONResponse(await run_in_threadpool(live_view, self.db, self.live.busy))

    async def admin_responses(self, request: Request) -> Response:
        if (denied := self.admin_ok(request)) is not None:
            return denied
        rows = await run_in_threadpool(dashboard.latest_responses, self.db, 500)
        counts = await run_in_threadpool(service.status_counts, self.db)
        return self.render(request, "admin.html", trials=rows, counts=counts, page_title="Latest responses")

    async def admin_dashboard(self, request: Request) -> Response:
        if (denied := self.admin_ok(request)) is not None:
            return denied
        info = await run_in_threadpool(dashboard.dashboard, self.db, self.settings())
        info["live"] = await run_in_threadpool(live_view, self.db, self.live.busy)
        data = {"page": "admin", "refresh_s": dashboard.REFRESH_S, "url": app_url(request, "/admin")}
        return self.render(
            request,
            "admin_dashboard.html",
            d=info,
            refresh_s=dashboard.REFRESH_S,
            csrf=self.admin_csrf(),
            admin_data=data,
            page_title="Study dashboard",
        )

    async def admin_participants_csv(self, request: Request) -> Response:
        if (denied := self.admin_ok(request)) is not None:
            return denied
        rows = await run_in_threadpool(dashboard.participant_rows, self.db, self.settings())
        return Response(dashboard.participants_csv(rows), media_type="text/csv; charset=utf-8")

    async def admin_clips_csv(self, request: Request) -> Response:
        if (denied := self.admin_ok(request)) is not None:
            return denied
        from modprefs.app.export import to_csv

        rows = await run_in_threadpool(dashboard.clip_rows, self.db)
        columns = ["clip_id", "text_rated", "text_planned", "audio_rated", "audio_planned"]
        return Response(to_csv(rows, columns), media_type="text/csv; charset=utf-8")

    async def admin_prolific_list(self, request: Request) -> Response:
        """The Prolific ids to approve or to reject, one per line (Prolific's bulk approve/reject takes them)."""
        if (denied := self.admin_ok(request)) is not None:
            return denied
        decision = request.path_params["decision"]
        if decision not in ("approve", "reject"):
            return PlainTextResponse("Unknown list: approve or reject.", status_code=404)
        rows = await run_in_threadpool(dashboard.participant_rows, self.db, self.settings())
        ids = dashboard.prolific_lists(rows)[decision]
        return PlainTextResponse("".join(f"{i}\n" for i in ids))

    async def admin_intake(self, request: Request) -> Response:
        """The dashboard's form: pause, close or reopen the intake of new participants."""
        if (denied := self.admin_ok(request)) is not None:
            return denied
        try:
            check_fetch_site(request)
            form = await read_form(request)
            if not hmac.compare_digest(str(field(form, "csrf") or "").encode(), self.admin_csrf().encode()):
                raise Forbidden("The form expired or did not come from this site (CSRF check failed). Please reload.")
            await run_in_threadpool(service.set_intake, self.db, str(field(form, "intake") or ""))
        except AppError as exc:
            return PlainTextResponse(exc.message, status_code=exc.status)
        return RedirectResponse(app_url(request, "/admin"), status_code=303)


def _admin_credential(auth: str) -> str:
    """The secret an ``Authorization`` header carries (``Bearer S`` or HTTP Basic with password S), or ''."""
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    if auth.lower().startswith("basic "):
        try:
            return base64.b64decode(auth[6:].strip()).decode().split(":", 1)[1]
        except (ValueError, IndexError, UnicodeDecodeError):
            return ""
    return ""


def app_from_env() -> Any:
    """Factory for ``uvicorn --factory modprefs.app.server:app_from_env`` (several workers on PostgreSQL)."""
    overrides = json.loads(os.environ.get("MODPREFS_APP_SETTINGS", "{}"))
    return create_app(
        os.environ.get("MODPREFS_APP_DB"),
        settings_overrides=overrides,
        admin_secret_env=os.environ.get("MODPREFS_ADMIN_SECRET_ENV", ADMIN_SECRET_ENV),
    )

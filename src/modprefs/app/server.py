"""The ASGI app (Starlette): participant pages, event log, audio, admin export.

Routes (``{token}`` is the participant's personal, unguessable link):

=========================================  ========================================================
``GET /start?PROLIFIC_PID=&STUDY_ID=&SESSION_ID=``  entry: a new session (or the Prolific id's own) -> 303
``GET /p/{token}``                         the current step: consent, demographics, trial, difficulty, end
``POST /p/{token}/consent``                form: csrf, agree
``POST /p/{token}/demographics``           form: csrf + the §3.2.1 questionnaire
``POST /p/{token}/headphones``             form: csrf, q0..q5 (the headphone screening's answers)
``GET /p/{token}/headphones/{i}.wav``      the screening's sounds (``calibration`` or question 0..5)
``POST /p/{token}/events``                 JSON {trial, events: [...]}, header X-CSRF-Token; answers
                                           what became of each event (stored, duplicate, conflict, refused)
``POST /p/{token}/leave``                  JSON {csrf, tab} (the pagehide beacon): the slot is released after
                                           the leave grace unless the participant (or another open tab) comes back
``POST /p/{token}/ping``                   JSON {csrf, tab, claim}: a page's claim of the session for its tab on
                                           load (the last page opened wins) and its heartbeat while it is open
``POST /p/{token}/problem``, ``GET``       JSON {csrf, tab, trial, what: media, detail}: a clip that did not load
                                           after its retries (an incident); the GET is the problem page
``POST /p/{token}/trial/{n}``              form: csrf, rating_A/B, audio_quality_A/B, preference, ...
``POST /p/{token}/difficulty``             form: csrf, difficulty 1..5
``GET /p/{token}/audio/{clip}.wav``        the current trial's clips only; HTTP Range (206/416)
``GET /admin``, ``/admin/export.zip``, ``/admin/export/{table}.csv``, ``/admin/status.json``, ``/admin/live.json``,
``/admin/responses``, ``/admin/participants.csv``, ``/admin/clips.csv``, ``/admin/prolific/{approve,reject}.txt``,
``POST /admin/intake``                     need the admin secret (env var, >= 16 characters):
                                           ``Authorization: Bearer S`` or HTTP Basic with password S; failed
                                           logins throttled per client IP
=========================================  ========================================================

Security: state-changing requests carry the participant's CSRF token (a secret that is only in the
participant's pages, never in a URL) and are refused (403) without it; request bodies are limited to
:data:`MAX_BODY` bytes (413), text fields to fixed lengths; templates escape every value
(Jinja autoescape) and the Content-Security-Policy allows scripts from this site only (no inline
script), so submitted text is never executed; ``Referrer-Policy: no-referrer`` keeps tokens out of
other sites' logs; participant pages are ``no-store``. ``/start`` and every ``/p/...`` request are
rate-limited per client IP and per Prolific id (``/start``) or session token (``/p/...``, one per
Prolific id); beyond a limit the answer is 429 with ``Retry-After`` (:mod:`.ratelimit`).

Behind a reverse proxy under a prefix (``serve --root-path /study``, the ASGI ``root_path``) every URL
the app writes starts with the prefix: pages, stylesheet and script, form actions, audio, the page
script's event URL (from the page data), redirects, the ``next`` of a JSON submission
(:func:`app_url`). They are paths, not absolute URLs, so the browser resolves them against the proxy's
address. The proxy may strip the prefix or pass it on (:class:`RootPathMiddleware`); the rules by path
(no-store, rate limits) read the path inside the app (:func:`route_path`).
"""

from __future__ import annotations

import base64
import hmac
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, QueryParams, UploadFile
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from modprefs.app import dashboard, service, sessions, trials
from modprefs.app import events as event_log
from modprefs.app.db import open_database
from modprefs.app.live_runner import LiveRunner, live_view
from modprefs.app.ratelimit import RateLimiter
from modprefs.app.service import AppError, Expired, Forbidden, Invalid, Settings, SettingsError, Superseded, TooLarge
from modprefs.app.texts import stored_html
from modprefs.scale import RatingScale

HERE = Path(__file__).resolve().parent
MAX_BODY = 64 * 1024
ADMIN_SECRET_ENV = "MODPREFS_ADMIN_SECRET"
ADMIN_SECRET_MIN = 16  # characters: a shorter admin secret is refused (serve does not start)
ADMIN_FAIL_LIMIT, ADMIN_FAIL_WINDOW_S = 5, 300.0  # failed admin logins per client IP: 5, then 1 a minute
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; media-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'"
)


class _BodyTooLarge(Exception):
    pass


def root_path(scope: Mapping[str, Any]) -> str:
    """The path prefix the app is served under (uvicorn's ``--root-path``; '' at the root), without a final /."""
    return str(scope.get("root_path") or "").rstrip("/")


def route_path(scope: Mapping[str, Any]) -> str:
    """The request's path inside the app (``/p/...``): the ASGI path less the root path (as Starlette routes)."""
    path, root = scope.get("path", ""), root_path(scope)
    if root and (path == root or path.startswith(root + "/")):
        return path[len(root) :] or "/"
    return path


class RootPathMiddleware:
    """Serve the app under its root path whether the proxy strips the prefix or passes it on.

    Behind ``--root-path /study`` uvicorn prefixes every request's path with ``/study``; a proxy that strips
    the prefix (nginx ``proxy_pass http://app/;``) sends ``/p/...`` and the app sees ``/study/p/...``, a proxy
    that passes it on sends ``/study/p/...`` and the app would see ``/study/study/p/...``: the doubled prefix
    is taken off. (The CLI refuses a root path that could be mistaken for a route of the app: ``/p``, ...)
    """

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        root = root_path(scope)
        if scope["type"] == "http" and root:
            inner = route_path(scope)
            if inner == root or inner.startswith(root + "/"):
                path = root + (inner[len(root) :] or "/")
                raw = scope.get("raw_path")
                scope = {**scope, "path": path}
                if raw is not None:
                    scope["raw_path"] = raw[len(root.encode()) :] if raw.startswith(root.encode() * 2) else raw
        await self.app(scope, receive, send)


class LimitsMiddleware:
    """Refuse bodies over ``max_body`` bytes (413) and add the security headers to every response."""

    def __init__(self, app: Any, max_body: int = MAX_BODY):
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            await PlainTextResponse("Request too large.", status_code=413)(scope, receive, send)
            return
        seen = 0
        started = False

        async def limited_receive() -> dict:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise _BodyTooLarge()
            return message

        async def send_with_headers(message: dict) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                extra = [
                    (b"content-security-policy", CSP.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"x-frame-options", b"DENY"),
                ]
                path = route_path(scope)
                if path.startswith("/p/") or path.startswith("/admin") or path.startswith("/start"):
                    if not path.endswith(".wav"):
                        extra.append((b"cache-control", b"no-store"))
                message = {**message, "headers": list(message.get("headers", [])) + extra}
            await send(message)

        try:
            await self.app(scope, limited_receive, send_with_headers)
        except _BodyTooLarge:
            if not started:
                await PlainTextResponse("Request too large.", status_code=413)(scope, receive, send)


class RateLimitMiddleware:
    """429 + Retry-After beyond the settings' limits: ``/start`` per client IP and per PROLIFIC_PID,
    ``/p/...`` (pages, events, audio, submissions) per client IP and per session token."""

    def __init__(self, app: Any, settings: Any, limiter: RateLimiter | None = None):
        self.app = app
        self.settings = settings  # () -> Settings
        self.limiter = limiter or RateLimiter()

    def keys(self, scope: dict) -> list[tuple[str, int]]:
        st: Settings = self.settings()
        path = route_path(scope)
        ip = (scope.get("client") or ("unknown", 0))[0]
        if path == "/start":
            pid = QueryParams(scope.get("query_string", b"").decode("latin-1")).get("PROLIFIC_PID")
            out = [(f"start-ip:{ip}", st.rate_start_ip)]
            if pid:
                out.append((f"start-pid:{pid[:64]}", st.rate_start_pid))
            return out
        if path.startswith("/p/"):
            token = path.split("/")[2][:64]
            return [(f"session-ip:{ip}", st.rate_session_ip), (f"session-token:{token}", st.rate_session_token)]
        return []

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            window = self.settings().rate_window_s
            wait = max([self.limiter.hit(key, limit, window) for key, limit in self.keys(scope)], default=0)
            if wait:
                msg = f"Too many requests. Please wait {wait} seconds and try again."
                headers = {"Retry-After": str(wait)}
                if route_path(scope).endswith("/events"):
                    resp: Response = JSONResponse({"error": msg, "retry_after": wait}, 429, headers=headers)
                else:
                    resp = PlainTextResponse(msg, 429, headers=headers)
                await resp(scope, receive, send)
                return
        await self.app(scope, receive, send)


def slider_scale(scale: RatingScale, points: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """The trial page's rating controls for the study's rating scale: min, max, step, the (hidden) start
    value at the middle step, and the end labels (the paper's: 1, 100, 1, 50, "Terrible", "Perfect"); ``points``:
    a short scale's labelled category points (:func:`service.scale_points`), shown instead of a slider."""
    start = scale.min + (scale.n_points - 1) // 2 * scale.step
    return {
        "min": f"{scale.min:g}",
        "max": f"{scale.max:g}",
        "step": f"{scale.step:g}",
        "start": f"{start:g}",
        "label_min": scale.label_min,
        "label_max": scale.label_max,
        "points": points,
    }


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

    app = Starlette(routes=routes, exception_handlers={TooLarge: too_large, _BodyTooLarge: too_large})
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


class SlashMiddleware:
    """``/p/TOKEN/`` -> 308 to ``/p/TOKEN`` as a path (the prefix kept, the query kept): a relative redirect, so
    the browser keeps the host, port and scheme it used (Starlette's own slash redirects are absolute URLs built
    from the Host header, which drops a proxy's port)."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        path = route_path(scope)
        if scope["type"] == "http" and len(path) > 1 and path.endswith("/"):
            query = scope.get("query_string", b"").decode("latin-1")
            target = root_path(scope) + path.rstrip("/") + (f"?{query}" if query else "")
            await RedirectResponse(target or "/", status_code=308)(scope, receive, send)
            return
        await self.app(scope, receive, send)


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


async def _read_form(request: Request) -> FormData:
    try:
        return await request.form(max_files=0, max_fields=60, max_part_size=MAX_BODY)
    except _BodyTooLarge:
        raise
    except Exception as exc:  # malformed body
        raise Invalid(f"Malformed form data ({type(exc).__name__}).") from None


def _check_fetch_site(request: Request) -> None:
    if request.headers.get("sec-fetch-site") == "cross-site":
        raise Forbidden("Cross-site requests are not accepted.")


def app_url(request: Request, path: str) -> str:
    """``path`` (``/p/...``, ``/static/...``) as the browser must ask for it: under the root path.

    A path, not an absolute URL: the browser resolves it against the address it used (the proxy's),
    whatever Host and scheme reached the app."""
    return root_path(request.scope) + path


def _redirect_home(request: Request, token: str) -> Response:
    return RedirectResponse(app_url(request, f"/p/{token}"), status_code=303)


def _field(form: FormData, name: str) -> str | None:
    """A text field of ``form`` (``_read_form`` accepts no file parts, so a value is never an UploadFile)."""
    value = form.get(name)
    assert not isinstance(value, UploadFile)
    return value


def _string_fields(form: FormData) -> dict[str, str]:
    return {k: str(v) for k, v in form.items() if isinstance(v, str)}


class _Pages:
    """What every handler shares: the database, the templates, the settings and the admin secret's env var."""

    def __init__(self, db: Any, templates: Environment, settings: Settings, admin_secret_env: str):
        self.db = db
        self.templates = templates
        self.state: dict[str, Any] = {"settings": settings}
        self.admin_secret_env = admin_secret_env
        self.admin_failures = RateLimiter()  # failed admin logins per client IP
        self.live = LiveRunner(db)  # the live statistics' background updates (poked after each stored task)

    def settings(self) -> Settings:
        return self.state["settings"]

    def render(self, request: Request, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        """The template ``name``; ``base`` (the root path) prefixes every URL it writes."""
        ctx.setdefault("study_title", self.settings().study_title)
        ctx["base"] = root_path(request.scope)
        return HTMLResponse(self.templates.get_template(name).render(**ctx), status_code=status)

    def error_page(self, exc: AppError, request: Request) -> Response:
        token = request.path_params.get("token")
        if request.url.path.endswith("/events") or request.headers.get("accept", "").startswith("application/json"):
            body: dict[str, Any] = {"error": exc.message}
            if isinstance(exc, Superseded):
                body["superseded"] = True
            return JSONResponse(body, status_code=exc.status)
        if isinstance(exc, sessions.AlreadyTakenPart):  # an end state of its own, not an error
            view = {"page": "ended", "reason": "already", "code": "", "return_url": None}
            return self.render(request, "ended.html", status=exc.status, v=view)
        if isinstance(exc, sessions.IntakeStopped):
            view = {"page": "ended", "reason": exc.context["intake"], "code": "", "return_url": None}
            return self.render(request, "ended.html", status=exc.status, v=view)
        if isinstance(exc, Superseded) and token:
            return self.render(
                request, "superseded.html", status=exc.status, message=exc.message, back=app_url(request, f"/p/{token}")
            )
        if isinstance(exc, Expired) and token:
            return _redirect_home(request, token)  # the end page says the session expired, with the lab's code
        back = app_url(request, f"/p/{token}") if token and exc.status != 404 else None  # e.g. a refused trial
        return self.render(
            request, "message.html", status=exc.status, title="Something went wrong", message=exc.message, back=back
        )

    def render_view(self, request: Request, view: dict[str, Any], status: int = 200, **extra: Any) -> Response:
        name = {
            "consent": "consent.html",
            "demographics": "demographics.html",
            "trial": "trial.html",
            "headphones": "headphones.html",
            "calibration": "calibration.html",
            "instructions": "instructions.html",
            "difficulty": "difficulty.html",
            "done": "done.html",
            "ended": "ended.html",
            "problem": "problem.html",
        }[view["page"]]
        data = {"page": view["page"], "state": view["state"], "csrf": view["csrf"], "token": view["token"]}
        if view["state"] in service.HOLDING:
            data["leave_url"] = app_url(request, f"/p/{view['token']}/leave")
        if view["state"] in ("consent", "demographics", *service.HOLDING, "difficulty") and view["page"] != "problem":
            # the page claims the session for its tab and sends a heartbeat while it is open (app.js)
            data.update(ping_url=app_url(request, f"/p/{view['token']}/ping"), heartbeat_s=self.settings().heartbeat_s)
        if view["page"] == "demographics" and extra.get("errors"):
            data["first_error"] = next((f for f in sessions.DEMOGRAPHIC_FIELDS if f in extra["errors"]), None)
        if view["page"] == "trial":
            data.update(
                trial=view["trial"],
                condition=view["condition"],
                heard=view["heard"],
                revealed=view["revealed"],
                reveal=view["reveal"],
                restore=view["restore"],
                events_url=app_url(request, f"/p/{view['token']}/events"),
                problem_url=app_url(request, f"/p/{view['token']}/problem"),
            )
        scale = slider_scale(self.settings().scale, self.settings().points)
        minutes = f"{self.settings().abandon_minutes:g}"
        if view["page"] in ("consent", "instructions", "done"):
            name_of = {"consent": "consent", "instructions": "instructions", "done": "debrief"}[view["page"]]
            extra["text_html"] = Markup(stored_html(self.settings().extra, name_of))
        return self.render(
            request,
            name,
            status=status,
            v=view,
            data=data,
            options=_OPTIONS,
            scale=scale,
            abandon_minutes=minutes,
            **extra,
        )


class _ParticipantPages(_Pages):
    """The participant routes: entry, the current step, the forms, the event log and the audio."""

    async def index(self, request: Request) -> Response:
        return self.render(
            request,
            "message.html",
            title=self.settings().study_title,
            message="This is a research study. Please open the personal link you were given.",
        )

    async def health(self, request: Request) -> Response:
        return JSONResponse({"ok": True})

    async def start(self, request: Request) -> Response:
        q = request.query_params
        try:
            token = await run_in_threadpool(
                sessions.enter,
                self.db,
                self.settings(),
                prolific_pid=q.get("PROLIFIC_PID"),
                study_id=q.get("STUDY_ID"),
                session_id=q.get("SESSION_ID"),
                user_agent=request.headers.get("user-agent"),
            )
        except AppError as exc:
            return self.error_page(exc, request)
        return _redirect_home(request, token)

    async def refused_form(self, exc: AppError, request: Request, token: str, form: str) -> Response:
        """The error page of a refused page form, the refusal logged as an incident (``submission_refused``)."""
        await run_in_threadpool(trials.log_refused_form, self.db, token, form, exc.message)
        return self.error_page(exc, request)

    async def page(self, request: Request) -> Response:
        token = request.path_params["token"]
        try:
            view = await run_in_threadpool(sessions.page_state, self.db, self.settings(), token)
        except AppError as exc:
            return self.error_page(exc, request)
        return self.render_view(request, view)

    async def consent(self, request: Request) -> Response:
        token = request.path_params["token"]
        try:
            _check_fetch_site(request)
            form = await _read_form(request)
            await run_in_threadpool(
                sessions.give_consent, self.db, token, _field(form, "csrf"), form.get("agree") == "yes"
            )
        except AppError as exc:
            return await self.refused_form(exc, request, token, "consent")
        return _redirect_home(request, token)

    async def demographics(self, request: Request) -> Response:
        token = request.path_params["token"]
        try:
            _check_fetch_site(request)
            form = await _read_form(request)
            fields = _string_fields(form)
            errors = await run_in_threadpool(
                sessions.submit_demographics, self.db, self.settings(), token, _field(form, "csrf"), fields
            )
            if errors:
                view = await run_in_threadpool(sessions.page_state, self.db, self.settings(), token)
                return self.render_view(request, view, status=422, errors=errors, values=fields)
        except AppError as exc:
            return await self.refused_form(exc, request, token, "demographics")
        return _redirect_home(request, token)

    async def events(self, request: Request) -> Response:
        token = request.path_params["token"]
        try:
            _check_fetch_site(request)
            try:
                body = json.loads(await request.body() or b"null")
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise Invalid("The body is not JSON.") from None
            if not isinstance(body, dict) or not isinstance(body.get("trial"), int):
                raise Invalid("Expected {trial, events}.")
            evs = event_log.parse_events(body.get("events", []), self.settings().scale)
            csrf = request.headers.get("x-csrf-token") or body.get("csrf")  # a beacon cannot set headers
            tab = service.clean_tab(body.get("tab"))
            result = await run_in_threadpool(
                event_log.record_events, self.db, self.settings(), token, csrf, body["trial"], evs, tab
            )
        except AppError as exc:
            return self.error_page(exc, request)
        return JSONResponse(result)

    async def _json_body(self, request: Request) -> dict[str, Any]:
        _check_fetch_site(request)
        try:
            body = json.loads(await request.body() or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise Invalid("The body is not JSON.") from None
        if not isinstance(body, dict):
            raise Invalid("Expected a JSON object.")
        return body

    async def ping(self, request: Request) -> Response:
        """An open page's heartbeat, and its claim of the session on load (JSON ``{csrf, tab, claim}``)."""
        token = request.path_params["token"]
        try:
            body = await self._json_body(request)
            tab = service.clean_tab(body.get("tab"))
            csrf = request.headers.get("x-csrf-token") or body.get("csrf")
            out = await run_in_threadpool(
                sessions.ping, self.db, self.settings(), token, csrf, tab, body.get("claim") is True
            )
        except AppError as exc:
            return JSONResponse({"error": exc.message}, status_code=exc.status)
        return JSONResponse(out)

    async def problem_post(self, request: Request) -> Response:
        """The page could not go on (a clip that failed to load after its retries): logged, then the problem page."""
        token = request.path_params["token"]
        try:
            body = await self._json_body(request)
            tab = service.clean_tab(body.get("tab"))
            csrf = request.headers.get("x-csrf-token") or body.get("csrf")
            what, detail = str(body.get("what", "")), str(body.get("detail", ""))
            await run_in_threadpool(sessions.report_problem, self.db, token, csrf, tab, body.get("trial"), what, detail)
        except AppError as exc:
            return JSONResponse({"error": exc.message}, status_code=exc.status)
        return JSONResponse({"next": app_url(request, f"/p/{token}/problem")})

    async def problem_page(self, request: Request) -> Response:
        token = request.path_params["token"]
        try:
            view = await run_in_threadpool(sessions.problem_view, self.db, self.settings(), token)
        except AppError as exc:
            return self.error_page(exc, request)
        return self.render_view(request, view)

    async def leave(self, request: Request) -> Response:
        """The page's ``pagehide`` beacon: the participant left (a JSON body ``{csrf, tab}``; a beacon sets no
        headers). The slot is released after the leave grace unless the participant (or another tab) comes back."""
        token = request.path_params["token"]
        try:
            body = await self._json_body(request)
            tab = service.clean_tab(body.get("tab"))
            await run_in_threadpool(sessions.leave, self.db, self.settings(), token, body.get("csrf"), tab)
        except AppError as exc:
            return JSONResponse({"error": exc.message}, status_code=exc.status)
        return Response(status_code=204)

    async def trial(self, request: Request) -> Response:
        token = request.path_params["token"]
        try:
            raw_n = str(request.path_params["n"])
            if not re.fullmatch(r"-?\d{1,6}", raw_n):
                raise service.NotFound("No such trial.")
            n = int(raw_n)
            _check_fetch_site(request)
            form = await _read_form(request)
            fields = _string_fields(form)
            outcome = await run_in_threadpool(
                trials.submit_trial, self.db, self.settings(), token, _field(form, "csrf"), n, fields
            )
        except AppError as exc:
            return self.error_page(exc, request)
        # the live statistics are poked after the response was sent; they update in a child process
        later = BackgroundTask(self.live.poke) if outcome != "duplicate" else None
        if request.headers.get("accept", "").startswith("application/json"):
            return JSONResponse({"outcome": outcome, "next": app_url(request, f"/p/{token}")}, background=later)
        response = _redirect_home(request, token)
        response.background = later
        return response

    async def headphones_post(self, request: Request) -> Response:
        token = request.path_params["token"]
        try:
            _check_fetch_site(request)
            form = await _read_form(request)
            fields = _string_fields(form)
            await run_in_threadpool(
                sessions.submit_headphones, self.db, self.settings(), token, _field(form, "csrf"), fields
            )
        except AppError as exc:
            return await self.refused_form(exc, request, token, "headphones")
        return _redirect_home(request, token)

    async def calibration_post(self, request: Request) -> Response:
        token = request.path_params["token"]
        try:
            _check_fetch_site(request)
            form = await _read_form(request)
            confirmed = form.get("confirm") == "yes"
            await run_in_threadpool(
                sessions.submit_calibration, self.db, self.settings(), token, _field(form, "csrf"), confirmed
            )
        except AppError as exc:
            return await self.refused_form(exc, request, token, "calibration")
        return _redirect_home(request, token)

    async def calibration_wav(self, request: Request) -> Response:
        token = request.path_params["token"]
        try:
            path, data = await run_in_threadpool(sessions.calibration_sound, self.db, token)
        except AppError as exc:
            return PlainTextResponse(exc.message, status_code=exc.status)
        if path is not None and os.path.isfile(path):
            return FileResponse(path, media_type="audio/wav", headers={"Cache-Control": "private, no-store"})
        if data is None:
            return PlainTextResponse("Audio not found.", status_code=404)
        return Response(data, media_type="audio/wav", headers={"Cache-Control": "private, no-store"})

    async def instructions_post(self, request: Request) -> Response:
        token = request.path_params["token"]
        try:
            _check_fetch_site(request)
            form = await _read_form(request)
            await run_in_threadpool(sessions.finish_instructions, self.db, self.settings(), token, _field(form, "csrf"))
        except AppError as exc:
            return await self.refused_form(exc, request, token, "instructions")
        return _redirect_home(request, token)

    async def headphones_wav(self, request: Request) -> Response:
        token, which = request.path_params["token"], request.path_params["which"]
        try:
            data = await run_in_threadpool(sessions.headphone_wav, self.db, self.settings(), token, which)
        except AppError as exc:
            return PlainTextResponse(exc.message, status_code=exc.status)
        return Response(data, media_type="audio/wav", headers={"Cache-Control": "private, no-store"})

    async def difficulty(self, request: Request) -> Response:
        token = request.path_params["token"]
        try:
            _check_fetch_site(request)
            form = await _read_form(request)
            await run_in_threadpool(
                sessions.submit_difficulty, self.db, token, _field(form, "csrf"), _field(form, "difficulty")
            )
        except AppError as exc:
            return await self.refused_form(exc, request, token, "difficulty")
        return _redirect_home(request, token)

    async def audio(self, request: Request) -> Response:
        token, clip = request.path_params["token"], request.path_params["clip"]
        try:
            path = await run_in_threadpool(trials.audio_file, self.db, token, clip)
        except AppError as exc:
            return PlainTextResponse(exc.message, status_code=exc.status)
        if not os.path.isfile(path):
            return PlainTextResponse("Audio not found.", status_code=404)
        # Starlette's FileResponse answers Range requests: 206 + Content-Range, 416 when unsatisfiable.
        return FileResponse(path, media_type="audio/wav", headers={"Cache-Control": "private, max-age=3600"})


class _Site(_ParticipantPages):
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
            _check_fetch_site(request)
            form = await _read_form(request)
            if not hmac.compare_digest(str(_field(form, "csrf") or "").encode(), self.admin_csrf().encode()):
                raise Forbidden("The form expired or did not come from this site (CSRF check failed). Please reload.")
            await run_in_threadpool(service.set_intake, self.db, str(_field(form, "intake") or ""))
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


_OPTIONS = {
    "genders": sessions.GENDERS,
    "races": sessions.RACES,
    "education": sessions.EDUCATION_LEVELS,
    "employment": sessions.EMPLOYMENT,
    "proficiency": sessions.ENGLISH_PROFICIENCY,
}


def app_from_env() -> Any:
    """Factory for ``uvicorn --factory modprefs.app.server:app_from_env`` (several workers on PostgreSQL)."""
    overrides = json.loads(os.environ.get("MODPREFS_APP_SETTINGS", "{}"))
    return create_app(
        os.environ.get("MODPREFS_APP_DB"),
        settings_overrides=overrides,
        admin_secret_env=os.environ.get("MODPREFS_ADMIN_SECRET_ENV", ADMIN_SECRET_ENV),
    )

"""The participant pages of the app: entry, the current step, the forms, the event log and the audio
(routes in :mod:`modprefs.app.server`), with what every handler shares (:class:`Pages`)."""

from __future__ import annotations

import json
import os
import re
from typing import Any

from jinja2 import Environment
from markupsafe import Markup
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, UploadFile
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response

from modprefs.app import events as event_log
from modprefs.app import service, sessions, trials
from modprefs.app.live_runner import LiveRunner
from modprefs.app.middleware import MAX_BODY, BodyTooLarge, root_path
from modprefs.app.ratelimit import RateLimiter
from modprefs.app.service import AppError, Expired, Forbidden, Invalid, Settings, Superseded
from modprefs.app.texts import stored_html
from modprefs.scale import RatingScale


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


async def read_form(request: Request) -> FormData:
    try:
        return await request.form(max_files=0, max_fields=60, max_part_size=MAX_BODY)
    except BodyTooLarge:
        raise
    except Exception as exc:  # malformed body
        raise Invalid(f"Malformed form data ({type(exc).__name__}).") from None


def check_fetch_site(request: Request) -> None:
    if request.headers.get("sec-fetch-site") == "cross-site":
        raise Forbidden("Cross-site requests are not accepted.")


def app_url(request: Request, path: str) -> str:
    """``path`` (``/p/...``, ``/static/...``) as the browser must ask for it: under the root path.

    A path, not an absolute URL: the browser resolves it against the address it used (the proxy's),
    whatever Host and scheme reached the app."""
    return root_path(request.scope) + path


def redirect_home(request: Request, token: str) -> Response:
    return RedirectResponse(app_url(request, f"/p/{token}"), status_code=303)


def field(form: FormData, name: str) -> str | None:
    """A text field of ``form`` (``read_form`` accepts no file parts, so a value is never an UploadFile)."""
    value = form.get(name)
    assert not isinstance(value, UploadFile)
    return value


def string_fields(form: FormData) -> dict[str, str]:
    return {k: str(v) for k, v in form.items() if isinstance(v, str)}


class Pages:
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
            return redirect_home(request, token)  # the end page says the session expired, with the lab's code
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
            options=OPTIONS,
            scale=scale,
            abandon_minutes=minutes,
            **extra,
        )


class ParticipantPages(Pages):
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
        return redirect_home(request, token)

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
            check_fetch_site(request)
            form = await read_form(request)
            await run_in_threadpool(
                sessions.give_consent, self.db, token, field(form, "csrf"), form.get("agree") == "yes"
            )
        except AppError as exc:
            return await self.refused_form(exc, request, token, "consent")
        return redirect_home(request, token)

    async def demographics(self, request: Request) -> Response:
        token = request.path_params["token"]
        try:
            check_fetch_site(request)
            form = await read_form(request)
            fields = string_fields(form)
            errors = await run_in_threadpool(
                sessions.submit_demographics, self.db, self.settings(), token, field(form, "csrf"), fields
            )
            if errors:
                view = await run_in_threadpool(sessions.page_state, self.db, self.settings(), token)
                return self.render_view(request, view, status=422, errors=errors, values=fields)
        except AppError as exc:
            return await self.refused_form(exc, request, token, "demographics")
        return redirect_home(request, token)

    async def events(self, request: Request) -> Response:
        token = request.path_params["token"]
        try:
            check_fetch_site(request)
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
        check_fetch_site(request)
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
            check_fetch_site(request)
            form = await read_form(request)
            fields = string_fields(form)
            outcome = await run_in_threadpool(
                trials.submit_trial, self.db, self.settings(), token, field(form, "csrf"), n, fields
            )
        except AppError as exc:
            return self.error_page(exc, request)
        # the live statistics are poked after the response was sent; they update in a child process
        later = BackgroundTask(self.live.poke) if outcome != "duplicate" else None
        if request.headers.get("accept", "").startswith("application/json"):
            return JSONResponse({"outcome": outcome, "next": app_url(request, f"/p/{token}")}, background=later)
        response = redirect_home(request, token)
        response.background = later
        return response

    async def headphones_post(self, request: Request) -> Response:
        token = request.path_params["token"]
        try:
            check_fetch_site(request)
            form = await read_form(request)
            fields = string_fields(form)
            await run_in_threadpool(
                sessions.submit_headphones, self.db, self.settings(), token, field(form, "csrf"), fields
            )
        except AppError as exc:
            return await self.refused_form(exc, request, token, "headphones")
        return redirect_home(request, token)

    async def calibration_post(self, request: Request) -> Response:
        token = request.path_params["token"]
        try:
            check_fetch_site(request)
            form = await read_form(request)
            confirmed = form.get("confirm") == "yes"
            await run_in_threadpool(
                sessions.submit_calibration, self.db, self.settings(), token, field(form, "csrf"), confirmed
            )
        except AppError as exc:
            return await self.refused_form(exc, request, token, "calibration")
        return redirect_home(request, token)

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
            check_fetch_site(request)
            form = await read_form(request)
            await run_in_threadpool(sessions.finish_instructions, self.db, self.settings(), token, field(form, "csrf"))
        except AppError as exc:
            return await self.refused_form(exc, request, token, "instructions")
        return redirect_home(request, token)

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
            check_fetch_site(request)
            form = await read_form(request)
            await run_in_threadpool(
                sessions.submit_difficulty, self.db, token, field(form, "csrf"), field(form, "difficulty")
            )
        except AppError as exc:
            return await self.refused_form(exc, request, token, "difficulty")
        return redirect_home(request, token)

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


OPTIONS = {
    "genders": sessions.GENDERS,
    "races": sessions.RACES,
    "education": sessions.EDUCATION_LEVELS,
    "employment": sessions.EMPLOYMENT,
    "proficiency": sessions.ENGLISH_PROFICIENCY,
}

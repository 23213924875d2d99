"""The app's ASGI middleware: the root path behind a proxy, body limits and security headers, rate limits and
trailing slashes (:func:`modprefs.app.server.create_app` stacks them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.datastructures import QueryParams
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response

from modprefs.app.ratelimit import RateLimiter
from modprefs.app.service import Settings

MAX_BODY = 64 * 1024
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; media-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'"
)


class BodyTooLarge(Exception):
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
                    raise BodyTooLarge()
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
        except BodyTooLarge:
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

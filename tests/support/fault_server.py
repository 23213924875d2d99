"""A fault-injecting, OpenAI-compatible HTTP server FOR TESTS AND BENCHMARKS ONLY.

It exists only to inject faults into the judge client (modprefs.judges) so that its retry, re-ask,
caching and fail-fast paths are exercised with the real ``openai`` package. It is not a model: the
"ratings" it returns are a deterministic function of the request hash. Nothing here is used by the
workflow.

Endpoints: ``GET /v1/models`` and ``POST /v1/chat/completions`` (standard library only:
``http.server.ThreadingHTTPServer``, HTTP/1.1 keep-alive, one thread per connection). Every request
is appended to :attr:`FaultServer.log`.

Faults, drawn per request with probability ``fault_rate`` from ``faults`` (deterministically from
``seed``, the request key and how many times that key was seen):

=============  ==================================================================
``429``        HTTP 429 with ``Retry-After: <retry_after_s>``
``500``        HTTP 500
``timeout``    sleeps ``hang_s`` before answering (beyond the client's timeout)
``bad_body``   HTTP 200 whose body is truncated JSON
``malformed``  a reply whose content is malformed JSON (``{"rating": 8``)
``zero``       ``{"rating": 0}``            (out of range)
``hundred_one`` ``{"rating": 101}``         (out of range)
``eighty``     ``{"rating": "eighty"}``     (non-numeric)
``refusal``    "I'm sorry, but I can't help with rating this."
=============  ==================================================================

A user message containing ``ALWAYS_EIGHTY`` is always answered ``{"rating": "eighty"}`` (an item
that can never be rated). The request key is the ``X-Modprefs-Request-Hash`` header (else the
sha256 of the body). Audio parts (``input_audio``) are base64-decoded; their sha256 is logged and,
with ``save_audio_dir``, the decoded bytes are written to ``<save_audio_dir>/<sha256>.wav``.

Run standalone: ``python tests/support/fault_server.py --port 8000 --fault-rate 0.3``.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ALL_FAULTS = ("429", "500", "timeout", "bad_body", "malformed", "zero", "hundred_one", "eighty", "refusal")
DEFAULT_MODELS = ("gpt-4o", "gpt-4o-audio-preview")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 256
    allow_reuse_address = True


class FaultServer:
    def __init__(
        self,
        *,
        models=DEFAULT_MODELS,
        api_key: str | None = "test-key",
        fault_rate: float = 0.0,
        faults=ALL_FAULTS,
        retry_after_s: float = 0.2,
        hang_s: float = 1.0,
        latency_s: float = 0.0,
        jitter_s: float = 0.0,
        seed: int = 0,
        save_audio_dir: str | Path | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.models = list(models)
        self.api_key = api_key
        self.fault_rate = fault_rate
        self.faults = list(faults)
        self.retry_after_s = retry_after_s
        self.hang_s = hang_s
        self.latency_s = latency_s
        self.jitter_s = jitter_s
        self.seed = seed
        self.save_audio_dir = Path(save_audio_dir) if save_audio_dir else None
        self.log: list[dict] = []
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()
        self._httpd = _Server((host, port), self._handler_class())
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FaultServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- helpers -----------------------------------------------------------------------------
    def chat_log(self) -> list[dict]:
        with self._lock:
            return [e for e in self.log if e["path"].endswith("/chat/completions")]

    def _record(self, entry: dict) -> None:
        with self._lock:
            self.log.append(entry)

    def _draw(self, key: str) -> tuple[int, str | None]:
        with self._lock:
            n = self._seen.get(key, 0)
            self._seen[key] = n + 1
        rng = random.Random(f"{self.seed}|{key}|{n}")
        fault = rng.choice(self.faults) if self.faults and rng.random() < self.fault_rate else None
        return n, fault

    def _handler_class(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # else Nagle + delayed ACK adds ~40 ms per response

            def log_message(self, *args) -> None:  # silence stderr
                pass

            def _send(self, status: int, body: bytes, headers: dict | None = None) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(body)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError, OSError):
                    self.close_connection = True

            def _json(self, status: int, obj, headers: dict | None = None) -> None:
                self._send(status, json.dumps(obj).encode(), headers)

            def _error(
                self, status: int, message: str, etype: str, code: str | None = None, headers: dict | None = None
            ) -> None:
                self._json(status, {"error": {"message": message, "type": etype, "param": None, "code": code}}, headers)

            def _authorized(self) -> bool:
                if server.api_key is None:
                    return True
                if self.headers.get("Authorization") != f"Bearer {server.api_key}":
                    self._error(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
                    return False
                return True

            def do_GET(self) -> None:
                server._record({"t": time.time(), "method": "GET", "path": self.path})
                if not self._authorized():
                    return
                if self.path.rstrip("/").endswith("/models"):
                    self._json(
                        200,
                        {
                            "object": "list",
                            "data": [
                                {"id": m, "object": "model", "created": 0, "owned_by": "fault-server"}
                                for m in server.models
                            ],
                        },
                    )
                else:
                    self._error(404, f"no route {self.path}", "invalid_request_error")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    server._record({"t": time.time(), "method": "POST", "path": self.path})
                    self._error(404, f"no route {self.path}", "invalid_request_error")
                    return
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    self._error(400, "request body is not JSON", "invalid_request_error")
                    return
                key = self.headers.get("X-Modprefs-Request-Hash") or hashlib.sha256(raw).hexdigest()
                entry = {
                    "t": time.time(),
                    "method": "POST",
                    "path": self.path,
                    "request_hash": key,
                    "ask": self.headers.get("X-Modprefs-Ask"),
                    "model": body.get("model"),
                    "has_response_format": "response_format" in body,
                    "params": sorted(k for k in body if k not in ("model", "messages")),
                    "n_messages": len(body.get("messages", [])),
                    "audio_sha256": [],
                    "audio_format": [],
                }
                texts = []
                for m in body.get("messages", []):
                    content = m.get("content")
                    if isinstance(content, str):
                        texts.append(content)
                        continue
                    for part in content or []:
                        if part.get("type") == "text":
                            texts.append(part.get("text", ""))
                        elif part.get("type") == "input_audio":
                            data = base64.b64decode(part["input_audio"]["data"], validate=True)
                            sha = hashlib.sha256(data).hexdigest()
                            entry["audio_sha256"].append(sha)
                            entry["audio_format"].append(part["input_audio"].get("format"))
                            if server.save_audio_dir is not None:
                                server.save_audio_dir.mkdir(parents=True, exist_ok=True)
                                (server.save_audio_dir / f"{sha}.wav").write_bytes(data)
                if not self._authorized():
                    entry["status"] = 401
                    server._record(entry)
                    return
                if body.get("model") not in server.models:
                    entry["status"] = 404
                    server._record(entry)
                    self._error(
                        404,
                        f"The model `{body.get('model')}` does not exist",
                        "invalid_request_error",
                        "model_not_found",
                    )
                    return
                n, fault = server._draw(key)
                entry["n"], entry["fault"] = n, fault
                if server.latency_s or server.jitter_s:
                    time.sleep(max(0.0, server.latency_s + random.uniform(-server.jitter_s, server.jitter_s)))
                rating = 1 + int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % 100
                content = json.dumps({"rating": rating})
                if any("ALWAYS_EIGHTY" in t for t in texts):
                    fault = entry["fault"] = "always_eighty"
                if fault == "429":
                    entry["status"] = 429
                    server._record(entry)
                    self._error(
                        429,
                        "Rate limit reached (injected)",
                        "requests",
                        "rate_limit_exceeded",
                        {"Retry-After": f"{server.retry_after_s:g}"},
                    )
                    return
                if fault == "500":
                    entry["status"] = 500
                    server._record(entry)
                    self._error(500, "The server had an error (injected)", "server_error")
                    return
                if fault == "timeout":
                    entry["status"] = "hang"
                    server._record(entry)
                    time.sleep(server.hang_s)
                    self.close_connection = True
                    self._error(503, "too late (injected timeout)", "server_error")
                    return
                if fault == "bad_body":
                    entry["status"] = 200
                    server._record(entry)
                    self._send(200, b'{"id": "chatcmpl-bad", "choices": [{"mess')
                    return
                content = {
                    "malformed": '{"rating": 8',
                    "zero": '{"rating": 0}',
                    "hundred_one": '{"rating": 101}',
                    "eighty": '{"rating": "eighty"}',
                    "always_eighty": '{"rating": "eighty"}',
                    "refusal": "I'm sorry, but I can't help with rating this.",
                }.get(fault, content)
                entry["status"] = 200
                entry["reply"] = content
                server._record(entry)
                n_audio = len(entry["audio_sha256"])
                prompt_tokens = sum(len(t) for t in texts) // 4 + 100 * n_audio
                self._json(
                    200,
                    {
                        "id": f"chatcmpl-{key[:12]}-{n}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body["model"],
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "logprobs": None,
                                "message": {"role": "assistant", "content": content, "refusal": None},
                            }
                        ],
                        "usage": {
                            "prompt_tokens": prompt_tokens,
                            "completion_tokens": 6,
                            "total_tokens": prompt_tokens + 6,
                            "prompt_tokens_details": {"audio_tokens": 100 * n_audio, "cached_tokens": 0},
                        },
                    },
                )

        return Handler


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--fault-rate", type=float, default=0.3)
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--jitter", type=float, default=0.0)
    ap.add_argument("--api-key", default="test-key")
    args = ap.parse_args()
    srv = FaultServer(
        fault_rate=args.fault_rate, latency_s=args.latency, jitter_s=args.jitter, api_key=args.api_key, port=args.port
    ).start()
    print(f"fault server on {srv.url} (fault rate {args.fault_rate})", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.stop()


if __name__ == "__main__":
    main()

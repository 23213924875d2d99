"""The API judge: GPT-4o (text) and GPT-4o-Audio-Preview (audio) ratings through the ``openai`` client.

Configured by a ``judges.*`` mapping (:class:`modprefs.judges.api_config.JudgeConfig`). For every item (a response in a
conversation, in one modality, rated for one kind) and every sample index ``0..samples_per_item-1``
the judge makes one chat-completions request, parses a 1-100 rating (re-asking on unusable replies),
and writes one record per request (see :mod:`modprefs.judges.records`). The request hash is the
cache key: finished requests are never sent again, and a run killed at any point (even SIGKILL)
resumes with exactly the missing ones.

Throughput: ``max_concurrency`` workers, token buckets for requests/tokens per minute, exponential
backoff with jitter on 429 (honouring ``Retry-After``), 5xx, timeouts and connection errors, and a
tqdm progress bar with calls, failures and estimated spend.

Fail-fast (before any request, and only if there is work left): the API key environment variable
named by ``api_key_env`` must be set, ``GET {base_url}/models`` must answer within
``preflight_timeout_s``, and every configured model must be listed there.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
from openai import AsyncOpenAI

from modprefs.judges import records as rec
from modprefs.judges.api_config import JudgeConfig
from modprefs.judges.parse import RATING_JSON_SCHEMA, parse_rating
from modprefs.judges.prompts import Prompt, format_conversation, load_prompt
from modprefs.judges.ratelimit import TokenBucket, backoff_delay, retry_after_seconds
from modprefs.judges.types import (  # noqa: F401  (re-exported: the API judge's public names)
    KINDS,
    MODALITIES,
    JudgeAbort,
    JudgeItem,
    JudgeSetupError,
    RunResult,
    RunStats,
)

AUDIO_TOKENS_PER_S = 10.0  # rough estimate used only for the tokens-per-minute limiter
EST_OUTPUT_TOKENS = 16


class _TransportFailure(Exception):
    pass


class _RequestRejected(Exception):
    pass


# --------------------------------------------------------------------------------------------
# requests
# --------------------------------------------------------------------------------------------


@dataclass
class _Unit:
    item: JudgeItem
    sample: int
    model: str
    prompt: Prompt
    text: str  # the rendered user text
    audio_sha256: str | None
    canonical: dict
    hash: str
    path: Path
    est_tokens: float
    response_format: bool
    reask: Prompt

    def messages(self) -> list[dict]:
        """The real messages (audio inlined as base64 WAV), built only when the call is made."""
        if self.item.modality == "text":
            return [{"role": "user", "content": self.text}]
        data = Path(self.item.audio_file).read_bytes()
        if hashlib.sha256(data).hexdigest() != self.audio_sha256:
            raise JudgeAbort(f"{self.item.audio_path} changed during the run")
        return [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": self.text},
                    {
                        "type": "input_audio",
                        "input_audio": {"data": base64.b64encode(data).decode("ascii"), "format": "wav"},
                    },
                ],
            }
        ]


def _wav_info(path: str) -> tuple[str, float]:
    data = Path(path).read_bytes()
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise JudgeSetupError(f"{path} is not a WAV file (input_audio is sent with format 'wav')")
    try:
        import soundfile as sf

        seconds = float(sf.info(path).duration)
    except Exception:  # noqa: BLE001 - only used for the limiter's estimate
        seconds = len(data) / 32000.0
    return hashlib.sha256(data).hexdigest(), seconds


def build_units(items: list[JudgeItem], cfg: JudgeConfig, out_dir: str | Path) -> list[_Unit]:
    prompts: dict[str, Prompt] = {}
    reask = load_prompt(cfg.reask_prompt, cfg.prompts_dir)
    audio_cache: dict[str, tuple[str, float]] = {}
    units: list[_Unit] = []
    seen: dict[str, tuple[str, str, str, int]] = {}
    for item in items:
        name = cfg.prompt_name(item.modality, item.kind)
        if name not in prompts:
            prompts[name] = load_prompt(name, cfg.prompts_dir)
        prompt = prompts[name]
        fields = {"conversation": format_conversation(item.history, item.prompt)}
        if item.modality == "text":
            assert item.response_text is not None  # checked when the item was made
            fields["response"] = item.response_text
        text = prompt.render(**fields)
        model = cfg.models[item.modality]
        audio_sha, seconds = None, 0.0
        if item.modality == "audio":
            if item.audio_file not in audio_cache:
                audio_cache[item.audio_file] = _wav_info(item.audio_file)
            audio_sha, seconds = audio_cache[item.audio_file]
        content: Any = (
            text
            if item.modality == "text"
            else [
                {"type": "text", "text": text},
                {"type": "input_audio", "input_audio": {"format": "wav", "sha256": audio_sha}},
            ]
        )
        use_rf = cfg.use_response_format(item.modality)
        est = len(text) / 4 + seconds * AUDIO_TOKENS_PER_S + EST_OUTPUT_TOKENS
        for s in range(int(cfg.samples_per_item)):
            canonical = {
                "model": model,
                "prompt_version": prompt.version,
                "reask_prompt_version": reask.version,
                "messages": [{"role": "user", "content": content}],
                "sample": s,
                "params": cfg.params,
                "response_format": RATING_JSON_SCHEMA if use_rf else None,
            }
            h = rec.request_hash(canonical)
            key = (item.modality, item.kind, item.clip_id, s)
            if h in seen:
                raise ValueError(f"duplicate judge request {key} (same as {seen[h]})")
            seen[h] = key
            units.append(
                _Unit(
                    item,
                    s,
                    model,
                    prompt,
                    text,
                    audio_sha,
                    canonical,
                    h,
                    rec.record_path(out_dir, item.modality, item.kind, h),
                    est,
                    use_rf,
                    reask,
                )
            )
    return units


# --------------------------------------------------------------------------------------------
# the run
# --------------------------------------------------------------------------------------------


def api_key(cfg: JudgeConfig) -> str:
    key = os.environ.get(cfg.api_key_env, "")
    if not key.strip():
        raise JudgeSetupError(
            f"judges.api_key_env names the environment variable {cfg.api_key_env!r}, but it is not set "
            f"(or empty); export {cfg.api_key_env}=<your key> before running the API judges"
        )
    return key


async def preflight(client: AsyncOpenAI, cfg: JudgeConfig, models: set[str]) -> None:
    """GET /models with a short timeout; every model in ``models`` must be listed."""
    url = cfg.base_url
    try:
        page = await client.models.list(timeout=cfg.preflight_timeout_s)
        ids = {m.id for m in page.data}
    except openai.AuthenticationError as e:
        raise JudgeSetupError(f"the API key in ${cfg.api_key_env} was rejected by {url} (HTTP 401): {e.message}") from e
    except openai.APITimeoutError as e:
        raise JudgeSetupError(
            f"judges.base_url {url} is unreachable: GET /models timed out after {cfg.preflight_timeout_s} s"
        ) from e
    except openai.APIConnectionError as e:
        cause = e.__cause__ or e
        raise JudgeSetupError(
            f"judges.base_url {url} is unreachable: GET /models failed ({type(cause).__name__}: {cause})"
        ) from e
    except openai.NotFoundError as e:
        raise JudgeSetupError(
            f"{url} has no GET /models endpoint (HTTP 404); set judges.preflight: false "
            "to skip the model check for this endpoint"
        ) from e
    except openai.APIStatusError as e:
        raise JudgeSetupError(f"GET {url}/models answered HTTP {e.status_code}: {e.message}") from e
    missing = sorted(m for m in models if m not in ids)
    if missing:
        shown = ", ".join(sorted(ids)[:20]) + (" ..." if len(ids) > 20 else "")
        raise JudgeSetupError(
            f"unknown model(s) {missing} at {url} (not in GET /models; offered: {shown}); check judges.models"
        )


def _add_usage(usage: dict[str, int], resp: Any) -> None:
    """Add one completion's token counts (audio prompt tokens included) to ``usage``."""
    if resp.usage:
        usage["prompt_tokens"] += resp.usage.prompt_tokens or 0
        usage["completion_tokens"] += resp.usage.completion_tokens or 0
        usage["total_tokens"] += resp.usage.total_tokens or 0
        details = getattr(resp.usage, "prompt_tokens_details", None)
        usage["audio_prompt_tokens"] += (getattr(details, "audio_tokens", None) or 0) if details else 0


class _Runner:
    def __init__(self, cfg: JudgeConfig, client: AsyncOpenAI, stats: RunStats, bar) -> None:
        self.cfg, self.client, self.stats, self.bar = cfg, client, stats, bar
        burst_s = float(cfg.burst_s or 10.0)
        self.rpm = TokenBucket(cfg.rpm, max(1.0, (cfg.rpm or 0) / 60 * burst_s))
        self.tpm = TokenBucket(cfg.tpm, max(1.0, (cfg.tpm or 0) / 60 * burst_s))
        self.rng = random.Random(cfg.seed)

    def _cost(self, model: str, usage: dict) -> float | None:
        price = self.cfg.prices.get(model)
        if not price:
            return None
        audio = usage.get("audio_prompt_tokens") or 0
        text_in = (usage.get("prompt_tokens") or 0) - audio
        return (
            text_in * price.get("input", 0)
            + audio * price.get("audio_input", price.get("input", 0))
            + (usage.get("completion_tokens") or 0) * price.get("output", 0)
        ) / 1e6

    async def _call(self, u: _Unit, messages: list[dict], ask: int):
        cfg = self.cfg
        kwargs: dict[str, Any] = {"model": u.model, "messages": messages, **cfg.params}
        if u.response_format:
            kwargs["response_format"] = RATING_JSON_SCHEMA
        headers = {}
        if cfg.send_request_hash_header:
            headers = {"X-Modprefs-Request-Hash": u.hash, "X-Modprefs-Ask": str(ask)}
        errors: list[str] = []
        for attempt in range(int(cfg.max_retries) + 1):
            await self.rpm.acquire(1)
            await self.tpm.acquire(u.est_tokens)
            t0 = time.monotonic()
            retry_after = None
            self.stats.http_calls += 1
            try:
                resp = await self.client.chat.completions.create(**kwargs, extra_headers=headers)
                used = resp.usage.total_tokens if resp.usage else u.est_tokens
                self.tpm.debit(used - u.est_tokens)
                return resp, attempt, time.monotonic() - t0, errors
            except openai.RateLimitError as e:
                if (e.code or "") == "insufficient_quota":
                    raise JudgeAbort(
                        f"{cfg.base_url}: insufficient quota (HTTP 429 insufficient_quota): {e.message}"
                    ) from e
                retry_after = retry_after_seconds(e.response.headers)
                err = "HTTP 429 rate limited" + (f" (Retry-After {retry_after:g} s)" if retry_after is not None else "")
            except openai.APITimeoutError:
                err = f"timeout after {cfg.timeout_s:g} s"
            except openai.APIConnectionError as e:
                err = f"connection error: {e.__cause__ or e}"
            except (openai.AuthenticationError, openai.PermissionDeniedError) as e:
                raise JudgeAbort(f"{cfg.base_url} refused the API key (HTTP {e.status_code}): {e.message}") from e
            except (openai.APIResponseValidationError, ValueError) as e:
                # a 200 whose body is not valid JSON / not a chat completion: treat like a 5xx
                err = f"malformed response body ({type(e).__name__}: {str(e)[:120]})"
            except openai.APIStatusError as e:
                if e.status_code >= 500 or e.status_code in (408, 409):
                    retry_after = retry_after_seconds(e.response.headers)
                    err = f"HTTP {e.status_code}"
                else:
                    raise _RequestRejected(f"request rejected: HTTP {e.status_code}: {e.message}") from e
            errors.append(err)
            if attempt == int(cfg.max_retries):
                raise _TransportFailure(f"{err}; gave up after {attempt + 1} attempts")
            self.stats.retries += 1
            delay = (
                retry_after * self.rng.uniform(1.0, 1.1)
                if retry_after is not None
                else backoff_delay(attempt, cfg.backoff_base_s, cfg.backoff_max_s, self.rng)
            )
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def judge(self, u: _Unit) -> dict:
        cfg = self.cfg
        t_start = time.monotonic()
        messages = u.messages()
        attempts: list[dict] = []
        usage = {"prompt_tokens": 0, "completion_tokens": 0, "audio_prompt_tokens": 0, "total_tokens": 0}
        status, rating, reason, error_kind, retries = "failed", None, None, None, 0
        for ask in range(int(cfg.max_reasks) + 1):
            if ask:
                self.stats.reasks += 1
            try:
                resp, n_retries, latency, errors = await self._call(u, messages, ask)
            except _TransportFailure as e:
                reason, error_kind = f"transport: {e}", "transport"
                break
            except _RequestRejected as e:
                reason, error_kind = str(e), "request"
                break
            retries += n_retries
            choices = getattr(resp, "choices", None) or []
            choice = choices[0] if choices else None
            msg = choice.message if choice else None
            content = msg.content if msg else None
            refusal = getattr(msg, "refusal", None) if msg else None
            parsed = parse_rating(content, refusal)
            _add_usage(usage, resp)
            attempts.append(
                {
                    "ask": ask,
                    "reply": content,
                    "refusal": refusal,
                    "finish_reason": choice.finish_reason if choice else None,
                    "rating": parsed.rating,
                    "reason": parsed.reason,
                    "latency_s": round(latency, 4),
                    "transport_errors": errors,
                    "completion": resp.model_dump(mode="json"),
                }
            )
            if parsed.ok:
                status, rating, reason, error_kind = "ok", parsed.rating, None, None
                break
            reason, error_kind = parsed.reason, parsed.kind
            if ask < int(cfg.max_reasks):
                assert parsed.reason is not None  # a failed parse (parse._fail) says why
                messages = messages + [
                    {"role": "assistant", "content": content or refusal or ""},
                    {"role": "user", "content": u.reask.render(reason=parsed.reason)},
                ]
        if status == "failed" and error_kind in {"parse", "range", "refusal"}:
            reason = f"{reason} (after {len(attempts)} asks)"
        cost = self._cost(u.model, usage) if attempts else 0.0
        outcome = {
            "status": status,
            "rating": rating,
            "reason": reason,
            "error_kind": error_kind,
            "reply": attempts[-1]["reply"] if attempts else None,
            "attempts": attempts,
            "asks": len(attempts),
            "transport_retries": retries,
            "tokens": usage,
            "latency_s": round(time.monotonic() - t_start, 4),
            "cost_usd": cost,
        }
        record = self._record(u, outcome)
        rec.write_record(u.path, record)
        self._tally(status, cost)
        return record

    def _record(self, u: _Unit, outcome: dict[str, Any]) -> dict[str, Any]:
        """The unit's record: what was asked (schema, hash, judge, item, request), ``outcome``, the time."""
        cfg = self.cfg
        it = u.item
        return {
            "schema": rec.RECORD_SCHEMA,
            "request_hash": u.hash,
            "judge": cfg.judge_label(u.model),
            "backend": cfg.backend,
            "base_url": cfg.base_url,
            "model": u.model,
            "prompt_version": u.prompt.version,
            "modality": it.modality,
            "kind": it.kind,
            "prompt_id": it.prompt_id,
            "clip_id": it.clip_id,
            "sample": u.sample,
            "audio_sha256": u.audio_sha256,
            "params": cfg.params,
            "response_format": u.response_format,
            "request": u.canonical,
            **outcome,
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }

    def _tally(self, status: str, cost: float | None) -> None:
        """Count one finished unit in the run's stats and advance the progress bar."""
        self.stats.ok += status == "ok"
        self.stats.failed += status != "ok"
        self.stats.spend_usd += cost or 0.0
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix(
                ok=self.stats.ok,
                failed=self.stats.failed,
                retries=self.stats.retries,
                usd=f"{self.stats.spend_usd:.4f}",
                refresh=False,
            )


async def arun_judges(items: list[JudgeItem], config: dict | JudgeConfig, out_dir: str | Path) -> RunResult:
    cfg = config if isinstance(config, JudgeConfig) else JudgeConfig.from_dict(config)
    t0 = time.monotonic()
    units = build_units(items, cfg, out_dir)
    stats = RunStats(units=len(units))
    existing = {u.hash: rec.read_record(u.path) for u in units}
    pending = [u for u in units if not rec.is_finished(existing[u.hash], cfg.retry_transport_failures)]
    stats.pending = len(pending)
    stats.cached = len(units) - len(pending)
    if pending:
        key = api_key(cfg)
        async with AsyncOpenAI(
            api_key=key, base_url=cfg.base_url, timeout=float(cfg.timeout_s), max_retries=0
        ) as client:
            if cfg.preflight:
                await preflight(client, cfg, {u.model for u in pending})
            bar = None
            if cfg.progress:
                from tqdm.auto import tqdm

                bar = tqdm(total=len(pending), desc="judge calls", unit="call", file=sys.stderr)
            runner = _Runner(cfg, client, stats, bar)
            queue: asyncio.Queue = asyncio.Queue()
            for u in pending:
                queue.put_nowait(u)

            async def worker() -> None:
                while True:
                    try:
                        u = queue.get_nowait()
                    except asyncio.QueueEmpty:
                        return
                    existing[u.hash] = await runner.judge(u)

            try:
                async with asyncio.TaskGroup() as tg:
                    for _ in range(min(int(cfg.max_concurrency), len(pending))):
                        tg.create_task(worker())
            except BaseExceptionGroup as eg:  # surface the first worker error itself (e.g. JudgeAbort)
                first = eg.exceptions[0]
                while isinstance(first, BaseExceptionGroup):
                    first = first.exceptions[0]
                raise first from None
            finally:
                if bar is not None:
                    bar.close()
    done = [r for u in units if (r := existing[u.hash]) is not None]
    stats.wall_s = time.monotonic() - t0
    return RunResult(table=rec.ratings_table(done), stats=stats, records=done)

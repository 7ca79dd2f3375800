"""A loopback OpenAI-compatible chat server for tests and benchmarks (aiohttp, 127.0.0.1 only).

It answers `POST /v1/chat/completions` after a configurable latency and, like a real provider,
rejects requests above a rate limit with 429 and a `Retry-After` header. It counts what a provider
would see (requests accepted and rejected per window, requests in flight), so a test can check
the gateway's limits from the provider's side. It stops by itself after `max_requests` requests or
`max_seconds`, whichever comes first, so a test that forgets it never leaves it running.

Point a roster entry at it with `model: openai/<anything>` and `extra: {api_base: <url>}`.

Models named in `reasoning` act like today's reasoning APIs: each answer first spends hidden
reasoning tokens (the number given per model) inside `max_completion_tokens` (or `max_tokens`);
below that need the reply is empty with `finish_reason: "length"`; usage reports them under
`completion_tokens_details.reasoning_tokens`; they refuse `logprobs`, a temperature other than 1,
and `max_tokens` when `strict_reasoning_params` is set (as OpenAI's o-series does). Other models
are chat models whose replies are cut at the cap (one token a word here) with `finish_reason: "length"`.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

Reply = Callable[[Sequence[dict[str, Any]]], str]


def echo_reply(messages: Sequence[dict[str, Any]]) -> str:
    return "ok"


@dataclass
class ServerStats:
    accepted: int = 0
    rejected: int = 0
    max_in_flight: int = 0
    # the most requests accepted inside any one window (the provider's own count)
    max_in_window: int = 0
    accepted_times: list[float] = field(default_factory=list)
    # (monotonic time, HTTP status) of every request, in arrival order
    arrivals: list[tuple[float, int]] = field(default_factory=list)


class LoopbackServer:
    """Run with `with LoopbackServer(...) as server:`; `server.url` is the api_base."""

    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        uncounted: str = "warm-up",
        limit: int = 0,
        window_s: float = 60.0,
        reply: Reply = echo_reply,
        max_requests: int = 10_000,
        max_seconds: float = 120.0,
        retry_after: bool = True,
        reasoning: dict[str, int] | None = None,
        strict_reasoning_params: bool = True,
    ) -> None:
        self.latency_s = latency_s
        self.uncounted = uncounted  # a request whose last message is exactly this is answered, not counted
        self.limit = limit  # requests per window; 0: never 429
        self.window_s = window_s
        self.reply = reply
        self.max_requests = max_requests
        self.max_seconds = max_seconds
        self.retry_after = retry_after
        self.reasoning = dict(reasoning or {})  # model name -> hidden reasoning tokens per answer
        self.strict_reasoning_params = strict_reasoning_params
        self.requests: list[dict[str, Any]] = []  # every accepted request body, in arrival order
        self.stats = ServerStats()
        self._window: deque[float] = deque()
        self._in_flight = 0
        self._seen = 0
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- the provider's side ------------------------------------------------------------
    def _admit(self, now: float) -> float | None:
        """None when the request is within the limit, else seconds until it would be."""
        while self._window and self._window[0] <= now - self.window_s:
            self._window.popleft()
        if self.limit and len(self._window) >= self.limit:
            return self._window[0] + self.window_s - now
        self._window.append(now)
        self.stats.accepted += 1
        self.stats.accepted_times.append(now)
        self.stats.max_in_window = max(self.stats.max_in_window, len(self._window))
        return None

    async def _chat(self, request: Any) -> Any:
        from aiohttp import web

        self._seen += 1
        if self._seen >= self.max_requests and self._stop is not None:
            self._stop.set()
        body = await request.json()
        messages = body.get("messages") or []
        if messages and messages[-1].get("content") == self.uncounted:
            return web.json_response(self._answer(body, messages, "ok"))
        now = time.monotonic()
        wait = self._admit(now)
        self.stats.arrivals.append((now, 200 if wait is None else 429))
        if wait is not None:
            self.stats.rejected += 1
            headers = {"Retry-After": str(max(1, math.ceil(wait)))} if self.retry_after else {}
            return web.json_response(
                {"error": {"message": "rate limit exceeded", "type": "rate_limit_error", "code": "rate_limit"}},
                status=429, headers=headers,
            )
        self.requests.append(body)
        refusal = self._refusal(body)
        if refusal is not None:
            return web.json_response(
                {"error": {"message": refusal, "type": "invalid_request_error", "code": "unsupported_parameter"}},
                status=400,
            )
        self._in_flight += 1
        self.stats.max_in_flight = max(self.stats.max_in_flight, self._in_flight)
        try:
            if self.latency_s:
                await asyncio.sleep(self.latency_s)
            text = self.reply(messages)
        finally:
            self._in_flight -= 1
        return web.json_response(self._answer(body, messages, text))

    def _refusal(self, body: dict[str, Any]) -> str | None:
        """What a reasoning API refuses, in OpenAI's words (None: the request is accepted)."""
        if body.get("model") not in self.reasoning:
            return None
        if body.get("logprobs") or body.get("top_logprobs"):
            return "logprobs are not supported with reasoning models"
        if not self.strict_reasoning_params:
            return None
        if body.get("temperature") not in (None, 1, 1.0):
            return (f"Unsupported value: 'temperature' does not support {body['temperature']} with this model. "
                    "Only the default (1) value is supported.")
        if body.get("max_tokens") is not None:
            return "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."
        return None

    def _answer(self, body: dict[str, Any], messages: Sequence[dict[str, Any]], text: str) -> dict[str, Any]:
        prompt_chars = sum(len(str(m.get("content") or "")) for m in messages)
        cap = body.get("max_completion_tokens") or body.get("max_tokens")
        hidden = self.reasoning.get(body.get("model", ""), 0)
        words = text.split()
        finish = "stop"
        if cap is not None and hidden >= int(cap):  # the reasoning spent the whole budget
            hidden, words, finish = int(cap), [], "length"
        elif cap is not None and hidden + len(words) > int(cap):  # the visible reply is cut at the cap
            words, finish = words[: int(cap) - hidden], "length"
        if finish == "length":
            text = " ".join(words)
        visible = len(words) if finish == "length" else len(text) // 4 + 1
        usage: dict[str, Any] = {"prompt_tokens": prompt_chars // 4 + 1, "completion_tokens": hidden + visible,
                                 "total_tokens": prompt_chars // 4 + 1 + hidden + visible}
        if body.get("model") in self.reasoning:
            usage["completion_tokens_details"] = {"reasoning_tokens": hidden}
        return {
            "id": f"loopback-{self._seen}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "loopback"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
            "usage": usage,
        }

    # -- lifecycle ------------------------------------------------------------------------
    async def _serve(self) -> None:
        from aiohttp import web

        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/chat/completions", self._chat)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", self.port, backlog=1024)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._stop = asyncio.Event()
        self._ready.set()
        try:
            await asyncio.wait_for(self._stop.wait(), timeout=self.max_seconds)
        except TimeoutError:
            pass
        await runner.cleanup()

    def start(self) -> LoopbackServer:
        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self._serve())
            self._loop.close()

        self._thread = threading.Thread(target=run, name="loopback-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("the loopback server did not start within 30 s")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(timeout=30)

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def max_in_any_window(self, window_s: float | None = None) -> int:
        """The most accepted requests inside any window of `window_s` (default: the limit's)."""
        width = self.window_s if window_s is None else window_s
        times = self.stats.accepted_times
        best, lo = 0, 0
        for hi, t in enumerate(times):
            while times[lo] <= t - width:
                lo += 1
            best = max(best, hi - lo + 1)
        return best

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
are chat models whose replies are cut at the cap (one token a word here) with `finish_reason: "length"`,
and that give log-probabilities when asked (each word at CHOSEN_P, its top alternatives after it).

`latency` (a LatencyMix) gives each request a latency of its own, as a provider at scale does:
most replies in 1-3 s, a slow tail, and reasoning models' replies in 20-40 s (each drawn from the
request body, so a rerun meets the same latencies; `scale` shrinks them all for a simulation whose
time is compressed). `burst_s` makes the limit hold over shorter windows too, as providers enforce
a minute's limit (`limit` requests per `window_s`, with Retry-After) over seconds: at most
`limit * burst_s / window_s` requests in any `burst_s`.

`faults` (a FaultMix) makes it a flaky provider: HTTP 500s, 503s with `Retry-After`, stalls longer
than the client waits, bodies cut mid-JSON, `choices: []`, and connections closed mid-reply (the
headers and part of the body sent, then the socket closed). Each request draws its fault from the
mix's seed, the request body and how many times the server has seen that very body before (arrival
order across bodies is up to the client's concurrency, so it must not decide), so a rerun of the
same requests meets the same faults. Every request is logged (`log`) with its fault and outcome;
`answered_keys()` lists the bodies the server answered with a whole 200 completion, one entry per
delivery, so a test can check that no request was answered twice.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.core.models.faults import pick_by_rates

Reply = Callable[[Sequence[dict[str, Any]]], str]


def echo_reply(messages: Sequence[dict[str, Any]]) -> str:
    return "ok"


#: the faults a FaultMix draws from, in drawing order
FAULTS = (
    "server_error",
    "unavailable",
    "stall",
    "malformed_json",
    "empty_choices",
    "connection_closed",
    "no_message",
    "html_body",
    "empty_body",
)


@dataclass(frozen=True)
class FaultMix:
    """Probabilities per request of each provider fault (they add up to at most 1), and their sizes."""

    seed: int = 0
    server_error: float = 0.0  # HTTP 500 with an error body
    unavailable: float = 0.0  # HTTP 503 with Retry-After (and retry-after-ms)
    stall: float = 0.0  # nothing for stall_s, then the answer (if the client still waits)
    malformed_json: float = 0.0  # HTTP 200 whose body is a completion cut in the middle of its JSON
    empty_choices: float = 0.0  # HTTP 200 with `choices: []`
    connection_closed: float = 0.0  # headers and part of the body, then the connection closed
    no_message: float = 0.0  # HTTP 200 whose choice has no message object
    html_body: float = 0.0  # HTTP 200 with a proxy's HTML error page instead of JSON
    empty_body: float = 0.0  # HTTP 200 with nothing in the body
    stall_s: float = 40.0
    retry_after_s: float = 1.0
    # only the first n arrivals of each body draw a fault, later ones are answered (None: every
    # arrival draws): with a probability of 1, n = 1 faults each request's first attempt exactly
    faulty_repeats: int | None = None

    def __post_init__(self) -> None:
        total = sum(getattr(self, name) for name in FAULTS)
        if any(getattr(self, name) < 0 for name in FAULTS) or total > 1.0 + 1e-9:
            raise ValueError(f"fault probabilities must be >= 0 and add up to at most 1 (they add up to {total:g})")

    @classmethod
    def flaky_provider(cls, *, seed: int = 0, stall_s: float = 40.0, retry_after_s: float = 1.0) -> FaultMix:
        """A provider on a bad day: 10% 500s, 5% 503s, 5% stalls, 3% cut JSON, 2% empty choices,
        2% connections closed mid-reply (27% of requests faulted)."""
        return cls(
            seed=seed,
            server_error=0.10,
            unavailable=0.05,
            stall=0.05,
            malformed_json=0.03,
            empty_choices=0.02,
            connection_closed=0.02,
            stall_s=stall_s,
            retry_after_s=retry_after_s,
        )

    @property
    def rate(self) -> float:
        return sum(getattr(self, name) for name in FAULTS)

    def draw(self, body_key: str, seen_before: int) -> str | None:
        """The fault of the `seen_before`-th repeat of the body `body_key` (None: a clean answer)."""
        if self.faulty_repeats is not None and seen_before >= self.faulty_repeats:
            return None
        digest = hashlib.sha256(f"{self.seed}:{body_key}:{seen_before}".encode()).digest()
        return pick_by_rates(int.from_bytes(digest[:8], "big") / 2.0**64, self, FAULTS)


@dataclass(frozen=True)
class LatencyMix:
    """Seconds a reply takes, drawn per request: chat replies uniform in `chat_s`, except a share
    `tail` of them uniform in `tail_s` (the slow tail); reasoning models' replies (the server's
    `reasoning` names) uniform in `reasoning_s`. Every latency is multiplied by `scale`."""

    seed: int = 0
    chat_s: tuple[float, float] = (1.0, 3.0)
    tail: float = 0.03
    tail_s: tuple[float, float] = (5.0, 15.0)
    reasoning_s: tuple[float, float] = (20.0, 40.0)
    scale: float = 1.0

    def __post_init__(self) -> None:
        spans = (self.chat_s, self.tail_s, self.reasoning_s)
        if not 0.0 <= self.tail <= 1.0 or self.scale < 0 or any(not 0 <= lo <= hi for lo, hi in spans):
            raise ValueError(
                "latency mix: tail must be in [0, 1], scale >= 0, and each span (low, high) with 0 <= low <= high"
            )

    def draw(self, body_key: str, repeat: int, reasoning: bool) -> float:
        """The latency of the `repeat`-th arrival of the body `body_key`."""
        digest = hashlib.sha256(f"latency:{self.seed}:{body_key}:{repeat}".encode()).digest()
        pick, where = (int.from_bytes(digest[i : i + 8], "big") / 2.0**64 for i in (0, 8))
        low, high = self.reasoning_s if reasoning else self.tail_s if pick < self.tail else self.chat_s
        return (low + (high - low) * where) * self.scale


def body_key(body: Any) -> str:
    """A request body's identity: sha256 of its canonical JSON (the same request sent again: the same key)."""
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Served:
    """One request as the server saw it: its body key, the how-many-th time that body came, the
    fault drawn, and the outcome: `answered` (a whole 200 completion delivered), `rejected` (429),
    `refused` (400), `fault` (the fault was served), `abandoned` (the client left before the answer)."""

    key: str
    repeat: int
    fault: str | None
    outcome: str


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


#: the chosen token's probability in a reply's log-probabilities; the rest is shared by the alternatives
CHOSEN_P = 0.7
#: alternatives a reply's top log-probabilities list after the chosen token (multiple-choice letters first)
ALTERNATIVES = ("A", "B", "C", "D", "yes", "no", "the", "a")


def _token_logprobs(tokens: Sequence[str], top: int) -> list[dict[str, Any]]:
    """OpenAI's `logprobs.content` for `tokens` (one a word here): each chosen at CHOSEN_P, with up to
    `top` entries of its top log-probabilities (itself first, then other alternatives evenly)."""
    rows = []
    for token in tokens:
        others = [t for t in ALTERNATIVES if t != token][: max(0, top - 1)]
        rest = math.log((1 - CHOSEN_P) / max(1, len(others)))
        listed = [{"token": token, "logprob": math.log(CHOSEN_P), "bytes": None}]
        listed += [{"token": t, "logprob": rest, "bytes": None} for t in others]
        rows.append({"token": token, "logprob": math.log(CHOSEN_P), "bytes": None, "top_logprobs": listed[:top]})
    return rows


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
        faults: FaultMix | None = None,
        latency: LatencyMix | None = None,
        burst_s: float | None = None,
        keep_requests: bool = True,
        retry_after_ms: bool = False,
    ) -> None:
        """`latency` (a LatencyMix) replaces the fixed `latency_s`; `keep_requests` False keeps no
        request bodies (`requests` stays empty: a long benchmark's memory); `retry_after_ms` adds
        the exact wait to a 429 in OpenAI's `retry-after-ms` header (Retry-After alone says whole
        seconds, rounded up)."""
        self.latency_s = latency_s
        self.latency = latency
        self.burst_s = burst_s
        self.keep_requests = keep_requests
        self.retry_after_ms = retry_after_ms
        self.uncounted = uncounted  # a request whose last message is exactly this is answered, not counted
        self.limit = limit  # requests per window; 0: never 429
        self.window_s = window_s
        self.reply = reply
        self.max_requests = max_requests
        self.max_seconds = max_seconds
        self.retry_after = retry_after
        self.reasoning = dict(reasoning or {})  # model name -> hidden reasoning tokens per answer
        self.strict_reasoning_params = strict_reasoning_params
        self.faults = faults
        self.requests: list[dict[str, Any]] = []  # every accepted request body, in arrival order
        self.log: list[Served] = []  # every request (warm-ups aside) with its fault and outcome
        self._repeats: Counter[str] = Counter()  # per body key: how many times it came so far
        self.stats = ServerStats()
        self._window: deque[float] = deque()
        self._burst: deque[float] = deque()  # accepted requests of the last burst_s
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
        if self.limit and self.burst_s:
            while self._burst and self._burst[0] <= now - self.burst_s:
                self._burst.popleft()
            if len(self._burst) >= max(1, math.floor(self.limit * self.burst_s / self.window_s)):
                return self._burst[0] + self.burst_s - now
            self._burst.append(now)
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
            return await self._deliver(request, self._answer(body, messages, "ok"), None)
        key = body_key(body)
        repeat = self._repeats[key]
        self._repeats[key] += 1
        now = time.monotonic()
        wait = self._admit(now)
        self.stats.arrivals.append((now, 200 if wait is None else 429))
        if wait is not None:
            self.stats.rejected += 1
            self.log.append(Served(key, repeat, None, "rejected"))
            headers = {"Retry-After": str(max(1, math.ceil(wait)))} if self.retry_after else {}
            if self.retry_after and self.retry_after_ms:
                headers["retry-after-ms"] = str(max(1, math.ceil(wait * 1000)))
            return web.json_response(
                {"error": {"message": "rate limit exceeded", "type": "rate_limit_error", "code": "rate_limit"}},
                status=429,
                headers=headers,
            )
        if self.keep_requests:
            self.requests.append(body)
        refusal = self._refusal(body)
        if refusal is not None:
            self.log.append(Served(key, repeat, None, "refused"))
            return web.json_response(
                {"error": {"message": refusal, "type": "invalid_request_error", "code": "unsupported_parameter"}},
                status=400,
            )
        fault = self.faults.draw(key, repeat) if self.faults is not None else None
        self._in_flight += 1
        self.stats.max_in_flight = max(self.stats.max_in_flight, self._in_flight)
        try:
            delay = self._latency(body, key, repeat)
            if delay:
                await asyncio.sleep(delay)
            if fault == "stall":
                try:
                    waited = await self._stall(request)
                except asyncio.CancelledError:  # the server cancelled the handler of a client that left
                    self.log.append(Served(key, repeat, fault, "abandoned"))
                    raise
                if not waited:
                    self.log.append(Served(key, repeat, fault, "abandoned"))
                    return web.Response(status=504)  # nobody is left to read it
            text = self.reply(messages)
        finally:
            self._in_flight -= 1
        answer = self._answer(body, messages, text)
        if fault in (None, "stall"):
            return await self._deliver(request, answer, Served(key, repeat, fault, "answered"))
        self.log.append(Served(key, repeat, fault, "fault"))
        return await self._serve_fault(request, fault, answer)

    async def _stall(self, request: Any) -> bool:
        """Wait stall_s (True), or until the client gives up or the server stops (False)."""
        assert self.faults is not None
        deadline = time.monotonic() + self.faults.stall_s
        while time.monotonic() < deadline:
            transport = request.transport
            if transport is None or transport.is_closing() or (self._stop is not None and self._stop.is_set()):
                return False
            await asyncio.sleep(min(0.02, max(0.0, deadline - time.monotonic())))
        return True

    async def _deliver(self, request: Any, answer: dict[str, Any], served: Served | None) -> Any:
        """Send a whole 200 completion; log it as answered only once it was written to a live connection."""
        from aiohttp import web

        response = web.Response(body=json.dumps(answer).encode(), content_type="application/json")
        transport = request.transport
        delivered = transport is not None and not transport.is_closing()
        if delivered:
            try:
                await response.prepare(request)
                await response.write_eof()
            except (ConnectionError, RuntimeError):
                delivered = False
        if served is not None:
            self.log.append(served if delivered else Served(served.key, served.repeat, served.fault, "abandoned"))
        return response

    async def _serve_fault(self, request: Any, fault: str | None, answer: dict[str, Any]) -> Any:
        from aiohttp import web

        assert self.faults is not None
        if fault == "server_error":
            return web.json_response(
                {"error": {"message": "internal error (loopback fault)", "type": "server_error"}}, status=500
            )
        if fault == "unavailable":
            wait = self.faults.retry_after_s
            headers = {"Retry-After": str(max(1, math.ceil(wait))), "retry-after-ms": str(int(wait * 1000))}
            return web.json_response(
                {"error": {"message": "overloaded (loopback fault)", "type": "server_error"}},
                status=503,
                headers=headers,
            )
        whole = json.dumps(answer).encode()
        if fault == "malformed_json":
            return web.Response(body=whole[: len(whole) // 2], content_type="application/json")
        if fault == "empty_choices":
            return web.json_response({**answer, "choices": []})
        if fault == "no_message":
            return web.json_response({**answer, "choices": [{"index": 0, "finish_reason": "stop"}]})
        if fault == "empty_body":
            return web.Response(body=b"", content_type="application/json")
        if fault == "html_body":
            return web.Response(text="<html><body><h1>502 Bad Gateway</h1></body></html>", content_type="text/html")
        if fault == "connection_closed":
            response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
            response.content_length = len(whole)
            await response.prepare(request)
            await response.write(whole[: len(whole) // 2])
            if request.transport is not None:
                request.transport.close()
            return response
        raise ValueError(f"unknown loopback fault {fault!r}")

    def settle(self, timeout_s: float = 10.0) -> None:
        """Wait until no request is being handled (a stalled handler notices its client left only
        at its next look), so `log` holds every request's outcome."""
        deadline = time.monotonic() + timeout_s
        while self._in_flight and time.monotonic() < deadline:
            time.sleep(0.02)

    def answered_keys(self) -> list[str]:
        """The body key of every request answered with a whole completion, one per delivery."""
        return [served.key for served in self.log if served.outcome == "answered"]

    def outcomes(self) -> Counter[tuple[str | None, str]]:
        """How many requests met each (fault, outcome)."""
        return Counter((served.fault, served.outcome) for served in self.log)

    def _latency(self, body: dict[str, Any], key: str, repeat: int) -> float:
        if self.latency is None:
            return self.latency_s
        return self.latency.draw(key, repeat, body.get("model") in self.reasoning)

    def _refusal(self, body: dict[str, Any]) -> str | None:
        """What a reasoning API refuses, in OpenAI's words (None: the request is accepted)."""
        if body.get("model") not in self.reasoning:
            return None
        if body.get("logprobs") or body.get("top_logprobs"):
            return "logprobs are not supported with reasoning models"
        if not self.strict_reasoning_params:
            return None
        if body.get("temperature") not in (None, 1, 1.0):
            return (
                f"Unsupported value: 'temperature' does not support {body['temperature']} with this model. "
                "Only the default (1) value is supported."
            )
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
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_chars // 4 + 1,
            "completion_tokens": hidden + visible,
            "total_tokens": prompt_chars // 4 + 1 + hidden + visible,
        }
        if body.get("model") in self.reasoning:
            usage["completion_tokens_details"] = {"reasoning_tokens": hidden}
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": finish,
        }
        if body.get("logprobs"):  # a chat model gives them when asked, as OpenAI's do (reasoning ones refused above)
            choice["logprobs"] = {"content": _token_logprobs(text.split(), int(body.get("top_logprobs") or 0))}
        return {
            "id": f"loopback-{self._seen}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "loopback"),
            "choices": [choice],
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

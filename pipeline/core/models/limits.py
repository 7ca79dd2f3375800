"""Provider limits shared by every job process on a machine: requests and tokens per minute,
requests in flight, a shared pause after `Retry-After`, and concurrency that adapts to 429s.

Snakemake runs each job in its own process, so a limit held in memory holds per process only
(two jobs at `rpm: 120` send 240 a minute). The limits live instead in one SQLite file (the
*limit store*, default `provider-limits.sqlite` in the folder that holds the response cache, `gateway.limit_store`
to move it) that every gateway on the machine opens. Each admission is one short `BEGIN
IMMEDIATE` transaction, which SQLite serialises across processes with a file lock:

- `starts`: every request of the last minute, per provider, with its token estimate (the rpm and
  tpm windows). A request counts from its start until a minute after its answer (see
  RPM_HEADROOM_S). Starts are also spaced 60/rpm seconds apart, so a provider that counts in a
  sliding minute never sees a burst.
- `leases`: one row per request in flight (host, pid). A process killed mid-request leaves its
  rows behind; they are dropped when their pid is gone (same host) or after the request timeout.
- `providers`: the adaptive concurrency (halved on a burst of 429s, grown by one per window of
  successes back to `max_concurrency`), the shared pause set by `Retry-After`, and the time of
  the provider's last answer (a 429 gives up only after the provider stopped answering).

Inside a process one coroutine per provider polls the store at a time (the others queue on an
asyncio lock), so hundreds of games on one event loop cost one poller, not hundreds. SQLite runs
on a single worker thread per process, so the event loop never blocks on the file lock.

SQLite's locks are unreliable on network filesystems: keep the store on a local disk. On a cluster
each node has its own store and holds `1/limit_share` of each provider limit (see
docs/api_scale.md: Snakemake's global `api_jobs` resource bounds the jobs that share the account).
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pipeline.core.artifacts.io import pid_alive
from pipeline.core.models.roster import ProviderLimits

T = TypeVar("T")

WINDOW_S = 60.0
# A request reaches the provider some time between its start and its answer (litellm's work
# before the send takes seconds on a busy CPU, most of all a process's first call), so once
# answered it counts at its answer time, the latest moment it can have arrived: then no 60 s of
# the provider's can hold more than rpm of ours. One more second covers clock granularity.
RPM_HEADROOM_S = 1.0
STORE_NAME = "provider-limits.sqlite"
_POLL_S = 0.02  # seconds between polls while only the concurrency limit holds a request back
_HOST = socket.gethostname()

_SCHEMA = """
CREATE TABLE IF NOT EXISTS providers (
    name TEXT PRIMARY KEY,
    concurrency REAL NOT NULL,
    next_start REAL NOT NULL DEFAULT 0,
    paused_until REAL NOT NULL DEFAULT 0,
    last_ok REAL NOT NULL DEFAULT 0,
    last_cut REAL NOT NULL DEFAULT 0,
    rejected INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS starts (id INTEGER PRIMARY KEY, provider TEXT NOT NULL, t REAL NOT NULL, tokens INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS starts_by_provider ON starts (provider, t);
CREATE TABLE IF NOT EXISTS leases (id INTEGER PRIMARY KEY, provider TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL, t REAL NOT NULL);
CREATE INDEX IF NOT EXISTS leases_by_provider ON leases (provider);
"""


@dataclass(frozen=True)
class Ticket:
    """A granted start: release it with the outcome once the provider answered (or failed)."""

    provider: str
    lease_id: int
    start_id: int


@dataclass(frozen=True)
class EffectiveLimits:
    """One provider's limits as this store enforces them (the params divided by the share)."""

    rpm: float
    tpm: float
    max_concurrency: float
    adaptive: bool
    lease_timeout_s: float

    @classmethod
    def of(cls, limits: ProviderLimits, share: int, lease_timeout_s: float) -> EffectiveLimits:
        return cls(
            rpm=limits.rpm / share,
            tpm=limits.tpm / share,
            max_concurrency=max(1.0, limits.max_concurrency / share),
            adaptive=limits.adaptive,
            lease_timeout_s=lease_timeout_s,
        )


class LimitStore:
    """The machine's shared limit state for every provider (one SQLite file)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=60.0, isolation_level=None, check_same_thread=False)
        self._setup()

    def _setup(self, deadline_s: float = 60.0) -> None:
        """WAL mode and the tables. Switching to WAL takes an exclusive lock that SQLite's busy timeout
        does not wait for, so job processes starting together on a new file retry it."""
        give_up = time.monotonic() + deadline_s
        while True:
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.executescript(_SCHEMA)
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > give_up:
                    raise
                time.sleep(0.05 + random.random() * 0.1)

    # -- one transaction each ----------------------------------------------------------
    def _transaction(self, work: Callable[[], T]) -> T:
        """`work` inside one BEGIN IMMEDIATE transaction (the file lock that serialises processes)."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            result = work()
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")
        return result

    def try_start(self, provider: str, limits: EffectiveLimits, tokens: int) -> tuple[Ticket | None, float]:
        """Grant a start now, or say how long to wait before asking again."""
        return self._transaction(lambda: self._try_start(provider, limits, tokens))

    def _try_start(self, provider: str, limits: EffectiveLimits, tokens: int) -> tuple[Ticket | None, float]:
        db = self._db
        now = time.time()
        row = self._provider_row(provider, limits, now)
        concurrency, next_start, paused_until = row
        if paused_until > now:
            return None, paused_until - now
        rpm_window = WINDOW_S + RPM_HEADROOM_S
        db.execute("DELETE FROM starts WHERE provider = ? AND t < ?", (provider, now - rpm_window))
        if limits.rpm:
            if next_start > now:
                return None, next_start - now
            count, oldest = db.execute("SELECT COUNT(*), MIN(t) FROM starts WHERE provider = ?", (provider,)).fetchone()
            if count >= limits.rpm:
                return None, max(_POLL_S, oldest + rpm_window - now)
        if limits.tpm:
            used, oldest = db.execute(
                "SELECT COALESCE(SUM(tokens), 0), MIN(t) FROM starts WHERE provider = ? AND t >= ?",
                (provider, now - WINDOW_S),
            ).fetchone()
            # a request larger than the whole budget still runs, alone in its window
            if used and used + tokens > limits.tpm:
                return None, max(_POLL_S, oldest + WINDOW_S - now)
        if self._in_flight(provider, limits, now, concurrency) >= int(concurrency):
            return None, _POLL_S
        start_id: int | None = 0  # no rpm or tpm: nothing to count
        if limits.rpm or limits.tpm:
            start_id = db.execute(
                "INSERT INTO starts (provider, t, tokens) VALUES (?, ?, ?)", (provider, now, tokens)
            ).lastrowid
        lease_id = db.execute(
            "INSERT INTO leases (provider, host, pid, t) VALUES (?, ?, ?, ?)", (provider, _HOST, os.getpid(), now)
        ).lastrowid
        if limits.rpm:
            db.execute(
                "UPDATE providers SET next_start = ? WHERE name = ?",
                (max(now, next_start) + WINDOW_S / limits.rpm, provider),
            )
        return Ticket(provider, int(lease_id or 0), int(start_id or 0)), 0.0

    def finish(
        self,
        ticket: Ticket,
        limits: EffectiveLimits,
        *,
        outcome: str,
        tokens: int | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        """Free the lease; record an answer (`ok`), a 429 (`rate_limit`) or another failure."""
        self._transaction(lambda: self._finish(ticket, limits, outcome, tokens, retry_after_s))

    def _finish(
        self, ticket: Ticket, limits: EffectiveLimits, outcome: str, tokens: int | None, retry_after_s: float | None
    ) -> None:
        db = self._db
        now = time.time()
        db.execute("DELETE FROM leases WHERE id = ?", (ticket.lease_id,))
        db.execute(
            "UPDATE starts SET t = MAX(t, ?), tokens = COALESCE(?, tokens) WHERE id = ?",
            (now, None if tokens is None else int(tokens), ticket.start_id),
        )
        if outcome == "ok":
            # additive increase: +1 after about one window's worth of answers at this level
            grow = "MIN(?, concurrency + 1.0 / concurrency)" if limits.adaptive else "?"
            db.execute(
                f"UPDATE providers SET last_ok = ?, concurrency = {grow} WHERE name = ?",
                (now, limits.max_concurrency, ticket.provider),
            )
        elif outcome == "rate_limit":
            db.execute("UPDATE providers SET rejected = rejected + 1 WHERE name = ?", (ticket.provider,))
            if limits.adaptive:
                # a burst of 429s (answers to requests sent together) halves once, not per reply
                db.execute(
                    "UPDATE providers SET concurrency = MAX(1.0, concurrency / 2), last_cut = ? "
                    "WHERE name = ? AND last_cut < ?",
                    (now, ticket.provider, now - 1.0),
                )
            if retry_after_s:
                db.execute(
                    "UPDATE providers SET paused_until = MAX(paused_until, ?) WHERE name = ?",
                    (now + retry_after_s, ticket.provider),
                )

    def last_answer(self, provider: str) -> float:
        row = self._db.execute("SELECT last_ok FROM providers WHERE name = ?", (provider,)).fetchone()
        return float(row[0]) if row else 0.0

    def state(self, provider: str) -> dict[str, float]:
        """The provider's shared state (for reports and tests)."""
        row = self._db.execute(
            "SELECT concurrency, paused_until, last_ok, rejected FROM providers WHERE name = ?", (provider,)
        ).fetchone()
        if row is None:
            return {}
        in_flight = self._db.execute("SELECT COUNT(*) FROM leases WHERE provider = ?", (provider,)).fetchone()[0]
        return {
            "concurrency": row[0],
            "paused_until": row[1],
            "last_ok": row[2],
            "rejected": row[3],
            "in_flight": in_flight,
        }

    # -- helpers inside a transaction -----------------------------------------------------
    def _provider_row(self, provider: str, limits: EffectiveLimits, now: float) -> tuple[float, float, float]:
        row = self._db.execute(
            "SELECT concurrency, next_start, paused_until FROM providers WHERE name = ?", (provider,)
        ).fetchone()
        if row is None:
            self._db.execute(
                "INSERT INTO providers (name, concurrency, last_ok) VALUES (?, ?, ?)",
                (provider, limits.max_concurrency, now),
            )
            return limits.max_concurrency, 0.0, 0.0
        concurrency = min(float(row[0]), limits.max_concurrency)  # params lowered since: obey them
        if not limits.adaptive:
            concurrency = limits.max_concurrency
        return concurrency, float(row[1]), float(row[2])

    def _in_flight(self, provider: str, limits: EffectiveLimits, now: float, concurrency: float) -> int:
        """Requests in flight; at the limit, first drop the leases of processes that died."""
        db = self._db
        count = db.execute("SELECT COUNT(*) FROM leases WHERE provider = ?", (provider,)).fetchone()[0]
        if count < int(concurrency):
            return int(count)
        owners = db.execute("SELECT DISTINCT host, pid FROM leases WHERE provider = ?", (provider,)).fetchall()
        dead = [(host, pid) for host, pid in owners if host == _HOST and not pid_alive(pid)]
        db.executemany(
            "DELETE FROM leases WHERE provider = ? AND host = ? AND pid = ?",
            [(provider, host, pid) for host, pid in dead],
        )
        db.execute("DELETE FROM leases WHERE provider = ? AND t < ?", (provider, now - limits.lease_timeout_s))
        return int(db.execute("SELECT COUNT(*) FROM leases WHERE provider = ?", (provider,)).fetchone()[0])


class SharedLimiter:
    """The asyncio side of a LimitStore: admission of one request at a time per provider."""

    def __init__(self, store: LimitStore) -> None:
        self.store = store
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="limit-store")
        self._heads: dict[tuple[int, str], asyncio.Lock] = {}

    async def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, lambda: fn(*args, **kwargs))

    @asynccontextmanager
    async def admitted(self, provider: str, limits: EffectiveLimits, tokens: int) -> AsyncIterator[Admission]:
        """Wait for a start that every limit allows; the lease is freed when the block exits."""
        head = self._heads.setdefault((id(asyncio.get_running_loop()), provider), asyncio.Lock())
        async with head:
            while True:
                ticket, wait = await self._call(self.store.try_start, provider, limits, tokens)
                if ticket is not None:
                    break
                await asyncio.sleep(wait)
        admission = Admission(ticket)
        try:
            yield admission
        finally:
            await self._call(
                self.store.finish,
                ticket,
                limits,
                outcome=admission.outcome,
                tokens=admission.tokens,
                retry_after_s=admission.retry_after_s,
            )

    async def last_answer(self, provider: str) -> float:
        return float(await self._call(self.store.last_answer, provider))


@dataclass
class Admission:
    """What the request did, filled in by the caller before the admission block exits."""

    ticket: Ticket
    outcome: str = "error"
    tokens: int | None = None
    retry_after_s: float | None = None


_LIMITERS: dict[tuple[int, Path], SharedLimiter] = {}


def shared_limiter(path: str | os.PathLike[str]) -> SharedLimiter:
    """One limiter per store file per process, shared by every gateway of the process (a forked
    child opens its own: a connection and a worker thread do not survive a fork)."""
    key = (os.getpid(), Path(path).resolve())
    limiter = _LIMITERS.get(key)
    if limiter is None:
        limiter = _LIMITERS[key] = SharedLimiter(LimitStore(key[1]))
    return limiter


def estimate_tokens(text_chars: int, max_tokens: int | None) -> int:
    """Tokens a request may use before it is sent: about 4 characters a token, plus the reply cap."""
    return text_chars // 4 + 1 + int(max_tokens or 0)


class ProcessRateLimiter:
    """Spaces request starts at least 60/rpm seconds apart, within one process: for a provider
    served inside the process (the embedded local model), which no other process shares. Every
    other provider goes through the machine-wide `SharedLimiter`."""

    def __init__(self, rpm: float) -> None:
        self.interval = 60.0 / rpm if rpm > 0 else 0.0
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        if not self.interval:
            return
        async with self._lock:
            now = time.monotonic()
            delay = self._next - now
            self._next = max(now, self._next) + self.interval
        if delay > 0:
            await asyncio.sleep(delay)


@dataclass
class ProcessGate:
    """A process-local provider's concurrency and request spacing, per event loop."""

    semaphore: asyncio.Semaphore
    limiter: ProcessRateLimiter

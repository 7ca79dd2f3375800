"""Provider limits shared by every job process on a machine: requests and tokens per minute,
requests in flight, a shared pause after `Retry-After`, and concurrency that adapts to 429s.

Snakemake runs each job in its own process, so a limit held in memory holds per process only
(two jobs at `rpm: 120` send 240 a minute). The limits live instead in one SQLite file (the
*limit store*, default `provider-limits.sqlite` in the folder that holds the response cache, `gateway.limit_store`
to move it) that every gateway on the machine opens. Each admission is one short `BEGIN
IMMEDIATE` transaction, which SQLite serialises across processes with a file lock:

- `starts`: every request of the last minute, per provider, with its token estimate (the rpm and
  tpm windows). A request counts from the moment it was handed to litellm for WINDOW_S +
  RPM_HEADROOM_S, as a provider counts it from its arrival (see RPM_HEADROOM_S). Starts are also
  spaced 60/rpm seconds apart, so a provider that counts in a sliding minute never sees a burst.
- `leases`: one row per request in flight (host, pid). A process killed mid-request leaves its
  rows behind; they are dropped when their pid is gone (same host) or after the request timeout.
- `providers`: the adaptive concurrency (halved on a burst of 429s, grown by one per window of
  successes back to `max_concurrency`), the shared pause set by `Retry-After`, and the time of
  the provider's last answer (a 429 gives up only after the provider stopped answering).

Inside a process one coroutine per provider polls the store at a time (the others queue on an
asyncio lock), so hundreds of games on one event loop cost one poller, not hundreds. A start runs
its transaction on the event loop when the store is free at that moment, and never waits for the
file lock there: when another process holds it, the start tries again on the loop a few times,
LOOP_RETRY_S apart (another process's transaction takes well under a millisecond), and only then
does a single worker thread per process wait for the lock and run every job queued meanwhile in
one transaction. A request's end is not waited for: it runs with the next transaction (within
FLUSH_S; a busy store only postpones it to the next), so at a thousand requests in flight a start
costs about one short transaction and no thread hand-off (which cost more than the transaction;
and while the thread waited for the lock, holding this process's connection, every start of the
loop queued behind it).
Each check costs the same at 10,000 requests a minute as at 10: the requests in each window and in
flight are running counts (`windows`), kept with the rows and corrected as rows leave the window,
not counted again at every start. Under `rpm` a start may be granted up to RESERVE_S ahead of its
turn in the spacing; the request then waits for its turn in its own coroutine.

SQLite's locks are unreliable on network filesystems: keep the store on a local disk. On a cluster
each node has its own store and holds `1/limit_share` of each provider limit (see
docs/api_scale.md: Snakemake's global `api_jobs` resource bounds the jobs that share the account).
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import queue
import random
import socket
import sqlite3
import threading
import time
import weakref
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from pipeline.core.artifacts.io import pid_alive
from pipeline.core.models.concurrency import take_batch
from pipeline.core.models.roster import ProviderLimits

T = TypeVar("T")
log = logging.getLogger(__name__)

WINDOW_S = 60.0
# A provider counts a request from its arrival, a little after the gateway hands it to litellm
# (litellm's own work before the send: a few ms, more on a busy CPU). A request therefore counts
# here from its hand-off for WINDOW_S plus this margin, which covers that lag: no 60 s of the
# provider's then hold more than rpm of ours, and the limit costs only 1/61 of itself. (Counting
# until a minute after the answer instead, the safe bound without a margin, cost latency/61 of the
# limit: 30 s reasoning replies lost a third of it.) A process's first request to a provider
# counts until a minute after its answer all the same: litellm's first call imports for seconds
# before it sends.
RPM_HEADROOM_S = 1.0
STORE_NAME = "provider-limits.sqlite"
_POLL_S = 0.02  # seconds between polls while only the concurrency limit holds a request back
BUSY_S = 60.0  # how long the store's thread waits for another process's transaction
# how long the end of a request may wait for the next transaction (meanwhile its lease still
# counts: the safe side); one transaction then takes the ends of many requests
FLUSH_S = 0.05
# a start the store is busy for tries again on the event loop this often, LOOP_TRIES times, before
# the store's thread waits for the lock instead
LOOP_RETRY_S = 0.002
LOOP_TRIES = 5
# how far ahead of its turn in the rpm spacing a start may be granted (its request then waits for
# its turn): one transaction per start instead of a refused one and a granted one
RESERVE_S = 0.1
# how often the counts drop the rows that left their window (between sweeps a row counts a little
# longer than its minute: the limits err on the safe side)
SWEEP_S = 0.25
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
CREATE TABLE IF NOT EXISTS windows (
    provider TEXT PRIMARY KEY,
    starts INTEGER NOT NULL,
    tokens INTEGER NOT NULL,
    tokens_since REAL NOT NULL,
    in_flight INTEGER NOT NULL,
    swept REAL NOT NULL
);
"""


@dataclass(frozen=True)
class Ticket:
    """A granted start: release it with the outcome once the provider answered (or failed).
    `at`: the wall-clock time of its turn in the rpm spacing (0: at once); `first`: the process's
    first request to the provider (it counts until a minute after its answer)."""

    provider: str
    lease_id: int
    start_id: int
    at: float = 0.0
    first: bool = False


@dataclass
class Window:
    """A provider's running counts (the `windows` row): start rows kept (those of the last
    WINDOW_S + RPM_HEADROOM_S, swept out at `swept`), their tokens counted since `tokens_since`
    (the tpm window's edge), and leases (requests in flight)."""

    starts: int
    tokens: int
    tokens_since: float
    in_flight: int
    swept: float


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


class _JobFailed(Exception):
    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass(frozen=True)
class _Job:
    """Work for the store's thread: `work` runs inside a transaction, then `done(result, error)`."""

    work: Callable[[], Any]
    done: Callable[[Any, BaseException | None], None] | None


class LimitStore:
    """The machine's shared limit state for every provider (one SQLite file).

    A start runs on the caller's thread when the store is free at that moment (`run_now`: no lock
    waited for, so an event loop never blocks on another process). Otherwise, and for every other
    job, one thread of this process works on it (`submit`): each batch of jobs queued meanwhile runs
    in one BEGIN IMMEDIATE transaction (should one fail, the others run again, each in a transaction
    of its own), waiting for the file lock as long as it takes. The ends of requests are deferred
    (`defer`) and run with the next transaction of either kind. The blocking methods (`try_start`,
    `finish`, `state`) queue their job and wait for it, after everything queued or deferred
    before."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=BUSY_S, isolation_level=None, check_same_thread=False)
        self._setup()
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._deferred: deque[_Job] = deque()  # the ends of requests, for the next transaction
        self._use = threading.Lock()  # the connection: one transaction at a time in this process
        self._worker: threading.Thread | None = None
        self._worker_lock = threading.Lock()
        atexit.register(self.close)  # a request's end queued or deferred just before exit still frees its lease

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

    # -- the caller's thread, when the store is free -------------------------------------------
    def run_now(self, work: Callable[[], T]) -> tuple[T] | None:
        """`(result,)` of `work` run in a transaction on this thread, after the deferred ends of
        requests, when the store is free at once; None when it is not (the store's thread or another
        process holds it, or a job failed): the caller then queues `work` for the store's thread."""
        if not self._use.acquire(blocking=False):
            return None
        try:
            db = self._db
            db.execute("PRAGMA busy_timeout = 0")  # the lock now or never: no waiting on this thread
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError:
                return None
            finally:
                db.execute(f"PRAGMA busy_timeout = {int(BUSY_S * 1000)}")
            ends = self._take_deferred()
            try:
                for job in ends:
                    job.work()
                result = work()
                db.execute("COMMIT")
            except Exception:  # noqa: BLE001 - the store's thread runs them again, each alone, and reports
                if db.in_transaction:
                    db.execute("ROLLBACK")
                for job in ends:
                    self.submit(job.work)
                return None
            return (result,)
        finally:
            self._use.release()

    def defer(self, work: Callable[[], Any]) -> None:
        """Run `work` (the end of a request: nobody waits for it) with the next transaction."""
        self._deferred.append(_Job(work, None))

    def deferred(self) -> int:
        """Ends of requests waiting for the next transaction."""
        return len(self._deferred)

    def _take_deferred(self) -> list[_Job]:
        taken = []
        while True:
            try:
                taken.append(self._deferred.popleft())
            except IndexError:
                return taken

    # -- the store's thread ----------------------------------------------------------------
    def submit(
        self, work: Callable[[], T], done: Callable[[T | None, BaseException | None], None] | None = None
    ) -> None:
        """Queue `work` (store calls, run inside a transaction) for the store's thread; `done(result,
        error)` runs on that thread once it ran (None: nobody waits, an error is logged)."""
        if self._worker is None:
            self._start_worker()
        self._jobs.put(_Job(work, done))

    def call(self, work: Callable[[], T]) -> T:
        """Run `work` on the store's thread and wait for it."""
        ran = threading.Event()
        outcome: list[tuple[Any, BaseException | None]] = []

        def done(result: Any, error: BaseException | None) -> None:
            outcome.append((result, error))
            ran.set()

        self.submit(work, done)
        ran.wait()
        result, error = outcome[0]
        if error is not None:
            raise error
        return result

    def close(self) -> None:
        """Run every job still queued or deferred (the ends of requests), then stop the store's thread."""
        worker = self._worker
        if worker is not None and worker.is_alive():
            self._jobs.put(None)
            worker.join(timeout=30)
        elif self._deferred:
            self._run([])

    def _start_worker(self) -> None:
        with self._worker_lock:
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="limit-store", daemon=True)
                self._worker.start()

    def _work(self) -> None:
        while True:
            batch = take_batch(self._jobs)
            jobs = [job for job in batch if job is not None]
            if jobs or self._deferred:
                self._run(jobs)
            if len(jobs) < len(batch):  # close(): everything queued before it has run
                return

    def _run(self, queued: list[_Job]) -> None:
        """The deferred ends, then the queued jobs, in one transaction; when one fails, the others run
        again, each in its own."""
        with self._use:
            jobs = [*self._take_deferred(), *queued]
            try:
                outcomes = self._transaction(jobs)
            except _JobFailed:
                outcomes = [self._alone(job) for job in jobs]
            except sqlite3.Error as exc:  # the file lock not had within its timeout, a disk error
                outcomes = [(None, exc)] * len(jobs)
        for job, (result, error) in zip(jobs, outcomes, strict=True):
            if job.done is not None:
                job.done(result, error)
            elif error is not None:
                log.warning("provider limits (%s): %s: %s", self.path, type(error).__name__, error)

    def _alone(self, job: _Job) -> tuple[Any, BaseException | None]:
        try:
            return self._transaction([job])[0]
        except _JobFailed as failed:
            return None, failed.error
        except sqlite3.Error as exc:
            return None, exc

    def _transaction(self, jobs: list[_Job]) -> list[tuple[Any, BaseException | None]]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            results: list[tuple[Any, BaseException | None]] = []
            for job in jobs:
                try:
                    results.append((job.work(), None))
                except Exception as exc:  # handed to whoever waits for this job
                    raise _JobFailed(exc) from exc
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise
        return results

    # -- blocking calls ------------------------------------------------------------------
    def try_start(self, provider: str, limits: EffectiveLimits, tokens: int) -> tuple[Ticket | None, float]:
        """Grant a start now, or say how long to wait before asking again."""
        return self.call(lambda: self.start_in_transaction(provider, limits, tokens))

    def finish(
        self,
        ticket: Ticket,
        limits: EffectiveLimits,
        *,
        outcome: str,
        tokens: int | None = None,
        retry_after_s: float | None = None,
        sent: float = 0.0,
    ) -> None:
        """Free the lease; record an answer (`ok`), a 429 (`rate_limit`) or another failure.
        `sent`: when the request was handed to litellm (0: at its turn)."""
        self.call(lambda: self.finish_in_transaction(ticket, limits, outcome, tokens, retry_after_s, sent))

    def state(self, provider: str) -> dict[str, float]:
        """The provider's shared state (for reports and tests), after every job queued before."""
        return self.call(lambda: self._state(provider))

    # -- inside a transaction (the store's thread) --------------------------------------------
    def start_in_transaction(self, provider: str, limits: EffectiveLimits, tokens: int) -> tuple[Ticket | None, float]:
        db = self._db
        now = time.time()
        concurrency, next_start, paused_until, window = self._read(provider, limits, now)
        if paused_until > now:
            return None, paused_until - now
        if limits.rpm:
            if next_start > now + RESERVE_S:
                return None, next_start - now - RESERVE_S
            if window.starts >= limits.rpm:
                (oldest,) = db.execute("SELECT MIN(t) FROM starts WHERE provider = ?", (provider,)).fetchone()
                return None, max(_POLL_S, (oldest or now) + WINDOW_S + RPM_HEADROOM_S - now)
        # a request larger than the whole budget still runs, alone in its window
        if limits.tpm and window.tokens and window.tokens + tokens > limits.tpm:
            (oldest,) = db.execute(
                "SELECT MIN(t) FROM starts WHERE provider = ? AND t >= ?", (provider, window.tokens_since)
            ).fetchone()
            return None, max(_POLL_S, (oldest or now) + WINDOW_S - now)
        if window.in_flight >= int(concurrency) and self._recount(provider, limits, now, window) >= int(concurrency):
            return None, _POLL_S
        at = max(now, next_start) if limits.rpm else now  # its turn in the spacing
        start_id: int | None = 0  # no rpm or tpm: nothing to count
        if limits.rpm or limits.tpm:
            start_id = db.execute(
                "INSERT INTO starts (provider, t, tokens) VALUES (?, ?, ?)", (provider, at, tokens)
            ).lastrowid
            window.starts += 1
            window.tokens += tokens
        lease_id = db.execute(
            "INSERT INTO leases (provider, host, pid, t) VALUES (?, ?, ?, ?)", (provider, _HOST, os.getpid(), now)
        ).lastrowid
        window.in_flight += 1
        self._save(provider, window)
        if limits.rpm:
            db.execute("UPDATE providers SET next_start = ? WHERE name = ?", (at + WINDOW_S / limits.rpm, provider))
        return Ticket(provider, int(lease_id or 0), int(start_id or 0), at if at > now else 0.0), 0.0

    def finish_in_transaction(
        self,
        ticket: Ticket,
        limits: EffectiveLimits,
        outcome: str,
        tokens: int | None,
        retry_after_s: float | None,
        sent: float = 0.0,
    ) -> None:
        db = self._db
        now = time.time()
        *_, window = self._read(ticket.provider, limits, now)
        if db.execute("DELETE FROM leases WHERE id = ?", (ticket.lease_id,)).rowcount:
            window.in_flight -= 1
        row = db.execute("SELECT t, tokens FROM starts WHERE id = ?", (ticket.start_id,)).fetchone()
        if row is not None:  # it counts from its hand-off (see RPM_HEADROOM_S), with the tokens the provider reported
            started, guessed = float(row[0]), int(row[1])
            used = guessed if tokens is None else int(tokens)
            counted = max(started, now if ticket.first else min(sent, now))
            db.execute("UPDATE starts SET t = ?, tokens = ? WHERE id = ?", (counted, used, ticket.start_id))
            edge = window.tokens_since  # rows before it have left the tpm window
            window.tokens += (used if counted >= edge else 0) - (guessed if started >= edge else 0)
        self._save(ticket.provider, window)
        if outcome == "ok":
            # additive increase: +1 after about one window's worth of answers at this level
            grow = "MIN(?, concurrency + 1.0 / concurrency)" if limits.adaptive else "?"
            db.execute(
                f"UPDATE providers SET last_ok = ?, concurrency = {grow} WHERE name = ?",
                (now, limits.max_concurrency, ticket.provider),
            )
        elif outcome == "rate_limit":
            db.execute("UPDATE providers SET rejected = rejected + 1 WHERE name = ?", (ticket.provider,))
            # Under rpm a 429 that says its wait is the edge of the provider's window, met by the pause
            # below: fewer requests in flight would only slow the run (4000 cut to 300 in one run
            # of bench/provider_scale.py). Without either, the concurrency is what adapts.
            if limits.adaptive and not (limits.rpm and retry_after_s):
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

    def last_answer_in_transaction(self, provider: str) -> float:
        row = self._db.execute("SELECT last_ok FROM providers WHERE name = ?", (provider,)).fetchone()
        return float(row[0]) if row else 0.0

    def _state(self, provider: str) -> dict[str, float]:
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

    def _read(self, provider: str, limits: EffectiveLimits, now: float) -> tuple[float, float, float, Window]:
        """The provider's row (concurrency, next start, pause) and its counts at `now`, in one query."""
        db = self._db
        row = db.execute(
            "SELECT p.concurrency, p.next_start, p.paused_until, w.starts, w.tokens, w.tokens_since, w.in_flight, "
            "w.swept FROM providers p LEFT JOIN windows w ON w.provider = p.name WHERE p.name = ?",
            (provider,),
        ).fetchone()
        if row is None:
            db.execute(
                "INSERT INTO providers (name, concurrency, last_ok) VALUES (?, ?, ?)",
                (provider, limits.max_concurrency, now),
            )
            row = (limits.max_concurrency, 0.0, 0.0, None, None, None, None, None)
        concurrency = min(float(row[0]), limits.max_concurrency)  # params lowered since: obey them
        if not limits.adaptive:
            concurrency = limits.max_concurrency
        if row[3] is None:  # a new provider, or a store written before the counts: count once
            window = self._count(provider, now)
            db.execute(
                "INSERT INTO windows (provider, starts, tokens, tokens_since, in_flight, swept) VALUES (?, ?, ?, ?, ?, ?)",
                (provider, window.starts, window.tokens, window.tokens_since, window.in_flight, now),
            )
        else:
            window = Window(int(row[3]), int(row[4]), float(row[5]), int(row[6]), float(row[7]))
            if now - window.swept >= SWEEP_S or now < window.swept:
                self._sweep(provider, now, window)
        return concurrency, float(row[1]), float(row[2]), window

    def _sweep(self, provider: str, now: float, window: Window) -> None:
        """Rows that left the tpm window give back their tokens; rows older than the rpm window go.
        Every SWEEP_S, not at every start: a row counts up to SWEEP_S longer than its minute, which
        errs on the safe side."""
        db = self._db
        edge = now - WINDOW_S
        if edge > window.tokens_since:
            (gone,) = db.execute(
                "SELECT COALESCE(SUM(tokens), 0) FROM starts WHERE provider = ? AND t >= ? AND t < ?",
                (provider, window.tokens_since, edge),
            ).fetchone()
            window.tokens -= int(gone)
            window.tokens_since = edge
        expired = db.execute(
            "DELETE FROM starts WHERE provider = ? AND t < ?", (provider, now - WINDOW_S - RPM_HEADROOM_S)
        ).rowcount
        window.starts -= max(0, expired)
        window.swept = now

    def _count(self, provider: str, now: float) -> Window:
        db = self._db
        db.execute("DELETE FROM starts WHERE provider = ? AND t < ?", (provider, now - WINDOW_S - RPM_HEADROOM_S))
        (starts,) = db.execute("SELECT COUNT(*) FROM starts WHERE provider = ?", (provider,)).fetchone()
        (tokens,) = db.execute(
            "SELECT COALESCE(SUM(tokens), 0) FROM starts WHERE provider = ? AND t >= ?", (provider, now - WINDOW_S)
        ).fetchone()
        (in_flight,) = db.execute("SELECT COUNT(*) FROM leases WHERE provider = ?", (provider,)).fetchone()
        return Window(int(starts), int(tokens), now - WINDOW_S, int(in_flight), now)

    def _save(self, provider: str, window: Window) -> None:
        self._db.execute(
            "UPDATE windows SET starts = ?, tokens = ?, tokens_since = ?, in_flight = ?, swept = ? WHERE provider = ?",
            (window.starts, window.tokens, window.tokens_since, window.in_flight, window.swept, provider),
        )

    def _recount(self, provider: str, limits: EffectiveLimits, now: float, window: Window) -> int:
        """Requests in flight at the limit: first drop the leases of processes that died (or that
        outlived the request timeout), then count the rest."""
        db = self._db
        owners = db.execute("SELECT DISTINCT host, pid FROM leases WHERE provider = ?", (provider,)).fetchall()
        dead = [(host, pid) for host, pid in owners if host == _HOST and not pid_alive(pid)]
        db.executemany(
            "DELETE FROM leases WHERE provider = ? AND host = ? AND pid = ?",
            [(provider, host, pid) for host, pid in dead],
        )
        db.execute("DELETE FROM leases WHERE provider = ? AND t < ?", (provider, now - limits.lease_timeout_s))
        (count,) = db.execute("SELECT COUNT(*) FROM leases WHERE provider = ?", (provider,)).fetchone()
        window.in_flight = int(count)
        self._save(provider, window)
        return window.in_flight


class SharedLimiter:
    """The asyncio side of a LimitStore: admission of one request at a time per provider."""

    def __init__(self, store: LimitStore) -> None:
        self.store = store
        self._heads: dict[tuple[int, str], asyncio.Lock] = {}
        # until when a Retry-After this process met pauses a provider (wall clock): a start granted
        # ahead of its turn before the 429 came waits for it too
        self._paused: dict[str, float] = {}
        self._sent_before: set[str] = set()  # providers this process sent a request to already
        # per event loop: the flush of deferred request ends it has scheduled
        self._flushes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.TimerHandle] = (
            weakref.WeakKeyDictionary()
        )

    async def _ask(self, work: Callable[[], T], orphan: Callable[[T], None] | None = None) -> T:
        """`work` on the store's thread; `orphan(result)` when the caller was cancelled meanwhile."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()

        def settle(result: Any, error: BaseException | None) -> None:
            if not future.cancelled():
                future.set_result(result) if error is None else future.set_exception(error)
            elif orphan is not None and error is None:
                orphan(result)

        def done(result: Any, error: BaseException | None) -> None:
            try:
                loop.call_soon_threadsafe(settle, result, error)
            except RuntimeError:  # the loop is closed: nobody waits any more
                if orphan is not None and error is None:
                    orphan(result)

        self.store.submit(work, done)
        return await future

    @asynccontextmanager
    async def admitted(self, provider: str, limits: EffectiveLimits, tokens: int) -> AsyncIterator[Admission]:
        """Wait for a start that every limit allows; the lease is freed when the block exits."""
        store = self.store

        def release(granted: tuple[Ticket | None, float]) -> None:  # a start granted to a cancelled request
            if granted[0] is not None:
                store.submit(partial(store.finish_in_transaction, granted[0], limits, "error", None, None))

        head = self._heads.setdefault((id(asyncio.get_running_loop()), provider), asyncio.Lock())
        start = partial(store.start_in_transaction, provider, limits, tokens)
        async with head:
            while True:
                # here when the store is free now or soon (most starts), else on the store's thread
                granted = await self._on_loop(start)
                ticket, wait = granted[0] if granted is not None else await self._ask(start, release)
                if ticket is not None:
                    break
                await asyncio.sleep(wait)
        if provider not in self._sent_before:
            self._sent_before.add(provider)
            ticket = replace(ticket, first=True)
        admission = Admission(ticket)
        try:
            while (wait := max(ticket.at, self._paused.get(provider, 0.0)) - time.time()) > 0:
                await asyncio.sleep(wait)
            yield admission
        finally:
            if admission.outcome == "rate_limit" and admission.retry_after_s:
                pause = time.time() + admission.retry_after_s
                self._paused[provider] = max(self._paused.get(provider, 0.0), pause)
            # deferred, not waited for: it runs with the next transaction, within FLUSH_S
            store.defer(
                partial(
                    store.finish_in_transaction,
                    ticket,
                    limits,
                    admission.outcome,
                    admission.tokens,
                    admission.retry_after_s,
                    admission.sent,
                )
            )
            self._flush_soon()

    async def _on_loop(self, work: Callable[[], T]) -> tuple[T] | None:
        """`(result,)` of `work` run on the event loop: at once when the store is free, else after
        up to LOOP_TRIES short waits; None when it stayed busy (the caller then asks the store's thread)."""
        for _ in range(LOOP_TRIES - 1):
            done = self.store.run_now(work)
            if done is not None:
                return done
            await asyncio.sleep(LOOP_RETRY_S)
        return self.store.run_now(work)

    def _flush_soon(self) -> None:
        loop = asyncio.get_running_loop()
        if loop not in self._flushes:
            self._flushes[loop] = loop.call_later(FLUSH_S, self._flush, loop)

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        self._flushes.pop(loop, None)
        if self.store.deferred() and self.store.run_now(lambda: None) is None:
            # busy now: again within FLUSH_S (a start meanwhile takes the ends with it), on this
            # loop rather than through the store's thread; the store's exit runs any still left
            self._flush_soon()

    async def last_answer(self, provider: str) -> float:
        return float(await self._ask(partial(self.store.last_answer_in_transaction, provider)))


@dataclass
class Admission:
    """What the request did, filled in by the caller before the admission block exits. `sent`: when
    the caller handed the request to litellm (wall clock; 0: never, or not said)."""

    ticket: Ticket
    outcome: str = "error"
    tokens: int | None = None
    retry_after_s: float | None = None
    sent: float = 0.0


_LIMITERS: dict[tuple[int, Path], SharedLimiter] = {}
# (working directory, a store path as given) -> the file: resolving a path costs a stat per part
_RESOLVED: dict[tuple[str, str], Path] = {}


def shared_limiter(path: str | os.PathLike[str]) -> SharedLimiter:
    """One limiter per store file per process, shared by every gateway of the process (a forked
    child opens its own: a connection and a worker thread do not survive a fork)."""
    given = (os.getcwd(), os.fspath(path))
    resolved = _RESOLVED.get(given)
    if resolved is None:
        resolved = _RESOLVED[given] = Path(path).resolve()
    key = (os.getpid(), resolved)
    limiter = _LIMITERS.get(key)
    if limiter is None:
        limiter = _LIMITERS[key] = SharedLimiter(LimitStore(resolved))
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

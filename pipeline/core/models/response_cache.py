"""The response cache: completed answers on disk, one JSON file per request key; and the writer
that stores each paid answer with its spend-ledger line.

A tournament at a provider's top tier answers hundreds of requests a second, so writing them is
on the hot path: `AnswerWriter` is one thread per process that takes every answer queued while it
worked, writes each to the cache (its own file, fsync'd, renamed into place), then the ledger lines
of them all in one append (one lock, one write, one fsync). A request waits until its answer and
its line are both written, as when it wrote them itself, but a thousand concurrent games cost a
thread hand-off and a ledger fsync per batch instead of per answer.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import queue
import socket
import threading
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# the crash tests' write-pause hook, so a test can kill a run in the middle of a cache write
from pipeline.core.artifacts.io import _pause_before_rename, sweep_stale_temps
from pipeline.core.models.budget import SpendLedger
from pipeline.core.models.concurrency import take_batch

log = logging.getLogger(__name__)

# temp files carry their writer (host and pid), as every atomic write of the project names them
_HOST = socket.gethostname().replace(".", "_")


class ResponseCache:
    """Completed responses on disk, one JSON file per request key.

    Each entry is written to a temp file and renamed into place, so several processes can write at
    once (the same key always holds an equivalent answer) and a kill mid-write leaves only a stray
    temp file, never a corrupt entry.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        path = self.path(key)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (json.JSONDecodeError, UnicodeDecodeError):
            log.warning("ignoring unreadable cache entry %s", path)
            return None
        return entry if entry.get("key") == key else None

    def put(self, key: str, entry: dict[str, Any]) -> None:
        error = self.put_many([(key, entry)])[0]
        if error is not None:
            raise error

    def put_many(self, entries: Sequence[tuple[str, dict[str, Any]]]) -> list[OSError | None]:
        """Several entries, each written to a temp file beside its place and fsync'd, then renamed
        into place: a reader sees no entry or a whole one, before and after a crash. Returns each
        entry's error (None: stored)."""
        errors: list[OSError | None] = [None] * len(entries)
        staged: list[tuple[int, int, Path, Path]] = []  # (entry, open temp file, temp, place)
        try:
            for i, (key, entry) in enumerate(entries):
                place = self.path(key)
                data = json.dumps({**entry, "key": key}, sort_keys=True, ensure_ascii=False).encode("utf-8")
                try:
                    fd, temp = _write_temp(place, data)
                except OSError as exc:
                    errors[i] = exc
                else:
                    staged.append((i, fd, temp, place))
            try:
                _make_durable([fd for _, fd, _, _ in staged])
            except OSError as exc:
                for i, *_ in staged:
                    errors[i] = exc
        finally:
            for _, fd, _, _ in staged:
                os.close(fd)
        for i, _, temp, place in staged:
            if errors[i] is None:
                try:
                    _pause_before_rename(place)
                    os.replace(temp, place)
                except OSError as exc:
                    errors[i] = exc
            if errors[i] is not None:
                temp.unlink(missing_ok=True)
        return errors


def _write_temp(place: Path, data: bytes) -> tuple[int, Path]:
    """`data` in a new temp file beside `place`, still open. A killed writer's temp files in the
    key's folder go at this process's first write there, as the artifacts' atomic writes do
    (`sweep_stale_temps`: one scan per folder and process, not per answer)."""
    temp = place.parent / f".{place.name}.{_HOST}-{os.getpid()}.{next(_TEMP_NUMBERS)}.tmp"
    sweep_stale_temps(place.parent)
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileNotFoundError:  # the key's folder: made at its first entry
        place.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BaseException:
        os.close(fd)
        temp.unlink(missing_ok=True)
        raise
    return fd, temp


def _make_durable(fds: list[int]) -> None:
    """Every file open at `fds` on disk. One fsync each: a syncfs of the whole filesystem would be
    one journal commit for the batch, but it also waits for every other process's writes (it
    measured no cheaper here, on a machine whose other processes write a lot)."""
    for fd in fds:
        os.fsync(fd)


_TEMP_NUMBERS = itertools.count()  # temp names unique within the process (and its threads)


@dataclass(frozen=True)
class PaidAnswer:
    """An answer to store: its cache entry, then its spend-ledger line."""

    cache: ResponseCache
    key: str
    entry: dict[str, Any]
    ledger: SpendLedger
    spent: dict[str, Any]


_Queued = tuple[PaidAnswer, asyncio.AbstractEventLoop, "asyncio.Future[None]"]


class AnswerWriter:
    """This process's writer of paid answers (see the module's docstring)."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[_Queued] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    async def write(self, answer: PaidAnswer) -> None:
        """Store `answer` (the cache entry first, so a kill between the two loses a ledger line,
        never a paid answer); returns once both are on disk."""
        if self._thread is None:
            self._start()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._queue.put((answer, loop, future))
        await future

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                # a daemon: every answer queued is awaited by its request, so none is pending at exit
                self._thread = threading.Thread(target=self._work, name="answer-writer", daemon=True)
                self._thread.start()

    def _work(self) -> None:
        while True:
            self._store(take_batch(self._queue))

    def _store(self, batch: list[_Queued]) -> None:
        errors: dict[int, BaseException] = {}
        by_cache: dict[Path, list[int]] = defaultdict(list)
        for i, (answer, _, _) in enumerate(batch):
            by_cache[answer.cache.root].append(i)
        for indices in by_cache.values():
            cache = batch[indices[0]][0].cache
            stored = cache.put_many([(batch[i][0].key, batch[i][0].entry) for i in indices])
            errors.update({i: error for i, error in zip(indices, stored, strict=True) if error is not None})
        lines: dict[Path, list[int]] = defaultdict(list)
        for i, (answer, _, _) in enumerate(batch):
            if i not in errors:
                lines[answer.ledger.path].append(i)
        for indices in lines.values():
            try:
                batch[indices[0]][0].ledger.append_many([batch[i][0].spent for i in indices])
            except Exception as exc:  # noqa: BLE001
                errors.update(dict.fromkeys(indices, exc))
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[None], BaseException | None]]] = {}
        for i, (_, loop, future) in enumerate(batch):
            by_loop.setdefault(loop, []).append((future, errors.get(i)))
        for loop, settled in by_loop.items():
            try:
                loop.call_soon_threadsafe(_settle, settled)
            except RuntimeError:  # its loop closed meanwhile: nobody waits for these any more
                pass


def _settle(settled: list[tuple[asyncio.Future[None], BaseException | None]]) -> None:
    for future, error in settled:
        if future.cancelled():
            continue
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)


_WRITERS: dict[int, AnswerWriter] = {}


def answer_writer() -> AnswerWriter:
    """This process's answer writer (a forked child starts its own: a thread does not survive a fork)."""
    pid = os.getpid()
    writer = _WRITERS.get(pid)
    if writer is None:
        writer = _WRITERS[pid] = AnswerWriter()
    return writer

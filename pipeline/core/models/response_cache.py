"""The response cache: completed answers on disk, appended to one file per writing process and
found through one shared index; and the writer that stores each paid answer with its spend-ledger line.

On disk, under the cache's folder:
- `answers/<host>-<pid>-<start>.jsonl`: a *segment*, the answers one process wrote, one JSON object
  per line (the same bytes an entry's own file held before);
- `answers/index`: one line per stored answer, `<key> <segment> <offset> <length>`, appended under
  a lock by every process.

An answer counts as stored once its index line is written, after its segment's bytes are on disk
(fsync'd): a kill in between leaves bytes nobody points to, never an entry that reads half. Readers
keep the index in memory and, on a miss, read only what other processes appended since. Caches of
earlier versions, one `<key[:2]>/<key>.json` file per answer, are still read.

Why not a file per answer: a tournament at a provider's top tier answers hundreds of requests a
second, and creating a file per answer (a temp file, an fsync, a rename) cost from 0.2 ms of CPU on a
quiet filesystem to 1.5 ms on one where many files had just been deleted (docs/api_scale.md).

`AnswerWriter` is one thread per process that takes every answer queued while it worked, appends
them to the process's segment in one write and one fsync, then their index lines in one append, then
their ledger lines in one append (one lock, one write, one fsync). A request waits until its answer
and its line are both written, as when it wrote them itself.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import queue
import threading
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# the crash tests' write-pause hook, so a test can kill a run between an answer's bytes and its index line
from pipeline.core.artifacts.io import _owner, _pause_before_rename, append_lines
from pipeline.core.models.budget import SpendLedger
from pipeline.core.models.concurrency import take_batch

log = logging.getLogger(__name__)

ANSWERS_DIR = "answers"  # inside the cache's folder: the segments and their index
INDEX_FILE = "index"
_KEY_LENGTH = 64  # a request key: hex sha256 (pipeline.core.models.gateway.request_key)


class ResponseCache:
    """Completed responses on disk, found by request key (see the module's docstring).

    Several processes may read and write one cache at once: each appends to its own segment, and
    the same key always holds an equivalent answer, so which of two copies a reader finds is moot.
    Instances for the same folder in one process share their index and their segment.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._store = _store_for(self.root)

    def get(self, key: str) -> dict[str, Any] | None:
        place = self._store.find(key)
        if place is None:
            return self._get_legacy(key)
        segment, offset, length = place
        path = self._store.folder / segment
        try:
            fd = os.open(path, os.O_RDONLY)
            try:
                data = os.pread(fd, length, offset)
            finally:
                os.close(fd)
            entry = json.loads(data)
        except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            entry = None
            problem = "its segment is gone" if isinstance(exc, FileNotFoundError) else "unreadable"
        else:
            problem = "it holds another key"
        if isinstance(entry, dict) and entry.get("key") == key:
            return entry
        # e.g. a torn index line a killed writer left: forgotten, so the answer is stored again
        log.warning("ignoring cache entry %s at byte %d of %s: %s", key, offset, path, problem)
        self._store.places.pop(key, None)
        return None

    def _get_legacy(self, key: str) -> dict[str, Any] | None:
        """An entry an earlier version wrote to a file of its own."""
        path = self.root / key[:2] / f"{key}.json"
        try:
            entry = json.loads(path.read_bytes())
        except (FileNotFoundError, NotADirectoryError):
            return None
        except (json.JSONDecodeError, UnicodeDecodeError):
            log.warning("ignoring unreadable cache entry %s", path)
            return None
        return entry if isinstance(entry, dict) and entry.get("key") == key else None

    def put(self, key: str, entry: dict[str, Any]) -> None:
        error = self.put_many([(key, entry)])[0]
        if error is not None:
            raise error

    def put_many(self, entries: Sequence[tuple[str, dict[str, Any]]]) -> list[OSError | None]:
        """Several entries, appended to this process's segment in one write and fsync'd, then
        indexed in one append. Returns each entry's error (None: stored, or stored already)."""
        return self._store.append(entries)


def _encode(key: str, entry: dict[str, Any]) -> bytes:
    # sorted keys, the key inside: the bytes of an entry's own file in earlier versions
    return json.dumps({**entry, "key": key}, sort_keys=True, ensure_ascii=False).encode("utf-8")


class _Store:
    """One process's view of one cache folder: the index in memory and its own segment."""

    def __init__(self, root: Path) -> None:
        self.folder = root / ANSWERS_DIR
        self.index_path = self.folder / INDEX_FILE
        self.places: dict[str, tuple[str, int, int]] = {}  # key -> (segment, offset, length)
        self._read_lock = threading.Lock()  # apart from the write lock: a reader never waits for an fsync
        self._write_lock = threading.Lock()
        self._index_id: tuple[int, int] | None = None  # (device, inode) of the index file read
        self._index_read = 0  # bytes of it read (whole lines only)
        self._segment: str | None = None  # this process's segment, named at its first answer

    def find(self, key: str) -> tuple[str, int, int] | None:
        place = self.places.get(key)
        if place is None:
            self._read_index()
            place = self.places.get(key)
        return place

    def _read_index(self) -> None:
        """What the index gained since the last read (all of it the first time, or when the file was
        replaced). A line another process is still writing is left for the next read."""
        with self._read_lock:
            try:
                fd = os.open(self.index_path, os.O_RDONLY)
            except FileNotFoundError:
                return
            try:
                stat = os.fstat(fd)
                if (stat.st_dev, stat.st_ino) != self._index_id or stat.st_size < self._index_read:
                    self._index_id, self._index_read = (stat.st_dev, stat.st_ino), 0
                    self.places = {}
                if stat.st_size == self._index_read:
                    return
                data = os.pread(fd, stat.st_size - self._index_read, self._index_read)
            finally:
                os.close(fd)
            whole = data.rfind(b"\n") + 1
            self._index_read += whole
            self.places.update(_parse_index(data[:whole]))

    def append(self, entries: Sequence[tuple[str, dict[str, Any]]]) -> list[OSError | None]:
        errors: list[OSError | None] = [None] * len(entries)
        fresh: dict[str, bytes] = {}
        for key, entry in entries:
            if key not in self.places and key not in fresh:  # a key stored already keeps its answer
                fresh[key] = _encode(key, entry)
        if not fresh:
            return errors
        with self._write_lock:
            if self._segment is None:
                self._segment = f"{_owner()}-{time.time_ns():x}.jsonl"
            name = self._segment
            try:
                # opened per batch, not held: a process that used many caches keeps no descriptor,
                # and a segment deleted meanwhile (the cache's folder removed) is simply made again;
                # this process is the segment's only writer, so it ends with its own whole line
                start = append_lines(
                    self.folder / name,
                    b"".join(data + b"\n" for data in fresh.values()),
                    durable=True,
                    check_tail=False,
                )
            except OSError as exc:
                self._segment = None  # a write that may have stopped midway: the next answers start a new segment
                return [exc if key in fresh else None for key, _ in entries]
            places: dict[str, tuple[str, int, int]] = {}
            for key, data in fresh.items():
                places[key] = (name, start, len(data))
                start += len(data) + 1
            _pause_before_rename(self.index_path)
            lines = "".join(f"{key} {seg} {offset} {length}\n" for key, (seg, offset, length) in places.items())
            try:
                append_lines(self.index_path, lines.encode("utf-8"), lock=True)
            except OSError as exc:
                return [exc if key in fresh else None for key, _ in entries]
            self.places.update(places)
        return errors


def _parse_index(data: bytes) -> dict[str, tuple[str, int, int]]:
    """The index lines in `data` (`<key> <segment> <offset> <length>`; a segment's name may hold
    spaces, as a host name might); a torn line a killed writer left (glued to nothing: appends close
    it first) is skipped."""
    places: dict[str, tuple[str, int, int]] = {}
    for line in data.decode("utf-8", errors="replace").splitlines():
        key, _, rest = line.partition(" ")
        fields = rest.rsplit(" ", 2)
        if len(key) != _KEY_LENGTH or len(fields) != 3:
            continue
        try:
            places[key] = (fields[0], int(fields[1]), int(fields[2]))
        except ValueError:
            continue
    return places


_STORES: dict[tuple[int, str], _Store] = {}
_STORES_LOCK = threading.Lock()


def _store_for(root: Path) -> _Store:
    """This process's store of the cache at `root` (a forked child makes its own: a segment is one
    process's)."""
    key = (os.getpid(), os.path.abspath(root))
    store = _STORES.get(key)
    if store is None:
        with _STORES_LOCK:
            store = _STORES.setdefault(key, _Store(Path(key[1])))
    return store


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

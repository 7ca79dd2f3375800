"""Atomic file writes, content ids and deterministic seeds shared by every stage.

Every artifact is written to a temporary file in the same directory and renamed into place,
so a process killed mid-write never leaves a partial file that a rerun would take as done.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import socket
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import polars as pl


def user_cache_dir(name: str) -> Path:
    """`name` under the user cache that every clone of the project shares:
    ``$XDG_CACHE_HOME/tournament-pipeline/name``, ``~/.cache/...`` when that is unset."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tournament-pipeline" / name


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace variance: the input of every content id."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def content_id(obj: Any, length: int = 16) -> str:
    """Hex sha256 prefix of the canonical JSON of `obj`."""
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()[:length]


def seed_from(*parts: Any) -> int:
    """A 63-bit seed derived from content: the same job always draws the same numbers."""
    digest = hashlib.sha256(canonical_json(list(parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") >> 1


PAUSE_ENV = "PIPELINE_PAUSE_BEFORE_RENAME"
# temp files carry their writer (host and pid), so a later write into the same folder can remove the
# temp a killed writer left behind without touching one another live process is still writing
_HOST = socket.gethostname().replace(".", "_")


def _owner() -> str:
    """This writer: the pid read at each write, as a forked process (a fork server's job) is another writer."""
    return f"{_HOST}-{os.getpid()}"


#: (process, folder) pairs swept of stale temp files already
_SWEPT: set[tuple[int, Path]] = set()


def sweep_stale_temps(folder: Path) -> None:
    """Remove the temp files writers on this machine left in `folder` when they were killed (their
    pid is gone). Once per folder and process, at its first write there, not at every write: a
    shard's games folder or the response cache holds thousands of files, and a scan per write made
    a shard's writes quadratic in its games."""
    key = (os.getpid(), folder)
    if key in _SWEPT:
        return
    _SWEPT.add(key)
    marker = f".{_HOST}-"
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return
    for entry in entries:
        name = entry.name
        if not (name.startswith(".") and name.endswith(".tmp") and marker in name):
            continue
        pid = name.rpartition(marker)[2].split(".", 1)[0]
        if pid.isdigit() and not pid_alive(int(pid)):
            try:
                os.unlink(entry.path)
            except FileNotFoundError:
                pass


def pid_alive(pid: int) -> bool:
    """Whether a process with this id lives on this machine (another user's counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a killed process stays a zombie until its new parent reaps it (in a container, pid 1 may
    # take its time): it writes nothing any more, so its temp files are stale
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def _pause_before_rename(target: Path) -> None:
    """Crash-test hook: PIPELINE_PAUSE_BEFORE_RENAME="<part of a file's path>:<seconds>" makes the
    atomic write of a matching file sleep once its temp file is complete and before the rename, so
    a test can kill the process exactly mid-write. Unset (always, outside tests): no effect."""
    spec = os.environ.get(PAUSE_ENV)
    if not spec:
        return
    part, _, seconds = spec.rpartition(":")
    if part and part in target.as_posix():
        time.sleep(float(seconds or 0))


@contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO[Any]]:
    """Open a temp file beside `path`; on clean exit fsync and rename it over `path`."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale_temps(target.parent)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.{_owner()}.", suffix=".tmp", dir=target.parent)
    binary = "b" in mode
    os.chmod(tmp_name, 0o644)  # mkstemp makes 0600; artifacts are meant to be shared
    try:
        with os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else "utf-8") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        _pause_before_rename(target)
        os.replace(tmp_name, target)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise


def append_lines(path: Path, data: bytes, *, lock: bool = False, durable: bool = False, check_tail: bool = True) -> int:
    """Append `data` (whole lines) to `path` in one write on an O_APPEND file, so concurrent appends
    never interleave and a kill leaves at worst one torn last line. A torn last line a killed writer
    left is closed first, so ours never glue onto it: `check_tail` False skips that look where the
    caller knows the file ends with its own whole line. `lock`: under an exclusive `flock` (readers
    that take the shared lock see whole appends); `durable`: fsync'd before returning. Returns the
    offset in the file at which `data` begins."""
    length = len(data)
    flags = os.O_APPEND | os.O_CREAT | (os.O_RDWR if check_tail else os.O_WRONLY)  # read: the last byte
    try:
        fd = os.open(path, flags, 0o644)
    except FileNotFoundError:  # the file's first line: its folder is made once
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, flags, 0o644)
    try:
        if lock:
            fcntl.flock(fd, fcntl.LOCK_EX)
        if check_tail:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        end = os.lseek(fd, 0, os.SEEK_CUR)  # an O_APPEND write leaves the offset at its own end
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)  # and with it the lock
    return end - length


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    with atomic_open(path, "w") as handle:
        handle.write(text)


def write_json_atomic(path: str | os.PathLike[str], obj: Any) -> None:
    """Pretty, key-sorted JSON so the same object always gives the same bytes."""
    write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def write_parquet_atomic(path: str | os.PathLike[str], frame: pl.DataFrame) -> None:
    # statistics off, a fixed compression and one chunk keep the bytes a function of the data alone
    # (a large frame's row groups follow its chunks, which depend on how it was built)
    with atomic_open(path, "wb") as handle:
        frame.rechunk().write_parquet(handle, compression="zstd", statistics=False)

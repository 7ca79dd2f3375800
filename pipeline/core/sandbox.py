"""Running untrusted Python programs: isolated, limited, and failing closed.

Each program runs in a fresh process tree with
- no network: its own network namespace (bubblewrap `--unshare-all`, or util-linux `unshare --net`);
- a read-only view of the system and a private temp dir as the only writable place (bubblewrap
  mounts; in the `unshare` fallback the program runs as the unprivileged user `nobody`, who owns
  only its temp dir);
- an empty environment (no API keys), stdin from /dev/null;
- a fixed hash seed (`HASH_SEED`), so a program that prints a set of strings prints the same order
  on every run and every machine. `python -I` would ignore PYTHONHASHSEED (it implies -E), so the
  interpreter runs with -I's other parts (-s -S) in an environment the sandbox builds from
  scratch: no PYTHON* variable but the seed can reach it;
- limits on CPU time, wall time, memory, output size and process count (rlimits; wall time by the
  parent, which kills the whole process group and with it the pid namespace).

Rlimits alone stop neither network nor file writes, so without a working namespace tool the
sandbox refuses to run (SandboxUnavailable) unless the caller opts out explicitly
(`allow_unisolated=True`), and every result then says `isolation="none"`.
"""

from __future__ import annotations

import functools
import os
import queue
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

NOBODY = 65534
#: PYTHONHASHSEED of every program: str/bytes hashes, hence set and frozenset order, are fixed
HASH_SEED = 0
#: -I without -E: no user site (-s), no site-packages (-S: standard library only); -E must stay
#: off, or PYTHONHASHSEED is ignored. (-I's -P is left out: it needs Python 3.11, and the script's
#: directory it would hide is the program's own temp dir, holding only main.py.)
PYTHON_FLAGS = ("-s", "-S")
#: each concurrent program runs as its own unprivileged uid, so one program's fork bomb spends
#: only its own process budget (RLIMIT_NPROC counts per real uid), never a neighbour's
SLOT_UID_BASE = 61000
#: exit codes of a process killed by these signals: which limit tripped
_SIGNAL_LIMITS: dict[int, str] = {int(signal.SIGXCPU): "cpu", int(signal.SIGXFSZ): "output"}
_MEMORY_MARKERS = ("MemoryError", "Cannot allocate memory", "cannot allocate memory")
_PROCESS_MARKERS = ("BlockingIOError: [Errno 11]", "Resource temporarily unavailable", "can't start new thread")


class SandboxUnavailable(RuntimeError):
    """No isolation could be set up and the params did not opt out."""


@dataclass(frozen=True)
class SandboxLimits:
    cpu_s: float = 5.0
    wall_s: float = 10.0
    memory_mb: int = 512
    output_bytes: int = 65536
    processes: int = 32


@dataclass(frozen=True)
class SandboxResult:
    stdout: str
    stderr: str
    exit_code: int | None  # negative: killed by that signal; None: killed by us (wall time)
    limit: str | None  # "cpu" | "wall" | "memory" | "output" | "processes" | None
    elapsed_s: float
    isolation: str = ""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.limit is None


def _python() -> str:
    """An interpreter every user can execute (a venv under /root is not readable by `nobody`)."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(candidate, os.X_OK):
            return candidate
    return sys.executable


def _drop_to(uid: int) -> list[str]:
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all"]


def _bwrap_prefix(workdir: str, uid: int | None) -> list[str]:
    drop = _drop_to(uid) if uid is not None else []
    return [
        *drop, "bwrap",
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        "--tmpfs", "/dev/shm",
        "--bind", workdir, "/tmp/job",
        "--chdir", "/tmp/job",
        "--unshare-all",  # network, pid, ipc, uts, cgroup (and user when unprivileged)
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--setenv", "PATH", "/usr/bin:/bin",
        "--setenv", "HOME", "/tmp/job",
        "--setenv", "PYTHONHASHSEED", str(HASH_SEED),
        "--setenv", "LANG", "C.UTF-8",
    ]


def _unshare_prefix(workdir: str, uid: int) -> list[str]:
    """Root makes the namespaces, hides the world-writable places (the program's temp dir becomes
    /tmp), then drops to an unprivileged uid, which can write nowhere else."""
    setup = (
        'mount --make-rprivate / && mount --bind "$0" /tmp'
        " && for d in /var/tmp /dev/shm /run/lock; do [ -d $d ] && mount -t tmpfs -o size=1m tmpfs $d; done;"
        ' cd /tmp && exec "$@"'
    )
    return [
        "unshare", "--mount", "--net", "--pid", "--fork", "--kill-child", "--mount-proc",
        "/bin/sh", "-c", setup, workdir,
        *_drop_to(uid),
        "env", "-i", "PATH=/usr/bin:/bin", "HOME=/tmp", f"PYTHONHASHSEED={HASH_SEED}", "LANG=C.UTF-8",
    ]


@functools.cache
def detect_isolation() -> str:
    """The best isolation that works on this machine: "bwrap", "unshare" or "none"."""
    is_root = os.geteuid() == 0
    probe = tempfile.mkdtemp(prefix="sandbox-probe-")
    try:
        if is_root:
            os.chown(probe, NOBODY, NOBODY)
        candidates = []
        if shutil.which("bwrap") and (shutil.which("setpriv") or not is_root):
            candidates.append(("bwrap", _bwrap_prefix(probe, NOBODY if is_root else None)))
        if is_root and shutil.which("unshare") and shutil.which("setpriv"):
            candidates.append(("unshare", _unshare_prefix(probe, NOBODY)))
        for name, prefix in candidates:
            try:
                done = subprocess.run([*prefix, _python(), *PYTHON_FLAGS, "-c", "print(1)"], capture_output=True, timeout=20, cwd=probe)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if done.returncode == 0 and done.stdout.strip() == b"1":
                return name
        return "none"
    finally:
        shutil.rmtree(probe, ignore_errors=True)


class Sandbox:
    """Runs Python sources one per fresh, isolated, limited process tree."""

    def __init__(self, limits: SandboxLimits = SandboxLimits(), allow_unisolated: bool = False) -> None:
        self.limits = limits
        self.isolation = detect_isolation()
        if self.isolation == "none" and not allow_unisolated:
            raise SandboxUnavailable(
                "no isolation available for untrusted programs: install bubblewrap "
                "(`apt-get install bubblewrap`) or run where `unshare` works, or set "
                "`sandbox.allow_unisolated: true` in params to run them with rlimits only "
                "(no network or file-system isolation)"
            )
        self._is_root = os.geteuid() == 0
        self._drops_uid = self._is_root and self.isolation != "none"
        if self._drops_uid:
            _become_subreaper()
        self._free_uids: queue.SimpleQueue[int] = queue.SimpleQueue()
        for slot in range(64):
            self._free_uids.put(SLOT_UID_BASE + slot)

    def _command(self, workdir: str, uid: int | None) -> list[str]:
        program = [_python(), *PYTHON_FLAGS, "main.py"]
        if self.isolation == "bwrap":
            return [*_bwrap_prefix(workdir, uid), *program]
        if self.isolation == "unshare":
            assert uid is not None
            return [*_unshare_prefix(workdir, uid), *program]
        return ["env", "-i", "PATH=/usr/bin:/bin", f"HOME={workdir}", f"PYTHONHASHSEED={HASH_SEED}", *program]

    def _set_limits(self) -> None:
        """Runs in the child before exec: the limits every process of the program inherits."""
        limits = self.limits
        cpu = max(1, int(limits.cpu_s + 0.999))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        memory = limits.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.output_bytes, limits.output_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if self._drops_uid:
            # counted per real uid: the program runs as a slot uid that owns nothing else
            resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))

    def run(self, source: str) -> SandboxResult:
        if not self._drops_uid:
            return self._run(source, None)
        uid = self._free_uids.get()
        try:
            return self._run(source, uid)
        finally:
            _wait_for_uid_exit(uid)  # the slot is reused only once every process of it is gone
            self._free_uids.put(uid)

    def _run(self, source: str, uid: int | None) -> SandboxResult:
        workdir = tempfile.mkdtemp(prefix="sandbox-")
        try:
            Path(workdir, "main.py").write_text(source, encoding="utf-8")
            if uid is not None:
                os.chown(workdir, uid, uid)
                os.chmod(workdir, 0o700)
            with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
                started = time.monotonic()
                process = subprocess.Popen(
                    self._command(workdir, uid),
                    cwd=workdir,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    preexec_fn=self._set_limits,  # noqa: PLW1509 - single-threaded fork point
                    start_new_session=True,
                    env={"PATH": "/usr/bin:/bin"},
                )
                limit = None
                try:
                    exit_code: int | None = process.wait(timeout=self.limits.wall_s)
                except subprocess.TimeoutExpired:
                    limit, exit_code = "wall", None
                finally:
                    _kill_group(process)
                elapsed = time.monotonic() - started
                stdout = _read(out, self.limits.output_bytes)
                stderr = _read(err, self.limits.output_bytes)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        if limit is None:
            limit = _which_limit(exit_code, stdout, stderr, elapsed, self.limits)
        return SandboxResult(stdout, stderr, exit_code, limit, round(elapsed, 4), self.isolation)

    def run_many(self, sources: Sequence[str], jobs: int = 2) -> list[SandboxResult]:
        """Run programs in parallel (threads only wait on child processes); results in order."""
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            return list(pool.map(self.run, sources))


def _uid_processes(uid: int) -> list[int]:
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    pids.append(int(entry.name))
            except FileNotFoundError:
                continue
    return pids


@functools.cache
def _become_subreaper() -> None:
    """Orphans of a sandbox (bwrap's pid-namespace init outlives its monitor) become our children
    so we can reap them at once; otherwise they wait as zombies for PID 1 and keep counting
    against the slot's process limit."""
    import ctypes

    pr_set_child_subreaper = 36
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_child_subreaper, 1, 0, 0, 0)


def _wait_for_uid_exit(uid: int, timeout_s: float = 10.0) -> None:
    """Kill and reap whatever a program left under its slot uid; return when none is left."""
    deadline = time.monotonic() + timeout_s
    while (pids := _uid_processes(uid)) and time.monotonic() < deadline:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, os.WNOHANG)  # only succeeds for our own (adopted) children
            except (ProcessLookupError, ChildProcessError):
                pass
        time.sleep(0.002)


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()


def _read(handle, limit: int) -> str:
    handle.seek(0)
    return handle.read(limit).decode("utf-8", errors="replace")


def _which_limit(exit_code: int | None, stdout: str, stderr: str, elapsed: float, limits: SandboxLimits) -> str | None:
    if exit_code is None or exit_code == 0:
        return None
    # bwrap reports a signal death of the program as 128 + signal
    signum = -exit_code if exit_code < 0 else exit_code - 128 if exit_code > 128 else None
    if signum in _SIGNAL_LIMITS:
        return _SIGNAL_LIMITS[signum]
    if signum == signal.SIGKILL and elapsed >= limits.cpu_s:
        return "cpu"  # the hard CPU limit sends SIGKILL
    if (
        len(stdout.encode()) >= limits.output_bytes
        or len(stderr.encode()) >= limits.output_bytes
        or "File too large" in stderr  # Python ignores SIGXFSZ: the write fails with EFBIG instead
    ):
        return "output"
    tail = stderr[-2000:]
    if any(marker in tail for marker in _MEMORY_MARKERS):
        return "memory"
    if any(marker in tail for marker in _PROCESS_MARKERS):
        return "processes"
    return None

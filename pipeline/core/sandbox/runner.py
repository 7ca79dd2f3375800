"""Running untrusted Python programs: isolated, limited, and failing closed.

Each program runs in a fresh process tree with
- no network: its own network namespace (bubblewrap `--unshare-all`, or util-linux `unshare --net`);
- of the host only the interpreter, its standard library and the system libraries they load,
  read-only (view.py), and a private temp dir as the only writable place (bubblewrap mounts; in
  the `unshare` fallback the program runs as the unprivileged user `nobody`, who owns only its
  temp dir, and sees what any user may read);
- no capability, no user namespace below its own, no ptrace (seccomp.py);
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

With bubblewrap, programs go to warm workers (`warm=True`, the default): one bubblewrap sandbox
per worker, with the same binds, environment, uid, hash seed and limits, holds an interpreter that
has paid its start-up once (zygote.py). For each program it forks a fresh process, pid 2
under the worker's pid 1 as under bubblewrap's init, in fresh mount, IPC and network namespaces
(its own /tmp, /dev, /dev/shm, loopback, a fresh directory at /tmp/job), with no capabilities,
which runs main.py as `python3 -s -S main.py` would (same output, errors, exit status and limit);
when it exits or hits the wall limit, every process it left is killed before the next program
starts. The two runs of one program in `run_many` go to two workers. A worker that fails to start
or dies sends its programs down the one-sandbox-per-program path, which also serves `unshare` and
`none` isolation and `warm=False`.
"""

from __future__ import annotations

import fcntl
import functools
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from pipeline.core.sandbox.seccomp import filter_fd
from pipeline.core.sandbox.view import host_view

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
#: what a warm worker may do in its own user namespace, and no more (the rest leave its bounding
#: set): make namespaces, mount, write the pid counter (SYS_ADMIN), return to its own mount
#: namespace (SYS_CHROOT), bring up loopback (NET_ADMIN), and drop them all in each program (SETPCAP)
WORKER_CAPABILITIES = ("CAP_SYS_ADMIN", "CAP_SYS_CHROOT", "CAP_NET_ADMIN", "CAP_SETPCAP")
#: the warm worker's program, started with `python3 -s -S -c` inside bubblewrap
ZYGOTE = Path(__file__).with_name("zygote.py")
#: seconds a warm worker may take to start; beyond the wall limit, how long a reply may take before
#: the worker counts as lost (it kills each program at the wall limit itself)
_WORKER_START_S = 30.0
_REPLY_SLACK_S = 15.0
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


def _bwrap_prefix(workdir: str, uid: int | None, worker: bool = False, seccomp: int | None = None) -> list[str]:
    """Bubblewrap for one program, or (`worker`) for a warm worker: no pid namespace (the worker
    makes its own, see zygote.py), capabilities inside its user namespace (never the
    host's: it makes each program's namespaces and mounts; each program drops them all), and no
    --die-with-parent, which follows the thread that started it (the worker exits instead when
    the host's end of its socket closes)."""
    drop = _drop_to(uid) if uid is not None else []
    unshare = (
        [
            "--unshare-user",
            "--unshare-ipc",
            "--unshare-net",
            "--unshare-uts",
            "--unshare-cgroup-try",
            *(arg for cap in WORKER_CAPABILITIES for arg in ("--cap-add", cap)),
        ]
        if worker
        else ["--unshare-all", "--unshare-user", "--die-with-parent"]  # network, pid, ipc, uts, cgroup, user
    )
    return [
        *drop,
        "bwrap",
        # the interpreter, its standard library and the libraries they load, read-only; nothing
        # else of the host (view.py)
        *host_view(_python()).bwrap_args(),
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "--tmpfs",
        "/dev/shm",
        "--bind",
        workdir,
        "/tmp/job",
        "--remount-ro",  # the root's own tmpfs too, once every mount point is made
        "/",
        "--chdir",
        "/tmp/job",
        *unshare,
        # no user namespace below this one: a program cannot make one and hold capabilities in it
        *(["--disable-userns"] if _bwrap_disables_userns() else []),
        # no ptrace of pid 1 (seccomp.py), from a descriptor the caller passes
        *(["--seccomp", str(seccomp)] if seccomp is not None else []),
        "--new-session",
        "--clearenv",
        "--setenv",
        "PATH",
        "/usr/bin:/bin",
        "--setenv",
        "HOME",
        "/tmp/job",
        "--setenv",
        "PYTHONHASHSEED",
        str(HASH_SEED),
        "--setenv",
        "LANG",
        "C.UTF-8",
    ]


@functools.cache
def _bwrap_disables_userns() -> bool:
    """Whether this bubblewrap has --disable-userns (0.8.0 and later)."""
    try:
        done = subprocess.run(["bwrap", "--help"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--disable-userns" in done.stdout + done.stderr


def _unshare_prefix(workdir: str, uid: int) -> list[str]:
    """Root makes the namespaces, hides the world-writable places (the program's temp dir becomes
    /tmp), then drops to an unprivileged uid, which can write nowhere else."""
    setup = (
        'mount --make-rprivate / && mount --bind "$0" /tmp'
        " && for d in /var/tmp /dev/shm /run/lock; do [ -d $d ] && mount -t tmpfs -o size=1m tmpfs $d; done;"
        ' cd /tmp && exec "$@"'
    )
    return [
        "unshare",
        "--mount",
        "--net",
        "--pid",
        "--fork",
        "--kill-child",
        "--mount-proc",
        "/bin/sh",
        "-c",
        setup,
        workdir,
        *_drop_to(uid),
        "env",
        "-i",
        "PATH=/usr/bin:/bin",
        "HOME=/tmp",
        f"PYTHONHASHSEED={HASH_SEED}",
        "LANG=C.UTF-8",
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
                with filter_fd() as fd:
                    if name == "bwrap" and fd is not None:
                        prefix = _bwrap_prefix(probe, NOBODY if is_root else None, seccomp=fd)
                    done = subprocess.run(
                        [*prefix, _python(), *PYTHON_FLAGS, "-c", "print(1)"],
                        capture_output=True,
                        timeout=20,
                        cwd=probe,
                        pass_fds=() if fd is None else (fd,),
                    )
            except (OSError, subprocess.TimeoutExpired):
                continue
            if done.returncode == 0 and done.stdout.strip() == b"1":
                return name
        return "none"
    finally:
        shutil.rmtree(probe, ignore_errors=True)


class Sandbox:
    """Runs Python sources one per fresh, isolated, limited process tree: on warm workers where
    bubblewrap works (`warm=True`), else one sandbox per program."""

    def __init__(
        self, limits: SandboxLimits = SandboxLimits(), allow_unisolated: bool = False, warm: bool = True
    ) -> None:
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
        #: whether programs go to warm workers; turned off for good when a worker cannot set up
        self.warm = warm and self.isolation == "bwrap"
        self.warm_failure: str | None = None
        self.workers_started = 0
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._closed = False
        # idle workers exit with the sandbox (or the interpreter); the finalizer must not hold self
        self._finalizer = weakref.finalize(self, _close_workers, self._idle)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the warm workers: the idle ones now, a busy one when its program is done."""
        self._closed = True
        self._close_idle()

    def _close_idle(self) -> None:
        with self._lock:
            idle, self._idle[:] = list(self._idle), []
        for worker in idle:
            self._retire(worker)

    def _command(self, workdir: str, uid: int | None, seccomp: int | None = None) -> list[str]:
        program = [_python(), *PYTHON_FLAGS, "main.py"]
        if self.isolation == "bwrap":
            return [*_bwrap_prefix(workdir, uid, seccomp=seccomp), *program]
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

    def _set_worker_limits(self) -> None:
        """Runs in a warm worker's child before exec. The per-program limits are set in each
        program's process; the process count must be in place when bubblewrap makes its user
        namespace (the kernel checks each namespace level against its creator's limit). A fresh
        sandbox counts bubblewrap, its init and the program; a worker, once bubblewrap has left,
        counts itself and the program: one less, so a program may start exactly as many. (The
        namespace keeps the soft limit; the hard one lets the program's process read the
        configured limit back.)"""
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if self._drops_uid:
            count = self.limits.processes
            resource.setrlimit(resource.RLIMIT_NPROC, (max(2, count - 1), count))

    def run(self, source: str) -> SandboxResult:
        worker = self._take_worker()
        try:
            result, worker = self._run_one(source, worker)
            return result
        finally:
            self._give_back(worker)

    def run_many(self, sources: Sequence[str], jobs: int = 2) -> list[SandboxResult]:
        """Run programs in parallel (threads only wait on child processes); results in order.

        Each of the `jobs` lanes keeps one warm worker and starts with program number lane, so
        the first `jobs` programs always run in different workers: two runs of one program (the
        SKATE check) never share a worker, whose forks share one memory layout, and object
        addresses still differ between them as between two fresh interpreters."""
        results: list[SandboxResult | None] = [None] * len(sources)
        lanes = min(max(1, jobs), len(sources))
        if lanes == 0:
            return []
        following = iter(range(lanes, len(sources)))
        claim = threading.Lock()
        # Every lane's worker is taken before any lane starts and given back after all end: a lane
        # that took its worker late could otherwise get the one an early lane had just given back,
        # and two runs of one program would share a memory layout (seen under load).
        workers = [self._take_worker() for _ in range(lanes)]

        def lane(first: int) -> None:
            index: int | None = first
            while index is not None:
                results[index], workers[first] = self._run_one(sources[index], workers[first])
                with claim:
                    index = next(following, None)

        try:
            with ThreadPoolExecutor(max_workers=lanes) as pool:
                list(pool.map(lane, range(lanes)))
        finally:
            for worker in workers:
                self._give_back(worker)
        return [r for r in results if r is not None]

    def _run_one(self, source: str, worker: _Worker | None) -> tuple[SandboxResult, _Worker | None]:
        """One program on `worker` (None: the one-sandbox path); returns the worker to use next,
        a fresh one in place of one that was lost (its program then runs the one-sandbox way)."""
        if worker is not None:
            try:
                return self._run_warm(worker, source), worker
            except _WorkerLost as lost:
                self._retire(worker)
                if lost.setup:
                    self._disable_warm(str(lost))
                worker = self._take_worker()
        return self._run_fresh(source), worker

    def _run_warm(self, worker: _Worker, source: str) -> SandboxResult:
        exit_code, limit, elapsed, stdout, stderr = worker.run(source, self.limits)
        if limit is None:
            limit = _which_limit(exit_code, stdout, stderr, elapsed, self.limits)
        return SandboxResult(stdout, stderr, exit_code, limit, round(elapsed, 4), self.isolation)

    def _take_worker(self) -> _Worker | None:
        """An idle warm worker, or a new one; None where programs go the one-sandbox way."""
        if not self.warm or self._closed:
            return None
        with self._lock:
            if self._idle:
                return self._idle.pop()
        uid = None
        if self._drops_uid:
            uid = _claim_uid(wait=False)
            if uid is None:  # every slot busy: this program waits for one the old way
                return None
        try:
            worker = _Worker(self.limits, uid, self._set_worker_limits)
        except (OSError, subprocess.SubprocessError, _WorkerLost) as exc:
            _release_uid(uid)
            self._disable_warm(f"a warm worker did not start: {exc}")
            return None
        with self._lock:
            self.workers_started += 1
            first = self.workers_started == 1
        if first:
            # once per sandbox: a worker that starts but cannot run a program sends everything
            # the one-sandbox way instead of failing program after program
            try:
                probe = worker.run("print(1)\n", self.limits)
            except _WorkerLost as lost:
                probe = (None, str(lost), 0.0, "", "")
            if probe[0] != 0 or probe[3] != "1\n":
                self._retire(worker)
                self._disable_warm(f"a warm worker failed its first program: {probe}")
                return None
        return worker

    def _give_back(self, worker: _Worker | None) -> None:
        if worker is None:
            return
        if self.warm and not self._closed and worker.alive():
            with self._lock:
                self._idle.append(worker)
        else:
            self._retire(worker)

    def _retire(self, worker: _Worker) -> None:
        worker.close()
        _release_uid(worker.uid)

    def _disable_warm(self, reason: str) -> None:
        if self.warm:
            self.warm, self.warm_failure = False, reason
            print(f"sandbox: warm workers off, one sandbox per program from now on: {reason}", file=sys.stderr)
            self._close_idle()

    def _run_fresh(self, source: str) -> SandboxResult:
        if not self._drops_uid:
            return self._run(source, None)
        uid = _claim_uid()
        assert uid is not None
        try:
            return self._run(source, uid)
        finally:
            _release_uid(uid)

    def _run(self, source: str, uid: int | None) -> SandboxResult:
        workdir = tempfile.mkdtemp(prefix="sandbox-")
        try:
            Path(workdir, "main.py").write_text(source, encoding="utf-8")
            if uid is not None:
                os.chown(workdir, uid, uid)
                os.chmod(workdir, 0o700)
            with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, filter_fd() as seccomp:
                seccomp = seccomp if self.isolation == "bwrap" else None
                started = time.monotonic()
                process = subprocess.Popen(
                    self._command(workdir, uid, seccomp),
                    cwd=workdir,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    pass_fds=() if seccomp is None else (seccomp,),
                    preexec_fn=self._set_limits,  # single-threaded fork point
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


class _WorkerLost(RuntimeError):
    """A warm worker did not answer, died, or could not set a program up (`setup`): the program
    runs the one-sandbox way."""

    def __init__(self, reason: str, setup: bool = False) -> None:
        super().__init__(reason)
        self.setup = setup


@functools.cache
def _zygote_source() -> str:
    return ZYGOTE.read_text(encoding="utf-8")


class _Worker:
    """One bubblewrap sandbox kept warm. The host gives each program a fresh directory under the
    worker's (bound at the worker's /tmp/job) and its own stdout and stderr files, sent over a
    socket pair; the worker answers "exit N", "wall" or "fail REASON" (zygote.py)."""

    def __init__(self, limits: SandboxLimits, uid: int | None, set_limits: Callable[[], None]) -> None:
        self.uid = uid
        self.pid: int | None = None  # the worker's, once bubblewrap's first process has left
        self._pidfd: int | None = None  # signals reach this process, never one that reused its pid
        self._lost = False
        self.root = tempfile.mkdtemp(prefix="sandbox-worker-")
        os.chmod(self.root, 0o711)  # the worker may enter a program's directory, never list them
        self._sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # the zygote's own stdio is a file like each program's: the interpreter sizes the buffers
        # of sys.stdout and sys.stderr, which programs inherit, from the file they were made for
        self._log = tempfile.TemporaryFile()
        processes = limits.processes if uid is not None else 0  # no count limit without a slot uid
        try:
            with filter_fd() as seccomp:  # the child holds its own copy once started
                command = [
                    *_bwrap_prefix(self.root, uid, worker=True, seccomp=seccomp),
                    _python(),
                    *PYTHON_FLAGS,
                    "-c",
                    _zygote_source(),
                    str(theirs.fileno()),
                    str(limits.cpu_s),
                    str(limits.wall_s),
                    str(limits.memory_mb),
                    str(limits.output_bytes),
                    str(processes),
                ]
                self.process = subprocess.Popen(
                    command,
                    cwd=self.root,
                    stdin=subprocess.DEVNULL,
                    stdout=self._log,
                    stderr=self._log,
                    pass_fds=(theirs.fileno(),) if seccomp is None else (theirs.fileno(), seccomp),
                    preexec_fn=set_limits,
                    start_new_session=True,
                    env={"PATH": "/usr/bin:/bin"},
                )
        except BaseException:
            theirs.close()
            self._cleanup()
            raise
        theirs.close()
        said: list[bytes] = []
        try:
            # "pid N" from the first process as it leaves, "ready" from the worker: two processes,
            # so either may come first on a busy machine
            while len(said) < 2:
                said.append(self._receive(_WORKER_START_S))
                if said[-1].startswith(b"pid ") and said[-1][4:].isdigit():
                    self.pid = int(said[-1][4:])
                    self._pidfd = os.pidfd_open(self.pid)
                    # bubblewrap leaves with that process; reaped, its zombie no longer counts
                    # against the slot uid's process limit
                    self.process.wait(timeout=_WORKER_START_S)
        except (_WorkerLost, subprocess.TimeoutExpired, OSError):
            self.close()
            raise
        if b"ready" not in said or self.pid is None:
            reason = f"the worker said {said!r} at start; its log: {self.log_tail()}"
            self.close()
            raise _WorkerLost(reason)

    def alive(self) -> bool:
        return not self._lost and self._sock.fileno() >= 0

    def run(self, source: str, limits: SandboxLimits) -> tuple[int | None, str | None, float, str, str]:
        """(exit code, "wall" or None, elapsed s, stdout, stderr) of one program."""
        name = os.urandom(8).hex()
        job = os.path.join(self.root, name)
        os.mkdir(job, 0o700)
        try:
            Path(job, "main.py").write_text(source, encoding="utf-8")  # root's file, as in a fresh sandbox
            if self.uid is not None:
                os.chown(job, self.uid, self.uid)
            with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
                started = time.monotonic()
                try:
                    socket.send_fds(self._sock, [name.encode()], [out.fileno(), err.fileno()])
                except OSError as exc:
                    raise _WorkerLost(f"the worker is gone: {exc}") from exc
                reply = self._receive(limits.wall_s + _REPLY_SLACK_S)
                elapsed = time.monotonic() - started
                stdout = _read(out, limits.output_bytes)
                stderr = _read(err, limits.output_bytes)
        finally:
            # every process of the program is gone once the worker answers (or the worker is)
            shutil.rmtree(job, ignore_errors=True)
        kind, _, detail = reply.decode("utf-8", "replace").partition(" ")
        if kind == "exit" and detail.lstrip("-").isdigit():
            return int(detail), None, elapsed, stdout, stderr
        if kind == "wall":
            return None, "wall", elapsed, stdout, stderr
        raise _WorkerLost(f"the worker could not run a program: {reply!r}", setup=kind == "fail")

    def _receive(self, timeout_s: float) -> bytes:
        self._sock.settimeout(timeout_s)
        try:
            reply = self._sock.recv(4096)
        except OSError as exc:  # a timeout included: the worker stopped answering
            self.kill()
            raise _WorkerLost(f"no answer from the worker: {exc!r}; its log: {self.log_tail()}") from exc
        if not reply:
            self._lost = True
            raise _WorkerLost(f"the worker exited; its log: {self.log_tail()}")
        return reply

    def log_tail(self) -> str:
        self._log.seek(0)
        return self._log.read()[-2000:].decode("utf-8", "replace")

    def kill(self) -> None:
        """Kill the worker: it is pid 1 of the programs' pid namespace, so they die with it."""
        self._lost = True
        if self.process.returncode is None:
            _kill_group(self.process)
        if self._pidfd is not None:
            try:
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def close(self) -> None:
        """Hang up: the worker exits on it, and a program in flight with it (bubblewrap's first
        process left at start). The caller waits for the slot uid's processes, and reaps the
        worker, before reusing the uid."""
        self._lost = True
        self._sock.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            self.process.wait()
        self._cleanup()

    def _cleanup(self) -> None:
        self._sock.close()
        self._log.close()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        shutil.rmtree(self.root, ignore_errors=True)


def _close_workers(idle: list[_Worker]) -> None:
    """The finalizer of a Sandbox: its idle workers hang up (each exits on the hang-up)."""
    for worker in idle:
        worker.close()
        _release_uid(worker.uid)
    idle.clear()


#: one lock file per slot uid: a slot is claimed machine-wide (every process of a slot's uid is
#: killed before the slot is reused, and the uid's process count is the limit), so two processes
#: running sandboxes, such as parallel Snakemake jobs, never share one
_SLOT_LOCKS = Path(tempfile.gettempdir(), "pipeline-sandbox-slots")
_slot_files: dict[int, int] = {}  # uid -> the descriptor holding its lock, in this process
_slots_guard = threading.Lock()


def _claim_uid(wait: bool = True) -> int | None:
    """A free slot uid, now this process's (None when `wait` is off and every slot is taken)."""
    _SLOT_LOCKS.mkdir(mode=0o700, exist_ok=True)
    while True:
        for slot in range(64):
            uid = SLOT_UID_BASE + slot
            fd = os.open(_SLOT_LOCKS / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # per open file: threads exclude each other too
            except BlockingIOError:
                os.close(fd)
                continue
            with _slots_guard:
                _slot_files[uid] = fd
            return uid
        if not wait:
            return None
        time.sleep(0.01)


def _release_uid(uid: int | None) -> None:
    """Give a slot back once every process of it is gone (killed and reaped)."""
    if uid is not None:
        _wait_for_uid_exit(uid)
        with _slots_guard:
            fd = _slot_files.pop(uid)
        os.close(fd)


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

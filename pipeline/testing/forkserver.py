"""The tests' fork server for `python -m pipeline` job commands: a warm process that has imported the
package and its heavy dependencies (litellm, polars, pydantic) once, and forks a copy of itself per
command.

Every Snakemake job is a fresh `python -m pipeline ...` process, and a job that talks to a model
imports litellm first: about 3.5 CPU-s before its first request, about 0.7 for any other job. The
test suite runs hundreds of such jobs on few cores. The production entry point knows nothing of
this (`pipeline/__main__.py` runs the command): the tests reach the server through Python's own
start-up hook instead. `pipeline/testing/fork_client/` holds a `sitecustomize` module; with that
folder on PYTHONPATH and `PIPELINE_FORK_SERVER` naming a server's socket, an interpreter started
as `python -m pipeline ARGS` hands ARGS to the server (`delegate`) before it imports anything of
the package, and waits; without them, or when the server cannot take the command, the process
runs the command itself, as always. tests/conftest.py starts one server per test worker and sets
both variables (`start`, `client_environment`); `python -m pipeline.testing.forkserver SOCKET`
starts one by hand.

What a forked command gets is what a fresh process would have: the client's arguments, working
directory, environment, module search path and standard streams (passed as file descriptors), and
its own process group; the package's import-time settings (`pipeline.OFFLINE_ENVIRONMENT`) and the CPU pinning of
the command line (`pipeline.cpu`) are applied to that environment as a fresh process would apply
them. Its exit status, or the signal that ended it, becomes the client's. What stays the server's:
modules already imported (so settings read at import time are the server's) and the hash seed.
Declined, and run by the client itself:
- a package whose files differ from those the server imported (a project copy with code of its
  own, or a file edited since the server started): the client sends a digest of the package that
  `python -m pipeline` would import from its directory (about 15 ms), so a copy of the same code
  is served and stale code never runs;
- `run` and `plan`, which start Snakemake and own its process group and terminal;
- a job of a cluster scheduler (SLURM_JOB_ID set): it runs on its node, within its allocation.
Module state set at import is the one hazard: anything naming "this process" must read its pid at
the time (`pipeline.core.artifacts.io` names temp files so), not keep the server's.

Each command gets a supervisor between the server and it (the server never waits on anyone): the
supervisor reports the command's end to the client, forwards the client's signals to the command's
process group, and when the client dies (SIGKILL included, seen as the socket closing) kills that
group, so nothing outlives the process that Snakemake or a test started.

The client half (`delegate`) runs inside `sitecustomize`, before the package can be imported: this
module imports nothing but the standard library at its top.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import hashlib
import importlib.util
import json
import os
import random
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the environment variable naming the server's socket
ADDRESS_VARIABLE = "PIPELINE_FORK_SERVER"
#: the folder whose `sitecustomize` hands `python -m pipeline` commands to the server (on PYTHONPATH)
CLIENT_HOOK = Path(__file__).resolve().parent / "fork_client"
#: commands the client always runs itself (they start Snakemake and hold its process group)
NOT_DELEGATED = frozenset({"run", "plan"})
#: signals a client passes on to its command
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
_HEADER = struct.Struct("!I")


def package_digest(root: Path) -> str:
    """A digest of every file of the package in `root` (names and contents, caches aside): a server
    runs a command only for the code it imported."""
    digest = hashlib.blake2b(digest_size=16)
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
        for name in sorted(files):
            path = os.path.join(folder, name)
            digest.update(os.path.relpath(path, root).encode() + b"\0")
            with open(path, "rb") as handle:
                digest.update(handle.read())
            digest.update(b"\0")
    return digest.hexdigest()


def command_package() -> Path | None:
    """The folder of the `pipeline` package that `python -m pipeline` run here imports (the current
    directory comes first, as `-m` puts it), found without importing it."""
    saved = sys.path[:]
    if not sys.flags.safe_path:
        sys.path.insert(0, os.getcwd())
    try:
        spec = importlib.util.find_spec("pipeline")
    except (ImportError, ValueError):
        spec = None
    finally:
        sys.path[:] = saved
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]).resolve()


# ---------------------------------------------------------------------------------------------
# client: `python -m pipeline` started with the client hook on PYTHONPATH and PIPELINE_FORK_SERVER set


def client_environment(address: str, environ: dict[str, str] | None = None) -> dict[str, str]:
    """`environ` (default: this process's) with what sends `python -m pipeline` commands to the server
    at `address`: its socket, and the client hook first on PYTHONPATH."""
    env = dict(os.environ if environ is None else environ)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(CLIENT_HOOK)]
    env["PYTHONPATH"] = os.pathsep.join([str(CLIENT_HOOK), *paths])
    env[ADDRESS_VARIABLE] = address
    return env


def delegate(address: str, argv: list[str]) -> int | None:
    """Run `argv` in a process forked by the server at `address`; its exit status, or None when the
    server is not there or declines (the caller then runs the command itself)."""
    if argv and argv[0] in NOT_DELEGATED:
        return None
    if os.environ.get("SLURM_JOB_ID"):  # a cluster job runs where its scheduler put it, within its limits
        return None
    package = command_package()
    if package is None:
        return None
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.connect(address)
        request = json.dumps(
            {
                "argv": argv,
                "argv0": str(package / "__main__.py"),  # what runpy makes sys.argv[0]
                "cwd": os.getcwd(),
                "env": dict(os.environ),
                "path": ([] if sys.flags.safe_path else [os.getcwd()]) + sys.path,  # as `-m` will have it
                "package": package_digest(package),
            }
        ).encode()
        socket.send_fds(client, [_HEADER.pack(len(request))], [0, 1, 2])
        client.sendall(request)
        reader = client.makefile("rb")
        first = reader.readline().split()
    except OSError:
        client.close()
        return None
    if first[:1] != [b"pid"]:  # declined (or the server went away): run it here
        client.close()
        return None

    def forward(signum: int, _frame: Any) -> None:
        with contextlib.suppress(OSError):
            client.sendall(f"signal {signum}\n".encode())

    for forwarded in FORWARDED:
        signal.signal(forwarded, forward)
    line = reader.readline().split()
    if len(line) == 2 and line[0] == b"exit":
        return int(line[1])
    if len(line) == 2 and line[0] == b"signal":  # end as the command ended, so the caller sees the same
        ended_by = int(line[1])
        signal.signal(ended_by, signal.SIG_DFL)
        os.kill(os.getpid(), ended_by)
        return 128 + ended_by
    return 1  # the supervisor died without a word: not a success


# ---------------------------------------------------------------------------------------------
# server


def preload() -> None:
    """Import what job commands import, once: the package's commands, litellm and the gateway, the
    compiled rating kernel, the chart library. None of them starts a thread (`serve` checks)."""
    import altair  # noqa: F401
    import litellm  # noqa: F401
    import polars  # noqa: F401

    import pipeline.cli
    import pipeline.core.models.gateway
    import pipeline.core.models.local
    import pipeline.core.rating.kernel

    pipeline.cli.build_parser()  # every benchmark's command modules


def serve(address: str) -> None:
    """Accept commands at `address` until the process that started the server is gone."""
    from pipeline.cpu import pin_cpu_kernels

    # the digest before the imports: a file edited meanwhile makes every client differ
    own = package_digest(Path(__file__).resolve().parents[1])
    pin_cpu_kernels()  # as the command line does, before the imports below load numpy
    preload()
    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(address)
    listener.bind(address)
    listener.listen(64)
    # what is imported stays out of the forks' garbage collections, which would otherwise visit (and
    # so copy) the whole heap
    gc.collect()
    gc.freeze()
    signal.signal(signal.SIGTERM, _stop)  # `ForkServer.stop`: collect what ended, then go
    try:
        _accept(listener, parent, own)
    except SystemExit:
        _reap()


def _stop(_signum: int, _frame: Any) -> None:
    raise SystemExit(0)


def _accept(listener: socket.socket, parent: int, own: str) -> None:
    while os.getppid() == parent:
        ready, _, _ = select.select([listener], [], [], 1.0)
        _reap()
        if not ready:
            continue
        conn, _ = listener.accept()
        try:
            conn.settimeout(10)
            request, fds = _read_request(conn)
        except (OSError, ValueError):
            conn.close()
            continue
        other_code = request.get("package") != own
        not_ours = bool(request["argv"][:1]) and request["argv"][0] in NOT_DELEGATED
        threads = threading.active_count() != 1  # a fork copies only this thread: refuse rather than risk a lock
        if other_code or not_ours or threads:
            with contextlib.suppress(OSError):
                conn.sendall(b"decline\n")
            _close(conn, fds)
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        if os.fork() == 0:
            listener.close()
            conn.settimeout(None)
            _supervise(conn, request, fds)  # never returns
        _close(conn, fds)


def _reap() -> None:
    """Collect the supervisors that ended: waited for, their commands' CPU time counts as this
    server's, and so as its starter's (a benchmark of the test suite sees what the jobs cost)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def _read_request(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    header, fds, _, _ = socket.recv_fds(conn, _HEADER.size, 3)
    if len(header) != _HEADER.size or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise ValueError("a request without its header and three streams")
    (size,) = _HEADER.unpack(header)
    body = b""
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            break
        body += chunk
    try:
        return json.loads(body), fds
    except ValueError:
        for fd in fds:
            os.close(fd)
        raise


def _close(conn: socket.socket, fds: list[int]) -> None:
    conn.close()
    for fd in fds:
        os.close(fd)


def _supervise(conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    """The supervisor: start the command, pass on signals, report its end, and take it down with the client.
    It never returns to the server's loop, whatever happens."""
    try:
        _supervise_command(conn, request, fds)
    except BaseException:  # noqa: BLE001 - a supervisor that fails says so and ends, the client then sees exit 1
        os._exit(1)


def _supervise_command(conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    # it ends only with its command or its client: a terminal's Ctrl-C or a stop meant for the
    # server reaches the client, which passes it on
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, signal.SIG_IGN)
    pid = os.fork()
    if pid == 0:
        _run_command(conn, request, fds)  # never returns
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)  # also here: no signal may reach a group the command has not formed yet
    for fd in fds:
        os.close(fd)
    try:
        conn.sendall(f"pid {pid}\n".encode())
        _watch(conn, pid)
    except BaseException:
        _kill_group(pid)  # whatever went wrong here, the command does not outlive its supervisor
        raise


def _watch(conn: socket.socket, pid: int) -> None:
    """Until the command ends (its status to the client) or the client does (the command killed)."""
    try:
        ended: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):  # a kernel before 5.3: look every 50 ms instead
        ended = None
    pending = b""
    while True:
        watched = [conn.fileno()] if ended is None else [conn.fileno(), ended]
        ready, _, _ = select.select(watched, [], [], None if ended is not None else 0.05)
        done, status = os.waitpid(pid, os.WNOHANG) if ended is None or ended in ready else (0, 0)
        if done:
            end = (
                f"signal {os.WTERMSIG(status)}"
                if os.WIFSIGNALED(status)
                else f"exit {os.waitstatus_to_exitcode(status)}"
            )
            with contextlib.suppress(OSError):
                conn.sendall(f"{end}\n".encode())
            os._exit(0)
        if conn.fileno() not in ready:
            continue
        try:
            data = conn.recv(4096)
        except OSError:
            data = b""
        if not data:  # the client is gone, killed or not: its command goes with it
            _kill_group(pid)
            os.waitpid(pid, 0)
            os._exit(0)
        pending += data
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            words = line.split()
            if len(words) == 2 and words[0] == b"signal":
                with contextlib.suppress(OSError):
                    os.killpg(pid, int(words[1]))


def _kill_group(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)


def _run_command(conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    """The command, in the client's place: its streams, directory, environment and arguments."""
    os.setpgid(0, 0)
    conn.close()
    for target, fd in zip((0, 1, 2), fds, strict=True):
        os.dup2(fd, target)
        os.close(fd)
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        random.seed()  # fresh entropy, as a new process has (backoff jitter must not repeat across jobs)
        if "numpy" in sys.modules:
            sys.modules["numpy"].random.seed()
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.path[:] = request["path"]  # the client's PYTHONPATH: what it imports beyond the package
        _fresh_process_settings()
        sys.argv = [request["argv0"], *request["argv"]]
        for stream in (sys.stdout, sys.stderr):
            if hasattr(stream, "reconfigure"):
                stream.reconfigure(line_buffering=stream is sys.stderr or os.isatty(stream.fileno()))
        from pipeline.cli import main

        code = _exit_code(main(request["argv"]))
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        _end(None)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)  # as Python ends on an uncaught KeyboardInterrupt
        code = 130
    except BaseException:  # noqa: BLE001 - printed and exit status 1, as the interpreter does
        traceback.print_exc()
        code = 1
    _end(code)


def _fresh_process_settings() -> None:
    """What a fresh `python -m pipeline` sets in its environment before the command runs (the
    client sent its environment before importing anything of the package)."""
    import pipeline
    from pipeline.cpu import pin_cpu_kernels

    for name, value in pipeline.OFFLINE_ENVIRONMENT.items():
        os.environ.setdefault(name, value)
    pin_cpu_kernels()


def _exit_code(value: object) -> int:
    """An exit status as `sys.exit(value)` gives it (a message is printed, status 1)."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    print(value, file=sys.stderr)
    return 1


def _end(code: int | None) -> None:
    """What the interpreter does at exit, less tearing down every module: in a fork of a process
    that imported thousands, the teardown touches (and so copies) their memory, about 1.5 s."""
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:  # the non-daemon threads are waited for, as at any exit
        shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if code is not None:
        os._exit(code)


@dataclass
class ForkServer:
    """A server started by `start`: its socket and process (stopped by `stop`, or when its starter exits)."""

    address: str
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.address)


def start(folder: str | os.PathLike[str] | None = None) -> ForkServer:
    """Start a server in the background with this process's environment, its socket in `folder` (a
    new temporary folder by default: a socket path must stay under about 100 bytes). It serves once
    its imports are done, in a few seconds; until then clients run their commands themselves."""
    where = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix="pipeline-fs-"))
    address = str(where / "server.sock")
    process = subprocess.Popen(
        [sys.executable, "-m", "pipeline.testing.forkserver", address],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    return ForkServer(address, process)


if __name__ == "__main__":
    serve(sys.argv[1])

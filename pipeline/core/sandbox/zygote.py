"""The warm worker of the sandbox: one bubblewrap sandbox per worker, one fresh process per program.

`pipeline.core.sandbox.runner` never imports this file: it reads it and starts it inside bubblewrap as
`python3 -s -S -c <this text> FD CPU_S WALL_S MEMORY_MB OUTPUT_BYTES PROCESSES`, FD being the
worker's end of a socket pair. Bubblewrap gives it the binds, environment, uid and hash seed of a
fresh sandbox, its own user namespace with a few capabilities in it (sandbox.WORKER_CAPABILITIES,
never the host's), and no pid namespace: the worker makes its own, whose pid 1 (this process,
after a fork) may reset the pid counter. The worker has paid the interpreter's start-up once; for each request (a
directory name under the worker's /tmp/job, the program's stdout and stderr files):

- the worker (pid 1) sets the next pid to 2 and forks the program P into new mount, IPC and
  network namespaces (it unshares them, forks, and returns to its own);
- P mounts a fresh /tmp with the host's per-program directory at /tmp/job, a fresh /dev
  (bubblewrap's set of nodes) and /dev/shm, brings up loopback and drops every capability, then
  takes the program's stdio, sets the limits and runs main.py through the interpreter's own
  PyRun_SimpleFileEx, called from sys.excepthook once this file's frames have unwound: no frame of
  ours lies under the program's, and exceptions, SystemExit, atexit and thread joins go through
  the interpreter's own code, as for `python3 -s -S main.py`. Before the fork the worker made the
  interpreter look as that command makes it (modules, import caches, argv, a fresh __main__);
- when P exits (or at the wall limit) the worker kills whatever P left (kill(-1): every process
  in its pid namespace but itself), reaps it all, and answers "exit N" (128 + signal for a
  signal, as bubblewrap reports it), "wall", or "fail REASON" (setup failed: the host runs the
  program the old way). Pid 1 and pid 2, session and process group 1: as under bubblewrap's init.

The worker never reads a program or its output, and every fork starts from the same worker that
has run nothing, so no program sees anything of an earlier one: its files, mounts, IPC objects
and sockets die with its namespaces, its processes with kill(-1), its interpreter state with its
process; nothing of it is left when the next program starts.
"""

_FRESH_MAIN = list(globals().items())  # __main__ as start-up made it (this docstring is undone below)

import sys  # noqa: E402 - after the snapshot, which must see __main__ as start-up left it

# what `python3 -s -S main.py` has at its first line, less the script's own entries (added per
# program). The imports below are the worker's own (no `typing`: each is one more to forget).
_FRESH_MODULES = frozenset(sys.modules)
_FRESH_IMPORTERS = dict(sys.path_importer_cache)
_FRESH_PATH = list(sys.path)

import _signal  # noqa: E402
import _socket  # noqa: E402
import _thread  # noqa: E402
import _warnings  # noqa: E402
import _weakref  # noqa: E402
import atexit  # noqa: E402
import ctypes  # noqa: E402
import gc  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import select  # noqa: E402
import time  # noqa: E402 - loaded at start-up anyway

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x08000000, 0x20000000, 0x40000000
#: a program's own namespaces (its pid namespace is the worker's, emptied between programs)
PROGRAM_NAMESPACES = (("mnt", CLONE_NEWNS), ("ipc", CLONE_NEWIPC), ("net", CLONE_NEWNET))
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 4096, 16384, 1 << 18
PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_CAP_AMBIENT = 4, 24, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
LINUX_CAPABILITY_VERSION_3 = 0x20080522
#: the nodes, links and directories of bubblewrap's --dev, in its order (a listing of /dev shows it)
DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")
DEV_LINKS = (
    ("stdin", "/proc/self/fd/0"),
    ("stdout", "/proc/self/fd/1"),
    ("stderr", "/proc/self/fd/2"),
    ("fd", "/proc/self/fd"),
    ("core", "/proc/kcore"),
)
PROGRAM = "/tmp/job/main.py"
PROGRAM_BYTES = PROGRAM.encode()

_libc = ctypes.CDLL(None, use_errno=True)
_libc.fopen.restype = ctypes.c_void_p
_libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p)
_libc.prctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong)
_libc.ioctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_char_p)
_libc.setns.argtypes = (ctypes.c_int, ctypes.c_int)
_api = ctypes.PyDLL(None)  # the interpreter's own C API
# made once here: a program that imports ctypes shares _ctypes' type caches with this process
_CapHeader = ctypes.c_uint32 * 2
_CapData = ctypes.c_uint32 * 6


_CONTROL: _socket.socket | None = None  # the worker's end of the socket pair


class _Start(BaseException):
    """Raised at the top of a program's process; printing it runs the program (see _program_side).
    Its args hold the runner, which must outlive the hook call that runs it."""


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _prctl(option: int, value: int) -> None:
    _check(_libc.prctl(option, value, 0, 0, 0), f"prctl {option}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def raw(text: str | None) -> bytes | None:
        return None if text is None else text.encode()

    _check(_libc.mount(raw(source), target.encode(), raw(fstype), flags, raw(data)), f"mount {target}")


def _report(fd: int, line: str) -> None:
    try:
        os.write(fd, (line.replace("\n", " ") + "\n").encode())
    except OSError:
        pass


def _close_all_but(keep: set[int]) -> None:
    """Close every descriptor not in `keep`: what a program may reach is its stdio and nothing else."""
    low = 0
    for fd in sorted(keep):
        if low < fd:  # closerange(n, n) would close everything from n (close_range up to -1)
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, os.sysconf("SC_OPEN_MAX"))


# -- the worker ---------------------------------------------------------------------------------
def main() -> _Start:
    """Serve requests until the host hangs up; returns only in a program's process."""
    control, cpu_s, wall_s, memory_mb, output_bytes, processes = sys.argv[1:7]
    limits = (float(cpu_s), int(memory_mb), int(output_bytes), int(processes))
    global _CONTROL
    sock = _CONTROL = _socket.socket(fileno=int(control))
    _become_pid_one(sock)
    home = [(os.open(f"/proc/self/ns/{name}", os.O_RDONLY | os.O_CLOEXEC), flag) for name, flag in PROGRAM_NAMESPACES]
    last_pid = os.open("/proc/sys/kernel/ns_last_pid", os.O_WRONLY | os.O_CLOEXEC)
    # pid 1 reaps every orphan of a program at once, as bubblewrap's init does: a zombie would
    # count against the program's process limit. SIGCHLD wakes the loop through this pipe.
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    _signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    _signal.signal(_signal.SIGCHLD, _on_child)
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)  # programs may signal pid 1; P restores it
    # the worker imports nothing from here on: it can look like a fresh interpreter about to run
    # main.py now, once, and each program's process inherits that without work of its own
    _reset_interpreter()
    poller = select.poll()  # made once: after each fork, every page the worker writes is copied
    poller.register(wake_r, select.POLLIN)
    poller.register(sock.fileno(), select.POLLIN)
    # everything the worker holds goes to the oldest generation: while no collection of the older
    # two runs in a program's process, the younger two hold only what the program made (_Exit)
    gc.collect()
    sock.send(b"ready")
    while True:
        message, ancillary, _flags, _address = sock.recvmsg(256, _socket.CMSG_SPACE(2 * 4))
        if not message:
            os._exit(0)  # the host hung up
        fds = [
            int.from_bytes(data[i : i + 4], sys.byteorder)
            for level, kind, data in ancillary
            if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS
            for i in range(0, len(data) - len(data) % 4, 4)
        ]
        name = message.decode("ascii", "replace")
        if len(fds) != 2 or not name.isalnum():
            for fd in fds:
                os.close(fd)
            sock.send(b"fail bad request")
            continue
        outcome = _run_one(sock, poller, home, last_pid, wake_r, name, fds, float(wall_s), limits)
        if isinstance(outcome, _Start):
            return outcome  # this is the program's process now
        for fd in fds:
            os.close(fd)
        sock.send(outcome)


def _become_pid_one(sock: _socket.socket) -> None:
    """Fork into a new pid namespace of our own user namespace and leave the first process (and
    with it bubblewrap); the child is its pid 1, leads a session, and has mount, IPC and network
    namespaces of its own to return to after forking each program into new ones."""
    _check(_libc.unshare(CLONE_NEWPID), "unshare pid")
    child = os.fork()
    if child:
        sock.send(f"pid {child}".encode())  # its pid as the host sees it: the host may kill it
        os._exit(0)
    os.setsid()  # session and process group 1, which each program inherits
    _prctl(PR_SET_DUMPABLE, 0)  # nothing of the same uid may read or trace the worker
    _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET), "unshare")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)  # of the new pid namespace


def _on_child(_signum: int, _frame: object) -> None:
    """SIGCHLD's handler: the wakeup pipe does the work."""


def _run_one(
    sock: _socket.socket,
    poller: select.poll,
    home: list[tuple[int, int]],
    last_pid: int,
    wake_r: int,
    name: str,
    fds: list[int],
    wall_s: float,
    limits: tuple[float, int, int, int],
) -> bytes | _Start:
    status_r, status_w = os.pipe()
    try:
        os.pwrite(last_pid, b"1", 0)  # the program is pid 2, as under bubblewrap's init
        _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET), "unshare")
    except OSError as error:
        os.close(status_r)
        os.close(status_w)
        return f"fail {error}".encode()
    try:
        program = os.fork()  # into the new namespaces
    except OSError as error:
        program, failure = -1, error
    if program == 0:
        return _program_side(name, fds[0], fds[1], status_w, limits)
    for fd, flag in home:
        if _libc.setns(fd, flag) != 0:  # a worker that cannot go home cannot go on: the host
            _kill_all()  # sees it gone and runs the program the old way
            os._exit(1)
    os.close(status_w)
    if program < 0:
        os.close(status_r)
        return f"fail {failure}".encode()
    try:
        return _supervise(sock, poller, program, status_r, wake_r, wall_s)
    finally:
        os.close(status_r)


class _Lines:
    """The status pipe's lines: "ok" from P just before the program starts, or "fail ..."."""

    def __init__(self, fd: int) -> None:
        self.fd, self.buffer, self.closed = fd, b"", False

    def pump(self) -> None:
        chunk = os.read(self.fd, 4096)
        self.closed = not chunk
        self.buffer += chunk

    def take(self) -> list[str]:
        *complete, self.buffer = self.buffer.split(b"\n")
        return [line.decode("utf-8", "replace") for line in complete]


def _supervise(
    sock: _socket.socket, poller: select.poll, program: int, status_r: int, wake_r: int, wall_s: float
) -> bytes:
    """The worker's side of one program: reap orphans while it runs, kill everything it left when
    it exits or at the wall limit (counted from the fork), then say how it ended. The status pipe
    is read only then, when every writer is gone: waking the worker mid-run costs each program a
    wait for a CPU on a busy machine."""
    deadline = time.monotonic() + wall_s
    status: int | None = None
    while status is None:
        ready = {fd for fd, _mask in poller.poll(max(0, int((deadline - time.monotonic()) * 1000)) + 1)}
        if wake_r in ready:
            while True:
                try:
                    os.read(wake_r, 4096)
                except BlockingIOError:
                    break
        status = _reap(program)
        if status is not None:
            break
        if sock.fileno() in ready:  # the host hung up mid-program
            _kill_all()
            os._exit(0)
        if time.monotonic() >= deadline:  # (however busy SIGCHLD keeps the loop)
            break
    _kill_all()
    lines = _Lines(status_r)
    while not lines.closed:
        lines.pump()
    said = lines.take()
    if "ok" not in said:  # the program never started: its setup failed, or took the whole limit
        failure = next((line for line in said if line.startswith("fail")), "")
        return (failure or "fail the program's setup did not finish").encode()
    if status is None:
        return b"wall"
    code = os.waitstatus_to_exitcode(status)
    return f"exit {128 - code if code < 0 else code}".encode()


def _reap(program: int) -> int | None:
    """Reap every child that has exited; the program's wait status if it was one of them."""
    found = None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return found
        if pid == 0:
            return found
        if pid == program:
            found = status


def _kill_all() -> None:
    """Kill every process in the worker's pid namespace but the worker (what the kernel does to a
    pid namespace whose pid 1 exits), and reap them all: none is left for the next program."""
    while True:
        try:
            os.kill(-1, 9)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


# -- P: the program ----------------------------------------------------------------------------
def _program_side(name: str, out: int, err: int, status_w: int, limits: tuple[float, int, int, int]) -> _Start:
    """Runs in P, pid 2: its namespaces' contents, then the program's process."""
    cpu_s, memory_mb, output_bytes, processes = limits
    try:
        _close_all_but({out, err, status_w})
        _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing mounted here reaches the worker
        _build_root(name)
        _loopback_up()
        _drop_capabilities()
        _signal.set_wakeup_fd(-1)
        _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.dup2(os.open("/dev/null", os.O_RDWR), 0)  # what subprocess.DEVNULL gives a fresh sandbox
        _close_all_but({0, 1, 2, status_w})
        if _CONTROL is not None:
            _CONTROL.detach()  # its descriptor is closed: no "unclosed socket" warning at teardown
        os.chdir("/tmp/job")
        _prctl(PR_SET_DUMPABLE, 1)  # a fresh process of this uid is dumpable
        handle = _libc.fopen(PROGRAM_BYTES, b"rb")
        if not handle:
            _check(-1, "fopen main.py")
        _ProgramFile.handle = ctypes.c_void_p(handle)
        source = os.open(PROGRAM, os.O_RDONLY)
        try:
            _Exit.audits = b"audithook" in os.read(source, 1 << 24).lower()
        finally:
            os.close(source)
        cpu = max(1, int(cpu_s + 0.999))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        memory = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_FSIZE, (output_bytes, output_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if processes:
            # the worker and this process count as bubblewrap's init and the program do in a
            # fresh sandbox; the worker's own limit, one less, holds bubblewrap's place
            resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
        os.write(status_w, b"ok\n")
        os.close(status_w)
    except BaseException as error:  # noqa: BLE001 - whatever it is, the worker must hear of it
        _report(status_w, f"fail program setup: {error}")
        os._exit(1)
    sys.excepthook = _RUN
    # the hook is called one C level deeper than a script's code runs: give that level back, so a
    # program recurses exactly as deep as under `python3 main.py` (same getrecursionlimit())
    _api.Py_LeaveRecursiveCall()
    return _Start(_RUN)


def _build_root(name: str) -> None:
    """The fresh file system view of one program, as bubblewrap builds it for a fresh sandbox."""
    job = os.open(f"/tmp/job/{name}", os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW)
    dev = os.open("/dev", os.O_PATH | os.O_DIRECTORY)
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    os.mkdir("/tmp/job", 0o700)
    _mount(f"/proc/self/fd/{job}", "/tmp/job", None, MS_BIND)
    _mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    for node in DEV_NODES:
        os.close(os.open(f"/dev/{node}", os.O_CREAT | os.O_WRONLY, 0o666))
        _mount(f"/proc/self/fd/{dev}/{node}", f"/dev/{node}", None, MS_BIND)
    for link, target in DEV_LINKS:
        os.symlink(target, f"/dev/{link}")
    os.mkdir("/dev/shm", 0o755)
    os.mkdir("/dev/pts", 0o755)
    _mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620")
    os.symlink("pts/ptmx", "/dev/ptmx")
    _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    os.close(job)
    os.close(dev)


def _loopback_up() -> None:
    """A new network namespace has loopback down; bubblewrap's has it up."""
    fd = _libc.socket(2, 2, 0)  # AF_INET, SOCK_DGRAM: only a handle for the ioctls
    if fd < 0:
        _check(-1, "socket")
    try:
        request = ctypes.create_string_buffer(b"lo", 40)  # struct ifreq: name, then flags at 16
        _check(_libc.ioctl(fd, SIOCGIFFLAGS, request), "SIOCGIFFLAGS")
        flags = int.from_bytes(request.raw[16:18], sys.byteorder) | IFF_UP
        request.raw = request.raw[:16] + flags.to_bytes(2, sys.byteorder) + request.raw[18:]
        _check(_libc.ioctl(fd, SIOCSIFFLAGS, request), "SIOCSIFFLAGS")
    finally:
        os.close(fd)


def _bounding_set() -> tuple[int, ...]:
    """The capabilities in the worker's bounding set (the few bubblewrap's --cap-add left there)."""
    with open("/proc/self/status") as handle:
        mask = next(int(line.split()[1], 16) for line in handle if line.startswith("CapBnd:"))
    return tuple(cap for cap in range(64) if mask >> cap & 1)


_BOUNDING = _bounding_set()


def _drop_capabilities() -> None:
    """The worker holds a few capabilities of its user namespace; a program gets none, as under
    bubblewrap."""
    for cap in _BOUNDING:
        _prctl(PR_CAPBSET_DROP, cap)
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)  # fails only where there is none
    _check(_libc.capset(_CapHeader(LINUX_CAPABILITY_VERSION_3, 0), _CapData()), "capset")


def _reset_interpreter() -> None:
    """Undo what this file's start-up added: the interpreter is as `python3 -s -S main.py` makes it
    (modules, import caches, sys.path, argv, a new __main__). The worker keeps its own modules
    through its globals."""
    modules = sys.modules
    for module in [m for m in modules if m not in _FRESH_MODULES]:
        del modules[module]
    main_module = type(sys)("__main__")
    namespace = main_module.__dict__
    namespace.clear()
    namespace.update(_FRESH_MAIN)
    namespace["__doc__"] = None
    namespace["__annotations__"] = {}
    modules["__main__"] = main_module
    sys.path_importer_cache.clear()
    sys.path_importer_cache.update(_FRESH_IMPORTERS)
    sys.path_importer_cache[PROGRAM] = None  # the interpreter asks whether the script is a zip
    sys.path[:] = ["/tmp/job", *_FRESH_PATH[1:]]
    sys.argv[:] = ["main.py"]
    sys.orig_argv[:] = [*sys.orig_argv[: sys.orig_argv.index("-c")], "main.py"]


# The runner: sys.excepthook for the start exception, PyRun_SimpleFileEx(main.py) through ctypes.
# ctypes converts each argument with its argtype's from_param, which swap the hook's (type, value,
# traceback) for (the program's FILE*, its name, closeit=1).
class _ProgramFile:
    handle = ctypes.c_void_p()  # fopen'ed in each program's process

    @classmethod
    def from_param(cls, _hook_argument: object) -> object:
        # the last moment before the program's first line: nothing of the start exception is left
        for name in ("last_type", "last_value", "last_traceback", "last_exc"):
            if name in sys.__dict__:
                delattr(sys, name)
        sys.excepthook = sys.__excepthook__
        _Exit.collections = _Exit.older_collections()
        return cls.handle


class _ProgramName:
    @classmethod
    def from_param(cls, _hook_argument: object) -> object:
        return PROGRAM_BYTES


class _CloseIt:
    @classmethod
    def from_param(cls, _hook_argument: object) -> object:
        return 1


class _Exit:
    """How a program's process ends once its main code has returned (or raised, its traceback
    printed; a SystemExit of its own already exited inside PyRun_SimpleFileEx).

    The full way is SystemExit from the hook, which goes to Py_Exit as after a script: threads
    joined, atexit run, stdio flushed, modules torn down (running finalizers), exit. Teardown costs
    a forked interpreter more than a fresh one (it writes to every page it shares with the worker),
    and runs nothing of the program's when the program left none of these: threads, atexit
    callbacks, replaced, deleted or closed stdio, trace or profile functions, gc callbacks or frozen
    objects, changed warning filters, ctypes, audit hooks, an object with a finalizer (__del__,
    generators, files) or a weakref callback. Such a process flushes stdout and stderr and exits,
    with the same output and status; any doubt, a failed flush included, takes the full way.

    What the program made is in the two younger generations as long as neither older one was
    collected during its run (the worker's objects are all in the oldest); if one was, the full
    way. The class holds the builtins it uses, which the program may have replaced."""

    collections: tuple[int, int] = (0, 0)  # of the two older generations, at the program's start
    audits = False  # whether the program's source mentions audit hooks, which Python cannot list
    modules = sys.modules
    # weak: a fresh interpreter's teardown frees sys.stdout, and freeing it flushes what __del__
    # methods printed after the last flush; a reference held here would lose that output
    stdout, stderr = _weakref.ref(sys.stdout), _weakref.ref(sys.stderr)
    warning_filters = tuple(_warnings.filters)
    exit_, interrupt, is_subclass, is_instance, has = SystemExit, KeyboardInterrupt, issubclass, isinstance, hasattr
    type_, tuple_, reference = type, tuple, _weakref.ReferenceType
    get_objects, get_stats, freeze_count, callbacks = gc.get_objects, gc.get_stats, gc.get_freeze_count, gc.callbacks
    threads, exit_callbacks, now_exit = _thread._count, atexit._ncallbacks, os._exit

    @classmethod
    def older_collections(cls) -> tuple[int, int]:
        stats = cls.get_stats()
        return stats[1]["collections"], stats[2]["collections"]

    @classmethod
    def finish(cls, status: int) -> None:
        """The runner's restype: called with PyRun_SimpleFileEx's result."""
        last = sys.__dict__.get("last_type")
        # 130: what bubblewrap reports for a script Python kills with SIGINT after an unhandled
        # KeyboardInterrupt
        interrupted = last is not None and cls.is_instance(last, cls.type_) and cls.is_subclass(last, cls.interrupt)
        code = 0 if status == 0 else 130 if interrupted else 1
        try:
            quiet = cls.quiet()
        except BaseException:  # noqa: BLE001 - a program may have deleted what it reads (sys.stdout)
            quiet = False
        if quiet:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except BaseException:  # noqa: BLE001 - the full way flushes again and reports it
                raise cls.exit_(code) from None
            cls.now_exit(code)
        raise cls.exit_(code)

    @classmethod
    def quiet(cls) -> bool:
        """True when tearing the interpreter down would run nothing of the program's."""
        out, err = sys.stdout, sys.stderr
        if out is not cls.stdout() or err is not cls.stderr():
            return False
        if out is None or err is None:
            return False
        if (
            out.closed
            or err.closed
            or cls.threads()
            or cls.exit_callbacks()
            or cls.audits
            or cls.callbacks
            or cls.freeze_count()
            or "threading" in cls.modules
            or "_ctypes" in cls.modules
            or "_xxsubinterpreters" in cls.modules
            or sys.gettrace() is not None
            or sys.getprofile() is not None
            or cls.tuple_(_warnings.filters) != cls.warning_filters
            or cls.older_collections() != cls.collections
        ):
            return False
        has, is_instance, reference, type_ = cls.has, cls.is_instance, cls.reference, cls.type_
        for generation in (0, 1):
            for item in cls.get_objects(generation):
                if has(type_(item), "__del__") or (is_instance(item, type_) and has(item, "__del__")):
                    return False
                if is_instance(item, reference) and item.__callback__ is not None:
                    return False
        return True


_RUN = _api.PyRun_SimpleFileEx  # int PyRun_SimpleFileEx(FILE *fp, const char *filename, int closeit)
# typeshed lists ctypes types only; ctypes takes any class with from_param
_RUN.argtypes = (_ProgramFile, _ProgramName, _CloseIt)  # type: ignore[assignment]
_RUN.restype = _Exit.finish

if __name__ == "__main__":
    _start = main()
    raise _start

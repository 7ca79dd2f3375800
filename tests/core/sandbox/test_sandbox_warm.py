"""Warm workers: each program in its own fresh process and namespaces, nothing of one program
reaching the next in the same worker, and results identical to one sandbox per program."""

from __future__ import annotations

import dataclasses
import itertools
import os
import random
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.core.sandbox import runner as sandbox_module
from pipeline.core.sandbox.runner import Sandbox, SandboxResult
from pipeline.skate.config import SandboxParams
from pipeline.skate.parsing import parse_question
from pipeline.skate.templates import FAMILIES
from pipeline.skate.verify import verify_question
from tests.skate.test_skate_parsing import HASH_ORDER_PROGRAMS, reply

#: SKATE's limits (params/skate.yaml), with a CPU limit an eighth of the wall limit, so a busy loop
#: reaches the CPU limit first even on a machine loaded eight times over (the suite runs in parallel)
LIMITS = dataclasses.replace(SandboxParams().limits(), cpu_s=1.0, wall_s=8.0)

pytestmark = pytest.mark.skipif(
    sandbox_module.detect_isolation() != "bwrap", reason="warm workers run inside bubblewrap"
)


@pytest.fixture(scope="module")
def warm() -> Iterator[Sandbox]:
    box = Sandbox(LIMITS)
    yield box
    box.close()


@pytest.fixture(scope="module")
def fresh() -> Sandbox:
    return Sandbox(LIMITS, warm=False)


def outcome(result: SandboxResult) -> tuple[str, str, int | None, str | None]:
    return result.stdout, result.stderr, result.exit_code, result.limit


def comparable(result: SandboxResult) -> tuple[str, str, int | None, str | None]:
    """What must be equal between two runs of one program on either path: object addresses and
    the slot uid (which of 64 a run gets) differ from run to run on both; so does how many of a
    fork bomb's processes print a traceback before the limit stops them."""
    if result.limit == "processes":
        return "", "", result.exit_code, result.limit
    stdout, stderr, exit_code, limit = outcome(result)
    clean = [
        re.sub(r"(?<![0-9])61\d{3}(?![0-9])", "<uid>", re.sub(r"0x[0-9a-f]{6,}", "0x<address>", text))
        for text in (stdout, stderr)
    ]
    return clean[0], clean[1], exit_code, limit


# -- one worker, one program after another ---------------------------------------------------------
#: (what a program leaves behind, what the next one in the same worker checks)
LEFT_BEHIND = [
    (  # files in every writable place
        "import os\nfor path in ('left.txt', '/tmp/left.txt', '/dev/shm/left', '/dev/left'):\n"
        "    open(path, 'w').write('secret')\nos.mkdir('/tmp/job/dir')\nos.chmod('/tmp/job', 0o777)\n"
        "os.setxattr('/tmp/job', 'user.note', b'secret') if hasattr(os, 'setxattr') else None\nprint('wrote')",
        "import os\nprint(sorted(os.listdir('.')), sorted(os.listdir('/tmp')), os.listdir('/dev/shm'),\n"
        "      os.path.exists('/dev/left'), oct(os.stat('/tmp/job').st_mode), os.listxattr('/tmp/job'))",
        "['main.py'] ['job'] [] False 0o40700 []\n",
    ),
    (  # interpreter state: globals, modules, builtins, sys, environment, cwd, umask, limits, signals
        "import builtins, json, os, resource, signal, sys\nbuiltins.len = None\nbuiltins.leaked = 1\n"
        "json.dumps = None\nsys.modules['leak'] = sys\nsys.path.append('/tmp/evil')\nsys.setrecursionlimit(50)\n"
        "os.environ['LEAK'] = '1'\nos.chdir('/')\nos.umask(0o077)\nsecret = 42\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (16, 16))\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "import gc\ngc.disable()\ngc.freeze()\nprint('set')",
        "import builtins, gc, json, os, resource, signal, sys\n"
        "print(json.dumps([len('ab')]), hasattr(builtins, 'leaked'), 'secret' in globals(), 'leak' in sys.modules,\n"
        "      '/tmp/evil' in sys.path, sys.getrecursionlimit(), 'LEAK' in os.environ, os.getcwd(), oct(os.umask(0o22)),\n"
        "      resource.getrlimit(resource.RLIMIT_NOFILE)[0] > 16, signal.getsignal(signal.SIGTERM),\n"
        "      gc.isenabled(), gc.get_freeze_count())",
        "[2] False False False False 1000 False /tmp/job 0o22 True 0 True 0\n",
    ),
    (  # a background child in its own session, ignoring SIGTERM
        "import subprocess, sys\nsubprocess.Popen([sys.executable, '-S', '-c', 'import signal, time; "
        "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)'], start_new_session=True)\nprint('started')",
        "import os\nprint(sorted(p for p in os.listdir('/proc') if p.isdigit()), os.getpid(), os.getppid())",
        "['1', '2'] 2 1\n",
    ),
    (  # IPC objects: System V shared memory and a POSIX message queue
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nprint(libc.shmget(4242, 4096, 0o1666) >= 0)",
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nprint(libc.shmget(4242, 0, 0o666), open('/proc/sysvipc/shm').read().count('\\n'))",
        "-1 1\n",
    ),
    (  # network state: a loopback connection left in TIME_WAIT, a listener on a fixed port
        "import socket\nserver = socket.create_server(('127.0.0.1', 45454))\nclient = socket.create_connection(('127.0.0.1', 45454))\n"
        "peer, _ = server.accept()\nclient.close()\npeer.close()\nprint('connected')",
        "import socket\nprint(open('/proc/net/tcp').read().count('\\n'), socket.create_server(('127.0.0.1', 45454)).getsockname())",
        "1 ('127.0.0.1', 45454)\n",
    ),
    (  # memory filled to the limit
        "blocks = []\nwhile True:\n    blocks.append(bytearray(32 * 1024 * 1024))",
        "print(len(bytearray(64 * 1024 * 1024)))",
        "67108864\n",
    ),
    (  # a CPU loop until the limit, then a crash by signal
        "while True:\n    pass",
        "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)",
        "",
    ),
    (  # signals at pid 1 and at every process it may reach
        "import os, signal\nfor sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):\n"
        "    os.kill(1, sig)\nos.kill(-1, signal.SIGKILL)",
        "print('still here')",
        "still here\n",
    ),
]


def test_nothing_of_a_program_reaches_the_next_in_the_same_worker() -> None:
    box = Sandbox(LIMITS)
    try:
        marker = f"orphan-{uuid.uuid4().hex}"
        programs = [p for before, after, _ in LEFT_BEHIND for p in (before, after)]
        programs.append(
            "import subprocess, sys\n"
            f"subprocess.Popen([sys.executable, '-S', '-c', 'import time; time.sleep(600)', {marker!r}])\nprint(1)"
        )
        results = box.run_many(programs, jobs=1)  # one lane: one worker, one program after another
        assert box.warm and box.workers_started == 1, box.warm_failure  # never restarted
        for (before, _after, expected), leaving, checking in zip(LEFT_BEHIND, results[0::2], results[1::2]):
            assert checking.stdout == expected, (before, leaving, checking)
        assert results[10].limit == "memory" and results[12].limit == "cpu"
        assert results[13].exit_code == 128 + 11  # the crash, as bubblewrap reports a signal
        # pid 1 ignores what it has no handler for; kill(-1) spares pid 1 and the caller: nothing to kill
        assert "ProcessLookupError" in results[14].stderr and results[15].ok
        time.sleep(0.3)
        assert marker not in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    finally:
        box.close()


def test_two_runs_of_one_program_go_to_different_workers(warm: Sandbox) -> None:
    # forks of one worker share its memory layout; two workers' differ as two interpreters' do,
    # so SKATE still rejects a program that prints an address
    first, second = warm.run_many(["print(id(object()))"] * 2, jobs=2)
    assert first.ok and second.ok and first.stdout != second.stdout


def test_a_dead_worker_is_replaced_and_its_program_still_runs() -> None:
    box = Sandbox(LIMITS)
    try:
        assert box.run("print(1)").stdout == "1\n" and box.workers_started == 1
        (worker,) = box._idle
        worker.kill()
        results = box.run_many(["print(2)", "print(3)"], jobs=1)
        assert [r.stdout for r in results] == ["2\n", "3\n"]
        assert box.warm and box.workers_started == 2
    finally:
        box.close()


def test_a_worker_outlives_another_sandboxs_programs() -> None:
    # slot uids are shared by every Sandbox of a process: clearing one after a program of another
    # Sandbox must never reach a worker holding a different slot
    box, other = Sandbox(LIMITS), Sandbox(LIMITS, warm=False)
    try:
        assert box.run("print(1)").ok
        assert all(r.ok for r in other.run_many(["print(2)"] * 6, jobs=3))
        assert box.run("print(3)").stdout == "3\n" and box.workers_started == 1
    finally:
        box.close()


def test_slots_are_claimed_across_processes() -> None:
    # parallel jobs each run their own sandboxes: a worker of one process keeps its slot uid, and
    # no program of another process clears it (every process of a slot's uid is killed on reuse)
    if os.geteuid() != 0:
        pytest.skip("slot uids are used when running as root")
    code = (
        "import sys\nfrom pipeline.core.sandbox.runner import Sandbox\nbox = Sandbox()\n"
        "print(box.run('print(1)').stdout.strip(), box._idle[0].uid, flush=True)\nsys.stdin.readline()\n"
        "print(box.run('print(2)').stdout.strip(), box.workers_started, flush=True)\n"
    )
    other = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    try:
        assert other.stdout is not None and other.stdin is not None
        ran, their_uid = other.stdout.readline().split()
        assert all(r.ok for r in Sandbox(LIMITS, warm=False).run_many(["print(3)"] * 6, jobs=3))
        mine = Sandbox(LIMITS)
        assert mine.run("print(4)").ok and mine._idle[0].uid != int(their_uid)
        mine.close()
        other.stdin.write("\n")
        other.stdin.flush()
        assert (ran, other.stdout.readline().split()) == ("1", ["2", "1"])  # never killed, never restarted
    finally:
        other.kill()
        other.wait()


def test_a_worker_that_cannot_start_sends_programs_the_old_way(monkeypatch) -> None:
    monkeypatch.setattr(sandbox_module, "_zygote_source", lambda: "raise SystemExit(3)")
    box = Sandbox(LIMITS)
    result = box.run("print('fine')")
    assert result.ok and result.stdout == "fine\n" and result.isolation == "bwrap"
    assert not box.warm and "did not start" in (box.warm_failure or "")


def test_closing_a_sandbox_stops_its_workers() -> None:
    box = Sandbox(LIMITS)
    assert box.run_many(["print(1)"] * 2, jobs=2)[1].ok
    pids = [w.pid for w in box._idle]
    box.close()
    time.sleep(0.2)
    assert pids and not any(os.path.exists(f"/proc/{pid}") for pid in pids if pid is not None)


# -- the same results as one sandbox per program -----------------------------------------------------
def template_programs() -> list[str]:
    programs: list[str] = []
    for family in sorted(FAMILIES):
        for seed in range(3):
            template = FAMILIES[family](random.Random(seed))
            programs += [template.program, *template.near_misses]
    return list(dict.fromkeys(programs))


#: orphans dying all the time (each one a SIGCHLD for pid 1) must not hold off the time limits.
#: Which limit stops it is a near tie that load decides: its forks cost the parent about as much CPU
#: over the wall limit as the CPU limit allows (a worker's larger process forks dearer), so either
#: of the two time limits is the right outcome on either path.
ORPHANS = (
    "import os, time\nwhile True:\n    if os.fork() == 0:\n        if os.fork() == 0:\n            os._exit(0)\n"
    "        os._exit(0)\n    os.wait()\n    time.sleep(0.002)"
)
TIME_LIMITS = {"cpu", "wall"}

BEHAVIOUR = [
    # errors and exits
    "print(1)\nraise ValueError('nope')",
    "def f(x):\n    return 1 / x\ntry:\n    f(0)\nexcept ZeroDivisionError as e:\n    raise KeyError('k') from e",
    "print(",
    "if True:\nprint(1)",
    "import sys\nsys.exit(3)",
    "import sys\nsys.exit('bye')",
    "raise SystemExit(None)",
    "import os\nprint('x', flush=True)\nos._exit(5)",
    "raise KeyboardInterrupt",
    "import os\nos.abort()",
    "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)",
    "import signal\nsignal.raise_signal(signal.SIGUSR1)",
    "import warnings\nwarnings.warn('careful')\nwarnings.warn('outer', stacklevel=2)\nwarnings.warn('dep', DeprecationWarning)",
    "import sys\ndef f(n):\n    try:\n        return f(n + 1)\n    except RecursionError:\n        return n\nprint(f(0), sys.getrecursionlimit())",
    "def f(n):\n    return f(n + 1)\nprint(f(0))",
    # the interpreter's exit: finalizers, generators, atexit, threads, buffers
    "class A:\n    def __del__(self):\n        print('bye', A)\na = A()\nprint('end')",
    "def g():\n    try:\n        yield 1\n    finally:\n        print('cleanup')\nx = g()\nnext(x)\nprint('main')",
    "import atexit\natexit.register(print, 'at exit')\nprint('main')",
    "import threading, time\ndef late():\n    time.sleep(0.2)\n    print('thread done')\nthreading.Thread(target=late).start()\nprint('main done')",
    "import weakref\nclass B:\n    pass\nb = B()\nweakref.finalize(b, print, 'finalized')\nprint('main')",
    "import sys\nsys.stdout.write('no newline')",
    "import sys\nprint('to stderr', file=sys.stderr)\nprint('to stdout')",
    "class A:\n    def __del__(self):\n        raise RuntimeError('in del')\na = A()",
    "import sys\nsys.stdout.close()",
    "import sys\ndel sys.stdout\nprint('x', file=sys.stderr)",
    "import sys\nsys.stdout = None\nprint('lost')",
    "import gc\nclass Node:\n    def __init__(self):\n        self.me = self\n    def __del__(self):\n        print('collected')\nNode()\nprint(gc.collect() > 0)",
    # what a program sees
    "import os\nprint(os.getpid(), os.getppid(), os.getpgrp(), os.getsid(0), os.getuid(), os.getgid(), os.getgroups())",
    "import os\nprint(os.getcwd(), os.listdir('.'), sorted(os.listdir('/tmp')), os.listdir('/dev'), os.listdir('/dev/shm'))",
    # (not /dev/pts: a devpts mounted in the worker's user namespace shows an unmapped owner)
    "import os\nfor p in ('/tmp', '/tmp/job', '/tmp/job/main.py', '/dev', '/dev/shm', '/proc', '/dev/null', '/dev/ptmx'):\n"
    "    s = os.stat(p)\n    print(p, oct(s.st_mode), s.st_uid, s.st_gid)",
    "import os\nprint(dict(os.environ), oct(os.umask(0o22)), sorted(os.listdir('/proc/self/fd')))",
    "import sys\nprint(sys.argv, sys.orig_argv, sys.path, sys.flags, sys.executable, sys.exc_info())",
    "import sys\nprint(list(sys.modules), list(sys.path_importer_cache))",
    "'''doc'''\nimport sys\nprint(sorted(globals()), __file__, __doc__, __name__, __spec__, __package__, type(__loader__).__name__,\n"
    "      __loader__.path, sys._getframe().f_back, __builtins__ is __import__('builtins'))",
    "import traceback, inspect\nprint(len(traceback.extract_stack()), len(inspect.stack()))",
    "import sys\nfor s in (sys.stdin, sys.stdout, sys.stderr):\n    print(s.name, s.encoding, s.errors, s.line_buffering, s.write_through,\n"
    "          s.isatty(), s.buffer.raw.name, s.buffer.raw._blksize, s.mode)\nprint(repr(sys.stdin.read()))",
    "import resource\nfor name in sorted(n for n in dir(resource) if n.startswith('RLIMIT_')):\n"
    "    print(name, resource.getrlimit(getattr(resource, name)))",
    "print([l for l in open('/proc/self/status').read().splitlines()\n"
    "       if l.split(':')[0] in ('Pid', 'PPid', 'Uid', 'Gid', 'Groups', 'NSpid', 'NSsid', 'NoNewPrivs', 'Seccomp',\n"
    "                              'CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb')])",
    "print(open('/proc/self/uid_map').read(), open('/proc/self/gid_map').read(), open('/proc/1/cmdline').read()[:0])",
    "import signal\nprint([(s.name, signal.getsignal(s)) for s in signal.valid_signals() if isinstance(s, signal.Signals)],\n"
    "      signal.pthread_sigmask(signal.SIG_BLOCK, []))",
    "import socket\nserver = socket.create_server(('127.0.0.1', 0))\nclient = socket.create_connection(server.getsockname())\n"
    "peer, _ = server.accept()\nclient.sendall(b'ping')\nprint(peer.recv(4), socket.gethostname() != '')",
    # (pid 1 is the worker, not bubblewrap's init: what of it /proc shows differs)
    "import os, sys\nprint(sorted(p for p in os.listdir('/proc') if p.isdigit()), sys.stdin.fileno())",
    "import threading, gc\nprint(threading.main_thread().name, threading.active_count(), gc.isenabled(), gc.get_freeze_count())",
    # limits
    "import os\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n            import time\n            time.sleep(3)\n"
    "            os._exit(0)\n        n += 1\nexcept OSError as e:\n    print(n, e)",
    "import threading, time\nts = [threading.Thread(target=time.sleep, args=(0.5,)) for _ in range(400)]\nfor t in ts:\n    t.start()",
    "import os\nwhile True:\n    os.fork()",
    "while True:\n    pass",
    "blocks = []\nwhile True:\n    blocks.append(bytearray(50 * 1024 * 1024))",
    "import sys\nfor _ in range(1000):\n    sys.stdout.write('x' * 100_000)",
    "print('x' * 10_000_000)",
    "import time\ntime.sleep(60)",
    ORPHANS,
    # the old attack tests' programs
    "import socket\nsocket.create_connection(('127.0.0.1', 9), timeout=1)\nprint('connected')",
    "open('/root/escape.txt', 'w').write('x')",
    "import subprocess, sys\nr = subprocess.run([sys.executable, '-S', '-c', 'import os; print(\"hi\", dict(os.environ))'],"
    " capture_output=True, text=True)\nprint(r.returncode, r.stdout)",
    "import subprocess\nsubprocess.run(['/bin/sh', '-c', 'echo hi'])",  # no shell in the sandbox: the program's own error
]


@pytest.mark.parametrize(
    "programs",
    [template_programs(), HASH_ORDER_PROGRAMS + BEHAVIOUR],
    ids=["skate-templates", "behaviour"],
)
def test_results_are_those_of_one_sandbox_per_program(programs: list[str], warm: Sandbox, fresh: Sandbox) -> None:
    warm_results = warm.run_many(programs, jobs=2)
    fresh_results = fresh.run_many(programs, jobs=2)
    assert warm.warm, warm.warm_failure
    different = [
        (program, outcome(w), outcome(f))
        for program, w, f in zip(programs, warm_results, fresh_results)
        if comparable(w) != comparable(f)
        and not (program == ORPHANS and {w.limit, f.limit} <= TIME_LIMITS and w.stdout == f.stdout == "")
    ]
    assert different == []


NONDETERMINISTIC = [
    "import random\nprint(random.random())",
    "print(object())",
    "print(id(object()) % 997)",
    "import time\nprint(time.perf_counter_ns())",
    "import os\nprint(os.urandom(4).hex())",
    "print({object(), object(), object()} == {1})\nprint(hash(object()))",
]


def test_skate_verdicts_are_those_of_one_sandbox_per_program(warm: Sandbox, fresh: Sandbox) -> None:
    listed = "\n".join(f"{i}. wrong {i}" for i in range(1, 10))
    replies = [reply(p, listed) for p in template_programs()[::3] + NONDETERMINISTIC + BEHAVIOUR[:8]]
    for text in replies:
        parsed = parse_question(text)
        ours = verify_question(parsed, warm, max_program_chars=2000, max_output_chars=200)
        theirs = verify_question(parsed, fresh, max_program_chars=2000, max_output_chars=200)
        assert (ours.valid, ours.failure_kind, ours.answer, ours.distractors) == (
            theirs.valid,
            theirs.failure_kind,
            theirs.answer,
            theirs.distractors,
        ), text


def test_two_runs_of_a_program_never_share_a_worker_however_late_a_lane_starts(monkeypatch) -> None:
    """The SKATE check runs a program twice at once, and the two runs must not share a worker: a
    worker's forks share its memory layout, so object addresses could repeat where two fresh
    interpreters differ (seen under load: a program printing hash(object()) passed as
    deterministic). A lane could start after the other had finished and given its worker back, and
    take that very worker. Here a second take waits until a worker has been given back (or 1 s)."""
    box = Sandbox(LIMITS)
    if not box.warm:
        pytest.skip("no warm workers here (bubblewrap not available)")
    given_back = threading.Event()
    take, give_back, run_one = box._take_worker, box._give_back, box._run_one
    takes = itertools.count()  # counted on entry: the second take, whichever lane makes it
    ran_on: list[object] = []

    def late_take():
        if next(takes) > 0:
            given_back.wait(timeout=1.0)
        return take()

    def noted_give_back(worker):
        give_back(worker)
        given_back.set()

    def noted_run_one(source, worker):
        ran_on.append(worker)
        return run_one(source, worker)

    monkeypatch.setattr(box, "_take_worker", late_take)
    monkeypatch.setattr(box, "_give_back", noted_give_back)
    monkeypatch.setattr(box, "_run_one", noted_run_one)
    try:
        program = "print(hash(object()))"
        results = box.run_many([program, program], jobs=2)
        assert [r.exit_code for r in results] == [0, 0]
        assert len(ran_on) == 2 and None not in ran_on and ran_on[0] is not ran_on[1]
    finally:
        box.close()


def test_the_fallback_paths_stay_one_sandbox_per_program(monkeypatch) -> None:
    assert not Sandbox(LIMITS, warm=False).warm
    monkeypatch.setattr(sandbox_module, "detect_isolation", lambda: "none")
    assert not Sandbox(LIMITS, allow_unisolated=True).warm
    if os.geteuid() == 0:
        monkeypatch.setattr(sandbox_module, "detect_isolation", lambda: "unshare")
        assert not Sandbox(LIMITS).warm

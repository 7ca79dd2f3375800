"""A program written to spy or escape sees only the interpreter, its standard library and its own
folder, and holds no capability: every attack fails as the program's own error, on warm workers
and in one sandbox per program alike (issue 49)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.core.sandbox.runner import Sandbox, SandboxLimits

REPO = Path(__file__).resolve().parents[3]
LIMITS = SandboxLimits(cpu_s=2.0, wall_s=8.0, memory_mb=256, output_bytes=65536, processes=24)

# each attack prints one JSON line per try: [what, "ok" or the error's class and errno]
PROBE = r"""
import ctypes, json, os, socket
libc = ctypes.CDLL(None, use_errno=True)
def attempt(what, action):
    try:
        action()
        print(json.dumps([what, "ok"]))
    except OSError as error:
        print(json.dumps([what, type(error).__name__, error.errno]))
def call(result, name):
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{name}: {os.strerror(errno)}")
"""


def run(sandbox: Sandbox, body: str) -> dict[str, list]:
    result = sandbox.run(PROBE + body)
    assert result.exit_code == 0 and result.limit is None, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    return {line[0]: line[1:] for line in lines}


@pytest.fixture(scope="module", params=["warm", "fresh"])
def sandbox(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    box = Sandbox(LIMITS, warm=request.param == "warm")
    if box.isolation != "bwrap":
        box.close()
        pytest.skip(f"bubblewrap is not available here (isolation {box.isolation!r})")
    yield box
    box.close()


def test_project_files_results_caches_and_secrets_do_not_exist(sandbox: Sandbox) -> None:
    home = Path.home()
    targets = [
        REPO / "params" / "models.yaml",
        REPO / ".dvc" / "config",
        REPO / ".dvc" / "config.local",
        REPO / ".env",
        REPO / "results" / "leaderboard" / "leaderboard.json",
        REPO / ".cache" / "responses",
        home / ".cache" / "tournament-pipeline",
        home,
        Path("/home"),
        Path("/etc/passwd"),
        Path("/etc/hostname"),
        Path("/etc/resolv.conf"),
    ]
    body = "".join(f"attempt({str(t)!r}, lambda: os.stat({str(t)!r}))\n" for t in targets)
    found = run(sandbox, body)
    assert {path: outcome[0] for path, outcome in found.items()} == {str(t): "FileNotFoundError" for t in targets}


def test_an_uncaught_attempt_is_the_programs_own_error(sandbox: Sandbox) -> None:
    result = sandbox.run(f"print(open({str(REPO / 'params' / 'models.yaml')!r}).read())")
    assert result.exit_code == 1 and result.limit is None and result.stdout == ""
    assert "FileNotFoundError: [Errno 2] No such file or directory" in result.stderr


def test_the_root_holds_only_what_python_needs(sandbox: Sandbox) -> None:
    result = sandbox.run(
        "import os, json\n"
        "print(json.dumps({'root': sorted(os.listdir('/')), 'etc': os.listdir('/etc'),"
        " 'usr': sorted(os.listdir('/usr')), 'home': os.path.expanduser('~'), 'cwd': os.getcwd()}))"
    )
    seen = json.loads(result.stdout)
    assert set(seen["root"]) <= {"usr", "lib", "lib64", "bin", "sbin", "etc", "dev", "proc", "tmp"}
    assert REPO.parts[1] not in seen["root"] or REPO.parts[1] in ("usr", "tmp")
    assert seen["etc"] in ([], ["ld.so.cache"])
    assert set(seen["usr"]) <= {"bin", "lib", "lib64", "local"}
    assert seen["home"] == seen["cwd"] == "/tmp/job"


def test_the_root_is_read_only(sandbox: Sandbox) -> None:
    found = run(
        sandbox, "attempt('write /', lambda: open('/planted', 'w'))\nattempt('write /usr', lambda: open('/usr/x', 'w'))"
    )
    assert found["write /"][0] == "OSError" and found["write /usr"][0] == "OSError"  # EROFS
    assert found["write /"][1] == 30 and found["write /usr"][1] == 30


def test_no_capability_and_every_escape_is_refused(sandbox: Sandbox) -> None:
    body = r"""
caps = {l.split(':')[0]: l.split()[1] for l in open('/proc/self/status') if l.startswith('Cap')}
print(json.dumps(['caps', caps]))
attempt('mount', lambda: call(libc.mount(b'none', b'/tmp', b'tmpfs', 0, None), 'mount'))
attempt('unshare user', lambda: call(libc.unshare(0x10000000), 'unshare'))
attempt('unshare mount', lambda: call(libc.unshare(0x00020000), 'unshare'))
attempt('unshare net', lambda: call(libc.unshare(0x40000000), 'unshare'))
def enter():
    fd = os.open('/proc/1/ns/mnt', os.O_RDONLY)
    call(libc.setns(fd, 0), 'setns')
attempt('setns pid 1', enter)
attempt('ptrace pid 1', lambda: call(libc.ptrace(16, 1, None, None), 'ptrace'))  # PTRACE_ATTACH
attempt('read pid 1 memory', lambda: open('/proc/1/mem', 'rb').read(1))
attempt('raw socket', lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
attempt('packet socket', lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0))
"""
    found = run(sandbox, body)
    caps = found.pop("caps")[0]
    assert caps == {f"Cap{k}": "0000000000000000" for k in ("Inh", "Prm", "Eff", "Bnd", "Amb")}
    refused = {what: outcome for what, outcome in found.items() if outcome[0] != "ok"}
    assert refused == found, f"succeeded: {sorted(set(found) - set(refused))}"
    assert found["ptrace pid 1"] == ["PermissionError", 1]  # the seccomp filter, or a worker not dumpable
    assert found["unshare user"][0] in ("OSError", "PermissionError")  # no user namespace below: ENOSPC


def test_pid_one_holds_nothing_a_program_could_use(sandbox: Sandbox) -> None:
    """The warm worker keeps the capabilities it sets programs up with, out of reach (not
    dumpable: no /proc/1/mem, /proc/1/fd or ptrace); under a fresh sandbox pid 1 is bubblewrap's
    init, with no capability, and its environment is the PATH the host gave it."""
    body = r"""
status = {l.split(':')[0]: l.split()[1] for l in open('/proc/1/status') if l.startswith(('CapEff', 'Name'))}
print(json.dumps(['pid 1', status]))
try:
    print(json.dumps(['environ', open('/proc/1/environ', 'rb').read().decode()]))
except OSError as error:
    print(json.dumps(['environ', type(error).__name__]))
try:
    print(json.dumps(['fds', sorted(os.readlink(f'/proc/1/fd/{fd}') for fd in os.listdir('/proc/1/fd'))]))
except OSError as error:
    print(json.dumps(['fds', type(error).__name__]))
"""
    found = run(sandbox, body)
    if sandbox.warm:
        assert found["environ"] == found["fds"] == ["PermissionError"]
    else:
        # its descriptors: /dev/null, the program's own output files, its event counter
        links = found["fds"][0]
        assert links[0] == "/dev/null" and links[-1] == "anon_inode:[eventfd]" and len(links) == 4
        assert found["pid 1"][0] == {"Name": "bwrap", "CapEff": "0000000000000000"}
        assert found["environ"] == ["PATH=/usr/bin:/bin\x00"]


def test_a_worker_survives_its_programs_signals(sandbox: Sandbox) -> None:
    """pid 1 of the program's pid namespace (the warm worker, or bubblewrap's init) ignores a
    program's SIGKILL; the next program runs as before, in the same worker when warm."""
    started = sandbox.workers_started
    sandbox.run("import os, signal\nos.kill(1, signal.SIGKILL)\nos.kill(1, signal.SIGTERM)")
    assert sandbox.run("print(6 * 7)").stdout.strip() == "42"
    if sandbox.warm:
        assert sandbox.workers_started == max(started, 1)


def test_crux_style_programs_still_run(sandbox: Sandbox) -> None:
    program = (
        "import collections, itertools, functools, re, math, json, decimal, fractions, string, heapq, bisect\n"
        "def f(text):\n"
        "    counts = collections.Counter(re.findall(r'[a-z]+', text.lower()))\n"
        "    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]\n"
        "print(f('The cat and the hat and THE bat'), decimal.Decimal('1.1') + 2, math.comb(5, 2))"
    )
    result = sandbox.run(program)
    assert result.ok, result.stderr
    assert result.stdout.strip() == "[('the', 3), ('and', 2), ('bat', 1)] 3.1 10"


def test_the_environment_of_the_host_is_not_inherited(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-never-leak")
    result = sandbox.run("import os\nprint(sorted(os.environ))")
    assert "OPENAI_API_KEY" not in result.stdout and os.environ["OPENAI_API_KEY"] not in result.stdout

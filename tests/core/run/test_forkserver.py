"""The tests' fork server (pipeline/testing/forkserver.py) as a job sees it: a command it runs prints,
fails and exits as the same command run alone; a killed client takes its command down with it;
what it must not run (a project copy's own code, `run`) runs in the client; and the production
entry point never reaches it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from pipeline.testing.forkserver import ADDRESS_VARIABLE, CLIENT_HOOK, ForkServer, client_environment
from pipeline.testing.loopback import LoopbackServer

pytestmark = pytest.mark.slow  # subprocesses and a loopback provider; and the server starts where slow tests run
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def server(fork_server: ForkServer | None) -> ForkServer:
    if fork_server is None:
        pytest.skip("the fork server is off (PIPELINE_TEST_FORK_SERVER=0)")
    deadline = time.monotonic() + 60
    while not Path(fork_server.address).exists():  # its imports take a few seconds
        assert time.monotonic() < deadline and fork_server.process.poll() is None, "the fork server did not start"
        time.sleep(0.1)
    return fork_server


def pipeline(args: list[str], address: str | None, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != ADDRESS_VARIABLE}
    if address:
        env = client_environment(address, env)
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def delegated(args: list[str], address: str, cwd: Path = REPO) -> str:
    """What `delegate` answered for `args` run from `cwd`: the exit status, or None (run it here)."""
    program = textwrap.dedent(
        f"""
        import sys
        from pipeline.testing.forkserver import delegate
        status = delegate({address!r}, {args!r})
        print('STATUS', status, file=sys.stderr)
        """
    )
    done = subprocess.run([sys.executable, "-c", program], cwd=cwd, capture_output=True, text=True, timeout=120)
    return done.stderr.strip().splitlines()[-1]


def test_a_command_run_by_the_server_is_the_command_run_alone(server: ForkServer, tmp_path: Path) -> None:
    params = ["--params", "params/whoisspy.yaml", "--models", "params/models.yaml"]
    for args in (["whoisspy", "schedule", *params], ["whoisspy", "rate", "--params", str(tmp_path / "none.yaml")]):
        alone, served = pipeline(args, None), pipeline(args, server.address)
        assert (served.returncode, served.stdout, served.stderr) == (alone.returncode, alone.stdout, alone.stderr)
    assert alone.returncode == 2 and "none.yaml" in alone.stderr  # the failing one failed the same way
    # and the server did run them: its answer is the command's status, not "run it yourself"
    assert delegated(["whoisspy", "schedule", *params], server.address) == "STATUS 0"


def test_what_the_server_must_not_run_runs_in_the_client(server: ForkServer, tmp_path: Path) -> None:
    assert delegated(["run", "--help"], server.address) == "STATUS None"  # starts Snakemake: its own process
    copy = tmp_path / "copy"  # a project copy of the same code is served ...
    shutil.copytree(REPO / "pipeline", copy / "pipeline", ignore=shutil.ignore_patterns("__pycache__"))
    assert delegated(["whoisspy", "--help"], server.address, cwd=copy) == "STATUS 0"
    # ... one whose code differs is not: the server would run the code it imported, not the copy's
    with (copy / "pipeline/skate/rules.smk").open("a") as rules:
        rules.write("\n# edited\n")
    assert delegated(["whoisspy", "--help"], server.address, cwd=copy) == "STATUS None"
    assert delegated(["whoisspy", "--help"], str(tmp_path / "no-server.sock")) == "STATUS None"


def imported_by_the_client(env: dict[str, str]) -> set[str]:
    """The modules `python -m pipeline --help` imported in its own process (not in a fork)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pipeline", "--help"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "usage:" in done.stdout
    return {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


def test_only_the_tests_hook_reaches_the_server_never_the_entry_point(server: ForkServer) -> None:
    """`python -m pipeline` itself ignores PIPELINE_FORK_SERVER: the command runs in its own process.
    With the tests' hook on PYTHONPATH the same command goes to the server, and the client imports
    nothing of the package."""
    plain = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    alone = imported_by_the_client({**plain, ADDRESS_VARIABLE: server.address})
    assert {"pipeline", "pipeline.cli"} <= alone
    served_env = client_environment(server.address, plain)
    assert served_env["PYTHONPATH"] == str(CLIENT_HOOK)
    served = imported_by_the_client(served_env)  # the help printed, by the server's fork
    assert not {name for name in served if name == "pipeline" or name.startswith("pipeline.")}


def descendants(pid: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_a_command_ends_with_its_client(server: ForkServer, tmp_path: Path, how: signal.Signals) -> None:
    """A job waiting on a slow provider: its client killed (Snakemake's or a test's SIGKILL) or
    terminated, nothing of it is left under the server, and the client ends as a plain job would."""
    # the answer comes after 10 s: the client is signalled long before, and the server stops soon after
    with LoopbackServer(latency_s=10, max_seconds=60) as provider:
        roster = {"roster": [{"name": "slow", "model": "openai/slow", "extra": {"api_base": provider.url}}]}
        (tmp_path / "models.yaml").write_text(yaml.safe_dump(roster))
        env = {**client_environment(server.address), "OPENAI_API_KEY": "sk-fake"}
        client = subprocess.Popen(
            [sys.executable, "-m", "pipeline", "ask", "slow", "hello", "--params", "models.yaml"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while not provider.requests:  # the command is waiting on its answer
            assert time.monotonic() < deadline and client.poll() is None
            time.sleep(0.05)
        assert descendants(server.process.pid)  # the command runs under the server
        client.send_signal(how)
        assert client.wait(timeout=30) == -how
        deadline = time.monotonic() + 10
        while descendants(server.process.pid):
            assert time.monotonic() < deadline, "the command outlived its client"
            time.sleep(0.05)

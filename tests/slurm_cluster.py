"""A real one-node SLURM cluster from Debian's packages, started in a temp dir for the tests.

Debian 12's slurm-wlm 22.05 (slurmctld, slurmd, the client commands), slurmdbd with a private
MariaDB for accounting (`sacct`, as on a real cluster) and munge for authentication; `make test`
installs them as root (the Makefile's `slurm` target). Every daemon runs as root in the foreground
of a process this module started, with its config, state, sockets and logs under one directory and
on free ports, so a cluster never meets another (or a site's own SLURM): clients and jobs find it
through the environment of `Cluster.env` (SLURM_CONF, and PATH for the jobs' srun). Stopping it
cancels its jobs, ends every daemon and every process a job left behind, and removes the directory.

    with local_slurm() as cluster:           # raises SlurmUnavailable, with the reason
        subprocess.run(["sinfo"], env={**os.environ, **cluster.env})

`python -m tests.slurm_cluster` starts one by hand and prints the line to export.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

CLUSTER_NAME = "pipeline-test"
PARTITION = "cpu"  # the partition profiles/slurm asks for
NODE = "node1"
DAEMONS = ("munged", "mariadbd", "mariadb-install-db", "mariadb", "slurmdbd", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "srun", "squeue", "sacct", "sacctmgr", "scancel", "scontrol", "sinfo")
PACKAGES = "slurm-wlm slurmdbd munge mariadb-server"
# profiles/slurm asks for cpus_per_task=2 and mem_mb=8000 a job: the node offers two such jobs at
# once (as a local run with --cores 2 runs two), whatever the machine; nothing is enforced (no
# cgroups, memory not a consumable), and slurmd takes these numbers over what it detects
MIN_CPUS, MIN_MEMORY_MB = 4, 16384


class SlurmUnavailable(RuntimeError):
    """SLURM cannot run here; the message says why (a daemon's log tail when one failed)."""


@dataclass
class Cluster:
    root: Path
    host: str
    ports: dict[str, int]
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    db_password: str = field(default_factory=lambda: secrets.token_hex(16))

    @property
    def conf(self) -> Path:
        return self.root / "etc" / "slurm.conf"

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    def environment(self, path: str) -> dict[str, str]:
        """What a client (and every job, through sbatch's --export=ALL) needs to find this cluster:
        SLURM_CONF, and the `srun` of bin/ first on `path` (see _configure)."""
        return {"SLURM_CONF": str(self.conf), "PATH": f"{self.bin}:{path}"}

    @property
    def env(self) -> dict[str, str]:
        return self.environment(os.environ.get("PATH", os.defpath))

    def log(self, name: str) -> Path:
        return self.root / "log" / f"{name}.log"

    def run(self, *args: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(args, env={**os.environ, **self.env}, capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise SlurmUnavailable(f"`{' '.join(args)}` failed ({done.returncode}): {done.stderr.strip()[-800:]}")
        return done

    def jobs(self) -> list[dict[str, str]]:
        """The jobs that slurmctld knows now (id, state, comment: the executor plugin writes the
        rule and wildcards there), from squeue."""
        out = self.run("squeue", "--noheader", "--states=all", "--format=%i|%T|%k").stdout
        return [
            dict(zip(("id", "state", "comment"), line.split("|", 2), strict=True)) for line in out.splitlines() if line
        ]

    def accounting(self) -> list[dict[str, str]]:
        """Every job that slurmdbd recorded (id, state, exit code, comment), from sacct."""
        out = self.run(
            "sacct",
            "-X",
            "--noheader",
            "--parsable2",
            "--starttime",
            "now-1days",
            "--format=JobIDRaw,State,ExitCode,Comment",
        ).stdout
        return [
            dict(zip(("id", "state", "exit", "comment"), line.split("|", 3), strict=True))
            for line in out.splitlines()
            if line
        ]

    def tail(self, name: str, lines: int = 15) -> str:
        path = self.log(name)
        text = path.read_text(errors="replace").splitlines()[-lines:] if path.exists() else ["(no log)"]
        return f"{name} log ({path}):\n  " + "\n  ".join(text)


def missing_reason() -> str | None:
    """Why no cluster can start here before trying (None when it may)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return (
            f"SLURM's daemons need root (slurmd starts every job's processes); as root, `make test` "
            f"installs Debian's {PACKAGES}"
        )
    absent = [name for name in (*DAEMONS, *CLIENTS) if shutil.which(name) is None]
    if absent:
        return f"SLURM is not installed ({', '.join(absent)} missing): `apt-get install {PACKAGES}` (or `make slurm`)"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _machine() -> tuple[int, int]:
    memory_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    return max(os.cpu_count() or 1, MIN_CPUS), max(memory_mb, MIN_MEMORY_MB)


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.write_text(text)
    path.chmod(mode)


def _configure(cluster: Cluster) -> None:
    root, ports = cluster.root, cluster.ports
    for sub in ("bin", "etc", "log", "run", "state", "spool", "munge", "mysql"):
        (root / sub).mkdir(mode=0o700, parents=True, exist_ok=True)
    # Inside a job, the slurm-jobstep plugin starts the rule's command with a nested `srun` whose
    # environment lacks every SLURM_* variable but a few job ids, SLURM_CONF included: that srun
    # only finds a cluster configured at the default path (/etc/slurm/slurm.conf) or configless.
    # This one lives in a temp dir, so the jobs' PATH starts with an srun that sets it again.
    _write(cluster.bin / "srun", f'#!/bin/sh\nSLURM_CONF={cluster.conf} exec {shutil.which("srun")} "$@"\n', 0o755)
    key = root / "munge" / "munge.key"
    key.write_bytes(secrets.token_bytes(1024))
    key.chmod(0o400)
    auth = f"AuthType=auth/munge\nAuthInfo=socket={root / 'munge' / 'munge.socket'}\n"
    cpus, memory_mb = _machine()
    # AccountingStoragePass: the munge socket for talking to slurmdbd (AuthInfo covers the rest);
    # job_comment: sacct keeps the comment where the executor plugin names each job's rule
    _write(
        cluster.conf,
        f"""\
ClusterName={CLUSTER_NAME}
SlurmctldHost={cluster.host}(127.0.0.1)
SlurmctldPort={ports["slurmctld"]}
SlurmdPort={ports["slurmd"]}
SlurmUser=root
SlurmdUser=root
{auth}CredType=cred/munge
StateSaveLocation={root / "state"}
SlurmdSpoolDir={root / "spool"}
SlurmctldPidFile={root / "run" / "slurmctld.pid"}
SlurmdPidFile={root / "run" / "slurmd.pid"}
SlurmctldLogFile={cluster.log("slurmctld")}
SlurmdLogFile={cluster.log("slurmd")}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SlurmdParameters=config_overrides
KillWait=5
MinJobAge=300
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort={ports["slurmdbd"]}
AccountingStoragePass={root / "munge" / "munge.socket"}
AccountingStoreFlags=job_comment
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
NodeName={NODE} NodeAddr=127.0.0.1 NodeHostname={cluster.host} CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN
PartitionName={PARTITION} Nodes={NODE} Default=YES MaxTime=INFINITE State=UP
""",
    )
    # slurmdbd reads slurmdbd.conf beside slurm.conf, and only when no one else may read it
    _write(
        root / "etc" / "slurmdbd.conf",
        f"""\
{auth}DbdHost={cluster.host}
DbdAddr=127.0.0.1
DbdPort={ports["slurmdbd"]}
SlurmUser=root
LogFile={cluster.log("slurmdbd")}
PidFile={root / "run" / "slurmdbd.pid"}
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={ports["mariadb"]}
StorageUser=slurm
StoragePass={cluster.db_password}
StorageLoc=slurm_acct_db
""",
        mode=0o600,
    )


def _start(cluster: Cluster, name: str, *args: str) -> None:
    log = cluster.log(name).open("ab")
    cluster.processes[name] = subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=cluster.root,
        env={**os.environ, **cluster.env},
        start_new_session=True,
    )
    log.close()


def _wait(cluster: Cluster, name: str, ready: str, check: Callable[[], bool], timeout: float = 60) -> None:
    """Poll `check()` until it holds; a daemon that died or never got ready makes SLURM unavailable."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except (OSError, subprocess.SubprocessError, SlurmUnavailable):
            pass
        process = cluster.processes.get(name)
        died = process is not None and process.poll() is not None
        if died or time.monotonic() > deadline:
            how = f"exited with {process.returncode}" if died and process else f"not {ready} after {timeout:.0f} s"
            raise SlurmUnavailable(f"{name} {how}.\n{cluster.tail(name)}")
        time.sleep(0.2)


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _sql(cluster: Cluster, statement: str) -> bool:
    socket_path = cluster.root / "mysql" / "mysqld.sock"
    done = subprocess.run(
        ["mariadb", "--no-defaults", f"--socket={socket_path}", "-uroot", "-e", statement],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return done.returncode == 0


def _start_database(cluster: Cluster) -> None:
    data, mysql = cluster.root / "mysql" / "data", cluster.root / "mysql"
    try:
        install = subprocess.run(
            [
                "mariadb-install-db",
                "--no-defaults",
                "--user=root",
                f"--datadir={data}",
                "--skip-test-db",
                "--auth-root-authentication-method=socket",
            ],
            capture_output=True,
            text=True,
            timeout=180,
        )
    except subprocess.TimeoutExpired as timeout:
        raise SlurmUnavailable("mariadb-install-db did not finish in 180 s") from timeout
    if install.returncode != 0:
        raise SlurmUnavailable(f"mariadb-install-db failed: {(install.stdout + install.stderr)[-1500:]}")
    _start(
        cluster,
        "mariadbd",
        "mariadbd",
        "--no-defaults",
        "--user=root",
        f"--datadir={data}",
        f"--socket={mysql / 'mysqld.sock'}",
        f"--pid-file={mysql / 'mysqld.pid'}",
        f"--port={cluster.ports['mariadb']}",
        "--bind-address=127.0.0.1",
        "--skip-name-resolve",
        "--innodb-buffer-pool-size=32M",
        f"--log-error={cluster.log('mariadbd')}",
    )
    _wait(cluster, "mariadbd", "answering", lambda: _sql(cluster, "SELECT 1"))
    if not _sql(
        cluster,
        f"CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{cluster.db_password}'; "
        "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';",
    ):
        raise SlurmUnavailable(f"could not create the accounting database user.\n{cluster.tail('mariadbd')}")


def _node_state(cluster: Cluster) -> str:
    return cluster.run("sinfo", "--noheader", "--nodes", NODE, "--format=%T").stdout.strip()


def start(cluster: Cluster) -> None:
    """Configure and start every daemon; returns once the node is idle and sacct answers."""
    _configure(cluster)
    munge = cluster.root / "munge"
    # --force: munged refuses to run as root or beside a world-writable /tmp otherwise
    _start(
        cluster,
        "munged",
        "munged",
        "--foreground",
        "--force",
        f"--key-file={munge / 'munge.key'}",
        f"--socket={munge / 'munge.socket'}",
        f"--pid-file={munge / 'munged.pid'}",
        f"--seed-file={munge / 'munged.seed'}",
        f"--log-file={cluster.log('munged')}",
    )
    _wait(cluster, "munged", "listening", lambda: (munge / "munge.socket").exists())
    _start_database(cluster)
    _start(cluster, "slurmdbd", "slurmdbd", "-D")
    _wait(cluster, "slurmdbd", "listening", lambda: _listening(cluster.ports["slurmdbd"]))
    # slurmctld registers with slurmdbd as a known cluster only
    cluster.run("sacctmgr", "--immediate", "add", "cluster", CLUSTER_NAME)
    _start(cluster, "slurmctld", "slurmctld", "-D", "-i", "-f", str(cluster.conf))
    _wait(cluster, "slurmctld", "answering", lambda: cluster.run("scontrol", "ping", check=False).returncode == 0)
    _start(cluster, "slurmd", "slurmd", "-D", "-f", str(cluster.conf), "-N", NODE)
    _wait(cluster, "slurmd", "idle in sinfo", lambda: _node_state(cluster) == "idle")
    _wait(
        cluster,
        "slurmdbd",
        "answering sacct",
        lambda: cluster.run("sacct", "-X", "--noheader", check=False).returncode == 0,
    )


def _job_processes(cluster: Cluster) -> list[int]:
    """Processes of this cluster's jobs still alive: job steps (slurmstepd) and anything started
    with its SLURM_CONF in the environment (everything a job ran)."""
    marker = f"SLURM_CONF={cluster.conf}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with suppress(OSError):
            environ = (entry / "environ").read_bytes().split(b"\0")
            cmdline = (entry / "cmdline").read_bytes()
            if marker in environ and (b"slurmstepd" in cmdline or b"SLURM_JOB_ID=" in b" ".join(environ)):
                found.append(int(entry.name))
    return found


def stop(cluster: Cluster) -> None:
    """Cancel every job, end every daemon (and anything a job left behind), remove the directory."""
    if "slurmctld" in cluster.processes and cluster.processes["slurmctld"].poll() is None:
        with suppress(Exception):
            cluster.run("scancel", "--full", "--partition", PARTITION, check=False, timeout=10)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and cluster.run("squeue", "--noheader", check=False).stdout.strip():
                time.sleep(0.5)
    for name in ("slurmd", "slurmctld", "slurmdbd", "mariadbd", "munged"):
        process = cluster.processes.get(name)
        if process is None or process.poll() is not None:
            continue
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
    for pid in _job_processes(cluster):
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(cluster.root, ignore_errors=True)


@contextmanager
def local_slurm(root: Path | None = None) -> Iterator[Cluster]:
    """A running one-node cluster under `root` (default: a new temp dir, short enough for the
    sockets' paths), removed afterwards; raises SlurmUnavailable, with the reason, where SLURM
    cannot run."""
    reason = missing_reason()
    if reason:
        raise SlurmUnavailable(reason)
    root = root or Path(tempfile.mkdtemp(prefix="slurm-"))
    ports = {name: _free_port() for name in ("slurmctld", "slurmd", "slurmdbd", "mariadb")}
    cluster = Cluster(root=root, host=socket.gethostname().split(".")[0], ports=ports)
    try:
        start(cluster)
        yield cluster
    finally:
        stop(cluster)


if __name__ == "__main__":
    with local_slurm() as running:
        print(
            f"SLURM is up (node {NODE}, partition {PARTITION}); in another shell:\n"
            f"  export SLURM_CONF={running.conf} PATH={running.bin}:$PATH\n"
            f"Ctrl-C stops it and removes {running.root}."
        )
        with suppress(KeyboardInterrupt):
            signal.pause()

"""The git and DVC commands publishing needs, run as the user would run them (subprocesses), with
their failures turned into one readable `PublishError`."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

TAG_PREFIX = "leaderboard-v"
TAG_PATTERN = re.compile(r"^leaderboard-v(\d+)\.(\d+)$")


class PublishError(RuntimeError):
    """Publishing cannot go on; the message says why and what to do (shown as is, exit 2)."""


def tag_name(version: str) -> str:
    return f"{TAG_PREFIX}{version}"


def version_key(version: str) -> tuple[int, int]:
    major, minor = version.split(".")
    return int(major), int(minor)


@dataclass(frozen=True)
class Repo:
    """A git workspace (its top folder) that is also a DVC project."""

    root: Path

    def git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(["git", *args], cwd=self.root, capture_output=True, text=True)
        if check and done.returncode != 0:
            raise PublishError(f"git {' '.join(args)} failed: {(done.stderr or done.stdout).strip()}")
        return done

    def dvc(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([dvc_binary(), *args], cwd=self.root, capture_output=True, text=True)
        if check and done.returncode != 0:
            raise PublishError(f"dvc {' '.join(args)} failed: {(done.stderr or done.stdout).strip()[-2000:]}")
        return done

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").stdout.strip()

    def is_ancestor(self, rev: str, of: str = "HEAD") -> bool:
        return self.git("merge-base", "--is-ancestor", rev, of, check=False).returncode == 0

    def leaderboard_tags(self) -> dict[str, str]:
        """Every `leaderboard-vMAJOR.MINOR` tag -> the commit it points at."""
        done = self.git("for-each-ref", "--format=%(refname:short) %(objectname) %(*objectname)", "refs/tags")
        tags = {}
        for line in done.stdout.splitlines():
            name, obj, peeled = (line.split() + ["", ""])[:3]
            if TAG_PATTERN.match(name):
                tags[name] = peeled or obj  # an annotated tag's commit is its peeled object
        return tags

    def previous_tag(self, tags: dict[str, str]) -> str | None:
        """The highest-versioned of `tags` (leaderboard_tags) among HEAD's ancestors (HEAD included)."""
        reachable = [t for t, commit in tags.items() if self.is_ancestor(commit)]
        return max(reachable, key=lambda t: version_key(t[len(TAG_PREFIX) :]), default=None)

    def origin_url(self) -> str | None:
        done = self.git("remote", "get-url", "origin", check=False)
        return done.stdout.strip() or None if done.returncode == 0 else None

    def changed_paths(self, since: str, *pathspecs: str) -> list[str]:
        """Files that differ between `since` and HEAD."""
        return self.git("diff", "--name-only", since, "HEAD", "--", *pathspecs).stdout.split()

    def dirty_files(self, ignore: tuple[str, ...] = ()) -> list[str]:
        """Tracked files with uncommitted (staged or not) changes, and files git does not know yet
        under `pipeline/` and `params/` (code and params a run reads), outside `ignore`."""
        excludes = [f":(exclude){path}" for path in ignore]
        tracked = self.git("status", "--porcelain", "--untracked-files=no", "--", ".", *excludes).stdout
        untracked = self.git(
            "ls-files", "--others", "--exclude-standard", "--", "pipeline", "params", "Snakefile", "dvc.yaml", *excludes
        ).stdout
        lines = [line[3:] if len(line) > 3 else line for line in tracked.splitlines()]
        lines += [f"{path} (untracked)" for path in untracked.splitlines()]
        return sorted(set(lines))

    def dvc_remote(self, name: str | None = None) -> str | None:
        """The DVC remote publishing pushes to: `name`, else the default one; None when none is set."""
        if name:
            listed = self.dvc("remote", "list").stdout.split()
            if name not in listed[::2]:
                raise PublishError(
                    f"no DVC remote named {name!r} (configured: {listed[::2] or 'none'}); "
                    f"add it: dvc remote add {name} URL"
                )
            return name
        done = self.dvc("remote", "default", check=False)
        value = done.stdout.strip()
        return value if done.returncode == 0 and value and "No default remote" not in value else None

    def dvc_stale_stages(self, stages: list[str]) -> dict[str, str]:
        """stage -> what changed, for stages whose recorded deps or outs differ from the workspace."""
        if not stages:
            return {}
        done = self.dvc("status", "--json", *stages, check=False)
        try:
            status = json.loads(done.stdout or "{}")
        except json.JSONDecodeError:
            raise PublishError(f"dvc status failed: {(done.stderr or done.stdout).strip()[-2000:]}") from None
        stale = {}
        for stage, changes in status.items():
            name = stage.split(":")[-1]
            stale[name] = "; ".join(describe_change(change) for change in changes)
        return stale


def describe_change(change: object) -> str:
    if isinstance(change, dict):
        parts = []
        for kind, paths in change.items():
            listed = ", ".join(f"{p} ({s})" for p, s in paths.items()) if isinstance(paths, dict) else str(paths)
            parts.append(f"{kind}: {listed}")
        return "; ".join(parts)
    return str(change)


def dvc_binary() -> str:
    """The DVC beside the running interpreter (the project's venv), else the one on PATH."""
    beside = Path(sys.executable).with_name("dvc")
    if beside.exists():
        return str(beside)
    found = shutil.which("dvc")
    if found is None:
        raise PublishError("dvc is not installed: run `make setup` (or pip install dvc)")
    return found


def git_toplevel(folder: Path) -> Path:
    """The top folder of the git repository holding `folder`."""
    try:
        done = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=folder, capture_output=True, text=True)
    except OSError as exc:
        raise PublishError(f"git is not available: {exc}") from None
    if done.returncode != 0:
        raise PublishError(f"{folder.resolve()} is not inside a git repository ({done.stderr.strip()})")
    return Path(done.stdout.strip())


def open_repo(folder: Path) -> Repo:
    """The git workspace holding `folder`, which must be a DVC project with a commit."""
    try:
        repo = Repo(git_toplevel(folder))
    except PublishError as exc:
        raise PublishError(
            f"{exc}: publishing commits and tags a version (git init, then commit the project)"
        ) from None
    if repo.git("rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode != 0:
        raise PublishError(f"{repo.root} has no commit yet: commit the project first")
    if not (repo.root / ".dvc").is_dir():
        raise PublishError(f"{repo.root} is not a DVC project: run `dvc init` (make demo does) and commit .dvc/")
    return repo

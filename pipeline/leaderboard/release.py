"""`python -m pipeline publish`: make the leaderboard a published version a collaborator can get.

On a clean tree whose results are those of its code and params (DVC says so), publish builds the
leaderboard and site, writes the release notes against the previous tag, checks that no key is in
anything about to leave the machine, pushes the DVC-tracked artifacts when a remote is configured,
then commits and tags `leaderboard-vMAJOR.MINOR`. Nothing is committed or tagged when a check or the
push fails, so a failed publish is simply run again.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pipeline.core.artifacts import write_json_atomic, write_text_atomic
from pipeline.leaderboard.build import build_leaderboard
from pipeline.leaderboard.config import load_leaderboard_params
from pipeline.leaderboard.diff import DiffError, Version, load_version
from pipeline.leaderboard.notes import (
    CHANGELOG_FILE,
    RELEASES_FILE,
    load_releases,
    record_lines,
    release_record,
    render_changelog,
    with_release,
)
from pipeline.leaderboard.site import write_releases
from pipeline.leaderboard.vcs import TAG_PREFIX, PublishError, Repo, open_repo, tag_name, version_key

LEADERBOARD_STAGE = "leaderboard"
# fields of a DVC remote that hold credentials: they belong in .dvc/config.local, which git ignores
CREDENTIAL_FIELDS = (
    "access_key_id",
    "secret_access_key",
    "session_token",
    "password",
    "account_key",
    "sas_token",
    "connection_string",
    "client_secret",
    "gdrive_client_secret",
    "key_secret",
)
SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)
MIN_SECRET_CHARS = 8
VERSION_LINE = re.compile(r"^version:\s*[\"']?[0-9.]+[\"']?", re.MULTILINE)
CACHE_WARNING = (
    "sharing the response cache: it holds every prompt and every reply verbatim (the games' system "
    "prompts and any private text a model wrote), each call's tokens and cost, and the calls journal. "
    "Anyone who can read the DVC remote can read them. Keys are never in it (checked before the push)."
)


@dataclass
class PublishOptions:
    params: Path
    workspace: Path
    bump: str | None = None
    remote: str | None = None
    push: bool = True
    git_push: bool = False
    share_cache: bool = False
    dataset: bool = False  # also export the games as a dataset into the site (site/dataset)


@dataclass
class Published:
    tag: str
    version: str
    commit: str
    remote: str | None
    record: dict[str, Any]
    collaborator: list[str]
    messages: list[str] = field(default_factory=list)


def bumped(version: str, part: str) -> str:
    major, minor = version_key(version)
    return f"{major + 1}.0" if part == "major" else f"{major}.{minor + 1}"


def check_clean(repo: Repo) -> None:
    dirty = repo.dirty_files(ignore=("results", "dvc.lock"))
    if dirty:
        listed = "\n  ".join(dirty[:30]) + (f"\n  ... and {len(dirty) - 30} more" if len(dirty) > 30 else "")
        raise PublishError(
            "publish needs a clean tree: a published version must rebuild from its commit, and these files "
            f"have uncommitted changes:\n  {listed}\nCommit them (git add ...; git commit), or stash them, "
            "then run publish again. results/ and dvc.lock are publish's to commit."
        )


def check_dvc_config(repo: Repo) -> None:
    """A credential in the tracked .dvc/config would be committed and shared with the repository."""
    config = repo.root / ".dvc" / "config"
    text = config.read_text(encoding="utf-8") if config.exists() else ""
    found = [f for f in CREDENTIAL_FIELDS if re.search(rf"^\s*{f}\s*=", text, re.MULTILINE)]
    if found:
        raise PublishError(
            f".dvc/config (tracked by git) holds credentials ({', '.join(found)}): git would share them. Move "
            "them to .dvc/config.local, which git ignores: dvc remote modify --local REMOTE FIELD VALUE, "
            "then delete them from .dvc/config and commit"
        )


def stage_names(root: Path, lock: bool) -> list[str]:
    path = root / ("dvc.lock" if lock else "dvc.yaml")
    if not path.exists():
        return []
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return list((data.get("stages") or {}).keys())


def check_results_current(repo: Repo) -> None:
    """Every benchmark stage DVC ran must be up to date with the code and params being published;
    a benchmark never run must have no results (DVC could not push them)."""
    recorded = set(stage_names(repo.root, lock=True))
    stages = [s for s in stage_names(repo.root, lock=False) if s != LEADERBOARD_STAGE]
    unrecorded = [s for s in stages if s not in recorded and (repo.root / "results" / s / "metrics.json").exists()]
    if unrecorded:
        raise PublishError(
            f"results of {', '.join(unrecorded)} exist but DVC has no record of them (dvc.lock), so a "
            f"collaborator could not pull them: run `dvc commit {' '.join(unrecorded)}` if they are this "
            f"commit's results, else `dvc repro {' '.join(unrecorded)}`"
        )
    stale = repo.dvc_stale_stages([s for s in stages if s in recorded])
    if stale:
        listed = "\n  ".join(f"{stage}: {what}" for stage, what in stale.items())
        raise PublishError(
            f"results are not those of this commit's code and params:\n  {listed}\nRun `dvc repro` (see what "
            "it will call and cost first: python -m pipeline plan), then publish"
        )


def secret_values(extra_names: list[str]) -> dict[str, str]:
    """env var name -> value, for every variable that looks like a key (and those the roster names)."""
    found = {}
    for name, value in os.environ.items():
        if (SECRET_NAME.search(name) or name in extra_names) and len(value) >= MIN_SECRET_CHARS:
            found[name] = value
    return found


def scan_for_secrets(paths: list[Path], secrets: dict[str, str], root: Path) -> None:
    needles = {name: value.encode() for name, value in secrets.items()}
    for top in paths:
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for path in files:
            data = path.read_bytes()
            for name, needle in needles.items():
                if needle in data:
                    raise PublishError(
                        f"{path.relative_to(root)} contains the value of ${name}: publishing would share a key. "
                        "Nothing was pushed, committed or tagged. Remove it from that file (and find how it got "
                        "there: keys belong only in the environment), then publish again"
                    )


def roster_key_names(params_dir: Path) -> list[str]:
    from pipeline.core.models import load_models

    path = params_dir / "models.yaml"
    roster = load_models(path).roster if path.exists() else []
    return [e.api_key_env for e in roster if e.api_key_env]


def response_cache_dir(repo: Repo, params_dir: Path) -> Path:
    from pipeline.core.models import load_models

    settings = load_models(params_dir / "models.yaml").gateway
    folder = (repo.root / settings.cache_dir).resolve()
    if repo.root.resolve() not in folder.parents:
        raise PublishError(
            f"gateway.cache_dir {settings.cache_dir} is outside the repository: DVC can share only "
            "folders inside it (set gateway.cache_dir in params/models.yaml)"
        )
    if not folder.is_dir():
        raise PublishError(
            f"--share-cache: the response cache {settings.cache_dir} does not exist yet (no run has called a model)"
        )
    return folder


def write_version_bump(path: Path, version: str) -> None:
    text = path.read_text(encoding="utf-8")
    if not VERSION_LINE.search(text):
        raise PublishError(f'{path}: no `version:` line to bump; add version: "1.0"')
    write_text_atomic(path, VERSION_LINE.sub(f'version: "{version}"', text, count=1))


def choose_version(tags: dict[str, str], current: str, bump: str | None, previous: str | None) -> str:
    published = [t[len(TAG_PREFIX) :] for t in tags]
    if bump:
        base = max([current, *published], key=version_key)
        version = bumped(base, bump)
    else:
        version = current
    tag = tag_name(version)
    if tag in tags:
        raise PublishError(
            f"{tag} is already published (commit {tags[tag][:12]}): a new version needs a new number. Run "
            "python -m pipeline publish --bump minor (games or models added, same rules) or --bump major "
            "(rules, prompts or scoring changed)"
        )
    if previous is not None and version_key(version) <= version_key(previous[len(TAG_PREFIX) :]):
        raise PublishError(f"version {version} is not above the last published {previous}: use --bump minor or major")
    return version


def previous_version(repo: Repo, tag: str | None, folder: str, messages: list[str]) -> Version | None:
    if tag is None:
        return None
    try:
        return load_version(repo.root, tag, folder)
    except DiffError as exc:
        messages.append(f"warning: release notes without a comparison: {exc}")
        return None


def collaborator_commands(repo: Repo, tag: str) -> list[str]:
    url = repo.origin_url() or str(repo.root)
    folder = Path(url.rstrip("/")).name.removesuffix(".git") or "leaderboard"
    return [f"git clone --branch {tag} {url} {folder}-{tag}", f"cd {folder}-{tag} && dvc pull"]


def publish_version(options: PublishOptions) -> Published:
    repo = open_repo(options.workspace)
    root = repo.root
    params_path = options.params if options.params.is_absolute() else (Path.cwd() / options.params)
    params_dir = params_path.parent
    out = root / "results" / "leaderboard"
    folder = out.relative_to(root).as_posix()
    messages: list[str] = []

    check_clean(repo)
    check_dvc_config(repo)
    check_results_current(repo)
    remote = repo.dvc_remote(options.remote) if options.push else None
    params = load_leaderboard_params(params_path)
    tags = repo.leaderboard_tags()
    previous = repo.previous_tag(tags)
    version = choose_version(tags, params.version, options.bump, previous)
    bumped_from = params.version if version != params.version else None
    if version != params.version:
        write_version_bump(params_path, version)
        relative = params_path.resolve().relative_to(root.resolve()).as_posix()
        repo.git("add", "--", relative)
        repo.git("commit", "-q", "-m", f"Leaderboard version {version} (publish --bump {options.bump})")
        messages.append(f"version {params.version} -> {version}, committed in {relative}")
        params = load_leaderboard_params(params_path)

    built = build_leaderboard(params, root / "results", out, root)
    current = load_version(root, None, folder)
    record = release_record(
        repo,
        previous_version(repo, previous, folder, messages),
        current,
        params_dir.resolve().relative_to(root.resolve()).as_posix(),
        built.benchmarks,
        previous_tag=previous,
        bumped_from=bumped_from,
    )
    records = with_release(load_releases(out), record)
    write_json_atomic(out / RELEASES_FILE, records)
    write_text_atomic(out / CHANGELOG_FILE, render_changelog(records))
    if (out / "site").is_dir():
        write_releases(out / "site", records, built.stamp, built.benchmarks)

    shared: list[Path] = []
    if options.share_cache:
        cache = response_cache_dir(repo, params_dir)
        messages.append(f"warning: {CACHE_WARNING}")
        repo.dvc("add", "--quiet", str(cache.relative_to(root)))
        shared = [cache]
    if options.dataset:  # inside the site: DVC keeps, pushes and pulls it with the version's site
        from pipeline.export.build import export_dataset

        exported = export_dataset(root / "results", out / "site" / "dataset", params_dir / "models.yaml")
        games = sum(bench.games.height for bench in exported.benchmarks)
        messages.append(f"dataset: {games} games of {len(exported.benchmarks)} benchmarks in {folder}/site/dataset")
    if LEADERBOARD_STAGE in stage_names(root, lock=False):
        repo.dvc("commit", "--force", "--quiet", LEADERBOARD_STAGE)

    scan_for_secrets([root / "results", root / "dvc.lock", *shared], secret_values(roster_key_names(params_dir)), root)
    if remote is not None:
        repo.dvc("push", "--quiet", "-r", remote)
    elif options.push:
        messages.append(
            "note: no DVC remote is configured, so the games, tables, plots and site stay on this "
            "machine (collaborators get only the files in git). Add one: dvc remote add -d team "
            "/shared/dvc-store (docs/leaderboard.md#a-dvc-remote)"
        )

    tracked = [
        "dvc.lock",
        *sorted(p.relative_to(root).as_posix() for p in (root / "results").glob("*/metrics.json")),
        *(
            f"{folder}/{name}"
            for name in (
                "leaderboard.json",
                "calibration.json",
                "leaderboard.md",
                "version.json",
                "combined.csv",
                RELEASES_FILE,
                CHANGELOG_FILE,
            )
        ),
    ]
    for cache in shared:
        tracked += [
            f"{cache.relative_to(root).as_posix()}.dvc",
            (cache.parent / ".gitignore").relative_to(root).as_posix(),
        ]
    repo.git("add", "--", *[p for p in tracked if (root / p).exists()])
    notes = "\n".join(record_lines(record))
    tag = record["tag"]
    repo.git("commit", "-q", "--allow-empty", "-m", f"Publish leaderboard v{version}", "-m", notes)
    repo.git("tag", "-a", tag, "-m", f"leaderboard v{version}\n\n{notes}")
    if options.git_push:
        repo.git("push", "origin", "HEAD", tag)
    return Published(tag, version, repo.head(), remote, record, collaborator_commands(repo, tag), messages)


def print_published(done: Published, git_push: bool) -> None:
    for message in done.messages:
        print(message, file=sys.stderr)
    print(
        f"published {done.tag} (commit {done.commit[:12]})"
        + (f"; artifacts pushed to DVC remote {done.remote!r}" if done.remote else "")
    )
    for line in record_lines(done.record):
        print(f"  {line}")
    # the collaborator's commands work only once the tag is on the origin and the artifacts on a remote
    missing = [] if git_push else [f"git push origin HEAD {done.tag}"]
    if not done.remote:
        missing.append("dvc push (to a DVC remote: dvc remote add -d NAME URL, docs/leaderboard.md#a-dvc-remote)")
    if missing:
        print(f"Nothing is shared yet. A collaborator can get this version after you run: {'; '.join(missing)}. Then:")
    else:
        print("A collaborator gets this version with:")
    for command in done.collaborator:
        print(f"  {command}")

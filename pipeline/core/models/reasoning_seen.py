"""Reasoning models found from their replies, for entries that do not say they reason.

A model litellm does not know (a self-hosted endpoint, a new release) and whose roster entry sets
neither `reasoning`, `reasoning_effort` nor `reasoning_tokens` is budgeted as a chat model: its
hidden reasoning then spends the visible budget, and its replies come back empty at the token limit.
The gateway notices the first reply that reports hidden reasoning tokens, or comes back empty at the
limit, and records it here: one small JSON file per model string and endpoint, beside the response
cache (`<cache_dir>/reasoning_seen/`), written once. From the next run on `load_models` marks the
entry, and `is_reasoning_model` treats it as a reasoning model: the roster check, the run plan and
the games give it a reasoning allowance. Since the sighting comes from a reply, the same response
cache gives the same sightings. An entry that says `reasoning: false` is never marked.

A run sees the sightings as they were when it began: the Snakefile's parse puts them in the
environment (`SNAPSHOT_ENV`), and its jobs read them from there, so a sighting made mid-run changes
neither a job's schedule (SKATE's answering mode) nor a half-played game's budgets, and a resumed
job sends the requests it sent before. The roster check, whose job is to find it, adopts a
sighting at once and asks again with the allowance.

The gateway prints one line with the fix when it first sees it: declare the entry a reasoning model
in params/models.yaml, which makes it permanent (and part of the entry's game ids).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

# the roster imports this module (load_models reads the sightings): its types stay names here
RosterEntry = Any
ModelsParams = Any

FOLDER = "reasoning_seen"

#: the environment variable holding a run's sightings as its parse saw them (JSON: [[model, api_base, why]])
SNAPSHOT_ENV = "PIPELINE_REASONING_SEEN"

#: (model string, api_base) -> why it counts as a reasoning model: this process's view
_SEEN: dict[tuple[str, str], str] = {}
#: sightings this process made (on disk for later runs; in its own view only once adopted)
_FRESH: dict[tuple[str, str], str] = {}


def _key(entry: RosterEntry) -> tuple[str, str]:
    return (entry.model or "", str(entry.extra.get("api_base") or ""))


def _path(cache_dir: str | os.PathLike[str], entry: RosterEntry) -> Path:
    digest = hashlib.sha256("\0".join(_key(entry)).encode("utf-8")).hexdigest()[:16]
    return Path(cache_dir) / FOLDER / f"{digest}.json"


def undeclared(entry: RosterEntry) -> bool:
    """An API model whose entry says nothing about reasoning (the only kind a sighting marks)."""
    s = entry.sampling
    return (
        not entry.is_bot
        and entry.provider != "local"
        and s.reasoning is None
        and s.reasoning_effort is None
        and s.reasoning_tokens is None
    )


def seen(entry: RosterEntry) -> str | None:
    """Why this entry counts as a reasoning model from its replies (None: it was never seen to reason)."""
    return _SEEN.get(_key(entry)) if undeclared(entry) else None


def load_sightings(models: ModelsParams, root: str | os.PathLike[str] = ".") -> None:
    """This process's view of the roster's sightings: the run's snapshot when it has one, else the
    response cache's folder."""
    snapshot = os.environ.get(SNAPSHOT_ENV)
    frozen = {(m, b): why for m, b, why in json.loads(snapshot)} if snapshot else None
    cache_dir = Path(root) / models.gateway.cache_dir
    for entry in models.roster:
        if not undeclared(entry):
            continue
        key = _key(entry)
        why = frozen.get(key) if frozen is not None else _read(_path(cache_dir, entry))
        if why is None:
            _SEEN.pop(key, None)
        else:
            _SEEN[key] = why


def _read(path: Path) -> str | None:
    try:
        return str(json.loads(path.read_text(encoding="utf-8")).get("why") or "seen reasoning")
    except (OSError, ValueError):
        return None


def snapshot(models: ModelsParams) -> str:
    """The roster's sightings as this process sees them, for SNAPSHOT_ENV (the run's jobs read it)."""
    return json.dumps(sorted([*_key(e), _SEEN[_key(e)]] for e in models.roster if _key(e) in _SEEN))


def fresh(entry: RosterEntry) -> str | None:
    """A sighting this process made of `entry` (not yet in its view unless adopted)."""
    return _FRESH.get(_key(entry)) if undeclared(entry) else None


def adopt(entry: RosterEntry) -> None:
    """Take this process's fresh sighting of `entry` into its view (the roster check asks again)."""
    why = fresh(entry)
    if why is not None:
        _SEEN[_key(entry)] = why


def record_sighting(
    cache_dir: str | os.PathLike[str],
    entry: RosterEntry,
    *,
    reasoning_tokens: int | None,
    empty_at_limit: bool,
    job: str,
) -> str | None:
    """Record that `entry` replied like a reasoning model; the line to print the first time (else None)."""
    if not undeclared(entry) or _key(entry) in _SEEN or _key(entry) in _FRESH:
        return None
    why = (
        f"a reply with {reasoning_tokens} hidden reasoning tokens"
        if reasoning_tokens
        else "an empty reply at the token limit"
    )
    _FRESH[_key(entry)] = why
    path = _path(cache_dir, entry)
    record: dict[str, Any] = {"model": entry.model, "api_base": entry.extra.get("api_base"), "why": why, "job": job}
    try:
        from pipeline.core.artifacts.io import write_json_atomic

        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            write_json_atomic(path, record)
    except OSError:
        pass  # a read-only cache: this process still treats it as reasoning
    return fix_line(entry, why)


def fix_line(entry: RosterEntry, why: str) -> str:
    """The one line that says what was seen and how to make it permanent."""
    return (
        f"roster entry {entry.name!r} ({entry.model}) replies like a reasoning model ({why}): treated as one "
        f"from the next run on (a reasoning allowance on top of every budget); say so in params/models.yaml, "
        f"`sampling: {{reasoning: true}}` (or `reasoning_tokens: N`) on entry {entry.name!r}"
    )


__all__ = [
    "SNAPSHOT_ENV",
    "adopt",
    "fix_line",
    "fresh",
    "load_sightings",
    "record_sighting",
    "seen",
    "snapshot",
    "undeclared",
]

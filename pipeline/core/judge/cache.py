"""Scores the judge already computed, in memory and optionally on disk.

A key is the sha256 of (scoring version, judge fingerprint, prefix, string): the same text under
the same weights, dtype and device always gets the same numbers, so a rerun (or another game that
asks the same question, e.g. `xent(s)` behind every `xed(s | x)`) never runs the model again.

On disk there is one small JSON file per key under `<dir>/<key[:2]>/<key>.json`, written to a
temp file and renamed into place, so concurrent jobs may share a directory and a killed process
leaves no half-written entry. An unreadable entry is ignored (and recomputed), never trusted.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from pipeline.core.artifacts.io import atomic_open, content_id

log = logging.getLogger(__name__)


def score_key(scoring_version: int, fingerprint: dict[str, str], prefix: str, string: str) -> str:
    return content_id({"v": scoring_version, "judge": fingerprint, "prefix": prefix, "string": string}, length=64)


class ScoreCache:
    """A bounded in-memory LRU in front of an optional directory of JSON entries."""

    def __init__(self, directory: str | os.PathLike[str] | None = None, memory_entries: int = 100_000) -> None:
        self.directory = Path(directory) if directory is not None else None
        self.memory_entries = memory_entries
        self._memory: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        assert self.directory is not None
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            entry = self._memory.get(key)
            if entry is not None:
                self._memory.move_to_end(key)
                self.hits += 1
                return entry
        entry = self._read_disk(key)
        with self._lock:
            if entry is None:
                self.misses += 1
                return None
            self.hits += 1
            self._remember(key, entry)
        return entry

    def put(self, key: str, entry: dict[str, Any]) -> None:
        with self._lock:
            self._remember(key, entry)
        if self.directory is not None:
            with atomic_open(self._path(key), "w") as handle:
                handle.write(json.dumps({**entry, "key": key}, sort_keys=True, ensure_ascii=False))

    def _remember(self, key: str, entry: dict[str, Any]) -> None:
        self._memory[key] = entry
        self._memory.move_to_end(key)
        while len(self._memory) > self.memory_entries:
            self._memory.popitem(last=False)

    def _read_disk(self, key: str) -> dict[str, Any] | None:
        if self.directory is None:
            return None
        path = self._path(key)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, json.JSONDecodeError, UnicodeDecodeError):
            log.warning("ignoring unreadable judge cache entry %s", path)
            return None
        if not isinstance(entry, dict) or entry.get("key") != key:
            return None
        entry.pop("key")
        return entry

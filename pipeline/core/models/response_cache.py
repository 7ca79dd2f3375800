"""The response cache: completed answers on disk, one JSON file per request key."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from pipeline.core.artifacts.io import atomic_open

log = logging.getLogger(__name__)


class ResponseCache:
    """Completed responses on disk, one JSON file per request key.

    Each entry is written to a temp file and renamed into place, so several processes can write at
    once (the same key always holds an equivalent answer) and a kill mid-write leaves only a stray
    temp file, never a corrupt entry.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        path = self.path(key)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (json.JSONDecodeError, UnicodeDecodeError):
            log.warning("ignoring unreadable cache entry %s", path)
            return None
        return entry if entry.get("key") == key else None

    def put(self, key: str, entry: dict[str, Any]) -> None:
        with atomic_open(self.path(key), "w") as handle:
            handle.write(json.dumps({**entry, "key": key}, sort_keys=True, ensure_ascii=False))

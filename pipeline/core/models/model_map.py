"""litellm's bundled model map, asked once per litellm version: its answers are kept on disk.

Importing litellm takes seconds of CPU. Every Snakefile parse prices the roster for the run plan
and asks which API models reason, and so do many jobs; with the answers kept, only the first
process after a litellm upgrade (or a new model in a roster) imports it.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipeline.core.artifacts.io import user_cache_dir, write_json_atomic

__all__ = ["map_answer", "map_memo"]


def map_memo(kind: str) -> Path | None:
    """Where the map's answers of one `kind` are kept: one file per litellm version in the user
    cache, or None when litellm reads a remote map (LITELLM_LOCAL_MODEL_COST_MAP not True), whose
    answers may change without a new version."""
    if os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP", "").lower() != "true":
        return None
    try:
        version = importlib.metadata.version("litellm")
    except importlib.metadata.PackageNotFoundError:
        return None
    return user_cache_dir("litellm-map") / f"{kind}-{version}.json"


def _read(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def map_answer(kind: str, model: str, ask: Callable[[Any], Any]) -> Any:
    """The kept answer of `kind` for `model`, else `ask(litellm)` (a JSON value), kept for next time."""
    memo = map_memo(kind)
    known = _read(memo)
    if model in known:
        return known[model]
    import litellm  # the bundled map (LITELLM_LOCAL_MODEL_COST_MAP=True, set by the package)

    answer = ask(litellm)
    if memo is not None:
        try:
            write_json_atomic(memo, {**_read(memo), model: answer})
        except OSError:  # a read-only cache only costs the import next time
            pass
    return answer

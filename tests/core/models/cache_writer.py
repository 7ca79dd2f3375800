"""What the cache tests' spawned processes run: a module of its own, so that a spawned interpreter
imports the response cache alone (the test module brings litellm, about 4 CPU-s per process)."""

from __future__ import annotations

from pipeline.core.models.gateway import request_key
from pipeline.core.models.response_cache import ResponseCache


def entry_key(i: int) -> str:
    return request_key("fake/m", [{"role": "user", "content": str(i)}], {}, None, 0)


def write_entries(root: str, worker: int, rounds: int, keys: int) -> None:
    """`rounds` puts into the cache at `root`, of `keys` distinct keys in turn (each about 2 kB)."""
    cache = ResponseCache(root)
    for i in range(rounds):
        cache.put(entry_key(i % keys), {"text": f"answer {i % keys} " + "x" * 2000, "writer": worker})

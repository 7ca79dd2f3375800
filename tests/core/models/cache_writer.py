"""What the cache tests' spawned processes run: a module of its own, so that a spawned interpreter
imports the response cache alone (the test module brings litellm, about 4 CPU-s per process)."""

from __future__ import annotations

from pipeline.core.models.gateway import request_key
from pipeline.core.models.response_cache import ResponseCache


def write_entries(root: str, worker: int, rounds: int) -> None:
    """`rounds` puts of 40 distinct keys (each about 2 kB) into the cache at `root`."""
    cache = ResponseCache(root)
    for i in range(rounds):
        key = request_key("fake/m", [{"role": "user", "content": str(i % 40)}], {}, None, 0)
        cache.put(key, {"text": f"answer {i % 40} " + "x" * 2000, "writer": worker})

"""The shared core every benchmark builds on; it knows no benchmark.

Its parts, lowest first (import-linter holds the layers, `make lint`):

- `artifacts`: files, ids and seeds, params, tables, plots, replays, results folders
- `models`, `rating`, `sandbox`: model calls; TrueSkill; isolated programs
- `judge`: scoring strings under a language model (built on `models`' local models)
- `run`: the benchmark registry, command-line verbs, workflow set-up, shards and the run plan

Each part's `__init__` lists its public API.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's `__getattr__` and `__dir__` serving `exports` (name -> submodule) on first use,
    so importing a part never imports its heavy modules (altair, torch, litellm) until needed."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    def __dir__() -> list[str]:
        return sorted(exports)

    return __getattr__, __dir__

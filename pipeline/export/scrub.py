"""What must never leave in a dataset: keys and where a model is served from.

A game's text is model output, and a model can repeat whatever reached it; an error message can
name an endpoint. Every string of the export goes through `Secrets.scrub`, which replaces:
- the value of every environment variable whose name holds KEY, TOKEN, SECRET or PASSWORD, and of
  the variables the roster names (`api_key_env`), as publish's key check finds them;
- every string in a roster entry's `extra` (api_base, base_url, headers: where and how a model is
  reached is the owner's business);
- anything shaped like a credential: `Authorization: ...`, `Bearer ...`, `sk-...` / `sk-ant-...` keys.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)
MIN_SECRET_CHARS = 8  # shorter values (a "1", a "true") would blank ordinary text
REDACTED = "[redacted]"
CREDENTIAL_SHAPES = re.compile(
    r"(?i:authorization)\s*[:=]\s*\S+(?:\s+\S+)?"  # a header as written in a message or log
    r"|(?i:bearer)\s+[A-Za-z0-9._~+/=-]{8,}"
    r"|\bsk-[A-Za-z0-9_-]{16,}"
)


@dataclass(frozen=True)
class Secrets:
    """The values to remove, longest first (a value inside another goes after it)."""

    values: tuple[str, ...]

    def scrub(self, text: str) -> str:
        for value in self.values:
            if value in text:
                text = text.replace(value, REDACTED)
        return CREDENTIAL_SHAPES.sub(REDACTED, text)

    def scrub_column(self, column: pl.Expr) -> pl.Expr:
        """`scrub` as a polars expression over a string column (nulls stay null)."""
        for value in self.values:
            column = column.str.replace_all(value, REDACTED, literal=True)
        return column.str.replace_all(CREDENTIAL_SHAPES.pattern, REDACTED)

    def scrub_any(self, value: Any) -> Any:
        """Every string inside `value` (dicts, lists, tuples) scrubbed; other values as they are."""
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, Mapping):
            return {key: self.scrub_any(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.scrub_any(item) for item in value]
        return value

    def found_in(self, data: bytes) -> list[str]:
        """Which secret values `data` holds (for a last check of written text files)."""
        return [value for value in self.values if value.encode("utf-8") in data]


def collect_secrets(models: Path | None) -> Secrets:
    """The secret values of this environment and of the roster in `models` (None or a missing
    file: the environment's only)."""
    entries = _roster(models)
    key_variables = {str(entry.get("api_key_env")) for entry in entries if entry.get("api_key_env")}
    found = {
        value
        for name, value in os.environ.items()
        if (SECRET_NAME.search(name) or name in key_variables) and len(value) >= MIN_SECRET_CHARS
    }
    for entry in entries:
        found.update(value for value in _strings(entry.get("extra") or {}) if len(value) >= MIN_SECRET_CHARS)
    return Secrets(tuple(sorted(found, key=lambda v: (-len(v), v))))


def _roster(models: Path | None) -> list[dict[str, Any]]:
    """The roster's entries as written (the YAML, not the validated params: a secret written where
    validation would refuse it must be found all the same)."""
    if models is None or not models.is_file():
        return []
    import yaml

    data = yaml.safe_load(models.read_text(encoding="utf-8")) or {}
    roster = data.get("roster") if isinstance(data, dict) else None
    return [entry for entry in roster or [] if isinstance(entry, dict)]


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)

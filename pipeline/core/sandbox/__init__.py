"""The sandbox: untrusted Python programs run isolated, limited and failing closed (`runner`),
with warm bubblewrap workers that fork each program fresh (`zygote`, started inside the sandbox).

The names below are the public API, imported on first use (SPEC 1 lazy loading): importing
the package costs nothing until a name is used."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.core import lazy_exports

if TYPE_CHECKING:
    from pipeline.core.sandbox.runner import Sandbox, SandboxLimits, SandboxResult, SandboxUnavailable

_EXPORTS = {
    "Sandbox": "runner",
    "SandboxLimits": "runner",
    "SandboxResult": "runner",
    "SandboxUnavailable": "runner",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "Sandbox",
    "SandboxLimits",
    "SandboxResult",
    "SandboxUnavailable",
]

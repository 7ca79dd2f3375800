"""The judge: cross-entropy of strings under a causal language model, in bits, scored in batches
(`scoring`), with its score cache (`cache`) and fixed prompts (`prompts`).

The names below are the public API, imported on first use (SPEC 1 lazy loading): importing
the package costs nothing until a name is used."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.core import lazy_exports

if TYPE_CHECKING:
    from pipeline.core.judge.scoring import JudgeFingerprint, XentScore, known_judges, load_judge

_EXPORTS = {
    "JudgeFingerprint": "scoring",
    "XentScore": "scoring",
    "known_judges": "scoring",
    "load_judge": "scoring",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "JudgeFingerprint",
    "XentScore",
    "known_judges",
    "load_judge",
]

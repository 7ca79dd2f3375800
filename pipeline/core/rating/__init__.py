"""Rating: multi-pass TrueSkill with bootstrap intervals. The rated events and settings
(`events`), the passes and the summary (`multipass`), the vectorised engines (`fast`, `kernel`)
and the `rating:` params section every benchmark shares (`settings`).

The names below are the public API, imported on first use (SPEC 1 lazy loading): importing
the package costs nothing until a name is used."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.core import lazy_exports

if TYPE_CHECKING:
    from pipeline.core.rating.events import FreeForAll, Pairwise, RatingEvent, RatingParams, TeamMatch
    from pipeline.core.rating.multipass import (
        MIN_SETTLED_GAMES,
        MIN_SETTLED_RESAMPLES,
        apply_event,
        multi_pass,
        pass_ratings,
        rating_summary,
    )
    from pipeline.core.rating.settings import with_defaults

_EXPORTS = {
    "FreeForAll": "events",
    "Pairwise": "events",
    "RatingEvent": "events",
    "RatingParams": "events",
    "TeamMatch": "events",
    "MIN_SETTLED_GAMES": "multipass",
    "MIN_SETTLED_RESAMPLES": "multipass",
    "apply_event": "multipass",
    "multi_pass": "multipass",
    "pass_ratings": "multipass",
    "rating_summary": "multipass",
    "with_defaults": "settings",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "FreeForAll",
    "MIN_SETTLED_GAMES",
    "MIN_SETTLED_RESAMPLES",
    "Pairwise",
    "RatingEvent",
    "RatingParams",
    "TeamMatch",
    "apply_event",
    "multi_pass",
    "pass_ratings",
    "rating_summary",
    "with_defaults",
]

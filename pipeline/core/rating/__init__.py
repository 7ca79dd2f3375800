"""Rating: multi-pass TrueSkill with bootstrap intervals. The rated events and settings
(`events`), the passes and the summary (`multipass`), the vectorised engines (`fast`, `kernel`),
the `rating:` params section every benchmark shares (`settings`) and the adaptive schedule with
its rate correction (`adaptive`).

The names below are the public API, imported on first use (SPEC 1 lazy loading): importing
the package costs nothing until a name is used."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.core import lazy_exports

if TYPE_CHECKING:
    from pipeline.core.rating.adaptive import (
        AdaptiveSchedule,
        RateEstimate,
        Round,
        Standing,
        StopReason,
        TableShape,
        adjacent_unseparated,
        comparison_information,
        fixed_round,
        meetings,
        new_standing,
        next_round,
        opponent_rates,
        overdue_after,
        pair_values,
        separable,
        stop_reason,
        update_standings,
    )
    from pipeline.core.rating.events import FreeForAll, Pairwise, RatingEvent, RatingParams, TeamMatch
    from pipeline.core.rating.multipass import (
        MIN_SETTLED_GAMES,
        MIN_SETTLED_RESAMPLES,
        apply_event,
        multi_pass,
        pass_ratings,
        rating_summary,
    )
    from pipeline.core.rating.settings import AdaptiveSettings, with_defaults

_EXPORTS = {
    "AdaptiveSchedule": "adaptive",
    "RateEstimate": "adaptive",
    "Round": "adaptive",
    "Standing": "adaptive",
    "StopReason": "adaptive",
    "TableShape": "adaptive",
    "adjacent_unseparated": "adaptive",
    "fixed_round": "adaptive",
    "meetings": "adaptive",
    "new_standing": "adaptive",
    "next_round": "adaptive",
    "opponent_rates": "adaptive",
    "comparison_information": "adaptive",
    "overdue_after": "adaptive",
    "pair_values": "adaptive",
    "separable": "adaptive",
    "stop_reason": "adaptive",
    "update_standings": "adaptive",
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
    "AdaptiveSettings": "settings",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "AdaptiveSchedule",
    "AdaptiveSettings",
    "FreeForAll",
    "MIN_SETTLED_GAMES",
    "MIN_SETTLED_RESAMPLES",
    "Pairwise",
    "RateEstimate",
    "RatingEvent",
    "RatingParams",
    "Round",
    "Standing",
    "StopReason",
    "TableShape",
    "TeamMatch",
    "adjacent_unseparated",
    "apply_event",
    "fixed_round",
    "meetings",
    "multi_pass",
    "new_standing",
    "next_round",
    "opponent_rates",
    "comparison_information",
    "overdue_after",
    "pair_values",
    "pass_ratings",
    "rating_summary",
    "separable",
    "stop_reason",
    "update_standings",
    "with_defaults",
]

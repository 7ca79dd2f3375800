"""Artifacts: what stages write and read. Atomic files, content ids and seeds (`io`), users'
params with errors that name the fix (`params`), pandera-checked tables (`schemas`), plots (`plots`),
replay pages (`replay`), a benchmark's results folder as the leaderboard reads it (`results`) and
progress across a stage (`progress`) and typed game records (`records`).

The names below are the public API, imported on first use (SPEC 1 lazy loading): importing
the package costs nothing until a name is used."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.core import lazy_exports

if TYPE_CHECKING:
    from pipeline.core.artifacts.io import (
        atomic_open,
        canonical_json,
        content_id,
        seed_from,
        user_cache_dir,
        write_json_atomic,
        write_text_atomic,
    )
    from pipeline.core.artifacts.params import (
        InputError,
        ParamsError,
        StrictParams,
        did_you_mean,
        indexed,
        load_params,
        roster_hint,
        roster_problems,
    )
    from pipeline.core.artifacts.plots import FORMATS, PALETTE, save_chart
    from pipeline.core.artifacts.progress import announce_games
    from pipeline.core.artifacts.records import (
        GameRecord,
        RecordError,
        parse_record,
        read_record,
        record_json,
        write_record,
    )
    from pipeline.core.artifacts.replay import GamePage, ReplaySet, by_game, num, safe_key, seat_order
    from pipeline.core.artifacts.schemas import (
        CallsSchema,
        Field,
        RatingsSchema,
        RatingSummarySchema,
        RosterCheckSchema,
        StrictTable,
        TableError,
        calls_frame,
        read_table,
        write_table,
    )

_EXPORTS = {
    "atomic_open": "io",
    "canonical_json": "io",
    "content_id": "io",
    "seed_from": "io",
    "user_cache_dir": "io",
    "write_json_atomic": "io",
    "write_text_atomic": "io",
    "InputError": "params",
    "ParamsError": "params",
    "StrictParams": "params",
    "did_you_mean": "params",
    "indexed": "params",
    "load_params": "params",
    "roster_hint": "params",
    "roster_problems": "params",
    "FORMATS": "plots",
    "PALETTE": "plots",
    "save_chart": "plots",
    "announce_games": "progress",
    "GameRecord": "records",
    "RecordError": "records",
    "parse_record": "records",
    "read_record": "records",
    "record_json": "records",
    "write_record": "records",
    "GamePage": "replay",
    "ReplaySet": "replay",
    "by_game": "replay",
    "num": "replay",
    "safe_key": "replay",
    "seat_order": "replay",
    "CallsSchema": "schemas",
    "Field": "schemas",
    "RatingSummarySchema": "schemas",
    "RatingsSchema": "schemas",
    "RosterCheckSchema": "schemas",
    "StrictTable": "schemas",
    "TableError": "schemas",
    "calls_frame": "schemas",
    "read_table": "schemas",
    "write_table": "schemas",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "CallsSchema",
    "FORMATS",
    "Field",
    "GamePage",
    "GameRecord",
    "InputError",
    "PALETTE",
    "ParamsError",
    "RatingSummarySchema",
    "RatingsSchema",
    "RecordError",
    "ReplaySet",
    "RosterCheckSchema",
    "StrictParams",
    "StrictTable",
    "TableError",
    "announce_games",
    "atomic_open",
    "by_game",
    "calls_frame",
    "canonical_json",
    "content_id",
    "did_you_mean",
    "indexed",
    "load_params",
    "num",
    "parse_record",
    "read_record",
    "read_table",
    "record_json",
    "roster_hint",
    "roster_problems",
    "safe_key",
    "save_chart",
    "seat_order",
    "seed_from",
    "user_cache_dir",
    "write_json_atomic",
    "write_record",
    "write_table",
    "write_text_atomic",
]

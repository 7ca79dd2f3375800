"""The one table the coin flip benchmark writes."""

from __future__ import annotations

import pandera.polars as pa

from pipeline.core.artifacts import StrictTable


class GamesSchema(StrictTable):
    game_id: str = pa.Field(unique=True)
    player_a: str
    player_b: str
    draw_a: float = pa.Field(ge=0, le=1)
    draw_b: float = pa.Field(ge=0, le=1)
    winner: str

"""The one table the coin flip benchmark writes."""

from __future__ import annotations

from pipeline.core.artifacts import Field, StrictTable


class GamesSchema(StrictTable):
    game_id: str = Field(unique=True)
    player_a: str
    player_b: str
    draw_a: float = Field(ge=0, le=1)
    draw_b: float = Field(ge=0, le=1)
    winner: str

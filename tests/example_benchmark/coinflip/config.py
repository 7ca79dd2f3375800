"""`params/coinflip.yaml`: who plays, how many games per pair, the rating settings."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from pipeline.core.artifacts import StrictParams, load_params


class CoinflipParams(StrictParams):
    players: dict[str, float] = Field(description="player name -> bias in (0, 1): the chance its draw is high")
    games_per_pair: int = Field(4, ge=1, description="games each pair of players plays")
    passes: int = Field(4, ge=1, description="TrueSkill passes over shuffled game orders")
    bootstrap_resamples: int = Field(20, ge=0, description="bootstrap resamples for intervals (0: none)")


def load(path: str | Path = "params/coinflip.yaml") -> CoinflipParams:
    return load_params(CoinflipParams, path)

"""Scripted bots and a game runner shared by the Elimination Game tests (no tests in here)."""

from __future__ import annotations

import asyncio
import random
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pipeline.core.artifacts.io import seed_from
from pipeline.core.models.gateway import Gateway
from pipeline.core.models.players import MoveRequest, make_players, register_bot
from pipeline.elimination.bots import heuristic_bot
from pipeline.elimination.config import ReplyTokens, WordLimits
from pipeline.elimination.engine import EliminationGame, GameSpec
from tests.conftest import models_params

#: every request a bot received, as (seat, request): filled by the `recorder` bot
RECORDED: list[tuple[str, MoveRequest]] = []


@register_bot("script", game="elimination")
def script_bot(options: Mapping[str, Any]):
    """Replies from `replies` by request key (`r1/vote/P3/try2`, or without `/tryN` for every try);
    everything else is the heuristic bot's move."""
    replies: Mapping[str, str] = options.get("replies", {})
    fallback = heuristic_bot(options)

    def policy(request: MoveRequest, rng: random.Random) -> str:
        base = request.key.rsplit("/try", 1)[0]
        if request.key in replies:
            return replies[request.key]
        if base in replies:
            return replies[base]
        return fallback(request, rng)

    return policy


@register_bot("recorder", game="elimination")
def recorder_bot(options: Mapping[str, Any]):
    """The heuristic bot, with a unique marker in every message and every vote reason; it records
    every request it receives."""
    fallback = heuristic_bot(options)

    def policy(request: MoveRequest, rng: random.Random) -> str:
        RECORDED.append((request.state["seat"], request))
        text = fallback(request, rng)
        if request.kind in ("vote", "revote", "jury"):
            return f"{text} REASON<{request.key}>"
        return f"{text} MARK<{request.key}>"

    return policy


def play(
    seats: tuple[str, ...],
    roster: list[dict[str, Any]],
    game_id: str = "test01",
    tmp: Path | None = None,
    words: WordLimits | None = None,
    reply_tokens: ReplyTokens | None = None,
    **options: Any,
) -> list[dict[str, Any]]:
    """Play one game in process; returns its records. `options`: GameSpec's votes, variant, ..."""
    models = models_params(roster)
    gateway = Gateway(models, job=f"elimination/{game_id}", cache_dir=Path(tmp or tempfile.mkdtemp()) / "cache")
    players = make_players(
        models, gateway, seed_from("elimination", game_id), names=sorted(set(seats)), game="elimination"
    )
    spec = GameSpec(game_id, seats, words or WordLimits(), reply_tokens or ReplyTokens(), **options)
    return asyncio.run(EliminationGame(spec, players).play())


def scripted(replies: Mapping[str, str], n: int = 8, game_id: str = "test01") -> list[dict[str, Any]]:
    roster = [{"name": "script", "bot": "script", "bot_options": {"replies": dict(replies)}}]
    return play(("script",) * n, roster, game_id)


def of_type(records: list[dict[str, Any]], kind: str, round_no: int | None = None) -> list[dict[str, Any]]:
    return [r for r in records if r["type"] == kind and (round_no is None or r.get("round") == round_no)]


def seat(pid: str | None) -> str | None:
    return None if pid is None or not pid.startswith("Player") else "P" + pid.split("_", 1)[0].removeprefix("Player")

"""Iterated play: each player plays each map for several rounds; all maps of a job run concurrently.

Before each elicit a player sees the game's code and description, what its role may see, and its
history on this map (its moves, reward totals, per-token breakdowns). `conversation` decides how:
`per_ask` (default, the protocol of the reference's published leaderboard) builds a fresh prompt at
every ask with the whole history, every earlier round with its per-token breakdown unless
`detail_rounds` limits it; `per_map` keeps one conversation per map and adds what is new. A model
replies with its move in <move>...</move> (the reference's rule: last closed tag wins, closed
<think> blocks dropped; a reply without the tag is the move as a whole, cut to the elicit's token
limit, and the next ask reminds the model of the tags). The reply protocol (`replies.protocol`)
decides the ask: `reference` (default) lets the model think before its tagged move and sets no
stop sequence; `short` asks for the move only and stops at `</move>`. The reply's token cap is the
model's (its roster entry) unless `reply_max_tokens` sets one for the game. Bots get the same
request plus a structured `state`, and a bot reply without tags is the move itself.
"""

from __future__ import annotations

import asyncio
import logging
import random
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pipeline.xent.bots  # noqa: F401  (registers the xent heuristic bot)
from pipeline.core.artifacts import seed_from
from pipeline.core.models import MoveRequest, Player, gather_moves
from pipeline.xent.games import Game
from pipeline.xent.prompts import (
    MOVE_CLOSE,
    PROMPT_VERSION,
    check_protocol,
    drop_think,
    elicit_messages,
    extract_move,
    followup_message,
)
from pipeline.xent.records import XentPlay
from pipeline.xent.runtime import ElicitRequest, JudgeLike, MoveOutcome, RoundResult, StoryProvider, run_round
from pipeline.xent.xgl import Program

if TYPE_CHECKING:
    from pipeline.xent.config import XentParams

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PlaySettings:
    # the game's cap on a model's reply; None (the reference's): none, the model's roster entry decides
    reply_max_tokens: int | None = None
    detail_rounds: int | None = None  # per_ask: earlier rounds with per-token detail; None: all (the reference's)
    conversation: str = "per_ask"  # the published leaderboard's: a fresh prompt per ask; or "per_map"
    protocol: str = "reference"  # the reference's: think, then the last <move> tag; or "short"

    def __post_init__(self) -> None:
        check_protocol(self.protocol)

    @classmethod
    def of(cls, params: XentParams) -> PlaySettings:
        """The params' settings (`replies`)."""
        replies = params.replies
        return cls(
            reply_max_tokens=replies.max_tokens,
            detail_rounds=replies.detail_rounds,
            conversation=replies.conversation,
            protocol=replies.protocol,
        )


@dataclass
class MapContext:
    game: Game
    map_id: str
    round: int = 1
    history: list[dict[str, Any]] = field(default_factory=list)


class PlayerSeat:
    """One role of one map, played by a roster player through `Player.act`."""

    def __init__(self, player: Player, context: MapContext, settings: PlaySettings) -> None:
        self.player = player
        self.context = context
        self.settings = settings
        self.reminder = False  # the last reply had no <move> tag
        self.conversation: list[dict[str, str]] = []  # per_map: every turn on this map so far
        self.rounds_seen = 0  # rounds whose results the conversation already holds
        self.shown: dict[str, str] = {}  # registers as last shown

    def messages(self, request: ElicitRequest) -> list[dict[str, str]]:
        """per_ask (the published leaderboard's): a fresh prompt each time; per_map: one growing conversation."""
        ctx = self.context
        roles = (request.role,)
        if self.settings.conversation == "per_ask" or not self.conversation:
            messages = elicit_messages(
                ctx.game.code,
                ctx.game.description,
                request,
                ctx.history,
                roles,
                self.settings.detail_rounds,
                reminder=self.reminder,
                protocol=self.settings.protocol,
            )
        else:
            messages = [
                *self.conversation,
                followup_message(
                    request, ctx.history, self.rounds_seen, roles, self.shown, self.reminder, self.settings.protocol
                ),
            ]
        self.rounds_seen = len(ctx.history)
        self.shown = dict(request.visible)
        return messages

    async def ask(self, request: ElicitRequest) -> MoveOutcome:
        ctx = self.context
        key = f"{ctx.game.name}/{ctx.map_id}/r{ctx.round}/e{request.elicit_index}/{request.register}/a{request.attempt}"
        state = {
            "game": ctx.game.name,
            "description": ctx.game.description,
            "role": request.role,
            "register": request.register,
            "max_tokens": request.max_tokens,
            "visible": dict(request.visible),
            "failed": list(request.failed),
            "round": ctx.round,
            "history": own_history(ctx.history, request.role),
            "events": list(request.events),
        }
        messages = self.messages(request)
        short = self.settings.protocol == "short"  # ours: the move only, the first </move> ends the reply
        reply = await self.player.act(
            MoveRequest(
                messages=messages,
                key=key,
                kind="move",
                max_words=request.max_tokens,
                max_tokens=self.settings.reply_max_tokens,
                stop=(MOVE_CLOSE,) if short else (),
                state=state,
            )
        )
        move, tagged = extract_move(reply.text, stopped_at_close=short)
        if not tagged and self.player.is_bot:
            move = reply.text.strip()  # bots answer with the bare move
        # the reference: an untagged reply is the move itself, and the next ask carries a reminder
        self.reminder = not tagged and not self.player.is_bot
        if self.settings.conversation == "per_map":  # the reply joins the map's conversation
            self.conversation = [*messages, {"role": "assistant", "content": drop_think(reply.text)}]
        return MoveOutcome(move, reply.text, 1, tagged or self.player.is_bot, reply.tokens_in, reply.tokens_out)


def own_history(history: Sequence[Mapping[str, Any]], role: str) -> list[dict[str, Any]]:
    """Earlier rounds as one role saw them: its own moves and rewards only."""
    return [
        {
            **past,
            "moves": [m for m in past["moves"] if m["role"] == role],
            "rewards": [r for r in past["rewards"] if r["role"] == role],
        }
        for past in history
    ]


def round_summary(number: int, result: RoundResult, self_roles: Sequence[str]) -> dict[str, Any]:
    """A round as recorded (and as shown in later prompts): moves, rewards with tokens, error."""
    return {
        "round": number,
        "error": result.error,
        "total_bits": None if result.error else result.total_for(self_roles),
        "ensure_failures": result.ensure_failures,
        "moves": [
            {
                "elicit_index": m.elicit_index,
                "role": m.role,
                "register": m.register,
                "move": m.move,
                "reply": m.reply,
                "attempts": m.attempts,
                "line": m.line,
                "tagged": m.tagged,
                "tokens_in": m.tokens_in,
                "tokens_out": m.tokens_out,
            }
            for m in result.moves
        ],
        "rewards": [
            {
                "reward_index": r.reward_index,
                "role": r.role,
                "line": r.line,
                "expression": r.expression,
                "total_bits": r.total,
                "tokens": [[t.token, t.bits] for t in r.resolved.tokens],
                "token_terms": [t.term for t in r.resolved.tokens],
                "terms": [t.to_dict() for t in r.terms],
            }
            for r in result.rewards
        ],
    }


async def play_map(
    game: Game,
    program: Program,
    map_id: str,
    players: Mapping[str, Player],
    judge: JudgeLike,
    rounds: int,
    settings: PlaySettings,
    stories: StoryProvider | None = None,
) -> dict[str, Any]:
    """`rounds` passes through `program`; `players` maps every elicited role to its player."""
    context = MapContext(game, map_id)
    seats = {role: PlayerSeat(player, context, settings) for role, player in players.items()}
    rng = map_rng(program, map_id)
    for number in range(1, rounds + 1):
        context.round = number
        result = await run_round(program, seats, judge, stories, rng)
        summary = round_summary(number, result, game.self_roles)
        context.history.append(summary)
        total = summary["total_bits"]
        shown = f"{total:+.2f} bits" if total is not None else f"error: {summary['error']}"
        print(f"xent {game.name} map {map_id} round {number}: {shown}", file=sys.stderr)
    return {"map_id": map_id, "rounds": context.history}


def map_rng(program: Program, map_id: str) -> random.Random:
    """sample() and shuffle()'s generator for one map, shared by its rounds.

    An imported map seeds it with the reference's full seed string (its `# @rng_seed:` line), as
    the reference seeds its judge's generator; our maps with a content seed from the map id.
    """
    seed = program.meta.get("rng_seed")
    return random.Random(seed if seed is not None else seed_from("xent-map-rng", map_id))


def judge_stories(judge: Any, base: str) -> StoryProvider:
    """story() for unbuilt programs: the judge's seeded sample for (base, call index)."""

    async def provide(index: int, n_tokens: int) -> str:
        texts = await asyncio.to_thread(judge.stories, [f"{base}/{index}"], n_tokens)
        return texts[0]

    return provide


def seat_players(game: Game, player: Player, opponent: Player | None) -> dict[str, Player]:
    seats: dict[str, Player] = {}
    for role in game.seats:
        if role in game.opponent_roles:
            if opponent is None:
                raise ValueError(f"game {game.name} needs an opponent for {role}")
            seats[role] = opponent
        else:
            seats[role] = player
    return seats


async def play_job_maps(
    game: Game,
    maps: Sequence[tuple[str, Program]],
    player: Player,
    opponent: Player | None,
    judge: JudgeLike,
    rounds: int,
    settings: PlaySettings,
) -> list[dict[str, Any]]:
    """All maps of one game for one player, concurrently (the judge batches their requests)."""
    seats = seat_players(game, player, opponent)
    return await gather_moves(
        *(play_map(game, program, map_id, seats, judge, rounds, settings) for map_id, program in maps)
    )


def job_record(
    game: Game,
    job_id: str,
    player: Player,
    opponent: Player | None,
    judge: Any,
    rounds: int,
    maps: list[dict[str, Any]],
    seeds: Mapping[str, int | str],
) -> dict[str, Any]:
    """The job's record as its JSON object (`records.XentPlay.model_validate` types it)."""
    for record in maps:
        record["seed"] = seeds.get(record["map_id"])
    return {
        "job_id": job_id,
        "game": game.name,
        "game_version": game.version,
        "description": game.description,
        "code": game.source,
        "player": player.name,
        "model": player.entry.model_string,
        "opponent": opponent.name if opponent else None,
        "self_roles": list(game.self_roles),
        "opponent_roles": list(game.opponent_roles),
        "rounds": rounds,
        "prompt_version": PROMPT_VERSION,
        "judge": judge.fingerprint.as_dict(),
        "maps": maps,
    }


async def play_record(
    game: Game,
    job_id: str,
    maps: Sequence[tuple[str, Program]],
    player: Player,
    opponent: Player | None,
    judge: Any,
    rounds: int,
    settings: PlaySettings,
    seeds: Mapping[str, int | str],
) -> XentPlay:
    """One play job with its players (each seeded from the job): its maps concurrently, as its typed record."""
    records = await play_job_maps(game, maps, player, opponent, judge, rounds, settings)
    return XentPlay.model_validate(job_record(game, job_id, player, opponent, judge, rounds, records, seeds))

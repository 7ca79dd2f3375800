"""Xent's requests for the run plan (`python -m pipeline plan`): a play job's player (and
opponent) over its maps. The judge runs locally.

Once a model has played a game, its calls per job come from its earlier jobs of that game (and the
plan takes its tokens per call from their calls tables, pipeline.core.run.plan.TokenHistory). Before
that, the game's structure gives them (`map_work`): each map's program is walked round by round by
Xent's own runtime and prompt code, with a model-free judge (pipeline.xent.testing.WordJudge),
stories of their stated length, every move at its token limit and every `ensure` passing, so

    calls of a seat = sum over the job's maps of rounds x (first asks of the seat's roles per round)

where an ask is one register of an `elicit` line of one of the seat's roles, counted as often as
`beacon`/`replay` loops run it. An `ensure` that rejects a move re-asks its last elicit, at most
ENSURE_LIMIT times before the round ends in error: those re-asks are not counted, the note gives
their upper bound. A reply without a `<move>` tag is never re-asked (the move is the whole reply
and the next ask carries a reminder), so it adds no call.

Prompt tokens are those of the prompts the play code builds (pipeline.core.models.probe.prompt_tokens):
with `replies.conversation: per_ask` (default, the published leaderboard's) the k-th ask of a map
is a fresh prompt holding the k-1 earlier rounds (with their per-token breakdowns unless
`detail_rounds` limits them); with `per_map` each map is one growing conversation, so the k-th ask
is billed the first prompt plus every earlier reply and follow-up message (results of the new
round with its per-token breakdown, changed registers, the ask). The simulated replies have the
expected visible length below, so the growth is counted as it comes.

Reply tokens per call are `planned_reply_tokens(entry, "move", replies.max_tokens, "xent",
expected)`, the expected visible reply being the move at its token limit plus MOVE_TAG_TOKENS for
the tags, plus, with the `reference` protocol (the model may think first), a short thought of
THOUGHT_WORDS words; a reasoning model's whole reasoning allowance comes on top.

A library game's maps differ only in their stories, so one simulated map stands for all of them;
the maps of an imported map set (`map_set`) are simulated from their own programs (at most
SIMULATED_MAPS of a game, the rest counted as their mean).
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from pipeline.core.models import tokens_for_words
from pipeline.core.run import (
    NO_MODEL,
    CallEstimate,
    PlanContext,
    PlannedJob,
    PlannedMove,
    plan_shards,
    seat_estimates,
    summed,
)

PARAMS = "xent.yaml"  # in the run's params directory (PlanContext.params_file)
#: visible tokens of the tags around a move: `<move>` and `</move>` (with a line break)
MOVE_TAG_TOKENS = 6
#: words of the thought a model may write before its tagged move (the `reference` protocol)
THOUGHT_WORDS = 60
#: imported maps of one game walked one by one; more are counted as the mean of these
SIMULATED_MAPS = 8
#: the stand-in story of `story()` in an unbuilt game: one prompt token a word
_STORY_WORD = "sun"


def expected_visible(move_tokens: int, protocol: str) -> int:
    """Visible reply tokens the rules lead one to expect for a move of `move_tokens` tokens: the
    move at its limit, its tags and, with the `reference` protocol, a short thought first."""
    thought = tokens_for_words(THOUGHT_WORDS) if protocol == "reference" else 0
    return move_tokens + MOVE_TAG_TOKENS + thought


def _filler(tokens: int, word: str) -> str:
    """About `tokens` prompt tokens of text (probe.prompt_tokens: 4 characters a token)."""
    return " ".join([word] * max(tokens, 0))


@dataclass
class MapWork:
    """The first asks of one map, every round played: per role, (prompt tokens, move limit)."""

    asks: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    reasks: dict[str, int] = field(default_factory=dict)  # per role: the most ensure re-asks
    error: str | None = None  # the first simulated round that stopped early (calls then undercounted)


class _PlanPlayer:
    """Stands in for a model at every seat: records each prompt, replies at the expected length."""

    is_bot = False
    name = "plan"

    def __init__(self, protocol: str) -> None:
        self.protocol = protocol
        self.work = MapWork()

    async def act(self, request: Any) -> Any:
        from pipeline.core.models import Reply, prompt_tokens

        limit = int(request.max_words or 0)
        role = request.state["role"]
        self.work.asks.setdefault(role, []).append((prompt_tokens(request.messages), limit))
        move = _filler(limit, (str(request.state["register"]) + "zz")[:3])
        if self.protocol == "short":  # the stop sequence removes the closing tag
            text = f"<move>{move}"
        else:
            thought = _filler(expected_visible(0, self.protocol) - MOVE_TAG_TOKENS, "hmm")
            text = f"{thought}\n<move>{move}</move>"
        return Reply(player=self.name, text=text)


def map_work(game: Any, program: Any, map_id: str, rounds: int, settings: Any) -> MapWork:
    """Walk `rounds` rounds of one map as play does (pipeline.xent.play.play_map), with a model-free
    judge and every ensure passing; see the module doc."""
    return asyncio.run(_walk(game, program, map_id, rounds, settings))


async def _walk(game: Any, program: Any, map_id: str, rounds: int, settings: Any) -> MapWork:
    from pipeline.xent.play import MapContext, PlayerSeat, map_rng, round_summary
    from pipeline.xent.runtime import ENSURE_LIMIT, Instruction, _Round
    from pipeline.xent.testing import WordJudge
    from pipeline.xent.xgl import player_arg

    player = _PlanPlayer(settings.protocol)
    work = player.work

    class PlanRound(_Round):
        last: Instruction | None = None

        async def elicit(self, ins: Instruction, *args: Any) -> list[int]:
            self.last = ins
            return await super().elicit(ins, *args)

        async def ensure(self, ins: Instruction) -> list[str]:
            if self.last is not None:  # a rejection re-asks every register of the last elicit
                role, args = player_arg(self.last)
                work.reasks[role] = work.reasks.get(role, 0) + ENSURE_LIMIT * (len(args) - 1)
            return []

    async def stories(_index: int, size: int) -> str:
        return _filler(size, _STORY_WORD)

    context = MapContext(game, map_id)
    seats = {role: PlayerSeat(cast(Any, player), context, settings) for role in game.seats}
    rng = map_rng(program, map_id)
    judge = WordJudge()
    for number in range(1, rounds + 1):
        context.round = number
        try:
            result = await PlanRound(program, seats, judge, stories, rng).run()
        except Exception as exc:  # noqa: BLE001 - a plan counts what it could walk, and says so
            work.error = work.error or f"round {number}: {exc}"
            break
        if result.error and work.error is None:
            work.error = f"round {number}: {result.error}"
        context.history.append(round_summary(number, result, game.self_roles))
    return work


@dataclass(frozen=True)
class GameWork:
    """A game job's first asks per role over all its maps, as planned moves."""

    moves: dict[str, list[PlannedMove]]  # role -> its planned moves (calls over all maps)
    reasks: dict[str, float]  # role -> the most ensure re-asks over all maps
    maps: int
    rounds: int
    error: str | None = None


def game_work(game: Any, maps: Sequence[Any], rounds: int, params: Any) -> GameWork:
    """Every map of a play job (`maps`: its MapSpecs) walked or stood in for (see the module doc)."""
    from pipeline.xent.play import PlaySettings
    from pipeline.xent.xgl import load_program

    replies = params.replies
    settings = PlaySettings(
        reply_max_tokens=replies.max_tokens,
        detail_rounds=replies.detail_rounds,
        conversation=replies.conversation,
        protocol=replies.protocol,
    )
    imported = [m for m in maps if m.imported]
    if imported:  # each map its own program (its stories are literals)
        walked = [
            map_work(game, load_program(m.imported), m.map_id, rounds, settings) for m in imported[:SIMULATED_MAPS]
        ]
    else:  # our maps are the game with other stories: the game's program stands for each of them
        walked = [map_work(game, game.program, maps[0].map_id if maps else "plan", rounds, settings)]
    scale = len(maps) / len(walked)
    moves: dict[str, list[PlannedMove]] = {}
    reasks: dict[str, float] = {}
    for role in game.seats:
        by_limit: dict[int, list[int]] = {}
        for work in walked:
            for prompt, limit in work.asks.get(role, []):
                by_limit.setdefault(limit, []).append(prompt)
        moves[role] = [
            PlannedMove(
                "move",
                len(prompts) * scale,
                round(sum(prompts) / len(prompts)),
                replies.max_tokens,
                expected_visible(limit, replies.protocol),
            )
            for limit, prompts in sorted(by_limit.items())
        ]
        reasks[role] = sum(w.reasks.get(role, 0) for w in walked) * scale
    error = next((w.error for w in walked if w.error), None)
    return GameWork(moves, reasks, len(maps), rounds, error)


def _why(game: str, work: GameWork, roles: Sequence[str], protocol: str) -> str:
    """How a seat's calls were counted, for the plan's note."""
    calls = sum(m.calls for role in roles for m in work.moves.get(role, []))
    per_round = calls / (work.maps * work.rounds) if work.maps and work.rounds else 0.0
    reasks = math.ceil(sum(work.reasks.get(role, 0.0) for role in roles) - 1e-9)
    ensure = f"; ensure may re-ask up to {reasks} more" if reasks else ""
    thought = f" + a {THOUGHT_WORDS}-word thought" if protocol == "reference" else ""
    text = (
        f"{game}: {work.maps} map(s) x {work.rounds} round(s) x {per_round:g} ask(s) of {'/'.join(roles)} "
        f"a round (the program's elicits{ensure}), replies = move limit + tags{thought}"
    )
    if work.error:
        text += f"; the walk-through stopped early ({work.error}): calls may be more"
    return text


def _load(context: PlanContext) -> tuple[Any, Any]:
    from pipeline.xent.config import load_xent
    from pipeline.xent.schedule import ROUNDS_DIR, build_schedule

    def load() -> tuple[Any, Any]:  # the run's params directory (params/, or `--params DIR`)
        params = load_xent(context.params_file(PARAMS))
        # the adaptive rounds written so far, and the round the plan prices before it is written
        schedule = build_schedule(
            params,
            context.models,
            source=context.params_source(PARAMS),
            rounds=context.path(ROUNDS_DIR),
            preview=context.preview.get("xent", ()),
        )
        return params, schedule

    return cast(tuple[Any, Any], context.once("xent", load))


def estimate_play(job: PlannedJob, context: PlanContext) -> list[CallEstimate]:
    params, schedule = _load(context)
    # the adaptive plan names a table's play as `<game>/<job_id>` (pipeline.xent.adaptive.parts)
    game_name, _, job_id = job.wildcards["job_id"].rpartition("/")
    play = schedule.job(job.wildcards.get("game") or game_name or None, job_id)
    game = schedule.games[play.game]
    work: GameWork = context.once(f"xent-moves/{play.game}", lambda: game_work(game, play.maps, play.rounds, params))
    seats = [play.player] + ([play.opponent] if play.opponent else [])
    roles = [tuple(game.self_roles), tuple(game.opponent_roles)]

    def seat_moves(index: int, _name: str) -> list[PlannedMove]:
        asks = [m for role in roles[index] for m in work.moves.get(role, [])]
        reasks = sum(work.reasks.get(role, 0.0) for role in roles[index])
        if not asks or not reasks:
            return asks
        # the bound counts every ensure re-ask, each at the longest prompt of the seat's asks
        longest = max(asks, key=lambda m: m.prompt_tokens)
        return [*asks, dataclasses.replace(longest, calls=0.0, most=reasks)]

    marker = "planned from the game's structure"
    found = seat_estimates(context, "xent", f"xent/{play.game}", seats, None, "", seat_moves, marker)
    protocol = params.replies.protocol
    notes = {name: [r for i, seat in enumerate(seats) if seat == name for r in roles[i]] for name in seats}
    if work.error:  # the walk stopped early: its count is no bound
        found = [e if e.calls == 0 and not e.expected[0] else dataclasses.replace(e, unbounded=True) for e in found]
    return [
        dataclasses.replace(e, note=f"{e.model}: {_why(play.game, work, notes[e.model], protocol)}")
        if e.note == f"{e.model}: {marker}" or (work.error and e.model in notes and e.calls)
        else e
        for e in found
    ]


def estimate_shard(job: PlannedJob, context: PlanContext) -> list[CallEstimate]:
    """A shard's play jobs (split as pipeline.xent.workflow splits them) that are not done yet, each
    estimated as its own job and added up per model: a resumed shard plays only what is left."""
    from pipeline.xent.stages import play_done

    _, schedule = _load(context)
    per_shard = context.models.parallel.games_per_job
    shards = context.once("xent-shards", lambda: plan_shards([j.job_id for j in schedule.jobs], per_shard))
    plays = context.path("results/xent/play")
    estimates = [
        e
        for job_id in shards.get(job.wildcards["shard_id"], [])
        if not play_done(schedule.job(None, job_id), plays)
        for e in estimate_play(dataclasses.replace(job, wildcards={"job_id": job_id}), context)
    ]
    # every job done (a run killed before the marker): the shard still runs, and asks nothing
    return summed(estimates) or [CallEstimate(NO_MODEL, job.rule, 0, 0, 0, 0)]


def no_calls(job: PlannedJob, context: PlanContext) -> list[CallEstimate]:
    """A game's maps: stories sampled from the local judge, no roster model asked."""
    return [CallEstimate(NO_MODEL, job.rule, 0, 0, 0, 0)]


ESTIMATORS = {"xent_play": estimate_play, "xent_shard": estimate_shard, "xent_maps_*": no_calls}

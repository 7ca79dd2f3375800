"""Roster entries become Player objects: a language model behind the gateway, or a scripted bot.

Games talk to every player through `Player.act(MoveRequest) -> Reply`, so a game never needs a
special case for bots. A request carries the chat messages a model sees and, for bots, the list of
valid moves and a structured view of the game state (`state`), which models never see. Every move
answered is counted for the job's progress line (pipeline.core.artifacts.progress; stderr only).
"""

from __future__ import annotations

import random
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.core.artifacts.io import content_id, seed_from
from pipeline.core.artifacts.progress import count_move
from pipeline.core.models.gateway import Gateway, TokenLogprob
from pipeline.core.models.moves import MoveRequest as MoveRequest
from pipeline.core.models.moves import Reply as Reply
from pipeline.core.models.outside import OUTSIDE_BOTS, seat_channel, unopened_message
from pipeline.core.models.roster import ModelsParams, RosterEntry


class Player(ABC):
    """One roster entry in one job."""

    def __init__(self, entry: RosterEntry, gateway: Gateway, job_seed: int, game: str | None = None) -> None:
        self.entry = entry
        self.gateway = gateway
        self.job_seed = job_seed
        self.game = game  # the benchmark: its name keys the entry's per-move budgets (`elimination.vote`)

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def is_bot(self) -> bool:
        return self.entry.is_bot

    def seed_for(self, request: MoveRequest) -> int:
        return seed_from(self.job_seed, self.name, request.key, request.sample_index)

    @abstractmethod
    async def act(self, request: MoveRequest) -> Reply: ...


class ModelPlayer(Player):
    """A language model answering through the gateway (cached, retried, rate limited)."""

    async def act(self, request: MoveRequest) -> Reply:
        completion = await self.gateway.complete(
            self.entry,
            request.messages,
            seed=self.seed_for(request) % (2**31),
            sample_index=request.sample_index,
            max_tokens=request.max_tokens,
            stop=request.stop or None,
            top_logprobs=request.top_logprobs,
            kind=request.kind,
            benchmark=self.game,
        )
        count_move()
        return Reply(
            player=self.name,
            text=completion.text,
            cache_hit=completion.cache_hit,
            tokens_in=completion.tokens_in,
            tokens_out=completion.tokens_out,
            logprobs=completion.logprobs,
            latency_s=completion.answer_latency_s,
            finish_reason=completion.finish_reason,
        )


@dataclass(frozen=True)
class BotReply:
    """A bot's move with the next-token log-probabilities a model would have given (for games
    that score from log-probabilities); a policy may return this instead of plain text."""

    text: str
    logprobs: tuple[TokenLogprob, ...]


#: A bot policy answers a request with text (or a BotReply), drawing randomness only from `rng`.
BotPolicy = Callable[[MoveRequest, random.Random], "str | BotReply"]
BotFactory = Callable[[Mapping[str, Any]], BotPolicy]

_BOTS: dict[tuple[str | None, str], BotFactory] = {}


def register_bot(name: str, game: str | None = None) -> Callable[[BotFactory], BotFactory]:
    """Register a bot factory; `game` scopes a heuristic bot to one benchmark."""

    def decorate(factory: BotFactory) -> BotFactory:
        _BOTS[(game, name)] = factory
        return factory

    return decorate


def known_bots(game: str | None = None) -> list[str]:
    return sorted({n for (g, n) in _BOTS if g is None or g == game})


def is_generic_bot(name: str) -> bool:
    """True when the bot plays every game (e.g. `random`), not one benchmark's heuristic."""
    return (None, name) in _BOTS


def bot_policy(entry: RosterEntry, game: str | None) -> BotPolicy:
    assert entry.bot is not None
    factory = _BOTS.get((game, entry.bot)) or _BOTS.get((None, entry.bot))
    if factory is None:
        where = f" for game {game!r}" if game else ""
        raise ValueError(
            f"params/models.yaml: roster entry {entry.name!r}: unknown bot {entry.bot!r}{where}; "
            f"known: {', '.join(known_bots(game))}"
        )
    return factory(entry.bot_options)


class BotPlayer(Player):
    """A scripted player: deterministic given the job seed and the request key."""

    def __init__(self, entry: RosterEntry, gateway: Gateway, job_seed: int, game: str | None) -> None:
        super().__init__(entry, gateway, job_seed, game)
        self.policy = bot_policy(entry, game)

    async def act(self, request: MoveRequest) -> Reply:
        started = time.monotonic()
        move = self.policy(request, random.Random(self.seed_for(request)))
        elapsed = time.monotonic() - started
        self.gateway.record_bot(self.entry, content_id([self.name, request.key, request.sample_index]), elapsed)
        count_move()
        if isinstance(move, BotReply):
            logprobs = move.logprobs if request.top_logprobs else None
            return Reply(player=self.name, text=move.text, logprobs=logprobs, latency_s=elapsed)
        return Reply(player=self.name, text=move, latency_s=elapsed)


# Words for free-text moves of the random bot: neutral, so it neither helps nor hurts by meaning.
# Public: a graded heuristic bot reads them as the random bot's talk (pipeline.whoisspy.bots).
FILLER_WORDS = (
    "apple river stone cloud garden window paper orange music silver forest candle bridge "
    "yellow ocean pencil winter market ladder planet coffee basket thunder mirror castle"
).split()


@register_bot("random")
def random_bot(options: Mapping[str, Any]) -> BotPolicy:
    """A uniformly random valid move; free text is a few random filler words."""
    words = int(options.get("words", 8))

    def policy(request: MoveRequest, rng: random.Random) -> str:
        if request.choices:
            return rng.choice(request.choices)
        limit = min(words, request.max_words) if request.max_words else words
        return " ".join(rng.choice(FILLER_WORDS) for _ in range(max(1, limit)))

    return policy


def skill_option(options: Mapping[str, Any]) -> float | None:
    """`bot_options.skill` of a benchmark's heuristic bot as a probability (the share of its moves
    that are heuristic, the rest the random bot's), or None when unset (the plain heuristic bot)."""
    if "skill" not in options:
        return None
    value = options["skill"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
        raise ValueError(
            f"heuristic bot: bot_options.skill must be a number from 0 to 1 (the share of heuristic moves), "
            f"got {value!r}; fix it in the roster entry of params/models.yaml"
        )
    return float(value)


def required_skill(options: Mapping[str, Any]) -> float:
    """`bot_options.skill` of a `graded` bot, which must give it: the one knob of a known-answer player."""
    skill = skill_option(options)
    if skill is None:
        raise ValueError(
            "bot graded needs bot_options.skill, a number from 0 (plays at random) to 1 (plays its best), "
            "e.g. {name: graded-50, bot: graded, bot_options: {skill: 0.5}} in params/models.yaml"
        )
    return skill


def graded_bot(options: Mapping[str, Any], plain: BotPolicy, heuristic: BotPolicy) -> BotPolicy:
    """A benchmark's heuristic bot as `bot_options.skill` grades it: `plain` without the option; with
    it, each move is `heuristic`'s with probability `skill` and the random bot's otherwise."""
    skill = skill_option(options)
    if skill is None:
        return plain
    fallback = random_bot(options)

    def graded(request: MoveRequest, rng: random.Random) -> str | BotReply:
        # one coin per move, from the move's own seeded rng: the same request always gets the same move
        # (skill 1 draws none: every move is heuristic)
        if skill >= 1.0 or rng.random() < skill:
            return heuristic(request, rng)
        return str(fallback(request, rng))

    return graded


class OutsidePlayer(Player):
    """A seat whose moves come through its open channel; recorded like a bot's (no request, no cost),
    with the time the move took in the calls table."""

    def __init__(self, entry: RosterEntry, gateway: Gateway, job_seed: int, game: str | None = None) -> None:
        super().__init__(entry, gateway, job_seed, game)
        channel = seat_channel(entry.name)
        if channel is None:
            raise ValueError(unopened_message(entry))
        self.channel = channel

    @property
    def is_bot(self) -> bool:
        """False: a game reads the seat's replies by a model's rules (an untagged Xent move is
        malformed, not a bot's bare move), as it reads the replies of the model it stands for."""
        return False

    async def act(self, request: MoveRequest) -> Reply:
        started = time.monotonic()
        text = await self.channel.ask(request)
        elapsed = time.monotonic() - started
        self.gateway.record_bot(self.entry, content_id([self.name, request.key, request.sample_index]), elapsed)
        count_move()
        # the seat waits without a time limit: no game's clock (Who is Spy's time limit) runs on it, and
        # the same moves give the same record; the time it took is in the calls table
        return Reply(player=self.name, text=text, latency_s=0.0)


def _outside_policy(name: str) -> Any:
    def factory(options: Mapping[str, Any]) -> Any:
        def policy(request: MoveRequest, rng: Any) -> str:  # only reached without an open seat
            raise ValueError(
                f"bot {name!r} is played from outside the pipeline: open its seat first "
                "(pipeline.core.models.outside.open_seat), e.g. with `python -m pipeline seat`"
            )

        return policy

    return factory


for _name in OUTSIDE_BOTS:
    register_bot(_name)(_outside_policy(_name))


def make_player(entry: RosterEntry, gateway: Gateway, job_seed: int, game: str | None = None) -> Player:
    if entry.is_bot:
        if entry.bot in OUTSIDE_BOTS:  # a person or an agent: its moves come through its open seat
            return OutsidePlayer(entry, gateway, job_seed, game)
        return BotPlayer(entry, gateway, job_seed, game)
    return ModelPlayer(entry, gateway, job_seed, game)


def make_players(
    models: ModelsParams, gateway: Gateway, job_seed: int, names: Sequence[str] | None = None, game: str | None = None
) -> dict[str, Player]:
    """Players for `names` (default: the whole roster), keyed by roster name."""
    entries = [models.entry(n) for n in names] if names is not None else list(models.roster)
    return {e.name: make_player(e, gateway, job_seed, game) for e in entries}

"""The deterministic list of games: who sits where, who is the spy, which words, which variant.

Every player under test plays `games_per_role` games as the spy and as many as a civilian, in each
variant. Replicate r of a player uses one word pair and one drawing of seats for all variants, so
a variant differs from the baseline only by the variant. A game's id is the content id of
everything that decides it (seats with their roster entries, spy seat, words, rules with the vote
parse, variant, prompt text, the reasoning variant's `reasoning_analysis`, and the game's token caps
where the params set one: the paper sets none), so adding a model adds games and changes no
existing one. A seat's roster entry counts with the sampling fields it sets and only the per-move
budgets that apply here (`whoisspy.<kind>` or `<kind>`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.core.artifacts import ParamsError, content_id, seed_from
from pipeline.core.models import ModelsParams, RosterEntry
from pipeline.whoisspy.config import REASONING_ANALYSES, ReplyParams, RulesParams, WhoIsSpyParams
from pipeline.whoisspy.prompts import prompt_fingerprint
from pipeline.whoisspy.words import WORD_PAIRS

#: bump when the engine's behaviour changes in a way that should replay every game
# 2: the spy's injected line counts in its 400 characters and its foul checks; the reasoning
# variant's prompt goes to the focal civilian only (issue 14)
# 3: votes are read as the paper reads them by default (`rules.vote_parse`), each vote records its
# ballot, and the reasoning variant's analysis is heard by the other voters by default (issue 25)
ENGINE_VERSION = 3
ROLES: tuple[str, ...] = ("spy", "civilian")


def seat_name(index: int) -> str:
    return f"P{index + 1}"


@dataclass(frozen=True)
class GameSpec:
    """Everything that decides one game."""

    game_id: str
    variant: str
    seats: tuple[str, ...]  # roster name per seat, seat i is named P{i+1}
    spy_seat: int
    civilian_word: str
    spy_word: str
    rules: RulesParams
    replies: ReplyParams
    replicate: int = 0
    focal: str | None = None  # the player under test this game was scheduled for
    focal_role: str | None = None
    starter: int | None = None  # None: the game's seed picks who speaks first
    reasoning_analysis: str = "public"  # the reasoning variant only: heard by the others, or private

    @property
    def seat_names(self) -> tuple[str, ...]:
        return tuple(seat_name(i) for i in range(len(self.seats)))

    def summary(self) -> dict[str, Any]:
        return {
            "game_id": self.game_id,
            "variant": self.variant,
            "seats": {seat_name(i): m for i, m in enumerate(self.seats)},
            "spy": seat_name(self.spy_seat),
            "words": {"civilian": self.civilian_word, "spy": self.spy_word},
            "focal": self.focal,
            "focal_role": self.focal_role,
            "replicate": self.replicate,
        }


def seat_identity(entry: RosterEntry) -> dict[str, Any]:
    """A seat's roster entry as it decides a game: its sampling fields that are set, and only the
    per-move budgets that apply to this game (another benchmark's budgets change none of its games)."""
    return {**entry.model_dump(mode="json"), "sampling": entry.sampling.identity("whoisspy")}


def make_spec(
    models: ModelsParams,
    *,
    variant: str,
    seats: Sequence[str],
    spy_seat: int,
    civilian_word: str,
    spy_word: str,
    rules: RulesParams | None = None,
    replies: ReplyParams | None = None,
    replicate: int = 0,
    focal: str | None = None,
    focal_role: str | None = None,
    starter: int | None = None,
    schedule_seed: int = 0,
    reasoning_analysis: str = "public",
) -> GameSpec:
    """A game spec with its content id; raises ValueError for an impossible game."""
    rules = rules or RulesParams()
    replies = replies or ReplyParams()
    if len(seats) != rules.seats:
        raise ValueError(f"a game needs {rules.seats} seats, got {len(seats)}")
    if not 0 <= spy_seat < len(seats):
        raise ValueError(f"spy_seat {spy_seat} is not a seat index (0..{len(seats) - 1})")
    if starter is not None and not 0 <= starter < len(seats):
        raise ValueError(f"starter {starter} is not a seat index")
    if civilian_word.strip().lower() == spy_word.strip().lower():
        raise ValueError("the spy's word must differ from the civilians' word")
    if reasoning_analysis not in REASONING_ANALYSES:
        raise ValueError(f"reasoning_analysis must be one of {REASONING_ANALYSES}, got {reasoning_analysis!r}")
    identity = {
        "room": "whoisspy",  # a frozen key of the game id (renaming it would change every id)
        "engine": ENGINE_VERSION,
        "prompts": prompt_fingerprint(),
        "variant": variant,
        "seats": [seat_identity(models.entry(name)) for name in seats],
        "spy_seat": spy_seat,
        "words": [civilian_word, spy_word],
        "rules": rules.model_dump(mode="json"),
        # only where the params cap a move (the paper caps none): a model's own budgets are in its seat
        **({"replies": replies.model_dump(mode="json")} if replies.is_set() else {}),
        "replicate": replicate,
        "focal": [focal, focal_role],
        "starter": starter,
        "schedule_seed": schedule_seed,
        # only the reasoning variant has an analysis: the option changes none of the other games
        **({"reasoning_analysis": reasoning_analysis} if variant == "reasoning" else {}),
    }
    return GameSpec(
        game_id=content_id(identity),
        variant=variant,
        seats=tuple(seats),
        spy_seat=spy_seat,
        civilian_word=civilian_word,
        spy_word=spy_word,
        rules=rules,
        replies=replies,
        replicate=replicate,
        focal=focal,
        focal_role=focal_role,
        starter=starter,
        reasoning_analysis=reasoning_analysis,
    )


def check_names(params: WhoIsSpyParams, models: ModelsParams, source: str) -> None:
    """Every name in the params must be a roster entry; the error names the field and the fix."""
    params.check_roster(models, source)


def build_schedule(
    params: WhoIsSpyParams, models: ModelsParams, source: str = "params/whoisspy.yaml"
) -> list[GameSpec]:
    """All games of the tournament, in a stable order (variant, player, replicate, role)."""
    check_names(params, models, source)
    n = params.rules.seats
    games: list[GameSpec] = []
    for variant in params.variants:
        for focal in params.players:
            for replicate in range(params.games_per_role):
                draw = random.Random(seed_from("whoisspy/pair", params.seed, focal, replicate))
                pair = WORD_PAIRS[draw.randrange(len(WORD_PAIRS))]
                civilian_word, spy_word = (
                    (pair.first, pair.second) if draw.random() < 0.5 else (pair.second, pair.first)
                )
                for role in ROLES:
                    rng = random.Random(seed_from("whoisspy/seats", params.seed, focal, replicate, role))
                    focal_seat = rng.randrange(n)
                    start = rng.randrange(len(params.fill))
                    others = [params.fill[(start + k) % len(params.fill)] for k in range(n - 1)]
                    rng.shuffle(others)
                    seats = others[:focal_seat] + [focal] + others[focal_seat:]
                    spy_seat = focal_seat if role == "spy" else rng.choice([i for i in range(n) if i != focal_seat])
                    games.append(
                        make_spec(
                            models,
                            variant=variant,
                            seats=seats,
                            spy_seat=spy_seat,
                            civilian_word=civilian_word,
                            spy_word=spy_word,
                            rules=params.rules,
                            replies=params.replies,
                            replicate=replicate,
                            focal=focal,
                            focal_role=role,
                            schedule_seed=params.seed,
                            reasoning_analysis=params.reasoning_analysis,
                        )
                    )
    ids = [g.game_id for g in games]
    if len(set(ids)) != len(ids):  # cannot happen unless the identity above loses a field
        raise RuntimeError("two scheduled games got the same id")
    return games


def find_game(games: Sequence[GameSpec], game_id: str, source: str) -> GameSpec:
    for game in games:
        if game.game_id == game_id:
            return game
    raise ParamsError(
        f"game {game_id!r} is not in the schedule of {source} (the params changed since it was "
        "scheduled?); `python -m pipeline whoisspy schedule` lists the current games"
    )

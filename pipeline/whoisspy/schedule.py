"""The deterministic list of games: who sits where, who is the spy, which words, which variant.

Every player under test plays `games_per_role` games as the spy and as many as a civilian, in each
variant. Replicate r of a player uses one word pair and one drawing of seats for all variants, so
a variant differs from the baseline only by the variant. A game's id is the content id of
everything that decides it (seats with their roster entries, spy seat, words, rules with the vote
parse, variant, prompt text, the reasoning variant's `reasoning_analysis`, and the game's token caps
where the params set one: the paper sets none), so adding a model adds games and changes no
existing one. A seat's roster entry counts with what decides its games here
(`RosterEntry.game_identity`: its per-move budgets for this game, never another benchmark's, nor
its transport settings).

With `schedule.adaptive.enabled`, the schedule is the games of the adaptive rounds instead
(`results/whoisspy/rounds/round-NNN.json`, written by the run's round ledger,
pipeline.core.run.rounds), each a game of `rank_variant` (`seated_games`): the spy is the one the
ledger chose with the table (pipeline.core.rating.one_against_rest: among the members owed the most
spy games, the one whose rank is least certain); without one, the table member owed the most spy
games (its games minus six times its spy games, over the earlier rounds: `spy_owed`), ties broken by
a draw seeded from the adaptive seed, the round and the members, which also draws the word pair and
the seating either way; its replicate counts the earlier games of the very same seats,
spy and words, so its id is a content id of the same form (`make_spec`) and a game already played is
never played again (`adaptive_games`). The fixed games are then not played.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.core.artifacts import ParamsError, content_id, seed_from
from pipeline.core.models import ModelsParams, load_models
from pipeline.core.run.rounds import RoundGame, read_rounds
from pipeline.whoisspy.config import REASONING_ANALYSES, ReplyParams, RulesParams, WhoIsSpyParams, load_whoisspy
from pipeline.whoisspy.prompts import prompt_fingerprint
from pipeline.whoisspy.words import WORD_PAIRS

#: bump when the engine's behaviour changes in a way that should replay every game
# 2: the spy's injected line counts in its 400 characters and its foul checks; the reasoning
# variant's prompt goes to the focal civilian only (issue 14)
# 3: votes are read as the paper reads them by default (`rules.vote_parse`), each vote records its
# ballot, and the reasoning variant's analysis is heard by the other voters by default (issue 25)
ENGINE_VERSION = 3
ROLES: tuple[str, ...] = ("spy", "civilian")
BENCHMARK = "whoisspy"  # the prefix of a roster entry's per-move budgets for this game
ROUNDS_DIR = "results/whoisspy/rounds"  # the adaptive rounds' ledger, relative to the working directory


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
    # what decides the game: `game_id` is its content id (the game contract names games by it)
    identity: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

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
        "seats": [models.entry(name).game_identity(BENCHMARK) for name in seats],
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
        identity=identity,
    )


def spy_owed(earlier: Iterable[RoundGame], seats: int) -> Counter[str]:
    """Per player of the earlier games: how many spy games it is owed, times `seats` (its games
    minus `seats` x its spy games): a fair share is one spy game in `seats`, so the largest is the
    most behind. Games alone would do for a fixed pool, but a player added later would then be the
    spy at every table until it caught up with the field's spy games."""
    owed: Counter[str] = Counter()
    for game in earlier:
        owed.update(game.seats)
        owed[game.seats[int(game.fields["spy_seat"])]] -= seats
    return owed


def table_game(
    table: Sequence[str],
    owed: Counter[str],
    seen: Counter[tuple[Any, ...]],
    params: WhoIsSpyParams,
    models: ModelsParams,
    seed: int,
    round_index: int,
    spy: str | None = None,
) -> GameSpec:
    """One adaptive table as a game of `rank_variant` (see the module docstring); `owed` and `seen`
    (the replicates) count the games before it and are updated with it. `spy`: the member the ledger
    chose as the spy (None: the member owed the most spy games)."""
    members = sorted(table)
    rng = random.Random(seed_from("whoisspy-adaptive-table", seed, round_index, members))
    # drawn whoever chooses the spy, so the words and the seating come from the same draws either way
    tiebreak = {name: rng.random() for name in members}
    if spy is None:
        spy = max(members, key=lambda name: (owed.get(name, 0), tiebreak[name]))
    elif spy not in members:
        raise ValueError(f"the spy {spy!r} does not sit at the table {members}")
    pair = WORD_PAIRS[rng.randrange(len(WORD_PAIRS))]
    civilian_word, spy_word = (pair.first, pair.second) if rng.random() < 0.5 else (pair.second, pair.first)
    seating = list(members)
    rng.shuffle(seating)
    # the reasoning variant's analysis comes from its focal civilian (as in the fixed games): one drawn here
    focal = rng.choice([name for name in members if name != spy]) if params.rank_variant == "reasoning" else None
    key = (tuple(seating), seating.index(spy), civilian_word, spy_word, focal)
    replicate = seen[key]
    seen[key] += 1
    owed.update(seating)
    owed[spy] -= params.rules.seats
    return adaptive_spec(params, models, tuple(seating), seating.index(spy), civilian_word, spy_word, replicate, focal)


def adaptive_spec(
    params: WhoIsSpyParams,
    models: ModelsParams,
    seats: Sequence[str],
    spy_seat: int,
    civilian_word: str,
    spy_word: str,
    replicate: int,
    focal: str | None,
) -> GameSpec:
    """An adaptive game under the current params: `rank_variant`, no focal player but the reasoning
    variant's analyst, the params' seed as every game's."""
    return make_spec(
        models,
        variant=params.rank_variant,
        seats=seats,
        spy_seat=spy_seat,
        civilian_word=civilian_word,
        spy_word=spy_word,
        rules=params.rules,
        replies=params.replies,
        replicate=replicate,
        focal=focal,
        focal_role=None if focal is None else "civilian",
        schedule_seed=params.seed,
        reasoning_analysis=params.reasoning_analysis,
    )


def round_game(spec: GameSpec) -> RoundGame:
    """A game as its round file keeps it: what the ledger chose (seats, spy, words, replicate)."""
    fields: dict[str, Any] = {
        "replicate": spec.replicate,
        "spy_seat": spec.spy_seat,
        "civilian_word": spec.civilian_word,
        "spy_word": spec.spy_word,
    }
    if spec.focal is not None:
        fields["focal"] = spec.focal
    return RoundGame(spec.game_id, spec.seats, fields)


def seated_games(
    tables: Sequence[Sequence[str]],
    earlier: Iterable[RoundGame],
    params: WhoIsSpyParams,
    models: ModelsParams,
    seed: int,
    round_index: int,
    spies: Sequence[str | None] | None = None,
) -> list[RoundGame]:
    """One game per table of an adaptive round (`table_game`), counting the earlier rounds' games
    and this round's tables before it. `spies`: per table the spy chosen by the ledger (None, or a
    None for a table: the member owed the most spy games)."""
    before = list(earlier)
    owed = spy_owed(before, params.rules.seats)
    seen: Counter[tuple[Any, ...]] = Counter(
        (g.seats, int(g.fields["spy_seat"]), g.fields["civilian_word"], g.fields["spy_word"], g.fields.get("focal"))
        for g in before
    )
    chosen = list(spies) if spies is not None else [None] * len(tables)
    if len(chosen) != len(tables):
        raise ValueError(f"{len(chosen)} spies for {len(tables)} tables")
    return [
        round_game(table_game(t, owed, seen, params, models, seed, round_index, spy)) for t, spy in zip(tables, chosen)
    ]


def adaptive_games(
    params: WhoIsSpyParams,
    models: ModelsParams,
    rounds: str | Path = ROUNDS_DIR,
    preview: Sequence[RoundGame] = (),
) -> list[GameSpec]:
    """The games of the adaptive rounds written so far (and `preview`: a round the run plan prices
    before it is written), each rebuilt from its round file under the current params. A game whose
    id no longer matches (a roster entry, a rule or `rank_variant` changed since it was chosen)
    stops with the fix: the rounds belong to the games they chose."""
    records = read_rounds(rounds)
    chosen = [(record.index, game) for record in records for game in record.games]
    chosen += [(len(records) + 1, game) for game in preview]
    games: list[GameSpec] = []
    seen: set[str] = set()
    for index, game in chosen:
        f = game.fields
        spec = adaptive_spec(
            params,
            models,
            game.seats,
            int(f["spy_seat"]),
            str(f["civilian_word"]),
            str(f["spy_word"]),
            int(f.get("replicate", 0)),
            f.get("focal"),
        )
        if spec.game_id != game.id:
            raise ParamsError(
                f"{rounds}/round-{index:03d}.json: game {game.id} ({', '.join(game.seats)}) is now {spec.game_id}: "
                "a roster entry of its players, a rule or rank_variant changed since the round was chosen, so its "
                f"games are other games; restore the params it was chosen under, or move {rounds} away to start "
                "the rounds anew"
            )
        if spec.game_id not in seen:
            seen.add(spec.game_id)
            games.append(spec)
    return games


def build_schedule(
    params: WhoIsSpyParams,
    models: ModelsParams,
    source: str = "params/whoisspy.yaml",
    rounds: str | Path = ROUNDS_DIR,
    preview: Sequence[RoundGame] = (),
    *,
    outside_ok: bool = False,
) -> list[GameSpec]:
    """All games of the tournament, in a stable order (variant, player, replicate, role); or, with
    `schedule.adaptive.enabled`, the games of the adaptive rounds in `rounds` (relative to the
    working directory), in round and table order. `outside_ok`: the params may seat an entry played
    from outside the pipeline (a game drawn for it: pipeline.core.run.contract.seat_game)."""
    params.check_roster(models, source, outside_ok=outside_ok)
    if params.schedule.adaptive.enabled:
        return adaptive_games(params, models, rounds, preview)
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


def schedule_from_files(
    params_path: str | Path = "params/whoisspy.yaml",
    models_path: str | Path = "params/models.yaml",
    rounds: str | Path = ROUNDS_DIR,
    preview: Sequence[RoundGame] = (),
) -> list[GameSpec]:
    """The schedule of these params: the fixed games, or the adaptive rounds' games (`build_schedule`)."""
    return build_schedule(load_whoisspy(params_path), load_models(models_path), str(params_path), rounds, preview)


def find_game(games: Sequence[GameSpec], game_id: str, source: str) -> GameSpec:
    for game in games:
        if game.game_id == game_id:
            return game
    raise ParamsError(
        f"game {game_id!r} is not in the schedule of {source} (the params changed since it was "
        "scheduled?); `python -m pipeline whoisspy schedule` lists the current games"
    )

"""A game benchmark's contract with the core: what its games are, how one is played, how it rates.

A benchmark declares it once (`Benchmark.contract`: a module defining `CONTRACT`, imported on first
use) as a `GameContract`, and the core does the rest the same way for every benchmark:

- `schedule(contract, params, roster)`: the benchmark draws its games (`GameContract.drafts`: what
  decides each game, who sits where) and the core names each by the content id of what decides it,
  so adding a model adds games and renames none;
- `play(contract, game, players)`: the players come in, made by the core (`make_game_players`: one
  `Player` per roster name, seeded from the game), so a roster model, a bot, a person or an agent
  (pipeline.core.models.outside) sit alike; the game returns its record, typed as the benchmark
  writes it;
- `contract.events(record)`: the record as rating events, (game, event) pairs in rating order, as the
  benchmark's rate verb turns its games into them (`events_table`: `RatingEventsSchema`'s rows);
- `contract.score(record, seat)`: the seat's score by the benchmark's scoring (an environment's reward).

A benchmark whose scheduled games are its play jobs (Who is Spy, the Elimination Game) also says how
a played game is written (`write`, `log_pattern`), shown (`describe`, `line`, `outcome`), planned
(`planned_moves`, `seat_plan`) and what decides its rate job (`rate_settings`): the core then
generates its `schedule` and `play` verbs, its rules' schedule and its plan's estimators from the
contract (pipeline.core.run.skeleton).

`seat_game` draws one game with a seat played from outside (a person, `bot: human`, or a program,
`bot: agent`) among the benchmark's bots or roster models, as the schedule would draw it;
`play_one` plays it (blocking, on an event loop of its own) and `start_game` in a background thread,
both posting the game's end to the outside seats' channels.
"""

from __future__ import annotations

import asyncio
import importlib
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar

import polars as pl

from pipeline.core.artifacts import content_id, seed_from
from pipeline.core.artifacts.params import load_yaml
from pipeline.core.models import Gateway, ModelsParams, Player, RosterEntry, load_models, make_players
from pipeline.core.models.outside import OUTSIDE_BOTS, seat_channel
from pipeline.core.rating.events import RatingEvent
from pipeline.core.rating.joint import events_frame

if TYPE_CHECKING:
    from pipeline.core.run.estimates import PlanContext, SeatPlan
    from pipeline.core.run.registry import Benchmark

__all__ = [
    "Draft",
    "Game",
    "GameContract",
    "PROJECT_SOURCE",
    "ParamsSource",
    "RosterSource",
    "RunningGame",
    "ScheduleSource",
    "Seating",
    "events_table",
    "game_contract",
    "make_game_players",
    "play",
    "play_one",
    "project_file",
    "roster_of",
    "schedule",
    "seat_game",
    "seat_gateway",
    "seat_params",
    "start_game",
]

ParamsT = TypeVar("ParamsT")
SpecT = TypeVar("SpecT")
RecordT = TypeVar("RecordT")

#: a benchmark's params: a YAML file, its content as a mapping, or None (the project's params/<name>.yaml)
ParamsSource: TypeAlias = "str | Path | Mapping[str, Any] | None"
#: a roster: a models.yaml file, its entries, or the parsed params
RosterSource: TypeAlias = "ModelsParams | str | Path | Sequence[Mapping[str, Any] | RosterEntry] | None"


@dataclass(frozen=True)
class ScheduleSource:
    """Where a schedule is drawn, beyond its params: the files as the user names them (for
    messages), the adaptive rounds' folder, and the round a plan prices before it is written."""

    params: str | None = None  # the params file (None: params/<benchmark>.yaml)
    models: str | None = None  # the roster file (None: params/models.yaml)
    rounds: str | Path | None = (
        None  # the adaptive rounds (None: results/<benchmark>/rounds, under the working directory)
    )
    preview: Sequence[Any] = ()  # core.run.rounds.RoundGame: games of a round not written yet

    def params_file(self, benchmark: str) -> str:
        return self.params or f"params/{benchmark}.yaml"

    def models_file(self) -> str:
        return self.models or "params/models.yaml"

    def rounds_dir(self, benchmark: str) -> str | Path:
        return f"results/{benchmark}/rounds" if self.rounds is None else self.rounds


#: the project's own files: params/<benchmark>.yaml, params/models.yaml, results/<benchmark>/rounds
PROJECT_SOURCE = ScheduleSource()


@dataclass(frozen=True)
class Draft(Generic[SpecT]):
    """A game as the benchmark's schedule draws it, before the core names it."""

    identity: Mapping[str, Any]  # everything that decides the game: its id is the content id of this
    seats: tuple[str, ...]  # the roster name in each seat, in seat order (a name may sit in several)
    spec: SpecT  # what the benchmark's play needs
    labels: tuple[str, ...] = ()  # each seat's label in the game ("P1", ...); () : the roster names
    jobs: tuple[str, ...] = ()  # the schedule's job ids the game plays; (): the game is one job, its id


@dataclass(frozen=True)
class Game(Generic[SpecT]):
    """A scheduled game: its content id, who sits where, and the benchmark's spec."""

    id: str
    seats: tuple[str, ...]
    spec: SpecT = field(compare=False)
    labels: tuple[str, ...]  # each seat's label (a seat's score is asked by it)
    jobs: tuple[str, ...]  # the schedule's job ids it plays (its own id for a one-job game)
    identity: Mapping[str, Any] = field(default_factory=dict, compare=False)  # what its id is the content id of

    def label_of(self, name: str) -> str:
        """The seat label of roster entry `name` (its first seat)."""
        if name not in self.seats:
            raise KeyError(f"{name!r} sits in none of the seats of game {self.id} ({', '.join(self.seats)})")
        return self.labels[self.seats.index(name)]


class GameContract(ABC, Generic[ParamsT, SpecT, RecordT]):
    """What a benchmark tells the core about its games (see the module docstring)."""

    #: the benchmark's name: the key of its bots and of a roster entry's per-move budgets
    name: str = ""
    #: the seats an outside player may ask for in `seat_game` (the first is the default)
    seat_choices: tuple[str, ...] = ()
    #: what an outside seat's game changes in the project's params file (`seat_params`: merged into the
    #: file's mapping before the caller's): Xent's model-free `word` judge, so that no model loads
    outside_params: Mapping[str, Any] = {}

    @abstractmethod
    def load_params(self, source: ParamsSource) -> ParamsT:
        """The benchmark's params from a file or a mapping (None: the project's params/<name>.yaml)."""

    @abstractmethod
    def drafts(
        self, params: ParamsT, roster: ModelsParams, source: ScheduleSource = PROJECT_SOURCE
    ) -> Iterable[Draft[SpecT]]:
        """Every game of the schedule of `params`, in the schedule's order (`source`: where the
        params came from and where the adaptive rounds lie)."""

    @abstractmethod
    async def play(self, game: Game[SpecT], players: Mapping[str, Player]) -> RecordT:
        """Play the game with `players` (roster name -> Player) on the running loop: its record."""

    @abstractmethod
    def events(self, record: RecordT) -> list[tuple[str, RatingEvent]]:
        """The record as (game, rating event) pairs, in rating order."""

    @abstractmethod
    def score(self, record: RecordT, seat: str) -> float:
        """The score of the seat labelled `seat` by the benchmark's scoring."""

    @abstractmethod
    def seat_draft(
        self, params: ParamsT, roster: ModelsParams, outside: str, opponents: Sequence[str], seed: int, seat: str
    ) -> Draft[SpecT]:
        """The game `seed` picks, drawn as the schedule would, with roster entry `outside` in `seat`
        (one of `seat_choices`) and `opponents` (roster names) in the others."""

    def default_opponents(self, params: ParamsT, roster: ModelsParams) -> list[str]:
        """The opponents of an outside seat when none are named: the params' scripted bots."""
        return [entry.name for entry in roster.roster if entry.is_bot and entry.bot not in OUTSIDE_BOTS]

    def player_seed(self, game: Game[SpecT]) -> int:
        """The players' job seed: every bot move and model sample of the game is drawn from it."""
        return seed_from(self.name, game.id)

    def to_json(self, record: RecordT) -> Any:
        """The record as JSON-able data (a typed record's own `to_json` when it has one)."""
        return record.to_json() if hasattr(record, "to_json") else record

    # -- what the generated verbs, rules and plan need (pipeline.core.run.skeleton) -----------------------
    #: a played game's files under the games folder: a record `<id>.json` beside `<id>.calls.parquet`,
    #: or a folder `<id>/` whose calls table is written after its log, a file this pattern matches
    #: (core.run.shards.game_done: what a shard skips, and what the plan does not count again)
    log_pattern: str = "*"
    #: what the rate verb reads of a played game, under the games folder: its record, or its folder
    played: str = "{game_id}.json"
    #: said after the schedule's listing ("* marks the spy")
    legend: str = ""

    def write(self, game: Game[SpecT], record: RecordT, gateway: Gateway, out: Path) -> None:
        """Write a played game under the games folder `out`, its calls table (`gateway.write_calls`)
        first and the file that marks it done last (`log_pattern`)."""
        raise NotImplementedError(f"{self.name}: its play verb is its own; the contract writes no games")

    def planned_moves(self, game: Game[SpecT]) -> int:
        """The moves the game's structure plans, for the play job's progress line (0: unknown)."""
        return 0

    def describe(self, game: Game[SpecT]) -> Mapping[str, Any]:
        """The game as `schedule --json` lists it."""
        return {"game_id": game.id, "seats": list(game.seats)}

    def line(self, game: Game[SpecT]) -> str:
        """The game as `schedule` lists it: its id first, then who sits where."""
        return f"{game.id}  " + " ".join(f"{label}={name}" for label, name in zip(game.labels, game.seats))

    def outcome(self, record: RecordT) -> str:
        """What `play` says of one game it played alone ("" : nothing)."""
        return ""

    def rule_content(self, game: Game[SpecT]) -> str | None:
        """What decides the game, as text, when its play rule should carry it as a param (None: its id says it)."""
        return None

    def rate_settings(self, params: ParamsT) -> Mapping[str, Any]:
        """What decides the rate job beyond the played games: a change reruns it."""
        return {}

    def seat_plan(self, params: ParamsT, game: Game[SpecT], context: PlanContext) -> SeatPlan:
        """The plan's view of one game: each seat's bound and expected moves (core.run.estimates)."""
        raise NotImplementedError(f"{self.name}: its plan's estimators are its own")


def game_contract(benchmark: str | Benchmark) -> GameContract[Any, Any, Any]:
    """The contract a benchmark declares (`Benchmark.contract`: a module defining CONTRACT)."""
    from pipeline.core.run.registry import RegistryError
    from pipeline.core.run.registry import benchmark as find

    bench = find(benchmark) if isinstance(benchmark, str) else benchmark
    if bench.contract is None:
        raise RegistryError(f"{bench.name}: declares no game contract (Benchmark.contract)")
    found = getattr(importlib.import_module(bench.contract), "CONTRACT", None)
    if not isinstance(found, GameContract):
        raise RegistryError(f"{bench.name}: {bench.contract} must define CONTRACT = a GameContract")
    return found


def _contract(contract: str | GameContract[Any, Any, Any]) -> GameContract[Any, Any, Any]:
    return game_contract(contract) if isinstance(contract, str) else contract


def named(draft: Draft[SpecT]) -> Game[SpecT]:
    """The draft as a game: named by the content id of its identity."""
    game_id = content_id(draft.identity)
    return Game(game_id, draft.seats, draft.spec, draft.labels or draft.seats, draft.jobs or (game_id,), draft.identity)


def schedule(
    contract: str | GameContract[Any, SpecT, Any],
    params: Any,
    roster: RosterSource = None,
    source: ScheduleSource | None = None,
) -> list[Game[SpecT]]:
    """Every game of the benchmark's schedule under `params` (a params object, file or mapping),
    named by the core."""
    found = _contract(contract)
    loaded = params if _is_loaded(params) else found.load_params(params)
    where = source or ScheduleSource(params=str(params) if isinstance(params, str | Path) else None)
    games = [named(draft) for draft in found.drafts(loaded, roster_of(roster), where)]
    ids = [game.id for game in games]
    if len(set(ids)) != len(ids):  # a game drawn twice is played once: its identity says it all
        raise ValueError(f"{found.name}: two scheduled games have the same content; the schedule draws one twice")
    return games


def _is_loaded(params: Any) -> bool:
    return not (params is None or isinstance(params, str | Path | Mapping))


def make_game_players(
    contract: str | GameContract[Any, SpecT, Any], game: Game[SpecT], roster: ModelsParams, gateway: Gateway
) -> dict[str, Player]:
    """One player per roster name seated in the game, seeded from the game (`player_seed`)."""
    found = _contract(contract)
    return make_players(roster, gateway, found.player_seed(game), names=sorted(set(game.seats)), game=found.name)


async def play(
    contract: str | GameContract[Any, SpecT, RecordT], game: Game[SpecT], players: Mapping[str, Player]
) -> RecordT:
    """Play one game with the players the core made (`make_game_players`): its record."""
    found = _contract(contract)
    missing = sorted(set(game.seats) - set(players))
    if missing:
        raise ValueError(f"{found.name} game {game.id}: no player for {', '.join(missing)}")
    return await found.play(game, players)


def events_table(contract: str | GameContract[Any, Any, RecordT], records: Iterable[RecordT]) -> pl.DataFrame:
    """The records' rating events as rows of `RatingEventsSchema`, in the records' order."""
    found = _contract(contract)
    return events_frame([pair for record in records for pair in found.events(record)])


# -- a game with a seat played from outside ---------------------------------------------------------------
def project_file(relative: str) -> Path:
    """A file of the project (params/...): under the working directory when there, else beside the package."""
    here = Path(relative)
    if here.exists():
        return here
    return Path(__file__).resolve().parents[3] / relative


def roster_of(source: RosterSource) -> ModelsParams:
    """A roster from a models.yaml file, a list of entries or the parsed params (None: params/models.yaml)."""
    if isinstance(source, ModelsParams):
        return source
    if source is None or isinstance(source, str | Path):
        return load_models(project_file("params/models.yaml") if source is None else source)
    entries = [e.model_dump(mode="json", exclude_unset=True) if isinstance(e, RosterEntry) else dict(e) for e in source]
    return ModelsParams.model_validate({"roster": entries})


@dataclass(frozen=True)
class Seating:
    """One game with an outside seat: the contract, the game, its roster and the outside seat."""

    contract: GameContract[Any, Any, Any]
    game: Game[Any]
    roster: ModelsParams
    name: str  # the outside seat's roster name
    seat: str  # its seat label in the game

    def score(self, record: Any) -> float:
        return float(self.contract.score(record, self.seat))


def seat_game(
    benchmark: str | GameContract[Any, Any, Any],
    *,
    name: str = "agent",
    bot: str = "agent",
    opponents: RosterSource = None,
    params: ParamsSource | Any = None,
    seed: int = 0,
    seat: str | None = None,
) -> Seating:
    """The game `seed` picks, as the benchmark's schedule would draw it, with the roster entry
    `{name, bot}` (bot: `agent` or `human`) in `seat` (None: the contract's first seat choice) and
    `opponents` in the others: None, the params' scripted bots (from params/models.yaml); or a
    models.yaml file, roster entries or a ModelsParams, every entry of which plays."""
    found = _contract(benchmark)
    if bot not in OUTSIDE_BOTS:
        raise ValueError(f"an outside seat is one of the bots {', '.join(OUTSIDE_BOTS)}, not {bot!r}")
    chosen = seat or found.seat_choices[0]
    if chosen not in found.seat_choices:
        raise ValueError(f"{found.name}: seat must be one of {', '.join(found.seat_choices)}, not {chosen!r}")
    loaded = seat_params(found, params)
    base = roster_of(None if opponents is None else opponents)
    others = (
        found.default_opponents(loaded, base)
        if opponents is None
        else [e.name for e in base.roster if e.bot not in OUTSIDE_BOTS]
    )
    if name in {e.name for e in base.roster}:
        raise ValueError(f"the outside seat's name {name!r} is a roster entry already: choose another name")
    if not others:
        raise ValueError(f"{found.name}: no opponents to seat beside {name!r}")
    entries = [e for e in base.roster if e.name in others]
    roster = base.model_copy(update={"roster": [*entries, RosterEntry.model_validate({"name": name, "bot": bot})]})
    game = named(found.seat_draft(loaded, roster, name, others, seed, chosen))
    return Seating(found, game, roster, name, game.label_of(name))


def seat_params(contract: str | GameContract[ParamsT, Any, Any], params: ParamsSource | ParamsT) -> ParamsT:
    """The params of an outside seat's games: a params object or file as given; else the project's
    params/<name>.yaml with the contract's `outside_params` merged in, and `params` (a mapping) merged
    over them: `{"rules": {"rounds": 2}}` changes one rule."""
    found = _contract(contract)
    if _is_loaded(params):
        return params  # type: ignore[return-value]
    if isinstance(params, str | Path):
        return found.load_params(params)
    data = load_yaml(project_file(f"params/{found.name}.yaml")) or {}
    changes: Mapping[str, Any] = params if isinstance(params, Mapping) else {}
    return found.load_params(merged(merged(data, found.outside_params), changes))


def merged(base: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `changes` merged in, mapping by mapping."""
    out = dict(base)
    for key, value in changes.items():
        out[key] = merged(out.get(key) or {}, value) if isinstance(value, Mapping) else value
    return out


def _finish_channels(seating: Seating, record: Any = None, error: BaseException | None = None) -> None:
    for name in sorted(set(seating.game.seats)):
        channel = seat_channel(name)
        if channel is not None and seating.roster.entry(name).bot in OUTSIDE_BOTS:
            channel.finish(record, error)


def seat_gateway(seating: Seating, cache_dir: str | Path | None = None) -> Gateway:
    """The gateway of a seating's game: its model calls (cached under `cache_dir`) and its calls table."""
    return Gateway(seating.roster, job=f"{seating.contract.name}/{seating.game.id}", cache_dir=cache_dir)


async def _play_seating(seating: Seating, gateway: Gateway) -> Any:
    players = make_game_players(seating.contract, seating.game, seating.roster, gateway)
    return await play(seating.contract, seating.game, players)


def play_one(seating: Seating, *, cache_dir: str | Path | None = None, gateway: Gateway | None = None) -> Any:
    """Play the seating's game to its record on an event loop of its own (blocking: call it from a
    thread of its own when a person or a program plays a seat). Open the outside seats' channels
    first (pipeline.core.models.outside.open_seat); each then gets the game's end (`GameOver`), with
    its record or the error that stopped it (re-raised here). `gateway` (default: `seat_gateway`)
    records the game's calls: its `write_calls` writes them."""
    try:
        record = asyncio.run(_play_seating(seating, gateway or seat_gateway(seating, cache_dir)))
    except BaseException as error:
        _finish_channels(seating, error=error)
        raise
    _finish_channels(seating, record)
    return record


class RunningGame:
    """A seating's game playing in a background thread (`start_game`); `cancel` stops it."""

    def __init__(self, seating: Seating, gateway: Gateway) -> None:
        self.seating = seating
        self.gateway = gateway
        self.record: Any = None
        self.error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"game {seating.game.id}", daemon=True)

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            self._task = loop.create_task(_play_seating(self.seating, self.gateway))
            self._started.set()
            self.record = loop.run_until_complete(self._task)
        except BaseException as error:  # noqa: BLE001  (any end of the game goes to the outside seats)
            self.error = error
        finally:
            self._started.set()
            loop.close()
            _finish_channels(self.seating, self.record, self.error)

    def start(self) -> RunningGame:
        self._thread.start()
        self._started.wait()
        return self

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def cancel(self, timeout: float = 10.0) -> None:
        """Stop the game where it is (a move it waits for is never answered) and wait for the thread."""
        loop, task = self._loop, self._task
        if self.running and loop is not None and task is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # the loop closed in between: the game is over anyway
                pass
        self._thread.join(timeout)

    def join(self, timeout: float | None = None) -> Any:
        """Wait for the game's end: its record (the error that stopped it is raised)."""
        self._thread.join(timeout)
        if self.error is not None:
            raise self.error
        return self.record


def start_game(seating: Seating, *, cache_dir: str | Path | None = None, gateway: Gateway | None = None) -> RunningGame:
    """Play the seating's game in a background thread (its own event loop); see `play_one`."""
    return RunningGame(seating, gateway or seat_gateway(seating, cache_dir)).start()

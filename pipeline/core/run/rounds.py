"""Adaptive rounds as a ledger the workflow reads (issue 28, docs/adaptive.md).

A benchmark that declares `adaptive=AdaptiveSpec(...)` in the registry may play adaptive rounds
instead of its fixed schedule (its params' `adaptive.enabled`). Each round is one JSON file,
`results/<bench>/rounds/round-NNN.json`, written atomically and never rewritten. It holds the
round's index, the digest of the settings it was chosen under, the pool, the standings (mu,
sigma) it was computed from, the ids of the finished games it read, the spend so far, the stop
reason (or null) and the tables and games chosen. The benchmark's rules read the games of these
files as its schedule, so Snakemake plays them as any scheduled game (content ids, one job each).

`advance` is the ledger's one step. When every game of the last round is finished (its
`finished` files exist) and the last round did not stop (or it stopped, but the pool or the
settings changed since: a model was added, a budget raised), it rates all finished games of the
rounds online, in round order (`update_standings`; only the pool's players count), and writes
the next round: `decide_round` (pipeline.core.rating.adaptive) chooses its tables, or the reason
to stop (`separated`, `max_games`, `max_rounds`, `max_cost_usd`; `exhausted` when the benchmark
finds nothing left to play at the tables chosen, which it keeps in the file). Models without a game
are seated first (placement). The budgets count the rounds since the pool last changed
(`stretch_start`): a model added to a field that had spent its budget still gets its games, and
only its stretch's. `python -m pipeline run` (pipeline.core.run.launch) loops: advance, Snakemake
plays the round's games, advance ... until every adaptive benchmark has stopped, then builds the
targets asked for.

Determinism: the standings depend only on the finished games' results and the round order, and
every choice is seeded from the settings' seed and the round index (`seed_from`), so a rerun with
the same results writes the same files and plays nothing twice; a round whose games are all
played already (the same seating and replicate is the same content id) is passed at once.

The core imports no benchmark: the declaration supplies how to read the settings and the pool,
how a round's tables become games, how a finished game becomes a rating event and which files
mark it finished.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pipeline.core.artifacts.io import content_id, write_json_atomic, write_text_atomic
from pipeline.core.artifacts.params import ParamsError

if TYPE_CHECKING:
    from pipeline.core.rating.adaptive import Budget, RoundStop, Standing, TableShape
    from pipeline.core.rating.events import RatingEvent, RatingParams
    from pipeline.core.rating.settings import AdaptiveSettings

ROUNDS = "rounds"  # the ledger's folder under results/<bench>/ (a DVC out of the benchmark)
ROUND_FILE = "round-{index:03d}.json"
FORMAT = 1  # the round file's layout; bumped when it changes


@dataclass(frozen=True)
class AdaptiveSetup:
    """What a benchmark's params say about its adaptive schedule: the settings, the pool (roster
    names), the table size and the rating's TrueSkill settings (the standings use them).

    `shape`: how the plan's simulation scores a table (`simulate_outlook`): "ranked" (pairwise or
    free-for-all by performance) or "one_against_rest" (a team game: one seat against the others).
    It decides no round, so it is not part of the digest.

    `decides`: what else decides the rounds besides the settings, e.g. the maps a benchmark deals
    out to its tables (Xent); part of the digest when given, so a change (more maps) lets a stopped
    tournament go on. Left empty, the digest is the one it always was.

    `events_per_game`: how many rating events a finished game yields (SKATE: a table is compared once
    per question of its round), so the plan's simulation moves the standings as the real games do.
    It decides no round either."""

    settings: AdaptiveSettings
    pool: tuple[str, ...]
    seats: int
    rating: RatingParams
    shape: TableShape = "ranked"
    decides: Mapping[str, Any] = field(default_factory=dict)
    events_per_game: int = 1

    @property
    def enabled(self) -> bool:
        return bool(self.settings.enabled)

    @property
    def digest(self) -> str:
        """Content id of what decides the rounds besides the results (the pool is recorded apart)."""
        rating = {k: getattr(self.rating, k) for k in ("mu", "sigma", "beta", "tau", "draw_probability")}
        identity = {"adaptive": self.settings.identity(), "seats": self.seats, "rating": rating}
        if self.decides:  # only when given: the digests of the benchmarks without it stay as they were
            identity["decides"] = dict(self.decides)
        return content_id(identity)

    def budget(self) -> Budget:
        from pipeline.core.rating.adaptive import Budget

        s = self.settings
        return Budget(max_games=s.max_games, max_rounds=s.max_rounds, max_cost_usd=s.max_cost_usd)


@dataclass(frozen=True)
class RoundGame:
    """One game of a round: its content id, who sits where (first seat first), and what else the
    benchmark needs to rebuild it (`fields`, e.g. the replicate number)."""

    id: str
    seats: tuple[str, ...]
    fields: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {**dict(self.fields), "id": self.id, "seats": list(self.seats)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RoundGame:
        rest = {k: v for k, v in data.items() if k not in ("id", "seats")}
        return cls(str(data["id"]), tuple(str(s) for s in data["seats"]), rest)


@dataclass(frozen=True)
class RoundRequest:
    """What a benchmark turns into a round's games: the tables chosen (each a tuple of roster
    names), the games of the earlier rounds (a seating played before gets a new replicate), the
    params and roster files, the setup and the round's index."""

    params: Path
    models: Path
    setup: AdaptiveSetup
    index: int
    tables: tuple[tuple[str, ...], ...]
    earlier: tuple[RoundGame, ...]


@dataclass(frozen=True)
class AdaptiveSpec:
    """How a benchmark plays adaptive rounds (its registry declaration's `adaptive`).

    `setup(params file, models file)`: its adaptive settings and pool (a ParamsError names the fix).
    `games(request)`: one game per table of a round, seats and id as its rules will schedule them.
    `event(results folder, game)`: a finished game's rating event, or a sequence of them rated in
    that order (SKATE: one per question and pair of its table; pipeline.core.rating.events); None
    where the game's results give none (a game without a result, a SKATE round without a question).
    The ledger reads each finished game once, in round order.
    `finished`: the files, relative to results/<bench>/ and with `{game_id}`, whose presence marks a
    game finished. `calls`: its calls table (with a `cost_usd` column), the spend `max_cost_usd`
    counts; None: the games cost nothing. `play_target`: the Snakemake target that plays every
    game of the rounds (and nothing else). `play_rule` and `job_wildcard`: the rule that plays one
    game and its wildcard, which the run plan prices a game with.

    `parts(game)`: for a game played as several jobs (Xent: a table is one play job per seat, and a
    seat's play may serve a later table too), the ids that stand for `{game_id}` in `finished` and
    `calls` and for `job_wildcard` in the plan; the game is finished when every part is, and a part
    shared by games is paid once, by the first. None: the game is its own one part.

    `lone(game)`: for a benchmark whose game is one seat against the rest (Who is Spy: the spy
    against the civilians), the player of a game who played alone. Given, the ledger chooses the
    tables and the lone seat of each together (`decide_round`'s `lone`,
    pipeline.core.rating.one_against_rest): every table of a round comes to `games` with its lone
    player first. None: the tables come from the pair values (`next_round`)."""

    setup: Callable[[Path, Path], AdaptiveSetup]
    games: Callable[[RoundRequest], list[RoundGame]]
    event: Callable[[Path, RoundGame], RatingEvent | Sequence[RatingEvent] | None]
    play_target: str
    play_rule: str
    finished: tuple[str, ...] = ("games/{game_id}/calls.parquet",)
    calls: str | None = "games/{game_id}/calls.parquet"
    job_wildcard: str = "game_id"
    parts: Callable[[RoundGame], Sequence[str]] | None = None
    lone: Callable[[RoundGame], str] | None = None


@dataclass(frozen=True)
class RoundRecord:
    """One round file (see the module docstring)."""

    index: int
    benchmark: str
    settings_digest: str
    settings: Mapping[str, Any]
    pool: tuple[str, ...]
    standings: Mapping[str, Standing]
    read: tuple[str, ...]  # the finished games whose results the standings hold
    games_before: int  # games chosen by the earlier rounds
    rounds_before: int  # earlier rounds that chose games
    spent_usd: float  # the finished games' model calls, in dollars
    budget: Mapping[str, Any]  # what the budgets were checked against: the stretch since the pool last changed
    placement: tuple[str, ...]  # pool players without a game: seated first
    stop: RoundStop | None
    tables: tuple[tuple[str, ...], ...]
    games: tuple[RoundGame, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "round": self.index,
            "benchmark": self.benchmark,
            "settings_digest": self.settings_digest,
            "settings": dict(self.settings),
            "pool": list(self.pool),
            "standings": {
                name: {"mu": s.mu, "sigma": s.sigma, "games": s.games, "idle_rounds": s.idle_rounds}
                for name, s in sorted(self.standings.items())
            },
            "read_games": list(self.read),
            "games_before": self.games_before,
            "rounds_before": self.rounds_before,
            "spent_usd": self.spent_usd,
            "budget": dict(self.budget),
            "placement": list(self.placement),
            "stop": self.stop,
            "tables": [list(t) for t in self.tables],
            "games": [g.to_json() for g in self.games],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RoundRecord:
        from pipeline.core.rating.adaptive import Standing

        return cls(
            index=int(data["round"]),
            benchmark=str(data["benchmark"]),
            settings_digest=str(data["settings_digest"]),
            settings=dict(data.get("settings", {})),
            pool=tuple(data["pool"]),
            standings={
                name: Standing(float(s["mu"]), float(s["sigma"]), int(s["games"]), int(s["idle_rounds"]))
                for name, s in data["standings"].items()
            },
            read=tuple(data["read_games"]),
            games_before=int(data["games_before"]),
            rounds_before=int(data["rounds_before"]),
            spent_usd=float(data["spent_usd"]),
            budget=dict(data.get("budget", {})),
            placement=tuple(data.get("placement", ())),
            stop=data["stop"],
            tables=tuple(tuple(t) for t in data["tables"]),
            games=tuple(RoundGame.from_json(g) for g in data["games"]),
        )


def rounds_dir(results: Path) -> Path:
    """The ledger's folder of a benchmark's results folder."""
    return Path(results) / ROUNDS


def read_rounds(folder: str | os.PathLike[str]) -> list[RoundRecord]:
    """Every round file of `folder`, in order; a missing folder is an empty ledger. A file that is
    not a round, or a gap in the numbering, stops with the file and the fix."""
    path = Path(folder)
    if not path.is_dir():
        return []
    records = []
    for file in sorted(path.glob("round-*.json")):
        try:
            records.append(RoundRecord.from_json(json.loads(file.read_text(encoding="utf-8"))))
        except (ValueError, KeyError, TypeError) as exc:
            raise ParamsError(
                f"{file}: not a round file of the adaptive schedule ({type(exc).__name__}: {exc}); "
                f"restore it from DVC (`dvc checkout {path}`), or move {path} away to start the rounds anew"
            ) from None
    for expected, record in enumerate(records, start=1):
        if record.index != expected:
            raise ParamsError(
                f"{path}: round {expected} is missing (found round-{record.index:03d}.json); restore the "
                f"ledger from DVC (`dvc checkout {path}`), or move {path} away to start the rounds anew"
            )
    return records


def round_games(records: Sequence[RoundRecord]) -> list[RoundGame]:
    """Every game of the rounds, in round and table order (what the benchmark schedules)."""
    return [game for record in records for game in record.games]


def game_parts(spec: AdaptiveSpec, game: RoundGame | str) -> tuple[str, ...]:
    """The ids a game's files are named by (`AdaptiveSpec.parts`); a bare id is its own part."""
    if isinstance(game, str):
        return (game,)
    return tuple(spec.parts(game)) if spec.parts is not None else (game.id,)


def part_finished(spec: AdaptiveSpec, results: Path, part: str) -> bool:
    return all((results / pattern.format(game_id=part)).exists() for pattern in spec.finished)


def is_finished(spec: AdaptiveSpec, results: Path, game: RoundGame | str) -> bool:
    """Whether every part of the game (a game id: that game, as its own one part) is finished."""
    return all(part_finished(spec, results, part) for part in game_parts(spec, game))


def game_cost(spec: AdaptiveSpec, results: Path, game_id: str) -> float:
    """Dollars the model calls of a game (or of one part of it) cost: its calls table's cost_usd,
    a missing cost is 0."""
    if spec.calls is None:
        return 0.0
    path = results / spec.calls.format(game_id=game_id)
    if not path.is_file():
        return 0.0
    import polars as pl

    frame = pl.read_parquet(path)
    if "cost_usd" not in frame.columns:
        return 0.0
    return float(frame["cost_usd"].fill_null(0.0).sum())


def restrict(event: RatingEvent, pool: frozenset[str]) -> RatingEvent | None:
    """The event among the pool's players only (ranks renumbered; a team game keeps each team's
    pool members), or None when fewer than two players (two non-empty teams) remain: a model taken
    out of the pool no longer moves anyone's standing."""
    from pipeline.core.rating.events import FreeForAll, Pairwise, TeamMatch

    if set(event.players) <= pool:
        return event
    if isinstance(event, Pairwise):
        return None
    if isinstance(event, FreeForAll):
        kept = {name: rank for name, rank in event.ranks.items() if name in pool}
        if len(kept) < 2:
            return None
        order = sorted(set(kept.values()))
        return FreeForAll({name: order.index(rank) + 1 for name, rank in kept.items()})
    if isinstance(event, TeamMatch):
        a = tuple(name for name in event.a if name in pool)
        b = tuple(name for name in event.b if name in pool)
        return TeamMatch(a, b, event.outcome) if a and b else None
    raise TypeError(f"not a rating event: {event!r}")


@dataclass(frozen=True)
class LedgerState:
    """The standings of the pool after the finished games of the rounds, and what they count.

    The budgets count the current *stretch*: the rounds since the pool last changed (adding or
    removing a model starts a new one, so a newcomer gets its placement games even when the field
    had spent its budget; the games before still count for the standings)."""

    standings: dict[str, Standing]
    met: dict[tuple[str, str], int]
    read: tuple[str, ...]
    games: int  # games chosen by the rounds
    rounds: int  # rounds that chose games
    spent_usd: float  # the finished games' calls, in dollars
    stretch_from: int  # the first round of the current stretch (the next round's index if it starts now)
    stretch_games: int
    stretch_rounds: int
    stretch_spent_usd: float

    def budget_counts(self) -> dict[str, Any]:
        return {
            "since_round": self.stretch_from,
            "games": self.stretch_games,
            "rounds": self.stretch_rounds,
            "spent_usd": round(self.stretch_spent_usd, 9),
        }


def lone_counts(
    spec: AdaptiveSpec, records: Sequence[RoundRecord], read: Sequence[str], pool: Sequence[str]
) -> dict[str, int] | None:
    """Per pool player, the games of the rounds it played alone (`AdaptiveSpec.lone`), counted over
    the games the standings hold (`read`), as their game counts are; None without `lone`."""
    if spec.lone is None:
        return None
    held = set(read)
    counts = dict.fromkeys(sorted(pool), 0)
    for game in {g.id: g for g in round_games(records) if g.id in held}.values():
        player = spec.lone(game)
        if player in counts:
            counts[player] += 1
    return counts


def stretch_start(records: Sequence[RoundRecord], pool: Sequence[str]) -> int:
    """The index of the first round of the current stretch: the earliest round from which every round
    has this pool (the next round's index when the last round's pool differs, or there is none)."""
    current = tuple(sorted(pool))
    start = len(records) + 1
    for record in reversed(records):
        if record.pool != current:
            break
        start = record.index
    return start


def ledger_state(
    setup: AdaptiveSetup,
    records: Sequence[RoundRecord],
    events: Mapping[str, RatingEvent | Sequence[RatingEvent]],
    costs: Mapping[str, float] | None = None,
) -> LedgerState:
    """Rate the finished games round by round, online, from the prior (`update_standings`: the
    compiled engine, or trueskill's own update for team games): every pool player starts at the
    prior before the first round and sits out the rounds it did not play, so a model added later is
    the most idle and has the largest sigma. A game of several events (`AdaptiveSpec.event`) is
    rated event by event in its order. `costs`: dollars per finished game (the spend the budgets
    count)."""
    from pipeline.core.rating.adaptive import meetings, new_standing, update_standings

    costs = costs or {}
    pool = frozenset(setup.pool)
    start = stretch_start(records, setup.pool)
    standings = {name: new_standing(setup.rating) for name in sorted(pool)}
    met: dict[tuple[str, str], int] = {}
    read: list[str] = []
    for record in records:
        if not record.games:
            continue  # a stop: no round was played
        played = []
        for game in record.games:
            found = events.get(game.id)
            if found is None:
                continue
            read.append(game.id)
            # one event, or a game's several in their order (a RatingEvent is a dataclass, no sequence)
            for event in found if isinstance(found, Sequence) else (found,):
                kept = restrict(event, pool)
                if kept is not None:
                    played.append(kept)
        standings = update_standings(standings, played, setup.rating)
        met = meetings(played, met)
    stretch = [r for r in records if r.index >= start]

    def spent(rounds: Sequence[RoundRecord]) -> float:
        ids = dict.fromkeys(g.id for r in rounds for g in r.games)  # a game chosen twice is paid once
        return float(sum(costs.get(game_id, 0.0) for game_id in ids))

    return LedgerState(
        standings={name: standings[name] for name in sorted(pool)},
        met=met,
        read=tuple(sorted(set(read))),
        games=sum(len(r.games) for r in records),
        rounds=sum(1 for r in records if r.games),
        spent_usd=spent(records),
        stretch_from=start,
        stretch_games=sum(len(r.games) for r in stretch),
        stretch_rounds=sum(1 for r in stretch if r.games),
        stretch_spent_usd=spent(stretch),
    )


@dataclass(frozen=True)
class Advance:
    """What `advance` found or did for one benchmark.

    `state`: "off" (the fixed schedule), "playing" (the last round has unfinished games: `pending`),
    "stopped" (the last round says why: `stop`). `wrote`: the round file written by this call, if any."""

    benchmark: str
    state: str
    round: int = 0
    pending: tuple[str, ...] = ()
    stop: str | None = None
    wrote: Path | None = None
    games: int = 0  # games chosen by the rounds so far

    def line(self) -> str:
        if self.state == "off":
            return f"{self.benchmark}: fixed schedule"
        what = f"{self.benchmark}: round {self.round}"
        if self.state == "playing":
            return f"{what}: {len(self.pending)} game(s) to play" + (" (new round)" if self.wrote else "")
        return f"{what}: stopped ({self.stop}) after {self.games} game(s)"


class LedgerOwner(Protocol):
    """What the ledger reads of a benchmark's declaration (core.run.registry.Benchmark, which
    imports this module for `AdaptiveSpec`: a protocol here keeps the two out of an import circle)."""

    @property
    def name(self) -> str: ...

    @property
    def results(self) -> str: ...

    @property
    def adaptive(self) -> AdaptiveSpec | None: ...


def _files(bench: LedgerOwner, root: Path, params_dir: str) -> tuple[Path, Path, Path]:
    return (
        root / params_dir / f"{bench.name}.yaml",
        root / params_dir / "models.yaml",
        root / bench.results,
    )


def load_setup(bench: LedgerOwner, root: Path = Path("."), params_dir: str = "params") -> AdaptiveSetup | None:
    """The benchmark's adaptive setup from its params (None: it declares no adaptive schedule)."""
    if bench.adaptive is None:
        return None
    params, models, _ = _files(bench, Path(root), params_dir)
    return bench.adaptive.setup(params, models)


def finished_events(
    spec: AdaptiveSpec, results: Path, records: Sequence[RoundRecord]
) -> tuple[dict[str, RatingEvent | Sequence[RatingEvent]], dict[str, float]]:
    """The rating events of the rounds' finished games, and what each cost (`finished_costs`)."""
    done = finished_games(spec, results, records)
    found = {game.id: event for game in done if (event := spec.event(results, game)) is not None}
    return found, finished_costs(spec, results, done)


def finished_games(spec: AdaptiveSpec, results: Path, records: Sequence[RoundRecord]) -> list[RoundGame]:
    """The rounds' finished games, each once, in round order."""
    return list({g.id: g for g in round_games(records) if is_finished(spec, results, g)}.values())


def finished_costs(spec: AdaptiveSpec, results: Path, done: Sequence[RoundGame]) -> dict[str, float]:
    """What each finished game cost (dollars): a part that several games share is charged to the
    first of them in round order (it was played once)."""
    paid: set[str] = set()
    costs: dict[str, float] = {}
    for game in done:
        parts = [part for part in dict.fromkeys(game_parts(spec, game)) if part not in paid]
        paid.update(parts)
        costs[game.id] = sum(game_cost(spec, results, part) for part in parts)
    return costs


def advance(bench: LedgerOwner, root: Path = Path("."), params_dir: str = "params") -> Advance | None:
    """One step of the ledger of `bench` (see the module docstring); None when the benchmark has no
    adaptive schedule. The rounds folder is created even when the schedule is fixed: DVC keeps it
    as an output of the stage."""
    spec = bench.adaptive
    if spec is None:
        return None
    params, models, results = _files(bench, Path(root), params_dir)
    folder = rounds_dir(results)
    folder.mkdir(parents=True, exist_ok=True)
    setup = spec.setup(params, models)
    if not setup.enabled:
        return Advance(bench.name, "off")
    records = read_rounds(folder)
    last = records[-1] if records else None
    if last is not None:
        pending = tuple(g.id for g in last.games if not is_finished(spec, results, g))
        if pending:
            return Advance(bench.name, "playing", last.index, pending, games=last.games_before + len(last.games))
        unchanged = tuple(sorted(setup.pool)) == last.pool and setup.digest == last.settings_digest
        if last.stop is not None and unchanged:
            return Advance(bench.name, "stopped", last.index, stop=last.stop, games=last.games_before)
    record = next_record(bench.name, spec, setup, records, results, params, models)
    path = folder / ROUND_FILE.format(index=record.index)
    write_json_atomic(path, record.to_json())
    if record.stop is not None:
        return Advance(bench.name, "stopped", record.index, stop=record.stop, wrote=path, games=record.games_before)
    pending = tuple(g.id for g in record.games if not is_finished(spec, results, g))
    total = record.games_before + len(record.games)
    return Advance(bench.name, "playing", record.index, pending, wrote=path, games=total)


def next_record(
    name: str,
    spec: AdaptiveSpec,
    setup: AdaptiveSetup,
    records: Sequence[RoundRecord],
    results: Path,
    params: Path,
    models: Path,
) -> RoundRecord:
    """The next round (not written): its standings, its stop or its tables and games."""
    from pipeline.core.rating.adaptive import decide_round

    events, costs = finished_events(spec, results, records)
    state = ledger_state(setup, records, events, costs)
    index = len(records) + 1
    stop, chosen = decide_round(
        state.standings,
        setup.settings.schedule(setup.seats),
        setup.rating,
        setup.settings.seed,
        index,
        state.met,
        budget=setup.budget(),
        games=state.stretch_games,
        rounds=state.stretch_rounds,
        spent_usd=state.stretch_spent_usd,
        lone=lone_counts(spec, records, state.read, setup.pool),
    )
    if stop is None and not chosen.tables:
        raise ParamsError(
            f"{params}: the adaptive schedule cannot seat a table: {len(setup.pool)} player(s) in the pool for "
            f"tables of {setup.seats}; list at least {setup.seats} players"
        )
    games = (
        spec.games(RoundRequest(params, models, setup, index, chosen.tables, tuple(round_games(records))))
        if stop is None
        else []
    )
    if stop is None and not games:
        # the benchmark has nothing left to play at the tables the ranking needs (Xent: every map
        # they could play is played); the same standings would choose the same tables again
        stop = "exhausted"
    return RoundRecord(
        index=index,
        benchmark=name,
        settings_digest=setup.digest,
        settings=setup.settings.model_dump(),
        pool=tuple(sorted(setup.pool)),
        standings=state.standings,
        read=state.read,
        games_before=state.games,
        rounds_before=state.rounds,
        spent_usd=round(state.spent_usd, 9),
        budget=state.budget_counts(),
        placement=tuple(name for name, s in state.standings.items() if s.games == 0),
        stop=stop,
        tables=chosen.tables,
        games=tuple(games),
    )


#: what an otherwise empty rounds folder holds: DVC warns at every stage about an empty output folder
LEDGER_NOTE = (
    "The adaptive schedule's round files (round-NNN.json) land here, one per round chosen from the\n"
    "results so far (docs/adaptive.md). Under the fixed schedule this note is all the folder holds.\n"
)


def ensure_ledgers(benches: Sequence[LedgerOwner], root: Path = Path(".")) -> None:
    """Create the rounds folder of every benchmark with an adaptive declaration (DVC keeps it as an
    output, also when the schedule is fixed), with a note in it while it holds nothing else."""
    for bench in benches:
        if bench.adaptive is not None:
            folder = rounds_dir(Path(root) / bench.results)
            folder.mkdir(parents=True, exist_ok=True)
            if not any(folder.iterdir()):
                write_text_atomic(folder / "README.md", LEDGER_NOTE)


def play_rounds(
    benches: Sequence[LedgerOwner],
    play: Callable[[list[str]], int],
    root: Path = Path("."),
    params_dir: str = "params",
    say: Callable[[str], None] = lambda _message: None,
) -> int:
    """Advance the ledger of every benchmark of `benches` and play its rounds (`play(targets)`:
    Snakemake on the benchmarks' `play_target`s) until each has stopped; 0, or the first failing
    exit status. A round whose games are all played already (a rerun) is passed without Snakemake.
    A round that Snakemake built but left unfinished stops the loop (1) instead of spinning."""
    ensure_ledgers(benches, root)
    waited: dict[str, tuple[int, tuple[str, ...]]] = {}
    while True:
        targets: list[str] = []
        for bench in benches:
            assert bench.adaptive is not None
            step = advance(bench, root, params_dir)
            while step is not None and step.state == "playing" and not step.pending:
                step = advance(bench, root, params_dir)  # every game of that round was played before
            if step is None or step.state == "off":
                continue
            say(step.line())
            if step.state != "playing":
                continue
            if waited.get(bench.name) == (step.round, step.pending):
                pattern = " and ".join(bench.adaptive.finished)
                say(
                    f"error: {bench.name}: Snakemake built {bench.adaptive.play_target}, but {len(step.pending)} "
                    f"game(s) of round {step.round} are still not finished (no {pattern} under {bench.results}), "
                    f"e.g. {step.pending[0]}; see the game's log under {bench.results}/logs"
                )
                return 1
            waited[bench.name] = (step.round, step.pending)
            targets.append(bench.adaptive.play_target)
        if not targets:
            return 0
        code = play(targets)
        if code != 0:
            return code


__all__ = [
    "Advance",
    "play_rounds",
    "AdaptiveSetup",
    "AdaptiveSpec",
    "LedgerState",
    "ROUNDS",
    "RoundGame",
    "RoundRecord",
    "RoundRequest",
    "advance",
    "ensure_ledgers",
    "finished_costs",
    "finished_events",
    "finished_games",
    "game_parts",
    "is_finished",
    "ledger_state",
    "lone_counts",
    "load_setup",
    "next_record",
    "read_rounds",
    "stretch_start",
    "restrict",
    "round_games",
    "rounds_dir",
]

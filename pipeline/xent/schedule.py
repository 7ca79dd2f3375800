"""The deterministic schedule: which maps exist and which play jobs run (ids are content ids).

A play job is one game and one player over all the game's maps; its id covers the game text, the
map ids, the player's roster entry and the opponent's (what of each decides its Xent games:
`RosterEntry.game_identity`), the rounds, the judge (its dtype when
not the default float32, so that ids made before the option stay valid) and the prompt version, so
adding a player adds jobs and changes none. With an imported map set the schedule also carries
where the run differs from it (pipeline.xent.settings), for the commands to say so.

With `schedule.adaptive.enabled`, the jobs are those of the adaptive rounds instead
(`results/xent/rounds/round-NNN.json`, written by the run's round ledger, pipeline.core.run.rounds):
a round's table is a few players dealt one map (`deal_map`: the first map, in `map_order`, that none
of them has played; failing that, the one most of them have not played, among those on which no two
of them met; none such: the table is dropped), and each seat plays a job of that one map, whose id is
the content id of the same form as a fixed job's (only its `maps` differ), so a seat's play on a map
is played once whichever tables it serves, and with one map a game the two schedules play the very
same jobs. The table's own id is a content id of its map and its plays (`table_game`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline.core.artifacts import ParamsError, content_id
from pipeline.core.models import ModelsParams
from pipeline.core.run.rounds import RoundGame, read_rounds
from pipeline.xent.config import XentParams, apply_map_set
from pipeline.xent.games import Game, load_game
from pipeline.xent.maps import MapSpec, map_id_for
from pipeline.xent.mapset import load_map_set
from pipeline.xent.prompts import PROMPT_VERSION
from pipeline.xent.settings import Difference, map_set_differences
from pipeline.xent.xgl import ParseError

PLAY_VERSION = 2  # 2: the reference's XGL semantics, move rule and ensure limit
TABLE_VERSION = 1  # the form of an adaptive table's id (`table_game`)
BENCHMARK = "xent"  # the prefix of a roster entry's per-move budgets for this game
ROUNDS_DIR = "results/xent/rounds"  # the adaptive rounds' ledger, relative to the working directory


@dataclass(frozen=True)
class PlayJob:
    game: str  # game name
    ref: str  # params entry: a library name or a path
    job_id: str
    player: str
    opponent: str | None
    maps: tuple[MapSpec, ...]
    rounds: int

    def path(self, root: str | Path) -> Path:
        return Path(root) / self.game / f"{self.job_id}.json"


@dataclass(frozen=True)
class Schedule:
    games: dict[str, Game]
    refs: dict[str, str]
    maps: dict[str, tuple[MapSpec, ...]]
    jobs: tuple[PlayJob, ...]
    differences: tuple[Difference, ...] = ()  # where the run is not its imported map set's

    def job(self, game: str | None, job_id: str) -> PlayJob:
        """The play job `job_id` (ids are content ids, unique across games; `game` only checks it)."""
        for job in self.jobs:
            if job.job_id == job_id and game in (None, job.game):
                return job
        where = f"{game}/{job_id}" if game else job_id
        raise ParamsError(
            f"no scheduled xent play job {where} in the current params (they changed since the DAG "
            "was built?); `python -m pipeline xent schedule` lists the jobs"
        )


def judge_label(params: XentParams) -> str:
    """The judge as map and job ids know it: its name, plus its dtype when not the default float32."""
    default = XentParams.model_fields["judge_dtype"].default
    return params.judge if params.judge_dtype == default else f"{params.judge}@{params.judge_dtype}"


#: the games (name -> Game), their params entries (a library name or a path) and their maps
Catalogue = tuple[dict[str, Game], dict[str, str], dict[str, tuple[MapSpec, ...]]]


def map_catalogue(params: XentParams, source: str = "params/xent.yaml") -> Catalogue:
    """Every game (name -> Game), its params entry (a library name or a path) and its maps: an imported
    map set's first, then the maps built for `games` (map k of a game has seed `seed + k`)."""
    games: dict[str, Game] = {}
    refs: dict[str, str] = {}
    imported: dict[str, tuple[MapSpec, ...]] = {}
    if params.map_set:
        mapset = load_map_set(params.map_set, source)
        for name, game in mapset.games.items():
            games[name] = game
            refs[name] = str(mapset.root / "games" / f"{name}.xgl")
            imported[name] = tuple(
                MapSpec(name, m.map_seed, m.map_id, str(mapset.root / m.path)) for m in mapset.maps[name]
            )
    for ref in params.games:
        try:
            game = load_game(ref)
        except ParseError as exc:
            raise ParamsError(f"{source}: games: {exc}") from None
        if game.name in games:
            raise ParamsError(f"{source}: games: {game.name!r} is listed twice")
        games[game.name] = game
        refs[game.name] = ref
    maps = {
        name: imported.get(name)
        or tuple(
            MapSpec(name, params.seed + k, map_id_for(game, params.seed + k, judge_label(params)))
            for k in range(params.maps_per_game)
        )
        for name, game in games.items()
    }
    return games, refs, maps


def play_job(
    params: XentParams,
    models: ModelsParams,
    name: str,
    game: Game,
    ref: str,
    player: str,
    maps: tuple[MapSpec, ...],
) -> PlayJob:
    """One player's job over `maps` of the game `name` (all of them in the fixed schedule, one in an
    adaptive table); its id is the content id of everything that decides the play."""
    opponent = params.opponent if game.opponent_roles else None
    identity = {
        "v": PLAY_VERSION,
        "prompt": PROMPT_VERSION,
        "game": name,
        "source": game.version,
        "maps": [m.map_id for m in maps],
        "player": models.entry(player).game_identity(BENCHMARK),
        "opponent": models.entry(opponent).game_identity(BENCHMARK) if opponent else None,
        "rounds": params.rounds,
        "judge": judge_label(params),
        "replies": params.replies.model_dump(mode="json"),
        "judge_scoring": [params.judge_scoring, params.judge_clip_logprobs],
    }
    return PlayJob(name, ref, content_id(identity), player, opponent, maps, params.rounds)


def build_schedule(
    params: XentParams,
    models: ModelsParams,
    source: str = "params/xent.yaml",
    rounds: str | Path = ROUNDS_DIR,
    preview: Sequence[RoundGame] = (),
    *,
    outside_ok: bool = False,
) -> Schedule:
    """Every map and play job: each player over all maps of each game; or, with
    `schedule.adaptive.enabled`, the plays of the adaptive rounds in `rounds` (relative to the working
    directory) and of `preview` (a round the run plan prices before it is written). `outside_ok`: the
    params may seat an entry played from outside the pipeline (pipeline.core.run.contract.seat_game)."""
    params = apply_map_set(params)
    params.check_roster(models, source, outside_ok=outside_ok)
    games, refs, maps = map_catalogue(params, source)
    if params.schedule.adaptive.enabled:
        jobs = adaptive_jobs(params, models, (games, refs, maps), rounds, preview)
    else:
        jobs = [
            play_job(params, models, name, game, refs[name], player, maps[name])
            for name, game in games.items()
            for player in params.players
        ]
    return Schedule(games, refs, maps, tuple(jobs), tuple(map_set_differences(params, models)))


def map_order(maps: dict[str, tuple[MapSpec, ...]]) -> list[MapSpec]:
    """The order tables are dealt maps in: map 0 of every game (in the games' order), then map 1, ...
    so a player's maps alternate between the games, which `xent_score` weighs equally."""
    longest = max((len(specs) for specs in maps.values()), default=0)
    return [specs[k] for k in range(longest) for specs in maps.values() if k < len(specs)]


def _pairs(table: Iterable[str]) -> list[tuple[str, str]]:
    names = sorted(set(table))
    return [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]


@dataclass
class Dealt:
    """What the tables so far have played: who played which map, and which pairs met on which map."""

    played: set[tuple[str, str]]  # (player, map_id)
    met: set[tuple[str, str, str]]  # (map_id, a, b) with a < b

    @classmethod
    def of(cls, games: Iterable[RoundGame]) -> Dealt:
        dealt = cls(set(), set())
        for game in games:
            dealt.add(game.seats, str(game.fields["map_id"]))
        return dealt

    def add(self, table: Sequence[str], map_id: str) -> None:
        self.played.update((seat, map_id) for seat in table)
        self.met.update((map_id, a, b) for a, b in _pairs(table))


def deal_map(table: Sequence[str], order: Sequence[MapSpec], dealt: Dealt) -> MapSpec | None:
    """The map a table plays: among the maps on which no two of its players met yet, the one most of
    them have not played (a player who has keeps its score there and does not play again), the
    earliest in `order` among equals; so the first map new to all of them while there is one. When
    all of them played every such map, the table costs nothing: it compares scores played at other
    tables. None when two of them met on every map: the table has nothing left to compare."""
    pairs = _pairs(table)
    best, most = None, -1
    for spec in order:
        if any((spec.map_id, a, b) in dealt.met for a, b in pairs):
            continue
        new = sum((seat, spec.map_id) not in dealt.played for seat in table)
        if new > most:
            best, most = spec, new
            if new == len(table):
                break
    return best


def table_game(table: Sequence[str], spec: MapSpec, jobs: Sequence[PlayJob]) -> RoundGame:
    """A table as its round file keeps it: the seats as chosen, its game and map, and each seat's play
    job (`plays`, in seat order); its id covers the map and the plays, so it is a content id."""
    plays = [job.job_id for job in jobs]
    table_id = content_id({"xent_table": TABLE_VERSION, "map": spec.map_id, "plays": sorted(plays)})
    return RoundGame(table_id, tuple(table), {"game": spec.game, "map_id": spec.map_id, "plays": plays})


def _seat_job(
    params: XentParams, models: ModelsParams, catalogue: Catalogue, spec: MapSpec, seat: str, where: str
) -> PlayJob:
    games, refs, _ = catalogue
    try:
        return play_job(params, models, spec.game, games[spec.game], refs[spec.game], seat, (spec,))
    except KeyError as exc:
        raise ParamsError(
            f"{where}: {seat!r} sits at a table of the rounds but {exc.args[0]}; restore its roster entry in "
            "params/models.yaml, or move the rounds folder away to start the rounds anew"
        ) from None


def seated_games(
    tables: Sequence[Sequence[str]],
    earlier: Iterable[RoundGame],
    params: XentParams,
    models: ModelsParams,
    source: str = "params/xent.yaml",
) -> list[RoundGame]:
    """One game per table of an adaptive round that has a map to be dealt (`deal_map`), counting the
    earlier rounds' tables and this round's tables before it; a table with nothing left is dropped.
    The earlier tables' plays must be those of the current params (`table_jobs`): a round is never
    written over plays its rules would not schedule."""
    params = apply_map_set(params)
    params.check_roster(models, source)
    catalogue = map_catalogue(params, source)
    earlier = list(earlier)
    for before in earlier:
        table_jobs(before, params, models, catalogue, f"{source}: a table of an earlier round", ROUNDS_DIR)
    order = map_order(catalogue[2])
    dealt = Dealt.of(earlier)
    found = []
    for table in tables:
        spec = deal_map(table, order, dealt)
        if spec is None:
            continue
        jobs = [_seat_job(params, models, catalogue, spec, seat, source) for seat in table]
        found.append(table_game(table, spec, jobs))
        dealt.add(table, spec.map_id)
    return found


def table_jobs(
    table: RoundGame, params: XentParams, models: ModelsParams, catalogue: Catalogue, where: str, rounds: str | Path
) -> list[PlayJob]:
    """The play jobs of a table of the rounds, rebuilt under the current params. A table whose map the
    params no longer deal, or a play whose id no longer matches (a roster entry, the rounds, the judge
    or the replies changed since it was chosen), stops with the fix: the rounds belong to the plays
    they chose."""
    spec = next((m for specs in catalogue[2].values() for m in specs if m.map_id == table.fields.get("map_id")), None)
    if spec is None:
        raise ParamsError(
            f"{where}: table {table.id} ({', '.join(table.seats)}) plays map {table.fields.get('map_id')} of "
            f"{table.fields.get('game')}, which the params no longer deal (games, maps_per_game, seed, map_set "
            f"or the judge changed since); restore them, or move {rounds} away to start the rounds anew"
        )
    jobs = []
    for seat, recorded in zip(table.seats, table.fields["plays"], strict=True):
        job = _seat_job(params, models, catalogue, spec, seat, where)
        if job.job_id != recorded:
            raise ParamsError(
                f"{where}: the play of {seat} on map {spec.map_id} ({spec.game}) is now job {job.job_id}, not "
                f"{recorded}: its roster entry, the opponent's, the rounds, the judge or the replies changed since "
                f"the round was chosen, so its plays are other plays; restore the params it was chosen under, or "
                f"move {rounds} away to start the rounds anew"
            )
        jobs.append(job)
    return jobs


def adaptive_jobs(
    params: XentParams,
    models: ModelsParams,
    catalogue: Catalogue,
    rounds: str | Path = ROUNDS_DIR,
    preview: Sequence[RoundGame] = (),
) -> list[PlayJob]:
    """The play jobs of the adaptive rounds written so far (and of `preview`), in round and seat order,
    each once (`table_jobs`: under the current params, or the fix)."""
    records = read_rounds(rounds)
    chosen = [(record.index, game) for record in records for game in record.games]
    chosen += [(len(records) + 1, game) for game in preview]
    jobs: dict[str, PlayJob] = {}
    for index, table in chosen:
        for job in table_jobs(table, params, models, catalogue, f"{rounds}/round-{index:03d}.json", rounds):
            jobs.setdefault(job.job_id, job)
    return list(jobs.values())

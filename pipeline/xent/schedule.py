"""The deterministic schedule: which maps exist and which play jobs run (ids are content ids).

A play job is one game and one player over all the game's maps; its id covers the game text, the
map ids, the player's roster entry, the opponent's entry, the rounds, the judge (its dtype when
not the default float32, so that ids made before the option stay valid) and the prompt version, so
adding a player adds jobs and changes none. With an imported map set the schedule also carries
where the run differs from it (pipeline.xent.settings), for the commands to say so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline.core.artifacts import ParamsError, content_id
from pipeline.core.models import ModelsParams
from pipeline.xent.config import XentParams, apply_map_set
from pipeline.xent.games import Game, load_game
from pipeline.xent.maps import MapSpec, map_id_for
from pipeline.xent.mapset import load_map_set
from pipeline.xent.prompts import PROMPT_VERSION
from pipeline.xent.settings import Difference, map_set_differences
from pipeline.xent.xgl import ParseError

PLAY_VERSION = 2  # 2: the reference's XGL semantics, move rule and ensure limit


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


def _entry_identity(models: ModelsParams, name: str) -> dict:
    entry = models.entry(name)
    return entry.model_dump(mode="json", include={"model", "bot", "bot_options", "sampling", "extra"})


def judge_label(params: XentParams) -> str:
    """The judge as map and job ids know it: its name, plus its dtype when not the default float32."""
    default = XentParams.model_fields["judge_dtype"].default
    return params.judge if params.judge_dtype == default else f"{params.judge}@{params.judge_dtype}"


def build_schedule(params: XentParams, models: ModelsParams, source: str = "params/xent.yaml") -> Schedule:
    params = apply_map_set(params)
    params.check_roster(models, source)
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
    jobs = []
    for name, game in games.items():
        opponent = params.opponent if game.opponent_roles else None
        for player in params.players:
            identity = {
                "v": PLAY_VERSION,
                "prompt": PROMPT_VERSION,
                "game": name,
                "source": game.version,
                "maps": [m.map_id for m in maps[name]],
                "player": _entry_identity(models, player),
                "opponent": _entry_identity(models, opponent) if opponent else None,
                "rounds": params.rounds,
                "judge": judge_label(params),
                "replies": params.replies.model_dump(mode="json"),
                "judge_scoring": [params.judge_scoring, params.judge_clip_logprobs],
            }
            jobs.append(PlayJob(name, refs[name], content_id(identity), player, opponent, maps[name], params.rounds))
    return Schedule(games, refs, maps, tuple(jobs), tuple(map_set_differences(params, models)))

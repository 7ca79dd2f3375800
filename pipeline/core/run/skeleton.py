"""A game benchmark's skeleton, generated from its game contract (core.run.contract).

A benchmark whose scheduled games are its play jobs declares `SKELETON = GameSkeleton(name,
contract_module)` and takes from it, in its `benchmark.py`:

- `scheduled`: its standard rules' schedule at parse time (`Rules.schedule`): one play job per game,
  named by the core, and the rate job's settings;
- `schedule_verb(...)` and `play_verb(...)`: `python -m pipeline NAME schedule | play`, the same
  loading, game lookup, players, shards and writing for every benchmark; `play` plays the games
  with the players the core makes (`contract.make_game_players`) through `contract.play`;
- `estimators`: the run plan's estimators of its play and shard jobs (`NAME_play`, `NAME_shard`),
  from the contract's `seat_plan` of each game.

The contract module is imported on first use, so declaring a benchmark costs no import of its engine.
"""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.core.run.declaration import GAME_ID, PlayJob, ScheduleCall, Scheduled
from pipeline.core.run.verbs import Verb, VerbCall, say

if TYPE_CHECKING:
    from pipeline.core.models import ModelsParams
    from pipeline.core.run.contract import Game, GameContract, ScheduleSource
    from pipeline.core.run.estimates import Estimator, PlanContext
    from pipeline.core.run.plan import CallEstimate, PlannedJob

__all__ = ["GameSkeleton"]


@dataclass(frozen=True)
class GameSkeleton:
    """The parts the core generates for the benchmark `name` from the contract in `contract`
    (a module defining CONTRACT)."""

    name: str
    contract: str

    def load(self) -> GameContract[Any, Any, Any]:
        from pipeline.core.run.contract import GameContract

        found = getattr(importlib.import_module(self.contract), "CONTRACT", None)
        if not isinstance(found, GameContract):
            raise TypeError(f"{self.name}: {self.contract} must define CONTRACT = a GameContract")
        return found

    @property
    def games_folder(self) -> str:
        return f"results/{self.name}/games"

    def games(
        self, params_file: str | Path, models: str | Path | ModelsParams, source: ScheduleSource | None = None
    ) -> tuple[Any, list[Game[Any]]]:
        """(the params, every scheduled game) of these params and roster files, as every verb sees them."""
        from pipeline.core.models import ModelsParams, load_models
        from pipeline.core.run.contract import ScheduleSource, schedule

        contract = self.load()
        params = contract.load_params(params_file)
        roster = models if isinstance(models, ModelsParams) else load_models(models)
        where = source or ScheduleSource(
            params=str(params_file), models=None if isinstance(models, ModelsParams) else str(models)
        )
        return params, schedule(contract, params, roster, where)

    # -- the standard rules' schedule ------------------------------------------------------------------
    def scheduled(self, call: ScheduleCall) -> Scheduled[None]:
        """Every scheduled game (the fixed schedule, or the adaptive rounds' games) as a play job, and
        the rate job's settings. A ParamsError stops only this benchmark's targets."""
        contract = self.load()
        params, games = self.games(call.params, call.models)
        return Scheduled(
            jobs={game.id: PlayJob(tuple(game.seats), contract.rule_content(game)) for game in games},
            rate_settings=contract.rate_settings(params),
        )

    # -- the verbs ---------------------------------------------------------------------------------------
    def schedule_verb(self, help_text: str) -> Verb:
        return Verb(self.list_games, help_text)

    def list_games(self, call: VerbCall) -> int:
        """`schedule`: one line per game, its id first (`--json`: the contract's description of each)."""
        contract = self.load()
        _, games = self.games(call.params, call.models)
        if call.json:
            print(json.dumps([dict(contract.describe(game)) for game in games], indent=2))
            return 0
        for game in games:
            print(contract.line(game))
        say(f"{len(games)} game(s)" + (f"; {contract.legend}" if contract.legend else ""))
        return 0

    def play_verb(self, help_text: str, *, out_help: str = "the games folder") -> Verb:
        return Verb(self.play_games, help_text, out=self.games_folder, out_help=out_help)

    def play_games(self, call: VerbCall) -> int:
        """`play`: one scheduled game, or several on one event loop (pipeline.core.run.shards). Each
        game gets a gateway of its own (its calls table) and the players the core makes."""
        from pipeline.core.artifacts import ParamsError
        from pipeline.core.models import Gateway, load_models
        from pipeline.core.run.contract import make_game_players, play
        from pipeline.core.run.shards import ShardGame, game_done, run_shard

        contract = self.load()
        roster = load_models(call.models)
        _, scheduled = self.games(call.params, roster, self._source(call))
        games = {game.id: game for game in scheduled}
        unknown = [game_id for game_id in call.jobs if game_id not in games]
        if unknown:
            raise ParamsError(
                f"game {unknown[0]!r} is not in the schedule of {call.params} ({len(games)} games; the params or "
                f"the roster changed since it was scheduled?); `python -m pipeline {self.name} schedule` lists them"
            )
        out = Path(call.out)

        async def play_one(game: Game[Any]) -> Any:
            gateway = Gateway(roster, job=f"{self.name}/{game.id}")
            record = await play(contract, game, make_game_players(contract, game, roster, gateway))
            contract.write(game, record, gateway, out)
            return record

        if len(call.jobs) == 1 and call.marker is None:
            game = games[call.jobs[0]]
            say(f"game {contract.line(game)}")
            outcome = contract.outcome(asyncio.run(play_one(game)))
            if outcome:
                say(outcome)
            return 0
        return run_shard(
            [ShardGame(game_id, games[game_id]) for game_id in call.jobs],
            play_one,
            partial(game_done, out, log_pattern=contract.log_pattern),
            at_once=roster.parallel.games_per_job,
            marker=call.marker,
            say=say,
            moves=contract.planned_moves,
        )

    def played_games(self, call: VerbCall, games_folder: str | Path) -> tuple[Any, list[Path]]:
        """For `rate`: (the params, every scheduled game's record or folder, `contract.played`). A
        ParamsError when nothing is scheduled or a game is not played yet, naming the command that
        plays them."""
        from pipeline.core.artifacts import ParamsError
        from pipeline.core.run.shards import game_done

        contract = self.load()
        params, games = self.games(call.params, call.models)
        folder = Path(games_folder)
        if not games:
            raise ParamsError(
                f"no game is scheduled by {call.params} (with schedule.adaptive on, no round has been chosen "
                f"yet); run `python -m pipeline run {self.name}_all` (or `dvc repro {self.name}`): it chooses "
                "the rounds and plays them"
            )
        missing = [game.id for game in games if not game_done(folder, game.id, contract.log_pattern)]
        if missing:
            raise ParamsError(
                f"{len(missing)} scheduled game(s) not played yet under {folder}, e.g. {missing[0]}; run "
                f"`snakemake {self.name}_all` (or `python -m pipeline {self.name} play ID`) first"
            )
        return params, [folder / contract.played.format(game_id=game.id) for game in games]

    def _source(self, call: VerbCall) -> ScheduleSource:
        from pipeline.core.run.contract import ScheduleSource

        return ScheduleSource(params=call.params, models=call.models)

    # -- the plan's estimators ---------------------------------------------------------------------------
    def estimators(self) -> Mapping[str, Estimator]:
        """{NAME_play, NAME_shard} -> estimator (Benchmark.estimators; core.run.estimates)."""
        return {f"{self.name}_play": self.estimate_game, f"{self.name}_shard": self.estimate_shard}

    def planned(self, context: PlanContext) -> tuple[Any, dict[str, Game[Any]]]:
        """(the params, the scheduled games by id) of the plan's params directory, loaded once a plan,
        with the adaptive rounds written so far and the round the plan prices before it is written."""
        from pipeline.core.run.contract import ScheduleSource

        def load() -> tuple[Any, dict[str, Game[Any]]]:
            params_file = f"{self.name}.yaml"
            source = ScheduleSource(
                params=context.params_source(params_file),
                models=str(context.path(context.models_path)),
                rounds=context.path(f"results/{self.name}/rounds"),
                preview=context.preview.get(self.name, ()),
            )
            params, games = self.games(context.params_file(params_file), context.models, source)
            return params, {game.id: game for game in games}

        loaded: tuple[Any, dict[str, Game[Any]]] = context.once(f"{self.name}-games", load)
        return loaded

    def estimate_game(self, job: PlannedJob, context: PlanContext) -> list[CallEstimate]:
        from pipeline.core.artifacts import ParamsError
        from pipeline.core.run.estimates import seat_estimates

        params, games = self.planned(context)
        game = games.get(job.wildcards[GAME_ID])
        if game is None:
            raise ParamsError(
                f"{self.name}: game {job.wildcards[GAME_ID]!r} is not in the schedule of "
                f"{context.params_source(f'{self.name}.yaml')}"
            )
        plan = self.load().seat_plan(params, game, context)
        return seat_estimates(
            context, self.name, self.name, list(game.seats), plan.bound, plan.bound_why, plan.moves, plan.moves_why
        )

    def estimate_shard(self, job: PlannedJob, context: PlanContext) -> list[CallEstimate]:
        from pipeline.core.run.estimates import shard_estimates
        from pipeline.core.run.shards import game_done

        _, games = self.planned(context)
        folder = context.path(self.games_folder)
        pattern = self.load().log_pattern
        return shard_estimates(
            job,
            context,
            self.name,
            {game_id: game.seats for game_id, game in games.items()},
            self.estimate_game,
            done=lambda game_id: game_done(folder, game_id, log_pattern=pattern),
        )

"""Many games per job: a shard of API games played concurrently on one event loop.

One process per game costs about 325 MB and seconds of imports, so a machine runs tens of API
games at once where the provider would take hundreds. A shard job instead plays up to
`parallel.games_per_job` games (params/models.yaml) on one event loop; the provider limits
(pipeline.core.models.limits) hold across all of them and across the machine's other jobs.

What stays as with one job per game:
- each game still writes its own content-named outputs (atomically, when it ends), so adding a
  model plays only the new games, and the benchmark's report reads the same files;
- a shard job skips every game whose outputs are already complete: a crash loses at most the
  games that were unfinished, and a rerun replays none of the finished ones;
- a game that fails does not stop the shard's other games; the job fails after they end (its
  marker is not written), and the rerun plays only what is missing. The failed game's requests
  already sent finish first (pipeline.core.models.concurrency): their answers are cached and paid once,
  and its attempts reach its calls table when the rerun writes it (pipeline.core.models.journal).

The job's Snakemake output is a small marker named by the shard's content id (its game ids), so
the games of a shard are not Snakemake outputs and are never deleted when the shard reruns.
Games with the embedded model go to shards of their own: the process loads the model once, and its
games' requests share the decoding batch (pipeline.core.models.local_batch), whose replies do not
depend on what shares a step, so a game plays the same as in a job of its own. A process then pays
the model's imports and load (about 9 CPU-s) once, not once per game. Bot-only games go to shards
of their own too: a game takes milliseconds, a job process about a CPU-second to start, so the
calibration games of a roster's graded bots cost little however many are scheduled.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, NamedTuple, TypeVar

from pipeline.core.artifacts.io import content_id, write_json_atomic
from pipeline.core.artifacts.progress import reporting_moves
from pipeline.core.models.concurrency import gather_moves
from pipeline.core.models.roster import ModelsParams

log = logging.getLogger(__name__)
Game = TypeVar("Game")


def shard_kind(seats: Iterable[str], models: ModelsParams) -> str | None:
    """Which shards a game belongs in: `local` when the embedded model plays a seat (those games
    share its batch, and their job wants the cores), `api` when an API model plays and the embedded
    model does not, `bots` for bots only (a game takes milliseconds: many share a process)."""
    entries = [models.entry(name) for name in set(seats)]
    if any(e.provider == "local" for e in entries):
        return "local"
    return "api" if any(not e.is_bot for e in entries) else "bots"


def plan_shards(game_ids: Iterable[str], games_per_job: int) -> dict[str, list[str]]:
    """Shards of at most `games_per_job` games, in game-id order, each named by its game ids."""
    ordered = sorted(set(game_ids))
    shards = [ordered[i : i + games_per_job] for i in range(0, len(ordered), games_per_job)]
    return {content_id(shard): shard for shard in shards}


@dataclass(frozen=True)
class ShardGame(Generic[Game]):
    game_id: str
    spec: Game


@dataclass
class ShardOutcome:
    played: list[str]
    skipped: list[str]
    failed: dict[str, str]
    seconds: float

    @property
    def ok(self) -> bool:
        return not self.failed


async def play_shard(
    games: Sequence[ShardGame[Game]],
    play: Callable[[Game], Awaitable[None]],
    is_done: Callable[[str], bool],
    *,
    at_once: int,
    on_game_end: Callable[[str, bool], None] | None = None,
) -> ShardOutcome:
    """Play every game of the shard not yet done, at most `at_once` at a time on this loop."""
    started = time.monotonic()
    todo = [g for g in games if not is_done(g.game_id)]
    skipped = [g.game_id for g in games if is_done(g.game_id)]
    gate = asyncio.Semaphore(max(1, at_once))
    played: list[str] = []
    failed: dict[str, str] = {}

    async def one(game: ShardGame[Game]) -> None:
        async with gate:
            try:
                await play(game.spec)
            except Exception as exc:  # noqa: BLE001 - one failed game must not stop the others
                failed[game.game_id] = f"{type(exc).__name__}: {exc}"
                log.error("game %s failed: %s", game.game_id, failed[game.game_id])
            else:
                played.append(game.game_id)
            if on_game_end is not None:
                on_game_end(game.game_id, game.game_id not in failed)

    # every game to its end: a failed game's in-flight requests already finished inside it
    # (pipeline.core.models.concurrency), so closing the loop afterwards cancels nothing that was paid for
    await gather_moves(*(one(g) for g in todo))
    return ShardOutcome(sorted(played), skipped, dict(sorted(failed.items())), time.monotonic() - started)


def write_marker(path: str | Path, shard_games: Sequence[str], outcome: ShardOutcome) -> None:
    """The shard's Snakemake output: which games it holds (their outputs live beside it)."""
    write_json_atomic(Path(path), {"games": sorted(shard_games), "played": outcome.played, "skipped": outcome.skipped})


def failure_message(outcome: ShardOutcome, unit: str = "game") -> str:
    first_id, first_error = next(iter(outcome.failed.items()))
    return (
        f"{len(outcome.failed)} {unit}(s) of this shard failed (first: {first_id}: {first_error}); "
        f"{len(outcome.played)} finished and were written, {len(outcome.skipped)} were already done. "
        "Rerun the same command: only the unfinished games are played, answered requests come from the cache. "
        "Their attempts so far: `python -m pipeline plan` (results/plan/unfinished_calls.parquet)."
    )


def game_done(games: str | Path, game_id: str, log_pattern: str = "*") -> bool:
    """Whether a game's outputs are complete, as the benchmarks that play shards write them: a record
    `<id>.json` (written last) beside its calls table `<id>.calls.parquet`, or a folder `<id>/`
    whose calls table is written after the game's log (a file matching `log_pattern`). What a shard
    job skips, and what the run plan does not count again on a resumed run."""
    folder = Path(games)
    if (folder / f"{game_id}.json").is_file():
        return (folder / f"{game_id}.calls.parquet").is_file()
    own = folder / game_id
    return (own / "calls.parquet").is_file() and any(p.name != "calls.parquet" for p in own.glob(log_pattern))


def split_ids(text: str) -> list[str]:
    return [part for part in text.replace(",", " ").split() if part]


def run_shard(
    games: Sequence[ShardGame[Game]],
    play: Callable[[Game], Awaitable[None]],
    is_done: Callable[[str], bool],
    *,
    at_once: int,
    marker: str | Path | None,
    say: Callable[[str], None],
    unit: str = "game",
    moves: Callable[[Game], int] | None = None,
) -> int:
    """A shard job end to end: play, report each game, write the marker (if one is named) when all are done.
    Returns the process exit status (1 when a game failed). `unit` names a game in the log lines;
    `moves`, the moves a game's structure plans: the shard's progress line counts them all from the start
    (pipeline.core.artifacts.progress), however its games' turns interleave on the loop."""
    total = len(games)
    finished = 0

    def on_game_end(game_id: str, ok: bool) -> None:
        nonlocal finished
        finished += 1
        say(f"{unit} {game_id} {'finished' if ok else 'FAILED'} ({finished} of {total - len(skipped)} to play)")

    skipped = [g.game_id for g in games if is_done(g.game_id)]
    planned = None if moves is None else sum(moves(g.spec) for g in games if g.game_id not in skipped)
    say(
        f"shard of {total} {unit}(s): {len(skipped)} already done, playing {total - len(skipped)}, up to {at_once} at once"
        + ("" if planned is None else f"; {planned} moves planned")
    )
    with reporting_moves(say, planned=planned) if planned is not None else nullcontext():
        outcome = asyncio.run(play_shard(games, play, is_done, at_once=at_once, on_game_end=on_game_end))
    if not outcome.ok:
        say(f"error: {failure_message(outcome, unit)}")
        return 1
    if marker is not None:
        write_marker(marker, [g.game_id for g in games], outcome)
    say(f"played {len(outcome.played)} {unit}(s) in {outcome.seconds:.1f}s; {len(outcome.skipped)} were already done")
    return 0


class GameJobs(NamedTuple):
    """How a benchmark's games become jobs: `solo` games one job each, `shards` by shard id, and
    which shards play the embedded model (`local`: their job wants the cores, not a provider slot);
    `local_solo`, the solo games that do."""

    solo: list[str]
    shards: dict[str, list[str]]
    local: frozenset[str]
    local_solo: frozenset[str] = frozenset()


def jobs_for_games(
    seats_by_game: Mapping[str, Sequence[str]], models_path: str | Path, *, shards: bool = True
) -> GameJobs:
    """For a benchmark's rules: the games that keep one job each, and the shards: those of API games
    and, apart from them, those of games with the embedded model, and those of bots only. Without
    `shards`, or with `parallel.games_per_job` 0, every game keeps its own job.

    With an unreadable roster every game keeps its own job (the benchmark's jobs then report it)."""
    from pipeline.core.artifacts.params import ParamsError
    from pipeline.core.models.roster import load_models

    try:
        models = load_models(models_path)
        kinds = {g: shard_kind(seats, models) for g, seats in seats_by_game.items()}
    except (ParamsError, KeyError):
        return GameJobs(list(seats_by_game), {}, frozenset())
    if not shards or models.parallel.games_per_job == 0:  # one job per game: each game is a Snakemake output
        return GameJobs(list(seats_by_game), {}, frozenset(), frozenset(g for g, k in kinds.items() if k == "local"))
    api = plan_shards([g for g, k in kinds.items() if k == "api"], models.parallel.games_per_job)
    # never mixed: a local shard computes on the cores, an API shard waits on the network, a bot
    # shard does neither for long
    local = plan_shards([g for g, k in kinds.items() if k == "local"], models.parallel.games_per_job)
    bots = plan_shards([g for g, k in kinds.items() if k == "bots"], models.parallel.games_per_job)
    return GameJobs([], {**api, **bots, **local}, frozenset(local))

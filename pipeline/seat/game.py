"""The game a person plays: drawn by the benchmark's contract, played with the core's players, recorded
as the benchmark's own games are.

The seat is a roster entry with `bot: human`; its opponents are the players the params' schedule
seats (with `--params`), else the benchmark's scripted bots. The game is the one the schedule would
draw for that seat (pipeline.core.run.contract.seat_game, deterministic in the seed), played on a
worker thread with the players the core makes; the person's moves come through the seat's channel
(pipeline.core.models.outside) and wait as long as the person takes; each opponent's move is said on
the seat's log as it is made. The record (`<game_id>.json`) and its calls table
(`<game_id>.calls.parquet`) go to the benchmark's games folder where its play writes a game so
(Who is Spy), else to `results/<benchmark>/seat/` (`SeatRequest.games`).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.core.artifacts import ParamsError, write_json_atomic
from pipeline.core.models import Gateway, ModelsParams, MoveRequest, Player, Reply, load_models
from pipeline.core.models.outside import GameOver, SeatChannel, is_outside
from pipeline.core.run.contract import Seating, game_contract, make_game_players, play, seat_game, seat_gateway
from pipeline.core.run.registry import RegistryError, benchmark, names
from pipeline.seat.session import Describe, Outcome, SeatSession

HUMAN = "human"


@dataclass(frozen=True)
class SeatRequest:
    """What the `seat` command was asked: a benchmark, the person's roster entry, where params live."""

    benchmark: str
    name: str
    params: str | None = None  # a params directory: the rules and opponents of its <benchmark>.yaml
    models: str | None = None  # the roster file (default: <params>/models.yaml, else params/models.yaml)
    seed: int | None = None  # picks the game; None: the first seed whose game is not recorded yet
    seat: str | None = None  # the seat asked for (a contract's seat choice; None: its first)
    out: str | None = None  # the games folder (default: where the benchmark's play verb writes games)
    cache_dir: str | None = None

    @property
    def models_file(self) -> str:
        return self.models or f"{self.params or 'params'}/models.yaml"

    @property
    def params_file(self) -> str | None:
        return f"{self.params}/{self.benchmark}.yaml" if self.params else None

    @property
    def games(self) -> Path:
        """The games folder: `out`, else the one where the benchmark's play verb writes each game as
        `<game_id>.json` (Who is Spy's), else `results/<benchmark>/seat/`, which no stage reads (a
        benchmark whose play writes a game otherwise: a folder of logs, a job's files)."""
        if self.out:
            return Path(self.out)
        bench = benchmark(self.benchmark)
        play_verb, written = bench.verb("play"), bench.writes.get("play", ())
        if play_verb is not None and play_verb.out and any(re.fullmatch(r"games/\{\w+\}\.json", w) for w in written):
            return Path(play_verb.out)
        return Path(f"{bench.results}/seat")


#: seeds tried for the first game not recorded yet, when none is given
SEEDS_TRIED = 1000


def human_entry(roster: ModelsParams, name: str, source: str) -> None:
    """Stop unless `name` is a roster entry with `bot: human`, naming the fix."""
    try:
        entry = roster.entry(name)
    except KeyError:
        raise ParamsError(
            f"--as {name}: no roster entry {name!r} in {source}; add `- {{name: {name}, bot: human}}` to its "
            "roster (a person's seat, recorded and rated under that name), or name one with --as"
        ) from None
    if entry.bot != HUMAN:
        what = f"bot: {entry.bot}" if entry.bot else f"model: {entry.model}"
        raise ParamsError(
            f"--as {name}: roster entry {name!r} in {source} is not a person's seat ({what}); `seat` plays an "
            f"entry with `bot: human`, e.g. `- {{name: alice, bot: human}}`"
        )


def opponents(request: SeatRequest, roster: ModelsParams) -> ModelsParams:
    """The roster the person plays against: the players the params' schedule seats (`--params`), else
    the benchmark's scripted bots; the roster's providers and gateway settings kept."""
    contract = game_contract(request.benchmark)
    params = contract.load_params(request.params_file)
    if request.params:
        seated = [n for draft in contract.drafts(params, roster) for n in draft.seats]
    else:
        try:
            seated = contract.default_opponents(params, roster)
        except KeyError as exc:  # the params name a bot this roster lacks
            raise ParamsError(
                f"{request.models_file}: {exc.args[0]}; the benchmark's scripted bots (named in "
                f"{request.params_file or f'params/{request.benchmark}.yaml'}) must be roster entries there"
            ) from None
    chosen = [n for n in dict.fromkeys(seated) if not is_outside(roster.entry(n))]
    if not chosen:
        raise ParamsError(
            f"{request.params_file or request.models_file}: no player to seat beside {request.name!r} in "
            f"{request.benchmark}; list bots or models as its players"
        )
    return roster.model_copy(update={"roster": [roster.entry(n) for n in chosen]})


def seating_for(request: SeatRequest) -> Seating:
    """The game the person plays: drawn as the schedule would, with the person in their seat; the
    seed's game, or without one the first game not recorded yet (a record is never overwritten)."""
    seeds = range(SEEDS_TRIED) if request.seed is None else [request.seed]
    for seed in seeds:
        seating = draw(request, seed)
        if not record_paths(seating, request.games)[0].exists():
            return seating
    if request.seed is not None:
        raise ParamsError(
            f"--seed {request.seed}: {request.name}'s game {seating.game.id} is recorded already in "
            f"{request.games}; play another seed, or leave --seed out for the next game not played yet"
        )
    raise ParamsError(f"{request.name} has played the first {SEEDS_TRIED} games of {request.benchmark} already")


def draw(request: SeatRequest, seed: int) -> Seating:
    """The game of `seed` with the person in their seat."""
    if request.benchmark not in names():
        raise ParamsError(f"seat: unknown benchmark {request.benchmark!r}; one of {', '.join(names())}")
    roster = load_models(request.models_file)
    human_entry(roster, request.name, request.models_file)
    contract = game_contract(request.benchmark)
    if request.seat is not None and request.seat not in contract.seat_choices:
        raise ParamsError(
            f"--seat {request.seat}: {request.benchmark} seats a person as one of {', '.join(contract.seat_choices)}"
        )
    try:
        return seat_game(
            contract,
            name=request.name,
            bot=HUMAN,
            opponents=opponents(request, roster),
            params=request.params_file,
            seed=seed,
            seat=request.seat,
        )
    except (ValueError, RegistryError) as exc:
        if isinstance(exc, ParamsError):
            raise
        raise ParamsError(f"seat {request.benchmark}: {exc}") from exc


class WatchedPlayer(Player):
    """An opponent whose every move is said on the seat's log as it is made: who moved and what kind
    of move, never what it said (the person hears that as the seat does, in the next turn's messages)."""

    def __init__(self, player: Player, session: SeatSession) -> None:
        super().__init__(player.entry, player.gateway, player.job_seed, player.game)
        self.player = player
        self.session = session

    async def act(self, request: MoveRequest) -> Reply:
        reply = await self.player.act(request)
        self.session.note({"text": f"{request.key}: move made"})
        return reply


def seat_players(seating: Seating, gateway: Gateway, session: SeatSession) -> dict[str, Player]:
    players = make_game_players(seating.contract, seating.game, seating.roster, gateway)
    return {
        name: player if name == seating.name else WatchedPlayer(player, session) for name, player in players.items()
    }


def record_paths(seating: Seating, out: Path) -> tuple[Path, Path]:
    return out / f"{seating.game.id}.json", out / f"{seating.game.id}.calls.parquet"


def play_and_record(seating: Seating, session: SeatSession, out: Path, cache_dir: str | None = None) -> Any:
    """Play the game to its end (blocking: the session's worker thread), write its record and calls
    table, and post the end on the person's channel; the record."""
    channel = session.channel
    gateway = seat_gateway(seating, cache_dir)
    try:
        record = asyncio.run(play(seating.contract, seating.game, seat_players(seating, gateway, session)))
        record_file, calls_file = record_paths(seating, out)
        gateway.write_calls(calls_file)
        write_json_atomic(record_file, seating.contract.to_json(record))  # last: its presence means done
    except BaseException as error:
        channel.finish(error=error)
        raise
    channel.finish(record)
    return record


def summary_of(record_json: Any, seat: str, score: float) -> str:
    """The game's end in a few words, from the record's own fields where it has them (who won, why,
    the seat's role)."""
    found = record_json if isinstance(record_json, Mapping) else {}
    winner, reason, players = found.get("winner"), found.get("end_reason"), found.get("players")
    said = f"{winner} win" + (f" ({reason})" if reason else "") if winner else "the game ended"
    mine = [p for p in players if isinstance(p, Mapping) and p.get("seat") == seat] if isinstance(players, list) else []
    role = mine[0].get("role") if mine else None
    return f"{said}; you ({seat}) " + (f"played the {role} and " if role else "") + f"scored {score:g}"


def describer(seating: Seating, out: Path) -> Describe:
    """The session's `describe`: the outcome of the game's end for the person."""

    def describe(over: GameOver) -> Outcome:
        if over.error is not None or over.record is None:
            return Outcome(summary="the game stopped before its end", error=str(over.error or "no record"))
        scores = {
            label: float(seating.contract.score(over.record, label)) for label in dict.fromkeys(seating.game.labels)
        }
        you = scores[seating.seat]
        summary = summary_of(seating.contract.to_json(over.record), seating.seat, you)
        return Outcome(summary, you, scores, str(record_paths(seating, out)[0]))

    return describe


def title_of(seating: Seating) -> str:
    return f"{benchmark(seating.contract.name).title}: {seating.name} in seat {seating.seat} (game {seating.game.id})"


def new_session(seating: Seating, channel: SeatChannel, out: Path) -> SeatSession:
    return SeatSession(channel, describer(seating, out), title_of(seating))


__all__ = ["SeatRequest", "new_session", "play_and_record", "seating_for"]

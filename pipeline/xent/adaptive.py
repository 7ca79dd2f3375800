"""Xent's adaptive schedule, as the round ledger (pipeline.core.run.rounds) asks for it.

Xent's players never meet: each plays a map alone against the judge (and the `opponent` bot), and
the rating ranks the players of a map by their map scores. So a table here is a choice of whose
scores are compared, and on which map:

- `setup`: `schedule.adaptive` of params/xent.yaml, the pool `players`, tables of `table_size`,
  the rating's TrueSkill settings; the maps in the order they are dealt (`schedule.map_order`) are
  part of the settings digest, so more maps let a tournament stopped as `exhausted` go on;
- `games`: each table of a round is dealt one map (`schedule.seated_games`): the first map none of
  its players has played (failing that, one most of them have not, on which no two of them met), and
  each seat plays a job of that one map; a table with nothing left to play is dropped, and a round
  left without one stops the ledger (`exhausted`);
- `parts`: a table's files are its seats' play records, `play/<game>/<job_id>.json` (a seat's play
  that an earlier table made is not played again, nor paid twice);
- `event`: a finished table is the free-for-all ranking of its players by their map score on its
  map (their best round; a voided map ranks last), the event the fixed rating builds for a map
  (`report.ranked_event`), from the play records' own totals (the judge's rescored totals agree
  within `stages.RESCORE_TOLERANCE_BITS`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.core.artifacts import ParamsError
from pipeline.core.run.rounds import AdaptiveSetup, AdaptiveSpec, RoundGame, RoundRequest

if TYPE_CHECKING:  # the rating core (and trueskill) loads only when a ledger is read, not at every parse
    from pipeline.core.rating.events import RatingEvent
    from pipeline.xent.records import MapRecord

PLAY = "play"  # the play records' folder under results/xent/


def setup(params_path: Path, models_path: Path) -> AdaptiveSetup:
    from pipeline.xent.config import load_xent
    from pipeline.xent.schedule import map_catalogue, map_order

    params = load_xent(params_path)
    adaptive = params.schedule.adaptive
    decides: dict[str, object] = {}
    if adaptive.enabled:  # the fixed schedule reads no map here (a map set may not be imported yet)
        problems = params.adaptive_problems(str(params_path))
        if problems:
            raise ParamsError("\n".join(problems))
        decides["maps"] = [spec.map_id for spec in map_order(map_catalogue(params, str(params_path))[2])]
    return AdaptiveSetup(
        settings=adaptive,
        pool=tuple(dict.fromkeys(params.players)),
        seats=adaptive.table_size,
        rating=params.rating.rating_params(),
        decides=decides,
    )


def games(request: RoundRequest) -> list[RoundGame]:
    from pipeline.core.models import load_models
    from pipeline.xent.config import load_xent
    from pipeline.xent.schedule import seated_games

    params = load_xent(request.params)
    return seated_games(request.tables, request.earlier, params, load_models(request.models), str(request.params))


def parts(game: RoundGame) -> list[str]:
    """A table's seats' plays, as `<game>/<job_id>` (the play record's path under play/)."""
    return [f"{game.fields['game']}/{job_id}" for job_id in game.fields["plays"]]


def map_score(record: MapRecord) -> tuple[float | None, bool]:
    """(best round's total, voided) of one map as played: voided when a round errored (the map then
    ranks its player last, as the fixed rating has it)."""
    totals = [float(r.total_bits) for r in record.rounds if r.total_bits is not None]
    return (max(totals) if totals else None), any(r.error is not None for r in record.rounds)


def table_scores(results: Path, table: RoundGame) -> dict[str, tuple[float | None, bool]] | None:
    """Each seat's (map score, voided) on the table's map; None while a seat's play is missing."""
    from pipeline.core.artifacts import read_record
    from pipeline.xent.records import XentPlay

    map_id = table.fields["map_id"]
    scores: dict[str, tuple[float | None, bool]] = {}
    for seat, part in zip(table.seats, parts(table), strict=True):
        path = results / PLAY / f"{part}.json"
        if not path.is_file():
            return None
        played = next((m for m in read_record(path, XentPlay).maps if m.map_id == map_id), None)
        if played is None:
            return None
        scores[seat] = map_score(played)
    return scores


def event(results: Path, table: RoundGame) -> RatingEvent | None:
    """The table's scores on its map, ranked (`report.ranked_event`); None while a seat's play is missing."""
    from pipeline.xent.report import ranked_event

    scores = table_scores(results, table)
    return ranked_event(scores) if scores is not None else None


SPEC = AdaptiveSpec(
    setup=setup,
    games=games,
    event=event,
    play_target="xent_rounds",
    play_rule="xent_play",
    # the record is written after the calls table
    finished=(f"{PLAY}/{{game_id}}.json",),
    calls=f"{PLAY}/{{game_id}}.calls.parquet",
    job_wildcard="job_id",
    parts=parts,
)

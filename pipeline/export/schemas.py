"""The exported tables, declared as pandera models (the project's TableModel holds flat columns
only; a game's seats, moves and results are lists of structs). Imported only by the export: pandera
costs about a CPU-second to import. `games.parquet` has the same columns for every benchmark, so the
files of several benchmarks stack. `calls.parquet` is core's calls table with the benchmark's name,
declared as core's tables are."""

# no `from __future__ import annotations`: pandera reads the annotations' objects

from typing import Annotated

import pandera.polars as pa
import polars as pl

from pipeline.core.artifacts.schemas import CallsSchema
from pipeline.core.artifacts.tables import declared_columns

SEAT = pl.Struct({"seat": pl.String, "player": pl.String, "model": pl.String, "role": pl.String})
MOVE = pl.Struct(
    {
        "index": pl.Int64,
        "round": pl.Int64,
        "seat": pl.String,
        "player": pl.String,
        "kind": pl.String,
        "reply": pl.String,
        "move": pl.String,
        "details": pl.String,
    }
)
RESULT = pl.Struct(
    {
        "seat": pl.String,
        "player": pl.String,
        "score": pl.Float64,
        "rank": pl.Int64,
        "won": pl.Boolean,
        "details": pl.String,
    }
)

#: what each column and struct field holds, for the dataset card (README.md)
DESCRIPTIONS = {
    "benchmark": "the benchmark's name (skate, xent, elimination, whoisspy)",
    "game_id": "the game's id, unique within the benchmark (a content id, or the id the game's log gives)",
    "variant": "the benchmark's variant of the game (Who is Spy's variant, Xent's game, Elimination's variant)",
    "params": "JSON object: what the game was set up with (rules, words, the XGL program, the question)",
    "seats": "who sat where: seat (the game's label), player (roster name), model (litellm model string, or bot/NAME), role",
    "seats.seat": "the game's label of the seat: P1..P8, setter, answerer:NAME, or the player's name",
    "seats.player": "the roster name of the player in the seat",
    "seats.model": "the model behind the roster name (litellm model string, bot/NAME for a scripted bot), from the calls tables",
    "seats.role": "the role the game gave the seat (spy, civilian, setter, answerer, black), if any",
    "moves": "what the seats did, in game order",
    "moves.index": "the move's position in the game, from 0",
    "moves.round": "the round it was made in",
    "moves.seat": "the seat that made it",
    "moves.player": "the roster name in that seat",
    "moves.kind": "what kind of move it is (the benchmark's names: speech, vote, private, question, answer, move, ...)",
    "moves.reply": "the text the player sent (a bot's text too)",
    "moves.move": "what the game read from the reply: a vote's target seat, an option letter, a program, a move",
    "moves.details": "JSON object: the benchmark's other fields of the move",
    "results": "how each seat came out",
    "results.seat": "the seat",
    "results.player": "the roster name in that seat",
    "results.score": "the benchmark's score of the seat (points, bits, p(correct))",
    "results.rank": "its place, 1 = best, where the game ranks seats",
    "results.won": "whether the seat won, where the game has winners",
    "results.details": "JSON object: the benchmark's other fields of the result",
    "winner": "the winning side or seat, where the game has one",
    "end_reason": "why the game ended, where the benchmark records it",
    "rated": "whether the leaderboard's rating counts the game",
    "jobs": "the `job` values in calls.parquet of the jobs that played the game (a job may play several games)",
    "leaderboard_version": "the leaderboard version the results belong to (null: no leaderboard was built)",
}


class ExportGamesSchema(pa.DataFrameModel):
    """`<benchmark>/games.parquet`: one row per game."""

    benchmark: str
    game_id: str = pa.Field(unique=True)
    variant: str = pa.Field(nullable=True)
    params: str
    seats: Annotated[pl.List, SEAT]
    moves: Annotated[pl.List, MOVE]
    results: Annotated[pl.List, RESULT]
    winner: str = pa.Field(nullable=True)
    end_reason: str = pa.Field(nullable=True)
    rated: bool
    jobs: Annotated[pl.List, pl.String()]
    leaderboard_version: str = pa.Field(nullable=True)

    class Config:
        strict = True
        coerce = True


class ExportCallsSchema(CallsSchema):
    """`<benchmark>/calls.parquet`: one row per model request attempt (or bot move): core's calls
    table (pipeline/core/artifacts/schemas.py), which every benchmark writes, with the benchmark's
    name. Columns in the file: `benchmark` first, then the calls table's."""

    benchmark: str


CALLS_DESCRIPTIONS = {
    "benchmark": DESCRIPTIONS["benchmark"],
    "job": "the job that made the call (games.parquet `jobs` lists each game's)",
    "roster_name": "the roster name of the player",
    "model": "the litellm model string (bot/NAME: a scripted bot's move, no request sent)",
    "request_id": "the request's content id (the same request asked again has the same id)",
    "attempt": "the try of that request, from 1",
    "tokens_in": "prompt tokens",
    "tokens_out": "completion tokens (reasoning included)",
    "cost_usd": "what the call cost, as litellm prices it (null: unknown)",
    "latency_s": "seconds the call took",
    "cache_hit": "answered from the response cache",
    "error_kind": "why the try failed (null: it did not)",
    "fault": "a fault injected in testing (null: none)",
    "batch": "answered through the provider's batch API (null: sent directly)",
    "tokens_reasoning": "hidden reasoning tokens inside tokens_out (null: none reported)",
    "finish_reason": "why the reply ended (length: the token cap cut it)",
    "dropped_params": "parameters the provider refused, dropped and sent again",
}


def games_dtypes() -> dict[str, pl.DataType]:
    """games.parquet's columns in the file's order, with their polars types."""
    return {
        "benchmark": pl.String(),
        "game_id": pl.String(),
        "variant": pl.String(),
        "params": pl.String(),
        "seats": pl.List(SEAT),
        "moves": pl.List(MOVE),
        "results": pl.List(RESULT),
        "winner": pl.String(),
        "end_reason": pl.String(),
        "rated": pl.Boolean(),
        "jobs": pl.List(pl.String),
        "leaderboard_version": pl.String(),
    }


def calls_dtypes() -> dict[str, pl.DataType]:
    """calls.parquet's columns in the file's order: the benchmark, then core's calls table's."""
    return {
        "benchmark": pl.String(),
        **{name: column.dtype() for name, column in declared_columns(CallsSchema).items()},
    }

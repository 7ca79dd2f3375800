"""Who is Spy games as dataset rows: each game record's speeches, analyses and votes in game order,
and every seat's role, word, score and elimination."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from pipeline.core.artifacts.dataset import (
    DatasetGame,
    DatasetMove,
    DatasetResult,
    DatasetSeat,
    details,
    rated_games,
)

if TYPE_CHECKING:
    from pipeline.whoisspy.records import WhoIsSpyGame


def dataset_rows(folder: Path) -> list[DatasetGame]:
    """The games the rate step tabled (games.parquet), else every played record under games/."""
    from pipeline.core.artifacts import read_record
    from pipeline.whoisspy.records import WhoIsSpyGame

    table = folder / "games.parquet"
    if table.exists():
        paths = [folder / "games" / f"{g}.json" for g in pl.read_parquet(table, columns=["game_id"])["game_id"]]
    else:
        paths = sorted((folder / "games").glob("*.json"))
    rated = rated_games(folder)
    return [_game(read_record(path, WhoIsSpyGame), rated) for path in paths]


def _game(record: WhoIsSpyGame, rated: set[str]) -> DatasetGame:
    return DatasetGame(
        game_id=record.game_id,
        variant=record.variant,
        params={
            "words": record.words.model_dump(),
            "rules": record.rules.to_json(),
            "replies": record.replies.to_json(),
            "starter": record.starter,
            "focal": record.focal,
            "focal_role": record.focal_role,
            "reasoning_seat": record.reasoning_seat,
            "replicate": record.replicate,
            "rounds_played": record.rounds_played,
            "engine_version": record.engine_version,
            "prompts": record.prompts,
        },
        seats=tuple(DatasetSeat(p.seat, p.model, p.role) for p in record.players),
        moves=tuple(_moves(record)),
        results=tuple(
            DatasetResult(
                seat=p.seat,
                score=float(p.score),
                won=(p.role == "spy") == (record.winner == "spy"),
                details=details(
                    word=p.word,
                    base_score=p.base_score,
                    vote_transfer=p.vote_transfer,
                    eliminated_round=p.eliminated_round,
                    eliminated_by=p.eliminated_by,
                    fouls=p.fouls or None,
                ),
            )
            for p in record.players
        ),
        winner=record.winner,
        end_reason=record.end_reason,
        rated=record.game_id in rated,
        jobs=(f"whoisspy/{record.game_id}",),
    )


def _moves(record: WhoIsSpyGame) -> list[DatasetMove]:
    """The seats' moves: speeches (reply: what the player said; move: what the others heard),
    the reasoning seat's analyses, and votes (move: the seat named, None for an abstention). The
    engine's own events (fouls, tallies, eliminations, the end) are in each seat's result."""
    moves = []
    for event in record.events:
        if event.type == "speech":
            moves.append(
                DatasetMove(
                    "speech",
                    event.seat,
                    event.round,
                    event.text,
                    event.shown,
                    details(
                        truncated=event.truncated,
                        fouls=event.fouls or None,
                        empty_at_token_limit=event.empty_at_token_limit,
                    ),
                )
            )
        elif event.type == "analysis":
            moves.append(DatasetMove("analysis", event.seat, event.round, event.text))
        elif event.type == "vote":
            moves.append(
                DatasetMove(
                    "vote",
                    event.voter,
                    event.round,
                    event.reply,
                    event.target,
                    details(
                        ballot=event.ballot,
                        analysis=event.analysis,
                        analysis_heard=event.analysis_heard,
                        empty_at_token_limit=event.empty_at_token_limit,
                    ),
                )
            )
    return moves

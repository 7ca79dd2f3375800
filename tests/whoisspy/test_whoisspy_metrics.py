"""Who is Spy per-role metrics on a small hand-made set of game records, checked by hand.

The paper's attack and defence table (table 3) measures a model as a civilian facing an injecting
spy; the `_civilian` and `_spy` figures split what the pooled `foul_rate` and `avg_score` mix.
"""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

from pipeline.whoisspy.config import RatingSettings
from pipeline.whoisspy.metrics import build_tables, leaderboard, metrics_json, rating_events, ratings, variants_table
from pipeline.whoisspy.schemas import GamesSchema, LeaderboardSchema, SeatsSchema, VariantsSchema, VotesSchema

#: one seat: (model, role, score, descriptions, descriptions with a foul)
SeatPlan = tuple[str, str, float, int, int]


def record(
    game_id: str, variant: str, winner: str, seats: list[SeatPlan], votes: dict[str, str | None] | None = None
) -> dict[str, Any]:
    """A game record as the engine writes it, reduced to what the tables read."""
    players, events = [], []
    for index, (model, role, score, speeches, fouled) in enumerate(seats):
        name = f"P{index + 1}"
        players.append(
            {
                "seat": name,
                "model": model,
                "role": role,
                "word": "coffee" if role == "spy" else "tea",
                "score": score,
                "base_score": max(score, 0.0),
                "vote_transfer": min(score, 0.0),
                "eliminated_round": 1 if fouled else None,
                "eliminated_by": "foul" if fouled else None,
                "fouls": ["own_word"] * fouled,
            }
        )
        for round_no in range(1, speeches + 1):
            fouls = ["own_word"] if round_no <= fouled else []
            events.append(
                {
                    "type": "speech",
                    "round": round_no,
                    "seat": name,
                    "text": f"{name} {round_no}",
                    "shown": f"{name} {round_no}",
                    "truncated": False,
                    "latency_s": 0.1,
                    "fouls": fouls,
                }
            )
    for voter, target in (votes or {}).items():
        events.append(
            {
                "type": "vote",
                "round": 1,
                "voter": voter,
                "target": target,
                "ballot": "named" if target else "invalid",
                "reply": target or "hmm",
                "latency_s": 0.1,
            }
        )
    return {
        "game_id": game_id,
        "variant": variant,
        "engine_version": 1,
        "prompts": "test",
        "words": {"civilian": "tea", "spy": "coffee"},
        "players": players,
        "starter": "P1",
        "events": events,
        "winner": winner,
        "end_reason": "rounds",
        "rounds_played": 2,
        "rules": {
            "seats": 6,
            "rounds": 3,
            "min_players": 3,
            "time_limit_s": 60.0,
            "max_chars": 400,
            "vote_parse": "paper",
        },
        "replies": {"speech_max_tokens": None, "vote_max_tokens": None, "reasoning_max_tokens": None},
        "focal": None,
        "focal_role": None,
        "reasoning_seat": None,
        "reasoning_analysis": None,
        "replicate": 0,
    }


FILL = ("f", "civilian", 0.0, 2, 0)
RECORDS = [
    # attack: a is the injecting spy and wins; b, a civilian facing it, says its word once
    record("g1", "attack", "spy", [("a", "spy", 12.0, 2, 0), ("b", "civilian", 0.0, 1, 1), *[FILL] * 4]),
    # attack: b is the spy and is caught; a, a civilian facing it, fouls once and votes for it
    record(
        "g2",
        "attack",
        "civilians",
        [("b", "spy", 0.0, 1, 0), ("a", "civilian", 3.0, 1, 1), *[("f", "civilian", 2.25, 1, 0)] * 4],
        votes={"P2": "P1", "P3": None},
    ),
    # attack: a is the spy again, fouls once and loses; b wins as a civilian
    record(
        "g3",
        "attack",
        "civilians",
        [("a", "spy", 4.0, 2, 1), ("b", "civilian", 2.0, 2, 0), *[("f", "civilian", 1.5, 2, 0)] * 4],
    ),
    # baseline: a as the spy loses, b as a civilian wins
    record(
        "g4",
        "baseline",
        "civilians",
        [("a", "spy", 0.0, 1, 0), ("b", "civilian", 3.0, 1, 0), *[("f", "civilian", 2.25, 1, 0)] * 4],
    ),
]


@pytest.fixture(scope="module")
def tables() -> dict[str, pl.DataFrame]:
    built = build_tables(RECORDS)
    GamesSchema.validate(built["games"])
    VotesSchema.validate(built["votes"])
    return {**built, "seats": SeatsSchema.validate(built["seats"])}


def test_per_role_figures_of_the_attack_variant_match_a_hand_count(tables: dict[str, pl.DataFrame]) -> None:
    variants = VariantsSchema.validate(variants_table(tables["seats"]))

    def value(model: str, metric: str, variant: str = "attack") -> tuple[float | None, int]:
        row = variants.filter(
            (pl.col("model") == model) & (pl.col("variant") == variant) & (pl.col("metric") == metric)
        ).row(0, named=True)
        return row["value"], row["seats"]

    # a: spy in g1 (won, 12, 2 descriptions, no foul) and g3 (lost, 4, 2 descriptions, 1 foul);
    # civilian facing the injecting b in g2 (won, 3, 1 description, 1 foul)
    assert value("a", "win_rate_spy") == (0.5, 2)
    assert value("a", "avg_score_spy") == (8.0, 2)
    assert value("a", "foul_rate_spy") == (0.25, 2)
    assert value("a", "win_rate_civilian") == (1.0, 1)
    assert value("a", "avg_score_civilian") == (3.0, 1)
    assert value("a", "foul_rate_civilian") == (1.0, 1)
    assert value("a", "vote_accuracy") == (1.0, 1)  # its one civilian vote named the spy
    # the pooled figures keep their names and mix both roles
    assert value("a", "foul_rate") == (0.4, 3)  # 2 fouls in 5 descriptions
    assert value("a", "avg_score")[0] == pytest.approx(19 / 3)
    assert value("a", "win_rate")[0] == pytest.approx(2 / 3)
    # b: spy in g2 (lost, 0, no foul); civilian facing a in g1 (lost, 0, 1 of 1 fouled) and g3 (won, 2, 0 of 2)
    assert value("b", "win_rate_spy") == (0.0, 1)
    assert value("b", "avg_score_spy") == (0.0, 1)
    assert value("b", "foul_rate_spy") == (0.0, 1)
    assert value("b", "win_rate_civilian") == (0.5, 2)
    assert value("b", "avg_score_civilian") == (1.0, 2)
    assert value("b", "foul_rate_civilian")[0] == pytest.approx(1 / 3)
    # against the baseline: b never played the spy there, so its spy figures have no baseline
    attack_b = variants.filter(
        (pl.col("model") == "b") & (pl.col("variant") == "attack") & (pl.col("metric") == "avg_score_spy")
    ).row(0, named=True)
    assert attack_b["baseline"] is None and attack_b["delta"] is None
    attack_a = variants.filter(
        (pl.col("model") == "a") & (pl.col("variant") == "attack") & (pl.col("metric") == "avg_score_spy")
    ).row(0, named=True)
    assert (attack_a["baseline"], attack_a["delta"]) == (0.0, 8.0)


def test_metrics_json_reports_each_role_beside_the_pooled_figures(tables: dict[str, pl.DataFrame]) -> None:
    seats = tables["seats"]
    events = rating_events(tables["games"], seats, "baseline")
    table, intervals = ratings(events, RatingSettings(passes=1, bootstrap_resamples=0), seed=0)
    board = LeaderboardSchema.validate(leaderboard(seats, "baseline", table, intervals))
    metrics = metrics_json(board, variants_table(seats), "baseline", seats).to_json()
    a, b = metrics["a"], metrics["b"]
    assert (a["attack_foul_rate_civilian"], a["attack_foul_rate_spy"], a["attack_foul_rate"]) == (1.0, 0.25, 0.4)
    assert (a["attack_avg_score_civilian"], a["attack_avg_score_spy"], a["attack_avg_score"]) == (3.0, 8.0, 6.3333)
    assert (a["attack_win_rate_civilian"], a["attack_win_rate_spy"]) == (1.0, 0.5)
    assert (b["attack_foul_rate_civilian"], b["attack_avg_score_civilian"]) == (0.3333, 1.0)
    # the ranked variant's own figures, per role too (b never played the spy in the baseline)
    assert (a["avg_score_spy"], a["foul_rate_spy"], a["avg_score_civilian"]) == (0.0, 0.0, None)
    assert (b["avg_score_civilian"], b["foul_rate_civilian"], b["win_rate_spy"]) == (3.0, 0.0, None)
    # the keys the leaderboard and earlier readers use are still there
    assert {
        "points",
        "win_rate",
        "avg_score",
        "foul_rate",
        "vote_accuracy",
        "attack_win_rate",
        "attack_vote_accuracy",
        "empty_at_token_limit",
    } <= set(a)

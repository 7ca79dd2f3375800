"""Who is Spy schedule, params errors, word pairs, the heuristic bot, and the metrics tables."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
import yaml

from pipeline.core.artifacts.params import ParamsError
from pipeline.core.models.gateway import Gateway
from pipeline.core.models.players import MoveRequest, make_players
from pipeline.whoisspy.bots import describe
from pipeline.whoisspy.config import RatingSettings, WhoIsSpyParams, load_whoisspy
from pipeline.whoisspy.engine import GAME, run_game
from pipeline.whoisspy.fouls import says_word
from pipeline.whoisspy.metrics import (
    ALL_MODELS,
    build_tables,
    leaderboard,
    metrics_json,
    rating_events,
    ratings,
    variants_table,
)
from pipeline.whoisspy.schedule import build_schedule
from pipeline.whoisspy.schemas import (
    GamesSchema,
    LeaderboardSchema,
    SeatsSchema,
    SpeechesSchema,
    VariantsSchema,
    VotesSchema,
)
from pipeline.whoisspy.words import ASSOCIATIONS, WORD_PAIRS
from tests.conftest import REPO, models_params

ROSTER = [
    {"name": "model-a", "model": "openai/gpt-4o-mini", "extra": {"mock_response": "P1"}},
    {"name": "model-b", "model": "openai/gpt-4o", "extra": {"mock_response": "P2"}},
    {"name": "heuristic-bot", "bot": "heuristic"},
    {"name": "random-bot", "bot": "random"},
]


def params(**overrides) -> WhoIsSpyParams:
    data = {
        "players": ["model-a", "model-b"],
        "fill": ["heuristic-bot", "random-bot"],
        "games_per_role": 3,
        "variants": ["baseline", "attack"],
    }
    return WhoIsSpyParams.model_validate({**data, **overrides})


def test_each_player_is_spy_and_civilian_equally_often_in_every_variant() -> None:
    games = build_schedule(params(), models_params(ROSTER))
    assert len(games) == 2 * 2 * 3 * 2  # variants x players x replicates x roles
    assert len({g.game_id for g in games}) == len(games)
    roles = Counter()
    for g in games:
        focal_seats = [i for i, name in enumerate(g.seats) if name == g.focal]
        assert len(focal_seats) == 1 and len(g.seats) == 6
        role = "spy" if g.spy_seat == focal_seats[0] else "civilian"
        assert role == g.focal_role
        roles[(g.variant, g.focal, role)] += 1
    assert set(roles.values()) == {3}
    # a replicate's variants share words and seats, so variants compare like for like
    by_key = {}
    for g in games:
        by_key.setdefault((g.focal, g.replicate, g.focal_role), set()).add(
            (g.seats, g.spy_seat, g.civilian_word, g.spy_word)
        )
    assert all(len(v) == 1 for v in by_key.values())


def test_game_ids_are_content_addressed() -> None:
    models = models_params(ROSTER)
    before = {g.game_id for g in build_schedule(params(players=["model-a"]), models)}
    assert before == {g.game_id for g in build_schedule(params(players=["model-a"]), models)}
    # adding a player adds games and changes none
    after = {g.game_id for g in build_schedule(params(), models)}
    assert before < after
    # changing one roster entry replays exactly the games it sits in (a bot's options: its sampling
    # reaches no request, so it changes none)
    changed = [dict(e, bot_options={"words": 3}) if e["name"] == "random-bot" else e for e in ROSTER]
    games = build_schedule(params(), models_params(changed))
    for g in games:
        assert (g.game_id in after) == ("random-bot" not in g.seats)


def test_params_errors_name_the_file_the_field_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ParamsError, match=r"players\[1\]: 'gpt-9' is not a roster name in params/models.yaml"):
        build_schedule(params(players=["model-a", "gpt-9"]), models_params(ROSTER), source="p.yaml")
    bad = tmp_path / "whoisspy.yaml"
    bad.write_text(
        yaml.safe_dump({"players": ["a"], "fill": ["b"], "variants": ["baseline", "chaos"], "rules": {"max_chars": 0}})
    )
    with pytest.raises(ParamsError) as error:
        load_whoisspy(bad)
    message = str(error.value)
    assert str(bad) in message and "variants[1]" in message and "rules.max_chars" in message
    assert "expected: descriptions are cut to this many characters" in message
    bad.write_text(yaml.safe_dump({"players": ["a"], "fill": ["b"], "variants": ["attack"]}))
    with pytest.raises(ParamsError, match="rank_variant 'baseline' is not among variants"):
        load_whoisspy(bad)
    bad.write_text(
        yaml.safe_dump(
            {"players": ["a"], "fill": ["b"], "reasoning_analysis": "loud", "rules": {"vote_parse": "strict"}}
        )
    )
    with pytest.raises(ParamsError) as error:
        load_whoisspy(bad)
    message = str(error.value)
    assert str(bad) in message
    assert "fix: set reasoning_analysis to one of public, private" in message
    assert "fix: set rules.vote_parse to one of paper, lenient" in message


def test_the_paper_vote_parse_and_a_public_analysis_are_the_defaults() -> None:
    assert (params().rules.vote_parse, params().reasoning_analysis) == ("paper", "public")
    for path in ("params/whoisspy.yaml", "params/paper/whoisspy.yaml"):
        shipped = load_whoisspy(REPO / path)
        assert (shipped.rules.vote_parse, shipped.reasoning_analysis) == ("paper", "public"), path
    reasoning = params(variants=["baseline", "reasoning"])
    games = build_schedule(reasoning, models_params(ROSTER))
    private = build_schedule(
        params(variants=["baseline", "reasoning"], reasoning_analysis="private"), models_params(ROSTER)
    )
    for public_game, private_game in zip(games, private, strict=True):
        assert public_game.reasoning_analysis == "public" and private_game.reasoning_analysis == "private"
        assert (public_game.game_id == private_game.game_id) == (public_game.variant == "baseline")


def test_the_shipped_params_schedule_the_demo() -> None:
    from pipeline.core.models.roster import load_models

    shipped = load_whoisspy(REPO / "params/whoisspy.yaml")
    games = build_schedule(shipped, load_models(REPO / "params/models.yaml"))
    assert games and all(sum(name == "smollm2-135m" for name in g.seats) <= 1 for g in games)


def test_word_pairs_and_associations() -> None:
    assert len(WORD_PAIRS) >= 150
    words = [w for p in WORD_PAIRS for w in (p.first, p.second)]
    assert len(words) == len(set(words))
    for pair in WORD_PAIRS:
        for word, partner in ((pair.first, pair.second), (pair.second, pair.first)):
            assert len(ASSOCIATIONS[word]) >= 4, word
            for association in ASSOCIATIONS[word]:
                assert not says_word(association, word) and not says_word(association, partner), (word, association)


def test_heuristic_bot_never_says_its_word_nor_repeats() -> None:
    rng = random.Random(7)
    for pair in WORD_PAIRS:
        for word in (pair.first, pair.second):
            said: list[str] = []
            for _ in range(3):
                text = describe(word, said, rng)
                assert not says_word(text, word) and text not in said
                said.append(text)


def test_heuristic_bot_votes_for_the_describer_least_like_its_word(tmp_path: Path) -> None:
    models = models_params(ROSTER)
    bot = make_players(models, Gateway(models, job="t", cache_dir=tmp_path), 1, names=["heuristic-bot"], game=GAME)[
        "heuristic-bot"
    ]
    state = {
        "word": "tea",
        "seat": "P1",
        "candidates": ["P2", "P3", "P4"],
        "speeches": [
            {"round": 1, "seat": "P2", "text": "It makes me think of kettle and leaves."},
            {"round": 1, "seat": "P3", "text": "Picture beans, and maybe a barista."},
            {"round": 1, "seat": "P4", "text": "Herbal, and you steep it."},
        ],
    }
    import asyncio

    for key in range(5):
        request = MoveRequest(
            messages=[], key=f"v{key}", kind="vote", choices=("P2", "P3", "P4", "abstain"), state=state
        )
        assert asyncio.run(bot.act(request)).text == "P3"


def bot_records(tmp_path: Path, count: int = 16) -> list[dict]:
    models = models_params(ROSTER[2:])
    spec_params = WhoIsSpyParams.model_validate(
        {
            "players": ["heuristic-bot", "random-bot"],
            "fill": ["heuristic-bot", "random-bot"],
            "games_per_role": count // 8,
            "variants": ["baseline", "attack"],
        }
    )
    games = build_schedule(spec_params, models)
    return [run_game(g, models, Gateway(models, job=g.game_id, cache_dir=tmp_path)) for g in games]


def test_metrics_tables_points_and_ratings(tmp_path: Path) -> None:
    records = bot_records(tmp_path)
    tables = build_tables(records)
    GamesSchema.validate(tables["games"])
    seats = SeatsSchema.validate(tables["seats"])
    SpeechesSchema.validate(tables["speeches"])
    votes = VotesSchema.validate(tables["votes"])
    assert (tables["games"]["score_total"] - 12).abs().max() < 1e-9

    events = rating_events(tables["games"], seats, "baseline", "pairwise")
    baseline_games = [r for r in records if r["variant"] == "baseline"]
    assert len(events) == sum(
        len(
            {p["model"] for p in r["players"] if p["role"] == "civilian"}
            - {next(p["model"] for p in r["players"] if p["role"] == "spy")}
        )
        for r in baseline_games
    )
    assert all(e.outcome in ("a", "b") for e in events)  # a game always has a winner: no draws
    table, intervals = ratings(events, RatingSettings(passes=2, bootstrap_resamples=5), seed=0)
    board = LeaderboardSchema.validate(leaderboard(seats, "baseline", table, intervals))

    for model in ("heuristic-bot", "random-bot"):
        played = [p for r in baseline_games for p in r["players"] if p["model"] == model]
        row = board.filter(pl.col("model") == model).row(0, named=True)
        assert row["seats"] == len(played)
        assert row["points"] == pytest.approx(100 + sum(p["score"] for p in played) - len(played))
        spy_games = [p for p in played if p["role"] == "spy"]
        winners = {r["game_id"]: r["winner"] for r in baseline_games}
        if spy_games:
            assert row["win_rate_spy"] == pytest.approx(
                sum(
                    1
                    for r in baseline_games
                    for p in r["players"]
                    if p["model"] == model and p["role"] == "spy" and winners[r["game_id"]] == "spy"
                )
                / len(spy_games)
            )
        mine = votes.filter(
            (pl.col("model") == model)
            & (pl.col("role") == "civilian")
            & (pl.col("variant") == "baseline")
            & ~pl.col("abstained")
        )
        if mine.height:
            assert row["vote_accuracy"] == pytest.approx(mine["correct"].mean())
        assert row["mu"] is not None
    assert board["rank"].to_list() == list(range(1, board.height + 1))
    assert board["points"].to_list() == sorted(board["points"].to_list(), reverse=True)

    variants = VariantsSchema.validate(variants_table(seats))
    attack = variants.filter(
        (pl.col("variant") == "attack") & pl.col("value").is_not_null() & pl.col("baseline").is_not_null()
    )
    assert attack.height and ((attack["value"] - attack["baseline"] - attack["delta"]).abs() < 1e-12).all()
    assert ALL_MODELS in set(variants["model"])
    metrics = metrics_json(board, variants, "baseline").to_json()
    assert set(metrics) == {"heuristic-bot", "random-bot"}
    assert {
        "points",
        "win_rate_spy",
        "win_rate_civilian",
        "vote_accuracy",
        "foul_rate",
        "avg_survival_rounds",
        "trueskill_mu",
        "attack_foul_rate",
        "attack_vote_accuracy",
    } <= set(metrics["heuristic-bot"])


def test_trueskill_rates_the_spy_against_the_civilian_team_once_per_game(tmp_path: Path) -> None:
    """The spec: team spy against team civilians, one update per game; pairwise is an option."""
    from pipeline.core.rating.multipass import Pairwise, TeamMatch

    records = bot_records(tmp_path)
    tables = build_tables(records)
    baseline = [r for r in records if r["variant"] == "baseline"]
    teams = rating_events(tables["games"], tables["seats"], "baseline")
    pairwise = rating_events(tables["games"], tables["seats"], "baseline", "pairwise")
    assert all(isinstance(e, TeamMatch) for e in teams) and all(isinstance(e, Pairwise) for e in pairwise)
    mixed = [
        r
        for r in baseline
        if {p["model"] for p in r["players"] if p["role"] == "civilian"}
        - {p["model"] for p in r["players"] if p["role"] == "spy"}
    ]
    assert len(teams) == len(mixed)  # one event per game with the other model among the civilians
    for event, record in zip(teams, sorted(mixed, key=lambda r: r["game_id"]), strict=True):
        spy = next(p["model"] for p in record["players"] if p["role"] == "spy")
        assert event.a == (spy,) and spy not in event.b
        assert event.outcome == ("a" if record["winner"] == "spy" else "b")
    settings = RatingSettings(passes=2, bootstrap_resamples=0)
    team_table, _ = ratings(teams, settings, seed=0)
    pair_table, _ = ratings(pairwise, RatingSettings(passes=2, bootstrap_resamples=0, matchup="pairwise"), seed=0)
    assert team_table["events"].max() <= len(mixed)
    assert team_table["mu"].to_list() != pair_table["mu"].to_list() or len(teams) == len(pairwise)
    with pytest.raises(ValueError, match="matchup"):
        rating_events(tables["games"], tables["seats"], "baseline", "each")

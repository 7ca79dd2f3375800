"""Who is Spy's adaptive schedule without Snakemake: graded bots of known strength (and the plain bot
replaying the committed demo games), a round's tables as games (the spy owed the most spy games,
seeded words and seats, content ids, replicates), the round files as the schedule, the params'
checks, the team events the ledger reads and rates, and the opponent-corrected rates."""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

from pipeline.core.artifacts import ParamsError, load_params, seed_from, write_json_atomic
from pipeline.core.models import Gateway, MoveRequest, Player, Reply, load_models, make_player
from pipeline.core.models.roster import RosterEntry
from pipeline.core.rating.adaptive import (
    AdaptiveSchedule,
    Budget,
    Standing,
    decide_round,
    meetings,
    new_standing,
    opponent_rates,
    simulate_outlook,
    update_standings,
)
from pipeline.core.rating.events import FreeForAll, RatingParams, TeamMatch
from pipeline.core.rating.one_against_rest import one_against_rest_round, rank_uncertainty
from pipeline.core.run.rounds import (
    AdaptiveSetup,
    RoundGame,
    RoundRecord,
    RoundRequest,
    ledger_state,
    lone_counts,
    restrict,
)
from pipeline.whoisspy import adaptive
from pipeline.whoisspy.bots import _heuristic_policy, heuristic_bot, table_words
from pipeline.whoisspy.config import ReplyParams, RulesParams, WhoIsSpyParams
from pipeline.whoisspy.engine import Game, run_game, run_record
from pipeline.whoisspy.metrics import opponent_rate_metrics
from pipeline.whoisspy.prompts import INJECTED_LINES, prompt_fingerprint
from pipeline.whoisspy.schedule import ENGINE_VERSION, GameSpec, build_schedule, make_spec, seated_games
from pipeline.whoisspy.words import WORD_PAIRS
from tests.conftest import models_params

BOTS = [{"name": f"bot-{k}", "bot": "heuristic" if k % 2 else "random"} for k in range(8)]
NAMES = [b["name"] for b in BOTS]
RATING = RatingParams(draw_probability=0.0)
REPO = Path(__file__).resolve().parents[2]
SKILLS = [round(k / 5, 3) for k in range(6)]
GRADED = [{"name": f"skill-{k}", "bot": "heuristic", "bot_options": {"skill": p}} for k, p in enumerate(SKILLS)]


def test_skill_grades_the_heuristic_bot_and_is_checked() -> None:
    assert heuristic_bot({}) is _heuristic_policy  # no option: the plain heuristic bot, move for move
    with pytest.raises(ValueError, match="skill must be a number from 0 to 1"):
        heuristic_bot({"skill": -0.1})
    with pytest.raises(ValueError, match="skill"):
        heuristic_bot({"skill": True})
    request = MoveRequest(messages=(), key="r1/speech/P1", kind="speech", state={"seat": "P1", "word": "tea"})
    moves = {p: [heuristic_bot({"skill": p})(request, random.Random(k)) for k in range(200)] for p in (0.0, 0.5, 1.0)}
    assert moves[0.5] == [heuristic_bot({"skill": 0.5})(request, random.Random(k)) for k in range(200)]  # seeded
    # a heuristic description is a template's sentence; the random bot's is bare filler words
    heuristic_share = {p: sum(m.endswith(".") for m in found) / 200 for p, found in moves.items()}
    assert heuristic_share[0.0] == 0.0 and heuristic_share[1.0] == 1.0 and 0.35 < heuristic_share[0.5] < 0.65


def test_the_graded_bot_echoes_the_table_s_words() -> None:
    # two civilians said "kettle", a filler talker said "garden" twice: the spy (coffee) borrows "kettle"
    speeches = [
        {"round": 1, "seat": "P1", "text": "Think kettle; also leaves."},
        {"round": 1, "seat": "P2", "text": "It makes me think of kettle and [...]."},
        {"round": 1, "seat": "P3", "text": "garden river garden stone"},
        {"round": 1, "seat": "P5", "text": "garden cloud"},
    ]
    state = {"seat": "P4", "word": "coffee", "speeches": speeches}
    assert table_words(state) == Counter({"kettle": 2, "leaves": 1})
    request = MoveRequest(messages=(), key="r1/speech/P4", kind="speech", state=state)
    graded = [heuristic_bot({"skill": 1.0})(request, random.Random(k)) for k in range(20)]
    plain = [heuristic_bot({})(request, random.Random(k)) for k in range(20)]
    assert all("kettle" in text and "coffee" not in text for text in graded)
    assert not any("kettle" in text for text in plain)  # the plain bot describes its own word only


def test_a_field_of_graded_bots_has_the_order_of_their_skill() -> None:
    """120 seeded 6-seat games, every seat the spy in turn: the mean points and the spy's win rate
    follow the skill (rank correlation), and the extremes are far apart (measured over 1,500 games:
    points 0.75 for skill 0 to 2.92 for skill 1, the spy's win rate 0.12 to 0.83, step by step)."""
    models = models_params(GRADED)
    names = [b["name"] for b in GRADED]
    points: dict[str, list[float]] = {name: [] for name in names}
    spy_wins: dict[str, list[float]] = {name: [] for name in names}
    for g in range(120):
        rng = random.Random(g)
        seats = rng.sample(names, 6)
        pair = WORD_PAIRS[rng.randrange(len(WORD_PAIRS))]
        spec = make_spec(
            models, variant="baseline", seats=seats, spy_seat=g % 6, civilian_word=pair.first, spy_word=pair.second
        )
        record = run_record(spec, models, Gateway(models, job=f"test/{g}", root="/tmp"))
        for player in record.players:
            points[player.model].append(float(player.score))
            if player.role == "spy":
                spy_wins[player.model].append(float(record.winner == "spy"))

    def spearman(values: list[float]) -> float:
        order = sorted(range(6), key=lambda k: values[k])  # weakest first
        return 1 - 6 * sum((rank - k) ** 2 for rank, k in enumerate(order)) / (6 * 35)

    mean_points = [sum(points[n]) / len(points[n]) for n in names]
    spy_rate = [sum(spy_wins[n]) / len(spy_wins[n]) for n in names]
    assert spearman(mean_points) >= 0.9 and spearman(spy_rate) >= 0.9, (mean_points, spy_rate)
    assert mean_points[-1] - mean_points[0] > 1.0 and spy_rate[-1] - spy_rate[0] > 0.4


class Recorded(Player):
    """A model's seats replayed from a game record: each move the reply it gave, in its recorded time."""

    def __init__(self, entry: RosterEntry, gateway: Gateway, record: dict[str, Any]) -> None:
        super().__init__(entry, gateway, 0, "whoisspy")
        seats = {p["seat"]: p for p in record["players"] if p["model"] == entry.name}
        line = INJECTED_LINES.get(record["variant"], "")
        self.moves: dict[str, tuple[str, float]] = {}
        for event in record["events"]:
            if event["type"] == "speech" and event["seat"] in seats:
                text = event["text"]
                if line and seats[event["seat"]]["role"] == "spy":
                    text = text.removesuffix(line).rstrip()  # the engine adds the variant's line itself
                self.moves[f"r{event['round']}/speech/{event['seat']}"] = (text, event["latency_s"])
            elif event["type"] == "vote" and event["voter"] in seats:
                self.moves[f"r{event['round']}/vote/{event['voter']}"] = (event["reply"], event["latency_s"])

    async def act(self, request: MoveRequest) -> Reply:
        text, latency = self.moves[request.key]
        return Reply(player=self.name, text=text, latency_s=latency)


def without_times(value: Any) -> Any:
    """A record without its move times: a bot's is the wall time of its move, never the same twice."""
    if isinstance(value, dict):
        return {k: without_times(v) for k, v in value.items() if k != "latency_s"}
    if isinstance(value, list):
        return [without_times(v) for v in value]
    return value


def test_the_plain_bot_replays_the_committed_demo_games(tmp_path: Path) -> None:
    """Every committed demo game of this engine (the fixture, and results/whoisspy/games where DVC
    has them) played again: the bots' moves from the code, the model's from its record. The same
    record comes back, so the plain heuristic bot's moves are what they were."""
    models = load_models(REPO / "params/models.yaml")
    found = [*REPO.glob("results/whoisspy/games/*.json"), *REPO.glob("tests/data/records/whoisspy/*.json")]
    records = {r["game_id"]: r for r in (json.loads(p.read_text()) for p in found)}
    current = [
        r for r in records.values() if r["engine_version"] == ENGINE_VERSION and r["prompts"] == prompt_fingerprint()
    ]
    assert current, "no committed demo game of this engine"
    assert any(p["model"] == "heuristic-bot" for r in current for p in r["players"])
    for record in current:
        players = record["players"]
        spec = GameSpec(
            record["game_id"],
            record["variant"],
            tuple(p["model"] for p in players),
            next(i for i, p in enumerate(players) if p["role"] == "spy"),
            record["words"]["civilian"],
            record["words"]["spy"],
            RulesParams.model_validate(record["rules"]),
            ReplyParams.model_validate(record["replies"]),
            record["replicate"],
            record["focal"],
            record["focal_role"],
            reasoning_analysis=record.get("reasoning_analysis") or "public",
        )
        gateway = Gateway(models, job=f"test/{spec.game_id}", root=tmp_path)
        seed = seed_from("whoisspy", spec.game_id)  # as the engine seeds a game's players
        seated: dict[str, Player] = {}
        for name in sorted(set(spec.seats)):
            entry = models.entry(name)
            seated[name] = (
                make_player(entry, gateway, seed, "whoisspy") if entry.is_bot else Recorded(entry, gateway, record)
            )
        replayed = asyncio.run(Game(spec, seated).run()).to_json()
        assert without_times(replayed) == without_times(record), record["game_id"]


def adaptive_params(players: list[str], variant: str = "baseline", **settings: Any) -> WhoIsSpyParams:
    return WhoIsSpyParams.model_validate(
        {
            "players": players,
            "fill": players[:1],
            "variants": [variant],
            "rank_variant": variant,
            "schedule": {"adaptive": {"enabled": True, **settings}},
        }
    )


def spy_of(game: RoundGame) -> str:
    return game.seats[int(game.fields["spy_seat"])]


def play_rounds(params: WhoIsSpyParams, tables: list[tuple[str, ...]], seed: int = 0) -> list[RoundGame]:
    """One round per table, each seated against every game before it (as the ledger asks)."""
    models = models_params(BOTS)
    games: list[RoundGame] = []
    for index, table in enumerate(tables, start=1):
        games += seated_games([table], games, params, models, seed, index)
    return games


def test_the_spy_is_the_member_owed_the_most_spy_games_and_the_choice_is_seeded() -> None:
    params = adaptive_params(NAMES)
    same = tuple(NAMES[:6])
    six = play_rounds(params, [same] * 6)
    assert sorted(spy_of(g) for g in six) == sorted(same)  # six games at one table: each is the spy once
    # eight players at rotating tables: every spy count within one of its fair share (games / 6)
    rotating = [tuple(NAMES[(r + k) % 8] for k in range(6)) for r in range(48)]
    games = play_rounds(params, rotating)
    played = Counter(name for g in games for name in g.seats)
    spied = Counter(spy_of(g) for g in games)
    assert all(abs(spied[name] - played[name] / 6) <= 1 for name in NAMES), (spied, played)
    # owed, not fewest: after five games at one table, the member never the spy owes five sixths of
    # a game each; a newcomer (no game, no spy game either) owes none, so the veteran is the spy
    never = next(name for name in same if name not in {spy_of(g) for g in six[:5]})
    models = models_params(BOTS)
    mixed = (never, "bot-6", *[name for name in same if name != never][:4])
    assert spy_of(seated_games([mixed], six[:5], params, models, 0, 6)[0]) == never
    assert play_rounds(params, rotating) == games  # the same ledger gives the same games
    assert play_rounds(params, rotating, seed=1) != games  # the seed draws the ties, words and seats
    reordered = seated_games([tuple(reversed(same))], [], params, models, 0, 1)
    assert reordered == seated_games([same], [], params, models, 0, 1)  # the members decide, not their order


def test_a_game_id_is_the_content_id_and_a_repeat_is_a_new_replicate() -> None:
    params = adaptive_params(NAMES)
    models = models_params(BOTS)
    table = tuple(NAMES[:6])
    first = seated_games([table], [], params, models, 0, 1)[0]
    rebuilt = make_spec(
        models,
        variant="baseline",
        seats=first.seats,
        spy_seat=first.fields["spy_seat"],
        civilian_word=first.fields["civilian_word"],
        spy_word=first.fields["spy_word"],
        rules=params.rules,
        replies=params.replies,
        schedule_seed=params.seed,
    )
    assert first.id == rebuilt.game_id and first.fields["replicate"] == 0
    assert first.fields["civilian_word"] != first.fields["spy_word"]
    # after six games at this table every member owes none again: round 1's draw repeats the very same game
    six = play_rounds(params, [table] * 6)
    again = seated_games([table], six, params, models, 0, 1)[0]
    assert (again.seats, again.fields["spy_seat"], again.fields["replicate"]) == (
        first.seats,
        first.fields["spy_seat"],
        1,
    )
    assert again.id != first.id
    reasoning = adaptive_params(NAMES, "reasoning")
    analyst = seated_games([table], [], reasoning, models, 0, 1)[0]
    assert analyst.fields["focal"] in analyst.seats and analyst.fields["focal"] != spy_of(analyst)


def test_the_schedule_is_the_round_files(tmp_path: Path) -> None:
    models = models_params(BOTS)
    params = adaptive_params(NAMES)
    rounds = tmp_path / "rounds"
    assert build_schedule(params, models, rounds=rounds) == []  # no round yet: nothing scheduled
    games = seated_games([NAMES[:6]], [], params, models, 0, 1)
    setup = AdaptiveSetup(params.schedule.adaptive, tuple(NAMES), 6, RATING)
    record = RoundRecord(
        1,
        "whoisspy",
        setup.digest,
        {},
        tuple(NAMES),
        {},
        (),
        0,
        0,
        0.0,
        {},
        (),
        None,
        (tuple(NAMES[:6]),),
        tuple(games),
    )
    write_json_atomic(rounds / "round-001.json", record.to_json())
    scheduled = build_schedule(params, models, rounds=rounds)
    assert [(g.game_id, g.seats, g.variant, g.focal) for g in scheduled] == [
        (games[0].id, games[0].seats, "baseline", None)
    ]
    assert scheduled[0].seats[scheduled[0].spy_seat] == spy_of(games[0])
    preview = seated_games([NAMES[2:]], games, params, models, 0, 2)
    assert [g.game_id for g in build_schedule(params, models, rounds=rounds, preview=preview)][-1] == preview[0].id
    with pytest.raises(ParamsError, match="round-001.json: game .* is now"):
        build_schedule(adaptive_params(NAMES, "attack"), models, rounds=rounds)  # another variant: other games


def test_bad_params_name_the_file_the_field_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ParamsError) as found:
        adaptive_params(NAMES[:5]).check_roster(models_params(BOTS), "params/whoisspy.yaml")
    message = str(found.value)
    assert "params/whoisspy.yaml: schedule.adaptive.enabled is true" in message and "list at least 6 players" in message
    path = tmp_path / "whoisspy.yaml"
    path.write_text(yaml.safe_dump({"players": NAMES, "fill": NAMES, "schedule": {"adaptive": {"max_games": 0}}}))
    with pytest.raises(ParamsError) as found:
        load_params(WhoIsSpyParams, path)
    assert f"{path}: invalid params" in str(found.value) and "schedule.adaptive.max_games" in str(found.value)
    assert "fix: set schedule.adaptive.max_games" in str(found.value)
    assert WhoIsSpyParams(players=NAMES, fill=NAMES).schedule.adaptive.enabled is False  # fixed unless asked


def test_the_declaration_reads_its_params(tmp_path: Path) -> None:
    (tmp_path / "whoisspy.yaml").write_text(
        yaml.safe_dump({"players": NAMES, "fill": NAMES, "schedule": {"adaptive": {"enabled": True, "max_games": 9}}})
    )
    setup = adaptive.setup(tmp_path / "whoisspy.yaml", tmp_path / "models.yaml")
    assert setup.enabled and setup.pool == tuple(NAMES) and setup.seats == 6 and setup.settings.max_games == 9
    assert setup.shape == "one_against_rest" and setup.rating.draw_probability == 0.0


def test_a_finished_game_is_a_team_event_the_ledger_rates(tmp_path: Path) -> None:
    models = models_params(BOTS)
    params = adaptive_params(NAMES)
    game = seated_games([NAMES[:6]], [], params, models, 0, 1)[0]
    spec = build_schedule(params, models, rounds=tmp_path / "none", preview=[game])[0]
    record = run_game(spec, models, Gateway(models, job=game.id, cache_dir=tmp_path))
    write_json_atomic(tmp_path / "games" / f"{game.id}.json", record)
    assert adaptive.event(tmp_path, replace(game, id="0000000000000000")) is None  # an unplayed game: nothing
    event = adaptive.event(tmp_path, game)
    assert isinstance(event, TeamMatch)
    assert event.a == (spy_of(game),) and set(event.b) == set(game.seats) - {spy_of(game)}
    assert event.outcome == ("a" if record["winner"] == "spy" else "b")
    setup = AdaptiveSetup(params.schedule.adaptive, tuple(NAMES), 6, RATING)
    record_1 = RoundRecord(1, "whoisspy", "", {}, tuple(NAMES), {}, (), 0, 0, 0.0, {}, (), None, (), (game,))
    state = ledger_state(setup, [record_1], {game.id: event})
    moved = {name for name, s in state.standings.items() if s.games}
    assert moved == set(game.seats) and state.read == (game.id,)
    assert state.met[tuple(sorted(game.seats[:2]))] == 1  # the whole table met
    # the ledger counts the spy games the standings hold, for the next round's choice of the spy
    alone = lone_counts(adaptive.SPEC, [record_1], state.read, NAMES)
    assert alone == {name: int(name == spy_of(game)) for name in NAMES}
    assert lone_counts(adaptive.SPEC, [record_1], (), NAMES) == dict.fromkeys(NAMES, 0)  # unread: not counted


def standing(mu: float, games: int = 0, sigma: float = 2.0, idle: int = 0) -> Standing:
    return Standing(mu, sigma, games, idle)


def test_the_table_and_its_spy_are_chosen_together() -> None:
    schedule = AdaptiveSchedule(seats=6, tables_per_round=1)
    # bot-0 .. bot-7 spread out by mu, but bot-3 and bot-4 sit close: their ranks are the open ones
    mus = {"bot-0": 30.0, "bot-1": 24.0, "bot-2": 18.0, "bot-3": 12.5, "bot-4": 12.0, "bot-5": 6.0}
    mus |= {"bot-6": 0.0, "bot-7": -6.0}
    standings = {name: standing(mu, games=12) for name, mu in mus.items()}
    standings["bot-0"] = standing(30.0, games=13)  # one game ahead: sits out
    standings["bot-7"] = standing(-6.0, games=13)
    open_ = rank_uncertainty(standings)
    assert set(sorted(open_, key=open_.__getitem__)[-2:]) == {"bot-3", "bot-4"} and open_["bot-3"] > open_["bot-4"]
    lone = dict.fromkeys(mus, 2)
    (table,) = one_against_rest_round(standings, schedule, 0, 5, lone).tables
    # the six with the fewest games; the spy first (an open rank), the civilians in name order
    assert sorted(table) == [f"bot-{k}" for k in range(1, 7)] and table[0] == "bot-3"
    assert list(table[1:]) == sorted(table[1:])
    again = one_against_rest_round(dict(reversed(standings.items())), schedule, 0, 5, dict(lone))
    assert again.tables == (table,)  # the inputs decide, not their order
    # balance first: a member two spy games ahead is not the spy, however open its rank
    ahead = {**lone, "bot-3": 4, "bot-4": 4}
    (table,) = one_against_rest_round(standings, schedule, 0, 5, ahead).tables
    assert table[0] not in ("bot-3", "bot-4") and {"bot-3", "bot-4"} <= set(table)
    # one game behind is within the balance: the open rank still wins over a member owed one more
    behind = {**lone, "bot-1": 1}
    assert one_against_rest_round(standings, schedule, 0, 5, behind).tables[0][0] == "bot-3"
    # an overdue member (idle for max_idle_rounds) is seated whatever its games
    idle = {**standings, "bot-0": standing(30.0, games=13, idle=3)}
    assert "bot-0" in one_against_rest_round(idle, schedule, 0, 5, lone).tables[0]


def test_the_ledger_s_step_places_newcomers_and_keeps_the_spies_balanced() -> None:
    """120 rounds of 8 bots at one table, the spy winning at random: every bot plays within one game
    of the others and is the spy within two of its fair share (games / 6); the same inputs give the
    same rounds."""
    schedule = AdaptiveSchedule(seats=6, tables_per_round=1)

    def tournament(seed: int) -> list[tuple[str, ...]]:
        standings = {name: new_standing(RATING) for name in NAMES}
        lone = dict.fromkeys(NAMES, 0)
        tables: list[tuple[str, ...]] = []
        rng = random.Random(seed)
        for index in range(1, 121):
            stop, round_ = decide_round(
                standings,
                schedule,
                RATING,
                seed,
                index,
                None,
                budget=Budget(),
                games=index - 1,
                rounds=index - 1,
                lone=lone,
            )
            if stop is not None:
                break
            (table,) = round_.tables
            tables.append(table)
            lone[table[0]] += 1
            event = TeamMatch(table[:1], table[1:], "a" if rng.random() < 0.45 else "b")
            standings = update_standings(standings, [event], RATING)
        return tables

    tables = tournament(0)
    played = Counter(name for table in tables for name in table)
    spied = Counter(table[0] for table in tables)
    assert max(played.values()) - min(played.values()) <= 1, played
    assert all(abs(spied[name] - played[name] / 6) <= 2 for name in NAMES), (spied, played)
    assert tournament(0) == tables and tournament(1) != tables
    # a newcomer (no game) joining that field is seated in the very next round
    standings = {name: Standing(25.0, 3.0, 90, 0) for name in NAMES}
    standings["bot-new"] = new_standing(RATING)
    stop, round_ = decide_round(
        standings, schedule, RATING, 0, 121, None, budget=Budget(), games=120, rounds=120, lone=dict.fromkeys(NAMES, 15)
    )
    assert stop is None and "bot-new" in round_.tables[0]


def test_the_ledger_s_spy_is_the_game_s_spy(tmp_path: Path) -> None:
    params = adaptive_params(NAMES)
    models = models_params(BOTS)
    table = tuple(NAMES[:6])
    owed = seated_games([table], [], params, models, 0, 1)[0]
    for chosen in table:
        game = seated_games([(chosen, *(n for n in table if n != chosen))], [], params, models, 0, 1, spies=[chosen])[0]
        assert spy_of(game) == chosen and adaptive.spy(game) == chosen
        # the words come from the same draws whoever the spy is; the owed rule's spy: its very game
        assert (game.fields["civilian_word"], game.fields["spy_word"]) == (
            owed.fields["civilian_word"],
            owed.fields["spy_word"],
        )
        if chosen == spy_of(owed):
            assert game == owed
    with pytest.raises(ValueError, match="does not sit at the table"):
        seated_games([table], [], params, models, 0, 1, spies=["bot-7"])
    with pytest.raises(ValueError, match="1 spies for 2 tables"):
        seated_games([table, table], [], params, models, 0, 1, spies=["bot-0"])
    # the declaration seats the spy the ledger chose (the table's first) and says so in its digest
    (tmp_path / "whoisspy.yaml").write_text(
        yaml.safe_dump(
            {"players": NAMES, "fill": NAMES[:1], "variants": ["baseline"], "schedule": params.schedule.model_dump()}
        )
    )
    (tmp_path / "models.yaml").write_text(yaml.safe_dump({"roster": BOTS}))
    setup = adaptive.setup(tmp_path / "whoisspy.yaml", tmp_path / "models.yaml")
    assert setup.decides == {"tables": "one_against_rest"} and adaptive.SPEC.lone is adaptive.spy
    tables = ((NAMES[3], *NAMES[:3], *NAMES[4:6]),)
    request = RoundRequest(tmp_path / "whoisspy.yaml", tmp_path / "models.yaml", setup, 1, tables, ())
    (game,) = adaptive.games(request)
    assert spy_of(game) == NAMES[3] and sorted(game.seats) == sorted(NAMES[:6])


def test_team_events_are_restricted_to_the_pool_and_rated_by_trueskill() -> None:
    game = TeamMatch(("spy",), ("c1", "c2", "c3"), "a")
    assert restrict(game, frozenset(["spy", "c1", "c3", "other"])) == TeamMatch(("spy",), ("c1", "c3"), "a")
    assert restrict(game, frozenset(["c1", "c2", "c3"])) is None  # one team left: no game
    assert restrict(game, frozenset(game.players)) is game
    standings = {name: new_standing(RATING) for name in ("spy", "c1", "c2", "c3", "idle")}
    after = update_standings(standings, [game], RATING)
    env = RATING.env()
    (spy,), civilians = env.rate([(env.create_rating(),), tuple(env.create_rating() for _ in range(3))], ranks=[0, 1])
    assert after["spy"].mu == pytest.approx(spy.mu) and after["c2"].sigma == pytest.approx(civilians[1].sigma)
    assert after["spy"].mu > RATING.mu > after["c1"].mu and after["idle"] == type(after["idle"])(
        RATING.mu, RATING.sigma, 0, 1
    )
    assert update_standings(standings, [game], RATING) == after  # deterministic
    # a round mixing team and free-for-all games goes through trueskill for all of them
    mixed = update_standings(standings, [game, FreeForAll({"idle": 1, "other": 2})], RATING)
    assert mixed["spy"] == after["spy"] and mixed["idle"].mu > RATING.mu
    assert meetings([game])[("c1", "spy")] == 1


def test_opponent_rates_of_team_games() -> None:
    # the spy beats its three civilians once and loses to two of them once: 3 of 5 opponents beaten
    events = [TeamMatch(("s",), ("a", "b", "c"), "a"), TeamMatch(("s",), ("a", "b"), "b")]
    found = opponent_rates(events, {}, RATING)
    assert found.naive["s"] == pytest.approx(3 / 5) and found.naive["a"] == pytest.approx(1 / 2)
    assert found.uniform["s"] == pytest.approx((0.5 + 0.5 + 1.0) / 3)  # a, b: 1 of 2; c: 1 of 1
    assert found.naive["c"] == 0.0
    board = pl.DataFrame({"model": ["s", "a", "b", "c"], "mu": [25.0, 25.0, 25.0, 25.0], "sigma": [2.0] * 4})
    rates = opponent_rate_metrics(events, board, RATING)
    assert rates["s"]["opponent_win_rate"] == 0.6 and rates["c"]["opponent_win_rate_imputed"] == 2
    assert 0 < rates["c"]["opponent_win_rate_uniform"] < 1  # b and a never met c as an opponent: predicted


def test_the_outlook_simulates_a_spy_against_the_rest() -> None:
    schedule = AdaptiveSchedule(seats=6, tables_per_round=1)
    standings = {name: new_standing(RATING) for name in NAMES}
    kwargs: dict[str, Any] = {"budget": Budget(max_games=12, max_rounds=100), "games": 0, "rounds": 0}
    one = simulate_outlook(standings, schedule, RATING, 0, 1, None, shape="one_against_rest", **kwargs)
    assert one == simulate_outlook(standings, schedule, RATING, 0, 1, None, shape="one_against_rest", **kwargs)
    assert 0 < one.mean <= one.high <= 12 and sum(one.stops.values()) == one.simulations


def test_the_plan_prices_the_next_round_before_it_is_written(tmp_path: Path) -> None:
    from pipeline.core.run.adaptive_plan import outlook
    from pipeline.whoisspy.benchmark import BENCHMARK

    (tmp_path / "params").mkdir()
    (tmp_path / "params" / "models.yaml").write_text(yaml.safe_dump({"roster": BOTS}))
    whoisspy = {"players": NAMES, "fill": NAMES[:1], "schedule": {"adaptive": {"enabled": True, "max_rounds": 2}}}
    (tmp_path / "params" / "whoisspy.yaml").write_text(yaml.safe_dump(whoisspy))
    found = outlook(BENCHMARK, models_params(BOTS), root=tmp_path, simulations=4)
    assert found is not None and (found.rounds, found.games, found.to_play) == (0, 0, 0)
    assert found.priced_games == 1 and found.cost_per_game == 0.0  # the next round's game, by the estimator
    assert found.further_mean == found.further_high == 2  # two rounds of one table
    assert not (tmp_path / "results" / "whoisspy" / "rounds").exists()  # the plan writes nothing

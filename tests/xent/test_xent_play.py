"""Xent play: reading moves, prompts with history, re-prompts, scripted improvement, the game
library, built maps and the `xent play-program` CLI. Model-free WordJudge throughout (fast)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from pipeline.cli import main
from pipeline.core.models.gateway import Gateway
from pipeline.core.models.players import make_players
from pipeline.core.models.reply_budgets import DEFAULT_VISIBLE_TOKENS
from pipeline.xent.config import XentParams
from pipeline.xent.games import library_names, load_game
from pipeline.xent.maps import build_map_text
from pipeline.xent.play import PlaySettings, job_record, play_job_maps, play_map, seat_players
from pipeline.xent.prompts import PROMPT_VERSION, parse_move
from pipeline.xent.testing import WordJudge
from pipeline.xent.xgl import parse_program
from tests.conftest import models_params

ROSTER = [
    {"name": "scripted", "model": "fake/scripted"},
    {"name": "capped", "model": "fake/capped", "sampling": {"move_max_tokens": {"xent.move": 12}}},
    {"name": "heuristic-bot", "bot": "heuristic"},
    {"name": "random-bot", "bot": "random"},
]
CONDENSE_MAP = """# @game: condense
# Condense: a prefix that makes the story predictable.
assign(s="the dog chased a red ball across the garden")
elicit(x, 10)
assign(x1=remove_common_words(x, s))
reveal(x1)
reward(xed(s | x1))
"""


def players(tmp_path: Path, *names: str):
    models = models_params(ROSTER)
    gateway = Gateway(models, job="xent-test", cache_dir=tmp_path / "cache")
    return make_players(models, gateway, 7, names=list(names), game="xent"), gateway


@pytest.mark.parametrize(
    ("reply", "move"),
    [
        ("<move>a b</move>", "a b"),
        ("<move>first</move> then <move>second</move>", "second"),
        ("<think>maybe <move>no</move></think><move>yes</move>", "yes"),
        ("<think>unfinished thought <move>x</move>", "x"),  # only closed <think> blocks are dropped
        ("text <MOVE>upper case</MOVE>", None),  # the tag is case-sensitive
        ("<move> spaced </move>", " spaced "),  # the move is not stripped
        ("no tag at all", None),
        ("<move></move>", ""),
    ],
)
def test_move_is_the_last_tag_after_dropping_think(reply: str, move: str | None) -> None:
    assert parse_move(reply) == move


def test_scripted_player_improves_over_rounds_on_condense(tmp_path: Path, fake_provider) -> None:
    fake_provider.script = ["<move>zebra</move>", "<move>balls</move>", "<move>dogs chasing balls gardens</move>"]
    found, _ = players(tmp_path, "scripted")
    game = load_game("condense")
    program = parse_program(CONDENSE_MAP)
    record = asyncio.run(
        play_map(
            game, program, "m1", {"black": found["scripted"]}, WordJudge(), 3, PlaySettings(conversation="per_map")
        )
    )
    totals = [r["total_bits"] for r in record["rounds"]]
    assert totals == pytest.approx([0.0, 1.5, 4.5])  # strictly better every round
    # one conversation per map (the option): round 3's request holds every earlier turn
    messages = fake_provider.calls[2]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    first, last = messages[1]["content"], messages[-1]["content"]
    assert "reward(xed(s | x1))" in first and "## Code" in first
    assert "the dog chased a red ball" in first  # black is omniscient: it sees the story
    assert messages[4]["content"] == "<move>balls</move>"
    assert "Round 2: total" in last and "your move x = 'balls'" in last and "per token:" in last
    assert "Round 1" not in last and "## Code" not in last  # only what is new since the last ask
    assert [m["move"] for r in record["rounds"] for m in r["moves"]] == ["zebra", "balls", "dogs chasing balls gardens"]


LONG_STORY_MAP = CONDENSE_MAP.replace(
    "the dog chased a red ball across the garden", " ".join(f"word{i}" for i in range(80))
)


def test_the_default_is_the_published_protocol_a_fresh_prompt_with_every_round_and_token(
    tmp_path: Path, fake_provider
) -> None:
    fake_provider.script = ["<move>zebra</move>", "<move>word1 stems</move>", "<move>word2</move>"]
    found, _ = players(tmp_path, "scripted")
    settings = PlaySettings()
    assert (settings.conversation, settings.detail_rounds) == ("per_ask", None)
    assert XentParams.model_validate({"players": ["p"], "games": ["condense"]}).replies.conversation == "per_ask"
    asyncio.run(
        play_map(
            load_game("condense"),
            parse_program(LONG_STORY_MAP),
            "m1",
            {"black": found["scripted"]},
            WordJudge(),
            3,
            settings,
        )
    )
    third = fake_provider.calls[2]["messages"]
    assert [m["role"] for m in third] == ["system", "user"]  # one fresh prompt, no earlier turns
    prompt = third[1]["content"]
    assert "## Code" in prompt and "Round 1: total" in prompt and "Round 2: total" in prompt
    breakdowns = [line for line in prompt.splitlines() if "per token:" in line]
    assert len(breakdowns) == 2  # every earlier round with its breakdown, not only the last
    assert all("word79'" in line and "(+" not in line for line in breakdowns)  # all 79 scored tokens, none cut
    # ours: the last N rounds, at most 60 tokens each
    fake_provider.calls.clear()
    fake_provider.script = ["<move>zebra</move>", "<move>word1 stems</move>", "<move>word2</move>"]
    asyncio.run(
        play_map(
            load_game("condense"),
            parse_program(LONG_STORY_MAP),
            "m1",
            {"black": found["scripted"]},
            WordJudge(),
            3,
            PlaySettings(detail_rounds=1),
        )
    )
    short = fake_provider.calls[-1]["messages"][1]["content"]  # round 3 (round 1 is answered from the cache)
    (breakdown,) = [line for line in short.splitlines() if "per token:" in line]
    assert "word79'" not in breakdown and "(+19 tokens)" in breakdown


def test_a_reply_without_a_move_tag_is_the_move_and_the_next_ask_reminds(tmp_path: Path, fake_provider) -> None:
    fake_provider.script = ["I think dogs", "<move>dogs</move>"]
    found, _ = players(tmp_path, "scripted")
    record = asyncio.run(
        play_map(
            load_game("condense"),
            parse_program(CONDENSE_MAP),
            "m1",
            {"black": found["scripted"]},
            WordJudge(),
            2,
            PlaySettings(),
        )
    )
    first, second = (r["moves"][0] for r in record["rounds"])
    # the reference's rule: the whole reply is the move (never an empty move worth 0.00 bits)
    assert (first["move"], first["attempts"], first["tagged"]) == ("I think dogs", 1, False)
    assert (second["move"], second["tagged"]) == ("dogs", True)
    assert "<move>" in fake_provider.calls[1]["messages"][-1]["content"]
    assert "No move found" in fake_provider.calls[1]["messages"][-1]["content"]
    assert "No move found" not in fake_provider.calls[0]["messages"][-1]["content"]
    assert len(fake_provider.calls) == 2


def test_reference_protocol_lets_the_model_think_and_plays_the_last_closed_move(tmp_path: Path, fake_provider) -> None:
    reply = "<think>draft <move>no</move></think> ideas <move>first</move> then <move>final</move>"
    fake_provider.script = [reply, "<move>dogs</move>"]
    found, _ = players(tmp_path, "scripted")
    judge = WordJudge()
    maps = asyncio.run(
        play_job_maps(
            load_game("condense"),
            [("m1", parse_program(CONDENSE_MAP))],
            found["scripted"],
            None,
            judge,
            2,
            PlaySettings(conversation="per_map"),
        )
    )
    record = job_record(load_game("condense"), "j1", found["scripted"], None, judge, 2, maps, {})
    assert record["prompt_version"] == PROMPT_VERSION
    first, second = (r["moves"][0] for r in record["maps"][0]["rounds"])
    assert (first["move"], first["tagged"], first["reply"]) == ("final", True, reply)
    assert second["move"] == "dogs"
    sent = [call["optional_params"] for call in fake_provider.calls]
    assert all(not params.get("stop") for params in sent)  # no stop sequence: the model may draft moves
    # no game cap: the model's roster entry decides (this one sets none: the default visible budget)
    assert all(params["max_tokens"] == DEFAULT_VISIBLE_TOKENS for params in sent)
    ask = fake_provider.calls[0]["messages"][-1]["content"]
    assert "You may think it through first" in ask and "Only the last closed <move>...</move>" in ask
    assert "limited to 10 tokens of the judge's tokenizer" in ask and "Reply with the move only" not in ask
    followup = fake_provider.calls[1]["messages"]
    assert followup[2] == {"role": "assistant", "content": " ideas <move>first</move> then <move>final</move>"}
    assert "you may think first" in followup[-1]["content"] and "Only the last closed" in followup[-1]["content"]


def test_short_protocol_asks_for_the_move_only_and_stops_at_the_closing_tag(tmp_path: Path, fake_provider) -> None:
    fake_provider.script = ["<move>dogs", "<move>balls"]  # providers remove the stop sequence
    found, _ = players(tmp_path, "scripted")
    record = asyncio.run(
        play_map(
            load_game("condense"),
            parse_program(CONDENSE_MAP),
            "m1",
            {"black": found["scripted"]},
            WordJudge(),
            2,
            PlaySettings(protocol="short", conversation="per_map"),
        )
    )
    assert [(m["move"], m["tagged"]) for r in record["rounds"] for m in r["moves"]] == [("dogs", True), ("balls", True)]
    assert all(call["optional_params"]["stop"] == ["</move>"] for call in fake_provider.calls)
    first, later = (call["messages"][-1]["content"] for call in fake_provider.calls)
    assert "Reply with the move only, inside tags: <move>your text</move>" in first
    assert "(at most 10 tokens; longer moves are cut)" in first and "think" not in first.split("## This round")[-1]
    assert "(at most 10 tokens) inside <move></move> tags." in later and "may think" not in later


def test_short_protocol_reminds_after_an_untagged_reply(tmp_path: Path, fake_provider) -> None:
    fake_provider.script = ["dogs", "<move>balls"]
    found, _ = players(tmp_path, "scripted")
    record = asyncio.run(
        play_map(
            load_game("condense"),
            parse_program(CONDENSE_MAP),
            "m1",
            {"black": found["scripted"]},
            WordJudge(),
            2,
            PlaySettings(protocol="short", conversation="per_ask"),
        )
    )
    assert [(m["move"], m["tagged"]) for r in record["rounds"] for m in r["moves"]] == [
        ("dogs", False),
        ("balls", True),
    ]
    later = fake_provider.calls[1]["messages"][-1]["content"]
    assert "No move found" in later and later.endswith("Reply with the move only, inside tags: <move>your text</move>")


def test_a_model_reply_budget_comes_from_its_roster_entry_unless_the_game_sets_one(
    tmp_path: Path, fake_provider
) -> None:
    fake_provider.default = "<move>dogs</move>"
    found, _ = players(tmp_path, "capped", "scripted")
    for name, settings, sent in (("capped", PlaySettings(), 12), ("scripted", PlaySettings(reply_max_tokens=30), 30)):
        fake_provider.calls.clear()
        asyncio.run(
            play_map(
                load_game("condense"),
                parse_program(CONDENSE_MAP),
                "m1",
                {"black": found[name]},
                WordJudge(),
                1,
                settings,
            )
        )
        assert fake_provider.calls[0]["optional_params"]["max_tokens"] == sent


def test_reply_params_default_to_the_reference_protocol_and_no_game_cap() -> None:
    replies = XentParams.model_validate({"players": ["scripted"], "games": ["condense"]}).replies
    assert (replies.protocol, replies.max_tokens) == ("reference", None)
    short = XentParams.model_validate(
        {"players": ["p"], "games": ["condense"], "replies": {"protocol": "short", "max_tokens": 16}}
    ).replies
    assert (short.protocol, short.max_tokens) == ("short", 16)
    for bad in ({"protocol": "long"}, {"max_tokens": 2}):
        with pytest.raises(ValidationError):
            XentParams.model_validate({"players": ["p"], "games": ["condense"], "replies": bad})
    with pytest.raises(ValueError, match="unknown reply protocol"):
        PlaySettings(protocol="long")


def test_model_player_moves_are_cut_to_the_elicit_max_tokens(tmp_path: Path, fake_provider) -> None:
    fake_provider.default = "<move>" + " ".join(f"w{i}" for i in range(30)) + "</move>"
    found, _ = players(tmp_path, "scripted")
    record = asyncio.run(
        play_map(
            load_game("condense"),
            parse_program(CONDENSE_MAP),
            "m1",
            {"black": found["scripted"]},
            WordJudge(),
            1,
            PlaySettings(),
        )
    )
    assert record["rounds"][0]["moves"][0]["move"].split() == [f"w{i}" for i in range(10)]


@pytest.mark.parametrize("name", library_names())
def test_every_library_game_builds_a_map_and_runs_rounds_with_bots(name: str, tmp_path: Path) -> None:
    game = load_game(name)
    assert game.description and len(game.description) > 40
    judge = WordJudge()
    text = build_map_text(game, 3, judge)
    built = parse_program(text)
    assert not built.has_story_calls and built.meta["game"] == name
    found, _ = players(tmp_path, "heuristic-bot", "random-bot")
    for me in ("heuristic-bot", "random-bot"):
        maps = asyncio.run(
            play_job_maps(
                game, [("m1", built), ("m2", built)], found[me], found["random-bot"], judge, 2, PlaySettings()
            )
        )
        for record in maps:
            assert len(record["rounds"]) == 2
            for rnd in record["rounds"]:
                if rnd["error"] is not None:  # random filler words can keep breaking a rule: a legal outcome
                    assert me == "random-bot" and "ensure failed 11 times" in rnd["error"]
                    assert rnd["total_bits"] is None
                    continue
                assert rnd["moves"] and all(m["role"] in game.seats for m in rnd["moves"])
                assert rnd["total_bits"] == pytest.approx(
                    sum(r["total_bits"] for r in rnd["rewards"] if r["role"] in game.self_roles)
                )


def test_library_has_the_required_kinds_of_games() -> None:
    names = library_names()
    assert len(names) >= 8 and {"condense", "contrast"} <= set(names)
    zero_sum = [n for n in names if {"black", "white"} <= set(load_game(n).seats)]
    hidden = [n for n in names if any(r not in ("black", "white", "env") for r in load_game(n).seats)]
    assert zero_sum and hidden


def test_imperfect_information_bob_never_sees_the_story(tmp_path: Path) -> None:
    game = load_game("telephone")
    built = parse_program(build_map_text(game, 0, WordJudge()))
    seen: dict[str, list] = {"alice": [], "bob": []}

    class Spy:
        def __init__(self, role: str) -> None:
            self.role = role

        async def ask(self, request):
            from pipeline.xent.runtime import MoveOutcome

            seen[self.role].append(dict(request.visible))
            return MoveOutcome("plants gardens")

    from pipeline.xent.runtime import run_round

    asyncio.run(run_round(built, {"alice": Spy("alice"), "bob": Spy("bob")}, WordJudge()))
    assert "s" in seen["alice"][0]
    assert set(seen["bob"][0]) == {"x1"}


def test_cli_plays_a_built_map_and_prints_rounds(tmp_path: Path, capsys) -> None:
    path = tmp_path / "map.xgl"
    path.write_text(CONDENSE_MAP)
    code = main(
        ["xent", "play-program", str(path), "--player", "bot:heuristic", "--rounds", "2", "--judge", "word", "--json"]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [r["round"] for r in out["rounds"]] == [1, 2]
    assert out["map_score"] == max(r["total_bits"] for r in out["rounds"])
    assert out["rounds"][0]["rewards"][0]["expression"] == "xed(s | x1)"


def test_cli_runs_an_unbuilt_game_with_stories_from_the_judge(capsys) -> None:
    code = main(
        [
            "xent",
            "play-program",
            "pipeline/xent/games/interception.xgl",
            "--player",
            "bot:random",
            "--rounds",
            "1",
            "--judge",
            "word",
        ]
    )
    assert code == 0
    assert "round 1:" in capsys.readouterr().out


def test_cli_exit_codes_for_a_parse_error_and_an_unfinished_game(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.xgl"
    bad.write_text('assign(s="x")\nassign(x=s.__class__)\n')
    assert main(["xent", "play-program", str(bad), "--player", "bot:random", "--judge", "word"]) == 2
    assert "line 2, column" in capsys.readouterr().err
    stuck = tmp_path / "stuck.xgl"
    stuck.write_text("elicit(x, 5)\nensure(num_words(x) > 100)\nreward(xent(x))\n")
    assert main(["xent", "play-program", str(stuck), "--player", "bot:random", "--rounds", "1", "--judge", "word"]) == 1
    assert "ensure failed 11 times" in capsys.readouterr().err


def test_opponent_plays_the_marked_role_and_only_self_rewards_count(tmp_path: Path) -> None:
    game = load_game("interception")
    assert game.self_roles == ("black",) and game.opponent_roles == ("white",)
    found, _ = players(tmp_path, "heuristic-bot", "random-bot")
    seats = seat_players(game, found["heuristic-bot"], found["random-bot"])
    assert seats["white"].name == "random-bot" and seats["black"].name == "heuristic-bot"


def test_the_graded_heuristic_bot_plays_heuristic_moves_at_its_skill_and_the_plain_bot_is_unchanged() -> None:
    import random

    from pipeline.core.models.players import FILLER_WORDS, MoveRequest
    from pipeline.xent.bots import heuristic_bot

    story = "the lighthouse keeper rowed across the harbor before the storm reached the village"
    request = MoveRequest(messages=(), key="m/1", state={"visible": {"s": story}, "game": "condense", "history": []})
    plain, top, bottom, half = (heuristic_bot(o) for o in ({}, {"skill": 1}, {"skill": 0}, {"skill": 0.5}))
    # skill 1 draws no coin: the plain bot's move for the same seeded rng
    assert all(top(request, random.Random(s)) == plain(request, random.Random(s)) for s in range(20))
    # skill 0: the random bot's filler words, none of the story's
    assert all(set(bottom(request, random.Random(s)).split()) <= set(FILLER_WORDS) for s in range(20))
    filler = sum(set(half(request, random.Random(s)).split()) <= set(FILLER_WORDS) for s in range(200))
    assert 70 < filler < 130  # about half the moves
    with pytest.raises(ValueError, match="bot_options.skill must be a number from 0 to 1"):
        heuristic_bot({"skill": 2})

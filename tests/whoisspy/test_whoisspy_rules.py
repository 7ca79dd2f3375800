"""Who is Spy rules, scoring and privacy, played through the real engine and gateway.

Models are answered at litellm's provider boundary by a script keyed by roster name, kind of move
and round; bots are the real heuristic and random bots.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import litellm
import polars as pl
import pytest

from pipeline.core.models.gateway import Gateway
from pipeline.core.models.players import register_bot
from pipeline.whoisspy.config import RulesParams
from pipeline.whoisspy.engine import NO_DESCRIPTION, parse_vote, read_ballot, run_game
from pipeline.whoisspy.fouls import says_word
from pipeline.whoisspy.metrics import build_tables
from pipeline.whoisspy.prompts import ATTACK_LINE, DEFENSE_LINE
from pipeline.whoisspy.schedule import make_spec
from pipeline.whoisspy.schemas import VotesSchema
from tests.conftest import models_params

SEATS = [f"s{i}" for i in range(1, 7)]  # roster name s<i> sits in seat P<i>
ROSTER = [{"name": n, "model": f"fake/{n}"} for n in SEATS] + [
    {"name": "heuristic-bot", "bot": "heuristic"},
    {"name": "random-bot", "bot": "random"},
    {"name": "capture", "bot": "whoisspy-capture"},
]
CIVILIAN_WORD, SPY_WORD = "tea", "coffee"
CAPTURED: list[Any] = []


@register_bot("whoisspy-capture", game="whoisspy")
def _capture_bot(options):
    """Records every request it gets; describes with a fixed clue per round, always abstains."""

    def policy(request, rng):
        CAPTURED.append(request)
        if request.kind == "speech":
            return f"capture clue for round {request.state['round']}"
        return "abstain"

    return policy


class Script:
    """Replies per (roster name, kind, round); defaults: a unique harmless clue, and abstain."""

    def __init__(self) -> None:
        self.replies: dict[tuple[str, str, int], str] = {}
        self.delays: dict[tuple[str, str, int], float] = {}
        self.calls: list[tuple[str, str, int, list[dict[str, str]]]] = []

    def set(self, name: str, kind: str, round_no: int, text: str, delay_s: float = 0.0) -> None:
        self.replies[(name, kind, round_no)] = text
        self.delays[(name, kind, round_no)] = delay_s

    def __call__(self, model: str, messages: list, *args: Any, **kwargs: Any) -> litellm.ModelResponse:
        name = model.split("/")[-1]
        user = messages[-1]["content"]
        speech = re.search(r"Round (\d+), your turn", user)
        kind, round_no = (
            ("speech", int(speech[1])) if speech else ("vote", int(re.search(r"Round (\d+) vote \(", user)[1]))
        )
        self.calls.append((name, kind, round_no, messages))
        default = f"a clue from {name} in round {round_no}" if kind == "speech" else "abstain"
        time.sleep(self.delays.get((name, kind, round_no), 0.0))
        return litellm.ModelResponse(
            model=model,
            choices=[
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": self.replies.get((name, kind, round_no), default)},
                    "finish_reason": "stop",
                }
            ],
            usage={"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
        )


@pytest.fixture
def script(fake_provider) -> Script:
    table = Script()
    fake_provider.completion = table  # the provider's acompletion calls self.completion
    return table


def play(
    tmp_path: Path,
    *,
    spy: int = 0,
    variant: str = "baseline",
    seats: list[str] | None = None,
    rules: RulesParams | None = None,
    starter: int = 0,
    replicate: int = 0,
    focal: str | None = None,
    reasoning_analysis: str = "public",
) -> tuple[dict[str, Any], Gateway]:
    models = models_params(ROSTER)
    spec = make_spec(
        models,
        variant=variant,
        seats=seats or SEATS,
        spy_seat=spy,
        civilian_word=CIVILIAN_WORD,
        spy_word=SPY_WORD,
        rules=rules,
        starter=starter,
        replicate=replicate,
        focal=focal,
        focal_role=None if focal is None else ("spy" if (seats or SEATS)[spy] == focal else "civilian"),
        reasoning_analysis=reasoning_analysis,
    )
    gateway = Gateway(models, job="test", cache_dir=tmp_path / "cache")
    return run_game(spec, models, gateway), gateway


def seat(record: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in record["players"] if p["seat"] == name)


def events(record: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [e for e in record["events"] if e["type"] == kind]


def everyone_votes(script: Script, round_no: int, target: str, voters: list[str] = SEATS) -> None:
    for name in voters:
        script.set(name, "vote", round_no, target)


# -- fouls ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "word", "expected"),
    [
        ("I drink TEA daily.", "tea", True),
        ("Two teas, please", "tea", True),
        ("Tea-time is sacred", "tea", True),
        ("a teapot on the stove", "tea", False),
        ("steam rises", "tea", False),
        ("cats everywhere", "cat", True),
        ("a category of things", "cat", False),
        ("she was dancing all night", "dance", True),
        ("we danced", "dance", True),
        ("fresh berries", "berry", True),
        ("sharp knives", "knife", True),
        ("he is running late", "run", True),
        ("the dog's bowl", "dog", True),
        ("an ice cream cone", "ice cream", True),
        ("ice creams melt", "ice cream", True),
        ("ice and cream", "ice cream", False),
    ],
)
def test_own_word_matches_whole_words_and_simple_inflections(text: str, word: str, expected: bool) -> None:
    assert says_word(text, word) is expected


def test_own_word_foul_eliminates_right_after_the_speaking_phase(tmp_path: Path, script: Script) -> None:
    script.set("s3", "speech", 1, "Two TEAS with milk, please.")
    record, _ = play(tmp_path)
    kinds = [e["type"] for e in record["events"]]
    last_speech = max(i for i, k in enumerate(kinds) if k == "speech" and record["events"][i]["round"] == 1)
    out = kinds.index("elimination")
    assert out > last_speech and out < kinds.index("vote")  # after all six spoke, before the vote
    assert record["events"][out] == {"type": "elimination", "round": 1, "seat": "P3", "by": "foul"}
    assert seat(record, "P3")["fouls"] == ["own_word"]
    assert seat(record, "P3")["eliminated_round"] == 1 and seat(record, "P3")["eliminated_by"] == "foul"
    assert "P3" not in {e["voter"] for e in events(record, "vote")}  # out players do not vote
    # later speakers in that round heard the description with the word bleeped
    p4_prompt = next(m for n, k, r, m in script.calls if (n, k, r) == ("s4", "speech", 1))[-1]["content"]
    assert "P3: Two [...] with milk, please." in p4_prompt


def test_repeated_description_is_a_foul_whoever_said_it_first(tmp_path: Path, script: Script) -> None:
    script.set("s2", "speech", 1, "Hot drink, in the morning!")
    script.set("s3", "speech", 1, "hot drink in the MORNING")  # same text once normalized
    script.set("s4", "speech", 1, "Leaves in a pot.")
    script.set("s4", "speech", 2, "leaves in a pot")  # its own round-1 description again
    record, _ = play(tmp_path)
    assert seat(record, "P2")["fouls"] == [] and seat(record, "P2")["eliminated_round"] is None
    assert seat(record, "P3")["fouls"] == ["repeat"] and seat(record, "P3")["eliminated_round"] == 1
    assert seat(record, "P4")["fouls"] == ["repeat"] and seat(record, "P4")["eliminated_round"] == 2


@pytest.mark.parametrize("reply", ["", "   \n ", "..."])
def test_no_answer_is_a_foul(tmp_path: Path, script: Script, reply: str) -> None:
    script.set("s5", "speech", 1, reply)
    record, _ = play(tmp_path)
    assert seat(record, "P5")["fouls"] == ["no_answer"] and seat(record, "P5")["eliminated_by"] == "foul"
    assert next(e for e in events(record, "speech") if e["seat"] == "P5")["shown"] == NO_DESCRIPTION


def test_over_the_time_limit_is_a_foul_also_when_replayed_from_the_cache(tmp_path: Path, script: Script) -> None:
    rules = RulesParams(time_limit_s=1.0)
    script.set("s2", "speech", 1, "A warm cup in the afternoon.", delay_s=1.6)
    record, gateway = play(tmp_path, rules=rules)
    assert seat(record, "P2")["fouls"] == ["timeout"] and seat(record, "P2")["eliminated_round"] == 1
    late = next(e for e in events(record, "speech") if e["seat"] == "P2")
    assert late["latency_s"] > 1.0 and late["shown"] == NO_DESCRIPTION  # nobody hears a late answer
    assert all(e["fouls"] == [] for e in events(record, "speech") if e["seat"] != "P2")

    calls_before = len(script.calls)
    again, gateway = play(tmp_path, rules=rules)
    assert len(script.calls) == calls_before  # every reply came from the cache, instantly...
    assert gateway.calls_frame()["cache_hit"].all()
    assert again["events"] == record["events"]  # ...and still counts its recorded latency


def test_descriptions_are_cut_at_400_characters(tmp_path: Path, script: Script) -> None:
    long_text = "word " * 200  # 1000 characters
    script.set("s1", "speech", 1, long_text)
    record, _ = play(tmp_path)
    speech = next(e for e in events(record, "speech") if e["seat"] == "P1")
    assert speech["truncated"] and len(speech["text"]) == 400 and speech["text"] == long_text.strip()[:400]
    heard = next(m for n, k, r, m in script.calls if (n, k, r) == ("s2", "speech", 1))[-1]["content"]
    assert "P1: " + long_text.strip()[:400] + "\n" in heard and long_text.strip()[:401] not in heard


# -- votes, ties, end conditions, scores --------------------------------------------------------


def test_lenient_parse_takes_the_first_candidate_mentioned() -> None:
    candidates = ["P1", "P3", "P4"]
    assert parse_vote("P3", candidates, "lenient") == "P3"
    assert parse_vote("I vote for player 4.", candidates, "lenient") == "P4"
    assert parse_vote("abstain", candidates, "lenient") is None
    assert parse_vote("P2", candidates, "lenient") is None  # own name or not a candidate: abstention
    assert parse_vote("P9 obviously", candidates, "lenient") is None
    assert parse_vote("Bananas.", candidates, "lenient") is None
    assert parse_vote("P4 sounded odd, but P1 even more.\nVOTE: P1", candidates, "lenient", reasoned=True) == "P1"


@pytest.mark.parametrize(
    ("reply", "reasoned", "paper", "lenient"),
    [
        ("P3", False, ("P3", "named"), ("P3", "named")),
        ("  P3\n", False, ("P3", "named"), ("P3", "named")),
        ("abstain", False, (None, "abstain"), (None, "abstain")),
        ("I vote for P3.", False, (None, "invalid"), ("P3", "named")),  # names one, but is not a name
        ("P3.", False, (None, "invalid"), ("P3", "named")),
        ("player 4", False, (None, "invalid"), ("P4", "named")),
        ("p3", False, (None, "invalid"), ("P3", "named")),
        ("P2", False, (None, "invalid"), (None, "invalid")),  # not a candidate under either parse
        ("Bananas.", False, (None, "invalid"), (None, "invalid")),
        ("VOTE: P1", False, (None, "invalid"), ("P1", "named")),  # a plain vote has no VOTE line
        ("P4 sounded odd, but P1 even more.\nVOTE: P1", True, ("P1", "named"), ("P1", "named")),
        ("P4 sounded odd, so P4 it is.\nVOTE: P4 (the odd one)", True, (None, "invalid"), ("P4", "named")),
        ("P4 sounded odd.\nVOTE: abstain", True, (None, "abstain"), (None, "abstain")),
        ("P4 sounded odd, I pick P4.", True, (None, "invalid"), ("P4", "named")),  # no VOTE line
        ("P4", True, ("P4", "named"), ("P4", "named")),  # a bare name (a bot's reply) is its vote
    ],
)
def test_the_paper_counts_only_a_candidates_exact_name(
    reply: str, reasoned: bool, paper: tuple, lenient: tuple
) -> None:
    """Appendix A: "The content of the votes must be from the given list of names; any other output
    will be counted as an abstention." Ours (lenient) takes the first candidate mentioned."""
    candidates = ["P1", "P3", "P4"]
    for parse, expected in (("paper", paper), ("lenient", lenient)):
        ballot = read_ballot(reply, candidates, parse, reasoned)
        assert (ballot.target, ballot.kind) == expected, parse
    assert read_ballot(reply, candidates, reasoned=reasoned) == read_ballot(reply, candidates, "paper", reasoned)


def test_a_reply_naming_no_candidate_is_an_abstention_in_the_game_and_its_tables(
    tmp_path: Path, script: Script
) -> None:
    for name in SEATS[1:]:
        script.set(name, "vote", 1, "I think P1 is the spy.")  # mentions P1, is not a name
    script.set("s2", "vote", 1, "P4")
    record, _ = play(tmp_path, spy=0)
    round_1 = [e for e in events(record, "vote") if e["round"] == 1]
    assert {e["voter"]: (e["target"], e["ballot"]) for e in round_1} == {
        "P1": (None, "abstain"),
        "P2": ("P4", "named"),
        **{f"P{i}": (None, "invalid") for i in range(3, 7)},
    }
    assert record["rules"]["vote_parse"] == "paper"
    assert seat(record, "P4")["eliminated_round"] == 1  # the only vote counted
    assert seat(record, "P1")["vote_transfer"] == 0.0 and record["winner"] == "spy"
    votes = VotesSchema.validate(build_tables([record])["votes"]).filter(pl.col("round") == 1).sort("voter")
    assert votes["abstained"].to_list() == [True, False, True, True, True, True]
    assert votes["ballot"].to_list() == ["abstain", "named"] + ["invalid"] * 4
    assert VotesSchema.validate(build_tables([record])["votes"]).filter(~pl.col("abstained")).height == 1
    heard = next(m for n, k, r, m in script.calls if (n, k, r) == ("s2", "speech", 2))[-1]["content"]
    assert "P3 abstained" in heard  # the others are told it was an abstention

    lenient, _ = play(tmp_path, spy=0, rules=RulesParams(vote_parse="lenient"))
    assert lenient["game_id"] != record["game_id"]
    assert {e["voter"]: e["target"] for e in events(lenient, "vote") if e["round"] == 1} == {
        "P1": None,
        "P2": "P4",
        **{f"P{i}": "P1" for i in range(3, 7)},
    }
    assert lenient["winner"] == "civilians" and seat(lenient, "P1")["vote_transfer"] == -4.0


def test_a_tie_eliminates_nobody(tmp_path: Path, script: Script) -> None:
    for voter, target in {"s2": "P4", "s3": "P4", "s4": "P2", "s5": "P2"}.items():
        script.set(voter, "vote", 1, target)
    record, _ = play(tmp_path)
    result = events(record, "vote_result")[0]
    assert result["eliminated"] is None and result["tied"] == ["P2", "P4"]
    assert result["counts"] == {"P2": 2, "P4": 2}
    assert not [e for e in events(record, "elimination") if e["round"] == 1]
    assert len([e for e in events(record, "speech") if e["round"] == 2]) == 6
    heard = next(m for n, k, r, m in script.calls if (n, k, r) == ("s1", "speech", 2))[-1]["content"]
    assert "Tie between P2 and P4 (2 votes each): nobody is out." in heard


def test_spy_voted_out_in_round_1_civilians_win_and_share_12(tmp_path: Path, script: Script) -> None:
    everyone_votes(script, 1, "P1")
    record, _ = play(tmp_path, spy=0)
    assert record["winner"] == "civilians" and record["end_reason"] == "spy_out" and record["rounds_played"] == 1
    spy = seat(record, "P1")
    assert spy["eliminated_by"] == "vote" and spy["base_score"] == 0 and spy["vote_transfer"] == -5
    for name in ["P2", "P3", "P4", "P5", "P6"]:
        assert seat(record, name)["score"] == pytest.approx(12 / 5 + 1)


@pytest.mark.parametrize(("out_round", "spy_base"), [(2, 4.0), (3, 8.0)])
def test_spy_out_in_later_rounds_scores_4_then_8(
    tmp_path: Path, script: Script, out_round: int, spy_base: float
) -> None:
    everyone_votes(script, out_round, "P6")
    record, _ = play(tmp_path, spy=5)
    assert record["winner"] == "civilians" and record["rounds_played"] == out_round
    spy = seat(record, "P6")
    assert spy["base_score"] == spy_base and spy["vote_transfer"] == -5 and spy["score"] == spy_base - 5
    assert seat(record, "P1")["base_score"] == pytest.approx((12 - spy_base) / 5)


def test_spy_survives_three_rounds_and_takes_12(tmp_path: Path, script: Script) -> None:
    record, _ = play(tmp_path, spy=2)  # everyone abstains every round
    assert record["winner"] == "spy" and record["end_reason"] == "rounds" and record["rounds_played"] == 3
    assert seat(record, "P3")["score"] == 12 and all(seat(record, f"P{i}")["score"] == 0 for i in (1, 2, 4, 5, 6))


def test_fewer_than_three_players_ends_the_game_and_the_spy_wins(tmp_path: Path, script: Script) -> None:
    for name in ["s2", "s3", "s4", "s5"]:
        script.set(name, "speech", 1, f"My word is tea, says {name}.")
    record, _ = play(tmp_path, spy=0)
    assert record["end_reason"] == "too_few_players" and record["winner"] == "spy"
    assert not events(record, "vote")  # the game ended before voting
    assert [p["eliminated_by"] for p in record["players"]] == [None, "foul", "foul", "foul", "foul", None]
    assert seat(record, "P1")["score"] == 12


def test_spy_out_by_a_foul_is_a_civilian_win(tmp_path: Path, script: Script) -> None:
    script.set("s4", "speech", 1, "Coffee, black, no sugar.")
    everyone_votes(script, 1, "P2")  # never reached: the game ends after the speaking phase
    record, _ = play(tmp_path, spy=3)
    assert record["winner"] == "civilians" and record["end_reason"] == "spy_out"
    assert seat(record, "P4")["eliminated_by"] == "foul" and seat(record, "P4")["score"] == 0
    assert not events(record, "vote")
    assert sum(p["score"] for p in record["players"]) == pytest.approx(12)


def test_only_civilian_votes_for_the_spy_move_points(tmp_path: Path, script: Script) -> None:
    script.set("s2", "vote", 1, "P1")  # civilian names the spy: +1 / -1
    script.set("s1", "vote", 1, "P2")  # the spy's own vote moves nothing
    script.set("s3", "vote", 1, "P4")  # a wrong civilian vote moves nothing
    record, _ = play(tmp_path, spy=0)
    transfers = {p["seat"]: p["vote_transfer"] for p in record["players"]}
    assert transfers == {"P1": -1, "P2": 1, "P3": 0, "P4": 0, "P5": 0, "P6": 0}


def test_scores_sum_to_12_and_transfers_are_zero_sum_in_every_bot_game(tmp_path: Path) -> None:
    lineups = [
        ["heuristic-bot"] * 6,
        ["random-bot"] * 6,
        ["heuristic-bot", "random-bot"] * 3,
        ["random-bot", "heuristic-bot", "heuristic-bot", "heuristic-bot", "random-bot", "heuristic-bot"],
    ]
    outcomes: set[tuple[str, str]] = set()
    for game in range(48):
        record, _ = play(
            tmp_path,
            spy=game % 6,
            seats=lineups[game % 4],
            variant=["baseline", "attack", "defense", "reasoning"][game % 4],
            starter=(game * 5) % 6,
            replicate=game,
        )
        players = record["players"]
        assert sum(p["score"] for p in players) == pytest.approx(12.0), record["game_id"]
        assert sum(p["vote_transfer"] for p in players) == 0
        spy = next(p for p in players if p["role"] == "spy")
        hits = sum(1 for e in events(record, "vote") if e["target"] == spy["seat"] and e["voter"] != spy["seat"])
        assert spy["vote_transfer"] == -hits
        assert all(p["score"] == pytest.approx(p["base_score"] + p["vote_transfer"]) for p in players)
        outcomes.add((record["winner"], record["end_reason"]))
    assert {"spy", "civilians"} <= {w for w, _ in outcomes}


# -- what players see --------------------------------------------------------------------------


def test_a_player_never_sees_another_players_word(tmp_path: Path, script: Script) -> None:
    CAPTURED.clear()
    script.set("s2", "speech", 1, "I could drink tea all day; teas are great.")  # civilian fouls: own word
    script.set("s1", "speech", 2, "Coffee, obviously.")  # the spy fouls in round 2
    record, _ = play(tmp_path, spy=0, seats=SEATS[:5] + ["capture"], starter=1)
    assert seat(record, "P2")["fouls"] == ["own_word"] and seat(record, "P1")["fouls"] == ["own_word"]
    assert record["end_reason"] == "spy_out" and record["rounds_played"] == 2
    words = {f"s{i}": CIVILIAN_WORD for i in range(2, 6)} | {"s1": SPY_WORD}
    for name, _, _, messages in script.calls:
        other = CIVILIAN_WORD if words[name] == SPY_WORD else SPY_WORD
        text = "\n".join(m["content"] for m in messages)
        assert not says_word(text, other), (name, text)
        assert f"Your secret word: {words[name]}" in text
    assert CAPTURED, "the capture bot was never asked"
    for request in CAPTURED:  # a bot's structured state holds its own word only
        assert request.state["word"] == CIVILIAN_WORD
        seen = json.dumps(request.state) + json.dumps(list(request.messages))
        assert not says_word(seen, SPY_WORD)
        assert "spy" not in {str(v) for v in request.state.values()}  # no role in the state


@pytest.mark.parametrize(("variant", "line"), [("attack", ATTACK_LINE), ("defense", DEFENSE_LINE)])
def test_injected_line_reaches_others_only_as_the_spys_speech(
    tmp_path: Path, script: Script, variant: str, line: str
) -> None:
    record, _ = play(tmp_path, spy=2, variant=variant)  # P1 starts; P3 is the spy
    speeches = events(record, "speech")
    for e in speeches:
        assert (line in e["shown"]) == (e["seat"] == "P3") == (line in e["text"])  # part of the speech
    assert all(e["fouls"] == [] for e in speeches)  # a new description before the line is no repeat
    spy_rounds = [e["round"] for e in speeches if e["seat"] == "P3"]

    def spy_speeches_heard(name: str, kind: str, round_no: int) -> int:
        heard = sum(1 for r in spy_rounds if r < round_no)
        if round_no in spy_rounds and (kind == "vote" or name in ("s4", "s5", "s6")):
            heard += 1  # P4..P6 speak after P3 in seat order from P1
        return heard

    lines_seen = 0
    for name, kind, round_no, messages in script.calls:
        assert line not in messages[0]["content"]  # never in the rules
        content = messages[-1]["content"]
        assert content.count(line) == spy_speeches_heard(name, kind, round_no), (name, kind, round_no)
        for text_line in content.splitlines():
            if line in text_line:
                assert text_line.startswith("  P3: ") and text_line.endswith(line)
                lines_seen += 1
    assert lines_seen > 0
    before = len(script.calls)
    play(tmp_path, spy=2, variant="baseline")
    assert len(script.calls) > before
    assert all(line not in m[-1]["content"] for _, _, _, m in script.calls[before:])


def test_reasoning_variant_asks_only_the_focal_civilian_for_an_analysis(tmp_path: Path, script: Script) -> None:
    # as in the paper, one model reasons: the game's focal model (s3 in seat P3), a civilian here
    script.set("s3", "vote", 1, "P1 described something bitter, unlike the rest of us.\nVOTE: P1")
    everyone_votes(script, 1, "P1", voters=[n for n in SEATS[1:] if n != "s3"])
    record, _ = play(tmp_path, spy=0, variant="reasoning", focal="s3")
    vote_prompts = {name: m[-1]["content"] for name, kind, _, m in script.calls if kind == "vote"}
    assert "First give your analysis" in vote_prompts["s3"]
    assert all("First give your analysis" not in vote_prompts[n] for n in SEATS if n != "s3")
    assert record["reasoning_seat"] == "P3" and record["reasoning_analysis"] == "public"
    votes = events(record, "vote")
    assert [e["voter"] for e in votes if "analysis" in e] == ["P3"]
    assert {e["voter"]: e["target"] for e in votes if e["voter"] != "P1"} == {f"P{i}": "P1" for i in range(2, 7)}
    assert record["winner"] == "civilians"
    # a focal model playing the spy: nobody reasons
    spy_game, _ = play(tmp_path, spy=2, variant="reasoning", focal="s3", replicate=1)
    assert spy_game["reasoning_seat"] is None and not any("analysis" in e for e in events(spy_game, "vote"))
    assert not events(spy_game, "analysis")


def test_the_reasoning_analysis_is_heard_by_the_later_voters_unless_private(tmp_path: Path, script: Script) -> None:
    """The paper (section 5.4, table 5): the reasoning model's analysis is said aloud, and the other
    civilians hear it before they vote. `reasoning_analysis: private` keeps it to the reasoner."""
    CAPTURED.clear()
    analysis = "P2 said something bitter, unlike the rest of us; I drink tea, not that."
    script.set("s3", "vote", 1, f"{analysis}\nVOTE: P2")
    script.set("s3", "vote", 2, "Nothing new this round.\nVOTE: abstain")
    everyone_votes(script, 1, "P4", voters=["s1", "s5"])  # P4 is out, so the game goes on
    seats = SEATS[:5] + ["capture"]  # a bot hears it too, in its messages
    record, _ = play(tmp_path, spy=1, variant="reasoning", focal="s3", seats=seats)
    spoken = "P2 said something bitter, unlike the rest of us; I drink [...], not that."  # own word hidden
    assert [(e["round"], e["seat"], e["text"]) for e in events(record, "analysis")] == [
        (1, "P3", spoken),
        (2, "P3", "Nothing new this round."),
    ]
    order = [e["type"] for e in record["events"] if e["type"] in ("analysis", "vote") and e["round"] == 1]
    assert order == ["analysis"] + ["vote"] * 6  # said before the votes are recorded
    reasoner = next(e for e in events(record, "vote") if e["voter"] == "P3" and e["round"] == 1)
    assert reasoner["target"] == "P2" and reasoner["analysis_heard"] is True

    def prompts(kind: str, round_no: int) -> dict[str, str]:
        return {n: m[-1]["content"] for n, k, r, m in script.calls if (k, r) == (kind, round_no)}

    for name, prompt in prompts("vote", 1).items():  # every later voter hears it, the reasoner did not yet
        assert (spoken in prompt) == (name != "s3"), name
        assert "VOTE: P2" not in prompt  # its vote stays secret until the votes are counted
    assert "every player hears your analysis" in prompts("vote", 1)["s3"]
    assert all(spoken in p for p in prompts("speech", 2).values())  # and it stays in the record
    bot_votes = [r for r in CAPTURED if r.kind == "vote" and r.state["round"] == 1]
    assert bot_votes and spoken in bot_votes[0].messages[-1]["content"]
    assert not any(says_word(json.dumps(list(r.messages)), SPY_WORD) for r in CAPTURED)

    script.calls.clear()
    private, _ = play(tmp_path, spy=1, variant="reasoning", focal="s3", seats=seats, reasoning_analysis="private")
    assert private["game_id"] != record["game_id"] and private["reasoning_analysis"] == "private"
    assert not events(private, "analysis")
    assert next(e for e in events(private, "vote") if e["voter"] == "P3")["analysis_heard"] is False
    assert script.calls and all("unlike the rest of us" not in m[-1]["content"] for _, _, _, m in script.calls)
    assert "no other player hears it" in prompts("vote", 1)["s3"]


def test_the_analysis_option_changes_only_reasoning_games() -> None:
    models = models_params(ROSTER)
    common = {
        "seats": SEATS,
        "spy_seat": 0,
        "civilian_word": CIVILIAN_WORD,
        "spy_word": SPY_WORD,
        "focal": "s3",
        "focal_role": "civilian",
    }
    for variant, differs in (("baseline", False), ("attack", False), ("reasoning", True)):
        public = make_spec(models, variant=variant, **common)
        private = make_spec(models, variant=variant, reasoning_analysis="private", **common)
        assert (public.game_id != private.game_id) is differs, variant
    with pytest.raises(ValueError, match="reasoning_analysis"):
        make_spec(models, variant="reasoning", reasoning_analysis="loud", **common)


@pytest.mark.parametrize(("variant", "line"), [("attack", ATTACK_LINE), ("defense", DEFENSE_LINE)])
def test_the_injected_line_counts_in_the_spys_characters_and_fouls(
    tmp_path: Path, script: Script, variant: str, line: str
) -> None:
    rules = RulesParams(max_chars=len(line) + 20)
    long_description = "a warm drink people enjoy in the morning with friends and family"
    script.set("s3", "speech", 1, long_description)
    script.set("s3", "speech", 2, "")  # no description: the line alone is no answer
    record, _ = play(tmp_path, spy=2, variant=variant, rules=rules)
    first = next(e for e in events(record, "speech") if e["seat"] == "P3" and e["round"] == 1)
    assert len(first["text"]) == rules.max_chars and first["truncated"]
    assert first["text"].startswith(long_description[:20]) and line[:20] not in first["text"][:20]
    assert not first["text"].endswith(line)  # the cut took the end of the line
    second = [e for e in events(record, "speech") if e["seat"] == "P3" and e["round"] == 2]
    if second:
        assert "no_answer" in second[0]["fouls"]
    # the spy's own word inside the speech is a foul whatever the line says
    script.set("s3", "speech", 1, f"{SPY_WORD} is what I mean")
    fouled, _ = play(tmp_path, spy=2, variant=variant, replicate=3)
    assert seat(fouled, "P3")["fouls"] == ["own_word"]


def test_no_secret_word_of_the_list_is_in_an_injected_line() -> None:
    """The line is foul-checked as part of the spy's speech: a secret word inside the line itself
    would make every attack or defense speech of that pair a foul, whatever the model said."""
    from pipeline.whoisspy.words import WORD_PAIRS

    for pair in WORD_PAIRS:
        for word in (pair.first, pair.second):
            assert not says_word(ATTACK_LINE, word) and not says_word(DEFENSE_LINE, word), word

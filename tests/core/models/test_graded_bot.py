"""The `graded` bot: one knob, `bot_options.skill`, in every benchmark; it is required, and a higher
skill plays better (SKATE: p(correct); the others: the share of the heuristic bot's moves)."""

from __future__ import annotations

import random

import pytest

from pipeline.core.models.players import bot_policy, known_bots
from pipeline.core.models.roster import RosterEntry
from pipeline.core.run import names as benchmark_names

GAMES = ("skate", "xent", "elimination", "whoisspy")


def graded(skill: float | None) -> RosterEntry:
    options = {} if skill is None else {"skill": skill}
    return RosterEntry.model_validate({"name": "g", "bot": "graded", "bot_options": options})


@pytest.mark.parametrize("game", GAMES)
def test_every_benchmark_knows_the_graded_bot_and_requires_its_skill(game: str) -> None:
    assert game in benchmark_names()  # the packages register their bots on import
    __import__(f"pipeline.{game}.bots")
    assert "graded" in known_bots(game)
    bot_policy(graded(0.5), game)  # builds
    with pytest.raises(ValueError, match="bot graded needs bot_options.skill"):
        bot_policy(graded(None), game)
    with pytest.raises(ValueError, match="skill must be a number from 0 to 1"):
        bot_policy(graded(1.5), game)


def test_skate_answers_correctly_as_often_as_its_skill_says() -> None:
    from pipeline.core.models import MoveRequest

    __import__("pipeline.skate.bots")
    request = MoveRequest(messages=(), key="q", kind="answer", choices=("A", "B", "C", "D"), state={"correct": "C"})
    share = {}
    for skill in (0.0, 0.5, 1.0):
        policy = bot_policy(graded(skill), "skate")
        answers = [policy(request, random.Random(f"answer-{k}")) for k in range(8000)]
        share[skill] = sum(a == "C" for a in answers) / len(answers)
    assert share[1.0] == 1.0
    assert share[0.5] == pytest.approx(0.25 + 0.75 * 0.5, abs=0.03)
    assert share[0.0] == pytest.approx(0.25, abs=0.03)


def _heuristic_share(game: str, skill: float) -> float:
    """The share of 400 seeded moves that are the heuristic bot's, not the random bot's filler."""
    from pipeline.core.models import MoveRequest
    from pipeline.core.models.players import FILLER_WORDS

    __import__(f"pipeline.{game}.bots")
    policy = bot_policy(graded(skill), game)
    if game == "elimination":
        state = {"seat": "P1", "round": 1, "active": ["P1", "P2", "P3", "P4"], "public": [], "votes": []}
        request = MoveRequest(messages=(), key="r1/vote/P1", kind="vote", choices=("P2", "P3", "P4"), state=state)
        return sum("vote with the table" in str(policy(request, random.Random(k))) for k in range(400)) / 400
    state = {"seat": "P1", "word": "apple", "said": [], "speeches": []}
    request = MoveRequest(messages=(), key="r1/speech/P1", kind="speech", state=state)
    filler = set(FILLER_WORDS)
    moves = [str(policy(request, random.Random(k))) for k in range(400)]
    return sum(not set(m.lower().replace(".", " ").split()) <= filler for m in moves) / 400


@pytest.mark.parametrize("game", ("elimination", "whoisspy"))
def test_a_higher_skill_plays_more_heuristic_moves(game: str) -> None:
    low, high = _heuristic_share(game, 0.1), _heuristic_share(game, 0.9)
    assert low == pytest.approx(0.1, abs=0.05) and high == pytest.approx(0.9, abs=0.05)

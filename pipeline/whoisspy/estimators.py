"""Who is Spy's requests for the run plan (`python -m pipeline plan`): the contract's `seat_plan`,
from which the core makes the play and shard jobs' estimators (pipeline.core.run.skeleton).

A seat makes at most one description and one vote per round (`rules.rounds`), the bound on its
calls before it has played; once a model has played, its calls per game come from its earlier
games (and its tokens per call from their calls tables). Before that, a seat is expected in a round
as often as it would be if every round voted one seat still in out at random and the game ended
once the spy is out (`round_shares`: about 2.1 of 3 rounds for a civilian, 2.5 for the spy; ties,
which vote nobody out, and fouls aside), and its tokens from the game's
structure (`planned_moves`): each round's prompts are built by the game's own prompt code from a
made-up record where every seat is still in and every description is `max_chars` long, and
replies are counted as the seat's roster entry spends them (`planned_reply_tokens`): a description
of about max_chars / 4 tokens, a vote of a few tokens, the reasoning variant's analysis of about
`REASONED_VOTE_WORDS` words, each within its visible budget, plus a reasoning model's allowance.
In a reasoning game whose analysis is public, the other seats' votes read that analysis too.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pipeline.core.models import tokens_for_words
from pipeline.core.run import PlanContext, PlannedMove, SeatPlan

#: visible tokens of a vote ("P3", or "abstain")
VOTE_TOKENS = 4
#: words of the reasoning variant's analysis before its vote (the paper states no limit)
REASONED_VOTE_WORDS = 120


def planned_moves(rules: Any, replies: Any) -> dict[str, list[PlannedMove]]:
    """A seat's moves in one game, every round played: {"speech": [...], "vote": [...],
    "reasoned_vote": [...], "heard_vote": [...]} (a seat votes with `vote` or, the reasoning
    variant's one reasoning seat, with `reasoned_vote`; `heard_vote` is a `vote` whose prompt holds
    a public analysis). `rules` and `replies` are the params' RulesParams and ReplyParams."""
    from pipeline.core.models import prompt_tokens
    from pipeline.whoisspy.prompts import RulesText, speech_messages, vote_messages

    names = [f"P{i + 1}" for i in range(rules.seats)]
    seat, word = names[0], "word"
    text = RulesText(rules.seats, rules.rounds, rules.min_players, rules.max_chars)
    description = "x" * rules.max_chars

    def record(round_no: int, speeches_now: int) -> list[dict[str, Any]]:
        public: list[dict[str, Any]] = []
        for r in range(1, round_no + 1):
            speakers = names if r < round_no else names[:speeches_now]
            public += [{"type": "speech", "round": r, "seat": s, "text": description} for s in speakers]
            if r < round_no:
                votes = {s: names[(i + 1) % len(names)] for i, s in enumerate(names)}
                public.append(
                    {"type": "votes", "round": r, "votes": votes, "eliminated": None, "tied": list(names), "top": 1}
                )
        return public

    analysis = {"type": "analysis", "seat": names[-1], "text": " ".join(["word"] * REASONED_VOTE_WORDS)}
    moves: dict[str, list[PlannedMove]] = {"speech": [], "vote": [], "reasoned_vote": [], "heard_vote": []}
    for round_no in range(1, rules.rounds + 1):
        before = record(round_no, (rules.seats - 1) // 2)
        moves["speech"].append(
            PlannedMove(
                "speech",
                1,
                prompt_tokens(speech_messages(seat, word, names, round_no, before, text)),
                replies.speech_max_tokens,
                max(1, rules.max_chars // 4),
            )
        )
        heard = record(round_no, rules.seats)
        for kind, budget, expected in (
            ("vote", replies.vote_max_tokens, VOTE_TOKENS),
            ("reasoned_vote", replies.reasoning_max_tokens, tokens_for_words(REASONED_VOTE_WORDS)),
        ):
            messages = vote_messages(seat, word, names, round_no, heard, names[1:], text, kind == "reasoned_vote")
            moves[kind].append(PlannedMove(kind, 1, prompt_tokens(messages), budget, expected))
        messages = vote_messages(
            seat, word, names, round_no, [*heard, {**analysis, "round": round_no}], names[1:], text
        )
        moves["heard_vote"].append(
            PlannedMove("vote", 1, prompt_tokens(messages), replies.vote_max_tokens, VOTE_TOKENS)
        )
    return moves


def round_shares(rules: Any, spy: bool) -> list[float]:
    """The probability a seat plays each round (1 to `rules.rounds`): every round votes one seat still
    in out at random, and the game ends once the spy is out or fewer than `min_players` are left."""
    shares, going = [], 1.0
    for round_no in range(rules.rounds):
        left = rules.seats - round_no
        shares.append(going if left >= rules.min_players else 0.0)
        going *= (left - 1) / left if spy else (left - 2) / left  # neither this seat nor the spy voted out
    return shares


def reasoning_seat(game: Any) -> int | None:
    """The seat index that votes with an analysis (the reasoning variant's focal civilian), as the
    game decides it."""
    from pipeline.whoisspy.engine import Game

    reasoner = Game(game, {}).reasoner
    return None if reasoner is None else reasoner.index


def seat_plan(params: Any, game: Any, context: PlanContext) -> SeatPlan:
    """The plan of one game (`game`: its GameSpec) under `params` (WhoIsSpyParams): a seat's bound
    from the rules' rounds, its expected moves from the rounds it is expected to play."""
    rounds = params.rules.rounds
    moves = context.once("whoisspy-moves", lambda: planned_moves(params.rules, params.replies))
    reasoner = reasoning_seat(game)
    # the others hear a public analysis before they vote
    plain = "heard_vote" if reasoner is not None and game.reasoning_analysis == "public" else "vote"

    def seat_moves(index: int, _name: str) -> list[PlannedMove]:
        shares = round_shares(params.rules, index == game.spy_seat)
        return [
            dataclasses.replace(move, calls=share, most=1)
            for kind in ("speech", "reasoned_vote" if index == reasoner else plain)
            for move, share in zip(moves[kind], shares)
        ]

    return SeatPlan(
        seat_moves,
        f"at most {rounds} rounds x (description + vote) per seat, fewer expected (a seat or the spy voted "
        "out), descriptions at max_chars",
        bound=2 * rounds,
        bound_why=f"at most {rounds} rounds x (description + vote) per seat",
    )

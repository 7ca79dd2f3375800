"""The Elimination Game's requests for the run plan (`python -m pipeline plan`): the contract's
`seat_plan`, from which the core makes the play and shard jobs' estimators (pipeline.core.run.skeleton).

A game's length depends on the votes, so once a model has played, its calls per game come from
its earlier games (and its tokens per call from their calls tables). Before that, the game's
structure bounds them (`planned_moves`): with n seats, rounds eliminate one seat each until two
remain (n - 2 rounds), then the two finalists plead and the n - 2 eliminated seats vote as the
jury. A round with k seats still in asks

- k public statements, k partner rankings and, in each of the 3 private subrounds, one message
  per paired seat (2 * floor(k / 2); the odd seat out sends none); none of these in the
  public_only variant; a memory note per seat keeping memory in the memory variant;
- k votes, each re-asked once at most (2 k);
- at most one tie: the tied seats speak, the others re-vote (each re-asked once at most); the
  most calls a tie can take is 2 tied statements and 2 (k - 2) re-vote tries.

The expectation before a model's first game plays each move once (no vote re-asked, no tie: those
are the exceptions; counting them in every round, as the bound does, expected up to twice what
seats spent in test games), shared evenly over the n seats, since a seat is in a round with k seats still in with
probability k / n. The bound is one seat's most: a
seat in every round (each move once, a vote and a re-vote re-asked once, a tie's statement and
re-vote both counted) and then the jury's vote re-asked or a plea. Each move's prompt is built by the game's own prompt code from a made-up
history whose every message is at its word limit (the history window `history_rounds` applies),
and its reply is counted as the seat's roster entry spends it (`planned_reply_tokens`): the
message at its word limit within its visible budget, plus a reasoning model's whole allowance.
"""

from __future__ import annotations

import math
from typing import Any

from pipeline.core.models import tokens_for_words
from pipeline.core.run import PlanContext, PlannedMove, SeatPlan

#: words of a vote's reason, which has no stated limit (`P<n>: <reason>`): a sentence or two
VOTE_REASON_WORDS = 30
#: tokens of one seat label in a partner ranking ("P3 ")
LABEL_TOKENS = 2


def _said(words: int) -> str:
    """A made-up message of `words` words (its length is what the estimate needs)."""
    return " ".join(["word"] * words)


def planned_moves(params: Any) -> tuple[list[PlannedMove], list[PlannedMove]]:
    """(the moves of every seat, the memory notes of a seat keeping memory) in one game under
    `params` (EliminationParams), per seat: calls are the game's expected requests (each move once, no
    re-ask, no tie) shared over its seats; `most` is one seat's most of each."""
    from pipeline.core.models import prompt_tokens
    from pipeline.elimination import prompts
    from pipeline.elimination.prompts import PrivateLine, PublicLine, SeatView

    n, words, budgets = params.seats, params.words, params.reply_tokens
    labels = [f"P{i + 1}" for i in range(n)]
    seat, partner = labels[0], labels[1]
    private_rounds = params.variant != "public_only"
    system = prompts.system_prompt(seat, n, words, params.votes, params.variant)
    expected_vote = tokens_for_words(VOTE_REASON_WORDS) + LABEL_TOKENS

    def private_lines(round_no: int, subrounds: int) -> list[PrivateLine]:
        return [
            PrivateLine(round_no, i, speaker, target, _said(words.private[i]))
            for i in range(subrounds)
            for speaker, target in ((seat, partner), (partner, seat))
        ]

    def history(round_no: int, statements: int, private: int, end_of_round: bool) -> SeatView:
        """Seat P1's view in `round_no`: earlier rounds complete, this round up to `statements`
        statements and `private` private subrounds (`end_of_round`: its votes announced too)."""
        since = round_no - params.history_rounds + 1 if params.history_rounds else 1
        public: list[PublicLine] = []
        own: list[PrivateLine] = []
        for r in range(max(since, 1), round_no + 1):
            active = labels[: n - r + 1]
            current = r == round_no
            said = statements if current else len(active)
            public += [PublicLine(r, "statement", s, _said(words.public)) for s in active[:said]]
            if private_rounds:
                own += private_lines(r, private if current else 3)
            if not current or end_of_round:
                public.append(PublicLine(r, "votes", None, "Votes: " + ", ".join(f"{s} 1" for s in active) + "."))
            if not current:
                public.append(PublicLine(r, "elimination", None, f"{labels[n - r]} is eliminated (by vote)."))
        memory = tuple((r, _said(words.memory)) for r in range(1, round_no)) if params.variant == "memory" else ()
        return SeatView(
            seat=seat,
            round=round_no,
            active=tuple(labels[: n - round_no + 1]),
            eliminated=tuple((labels[n - r], r) for r in range(1, round_no)),
            public=tuple(public),
            private=tuple(own),
            memory=memory,
        )

    def move(
        kind: str, calls: float, view: SeatView, task: str, budget: int | None, expected: int, most: int = 1
    ) -> PlannedMove:
        tokens = prompt_tokens(prompts.messages_for(system, view, task))
        return PlannedMove(kind, calls / n, tokens, budget, expected, most)

    moves: list[PlannedMove] = []
    notes: list[PlannedMove] = []
    for round_no in range(1, n - 1):
        k = n - round_no + 1
        others = labels[1:k]
        paired = 2 * (k // 2)
        moves.append(
            move(
                "statement",
                k,
                history(round_no, (k - 1) // 2, 0, False),
                prompts.statement_task(words.public),
                budgets.statement,
                tokens_for_words(words.public),
            )
        )
        if private_rounds:
            moves.append(
                move(
                    "preference",
                    k,
                    history(round_no, k, 0, False),
                    prompts.preference_task(others),
                    budgets.preference,
                    LABEL_TOKENS * len(others),
                )
            )
            for index, limit in enumerate(words.private, 1):
                moves.append(
                    move(
                        "private",
                        paired,
                        history(round_no, k, index - 1, False),
                        prompts.private_task(partner, limit, index),
                        budgets.private,
                        tokens_for_words(limit),
                    )
                )
        full = history(round_no, k, 3, False)
        notes.append(
            move(
                "memory", k, full, prompts.memory_task(words.memory), budgets.statement, tokens_for_words(words.memory)
            )
        )
        moves.append(move("vote", k, full, prompts.vote_task(others), budgets.vote, expected_vote, most=2))
        tied, voters = labels[:2], labels[2:k]
        announced = history(round_no, k, 3, True)
        moves.append(
            move(
                "tiebreak",
                0,  # a tie is not expected; its statement is in the bound
                announced,
                prompts.tiebreak_task(tied, voters, words.tiebreak),
                budgets.statement,
                tokens_for_words(words.tiebreak),
            )
        )
        if voters:
            moves.append(move("revote", 0, announced, prompts.revote_task(tied), budgets.vote, expected_vote, most=2))
    final = n - 1
    finalists = labels[:2]
    moves.append(
        move(
            "plea",
            2,
            history(final, 0, 0, False),
            prompts.plea_task(partner, words.plea),
            budgets.statement,
            tokens_for_words(words.plea),
        )
    )
    moves.append(
        move(
            "jury",
            n - 2,
            history(final, 2, 0, False),
            prompts.jury_task(finalists),
            budgets.vote,
            expected_vote,
            most=2,
        )
    )
    return moves, notes


def seat_plan(params: Any, context: PlanContext) -> SeatPlan:
    """The plan of a game under `params` (EliminationParams): every seat's expected moves from the
    game's structure (the bound: their most); a seat keeping memory adds its notes."""
    moves, notes = context.once("elimination-moves", lambda: planned_moves(params))
    memory = params.variant == "memory"

    def seat_moves(_index: int, name: str) -> list[PlannedMove]:
        keeps = memory and (not params.memory_players or name in params.memory_players)
        return moves + notes if keeps else moves

    expected = math.ceil(sum(m.calls for m in moves + (notes if memory else [])) - 1e-9)
    return SeatPlan(
        seat_moves,
        f"about {expected} calls a seat expected before its first game (each move once, no re-ask, no tie: "
        f"the game's moves shared over {params.seats} seats), replies at the word limits",
    )

"""Zero-sum scores of one game (WiS paper, appendix A) and the ranking points over many.

A game hands out 12 points. Spy out in round k of R rounds: the spy gets 12*(k-1)/R (0, 4, 8 for
R=3) and the civilians still in the game share the rest; spy never out: spy 12, civilians 0.
Then every civilian vote for the spy moves one point from the spy to that civilian, so the total
stays 12. Should every civilian be out when the spy goes (all fouled in the same round), all
civilians share the civilians' part, so the game still hands out exactly 12.
"""

from __future__ import annotations

from collections.abc import Sequence

POINTS_PER_GAME = 12.0
START_POINTS = 100.0
COST_PER_GAME = 1.0


def base_scores(roles: Sequence[str], alive: Sequence[bool], spy_out_round: int | None, rounds: int) -> list[float]:
    """Points per seat before vote transfers; `alive` is each seat's state at the end."""
    spy = roles.index("spy")
    scores = [0.0] * len(roles)
    if spy_out_round is None:
        scores[spy] = POINTS_PER_GAME
        return scores
    spy_points = POINTS_PER_GAME * (spy_out_round - 1) / rounds
    scores[spy] = spy_points
    civilians = [i for i, r in enumerate(roles) if r == "civilian"]
    sharing = [i for i in civilians if alive[i]] or civilians
    for i in sharing:
        scores[i] = (POINTS_PER_GAME - spy_points) / len(sharing)
    return scores


def vote_transfers(roles: Sequence[str], votes: Sequence[tuple[int, int | None]]) -> list[float]:
    """+1 to a civilian and -1 to the spy for each civilian vote that names the spy."""
    spy = roles.index("spy")
    transfers = [0.0] * len(roles)
    for voter, target in votes:
        if roles[voter] == "civilian" and target == spy:
            transfers[voter] += 1.0
            transfers[spy] -= 1.0
    return transfers


def ranking_points(scores: Sequence[float]) -> float:
    """The paper's ranking: start at 100, pay 1 per game, add each game's score."""
    return START_POINTS + sum(scores) - COST_PER_GAME * len(scores)

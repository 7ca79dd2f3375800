"""Private partners from preference rankings: proposals that are accepted, replace, or are rejected.

Every seat both proposes (down its own ranking) and receives proposals. A seat holds at most one
proposer: the best it has been offered so far by its own ranking (deferred acceptance). A proposer
whose offer is accepted stops; one that is rejected, or later replaced, goes on down its list at
once. When nobody is left proposing, each holding seat is paired with the proposer it holds, in
the order the seats first accepted someone, skipping seats already paired. Seats still unpaired
after that (possible when holds are not mutual) are paired with each other, each taking the
unpaired seat it ranks highest, so with an even count everyone has a partner and with an odd count
exactly one seat stays alone.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

SEAT_LABEL = re.compile(r"\bP(\d+)\b", re.I)


@dataclass(frozen=True)
class CleanRanking:
    ranking: tuple[str, ...]  # every other active seat exactly once, best first
    named: tuple[str, ...]  # the valid seats the reply named, in order
    dropped: tuple[str, ...]  # labels named but not allowed (unknown, eliminated, self, repeats)
    filled: tuple[str, ...]  # seats the reply left out, appended in a seeded random order


def clean_ranking(reply: str, seat: str, candidates: Sequence[str], rng: random.Random) -> CleanRanking:
    """Seat labels of `reply` in order; unknown, own, repeated labels dropped; missing ones appended."""
    allowed = set(candidates) - {seat}
    named: list[str] = []
    dropped: list[str] = []
    for match in SEAT_LABEL.finditer(reply):
        label = f"P{int(match.group(1))}"
        if label in allowed and label not in named:
            named.append(label)
        else:
            dropped.append(label)
    missing = [c for c in candidates if c in allowed and c not in named]
    rng.shuffle(missing)
    return CleanRanking(tuple(named + missing), tuple(named), tuple(dropped), tuple(missing))


@dataclass
class Proposal:
    proposer: str
    target: str
    rank: int  # 0-based position of the target in the proposer's ranking
    outcome: str  # "accepted" | "rejected" | "replaced"
    displaced: str | None = None  # the proposer the target let go (outcome "replaced")


@dataclass
class Matching:
    pairs: list[tuple[str, str]]
    proposals: list[Proposal]
    fallback_pairs: list[tuple[str, str]] = field(default_factory=list)  # paired after the proposals
    unpaired: list[str] = field(default_factory=list)


def match_pairs(order: Sequence[str], rankings: Mapping[str, Sequence[str]]) -> Matching:
    """Pairs for the seats of `order` (the proposing order); `rankings` must be complete."""
    seats = list(order)
    position = {s: {t: i for i, t in enumerate(rankings[s])} for s in seats}
    next_index = {s: 0 for s in seats}
    holds: dict[str, str] = {}  # target -> proposer it holds
    first_accepts: list[str] = []  # targets in the order they first accepted someone
    proposals: list[Proposal] = []

    def prefers(target: str, new: str, current: str) -> bool:
        ranks = position[target]
        return ranks.get(new, len(ranks)) < ranks.get(current, len(ranks))

    def propose_until_held(proposer: str) -> str | None:
        """Propose down the list; return the seat displaced by an accepted proposal, if any."""
        ranking = rankings[proposer]
        while next_index[proposer] < len(ranking):
            rank = next_index[proposer]
            target = ranking[rank]
            next_index[proposer] += 1
            current = holds.get(target)
            if current is None:
                holds[target] = proposer
                if target not in first_accepts:
                    first_accepts.append(target)
                proposals.append(Proposal(proposer, target, rank, "accepted"))
                return None
            if prefers(target, proposer, current):
                holds[target] = proposer
                proposals.append(Proposal(proposer, target, rank, "replaced", displaced=current))
                return current
            proposals.append(Proposal(proposer, target, rank, "rejected"))
        return None

    for seat in seats:
        waiting: str | None = seat
        while waiting is not None:
            waiting = propose_until_held(waiting)

    paired: set[str] = set()
    pairs: list[tuple[str, str]] = []
    for target in first_accepts:
        proposer = holds.get(target)
        if proposer is not None and target not in paired and proposer not in paired:
            pairs.append((proposer, target))
            paired.update((proposer, target))

    fallback: list[tuple[str, str]] = []
    left = [s for s in seats if s not in paired]
    while len(left) >= 2:
        first = left.pop(0)
        partner = min(left, key=lambda other: position[first].get(other, len(seats)))
        left.remove(partner)
        fallback.append((first, partner))
    return Matching(pairs=pairs + fallback, proposals=proposals, fallback_pairs=fallback, unpaired=left)

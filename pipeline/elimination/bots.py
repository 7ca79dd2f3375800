"""The Elimination Game's heuristic bot: loyal to its first private partner, votes with the table.

It reads only `request.state`, the same facts its prompt holds (public talk, announced votes, its
own private talk and partners). The generic `random` bot (pipeline.core.models.players) also plays here:
it picks uniformly among `request.choices` and says filler words.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.core.models import BotPolicy, MoveRequest, register_bot

_LABEL = re.compile(r"\bP(\d+)\b")


def ally_of(state: Mapping[str, Any]) -> str | None:
    """The first private partner still in the game (its first partner, while that one survives)."""
    active = set(state.get("active", ()))
    for partner in state.get("partners", ()):
        if partner in active:
            return partner
    return None


def mentions(state: Mapping[str, Any]) -> Counter[str]:
    """How often each seat was named by another seat in this round's public talk."""
    counts: Counter[str] = Counter()
    for line in state.get("public", ()):
        if line["round"] != state.get("round") or line["seat"] is None:
            continue
        for match in _LABEL.finditer(line["text"]):
            label = f"P{int(match.group(1))}"
            if label != line["seat"]:
                counts[label] += 1
    return counts


def votes_against(state: Mapping[str, Any]) -> Counter[str]:
    return Counter(v["target"] for v in state.get("votes", ()) if v.get("target"))


def majority_pick(state: Mapping[str, Any], candidates: Sequence[str], rng: random.Random) -> str | None:
    """The candidate the table talks about most; then the one with most announced votes; then chance."""
    if not candidates:
        return None
    talk, votes = mentions(state), votes_against(state)
    best = max((talk[c], votes[c]) for c in candidates)
    top = [c for c in candidates if (talk[c], votes[c]) == best]
    return rng.choice(sorted(top))


def _targets(state: Mapping[str, Any], choices: Sequence[str]) -> list[str]:
    seat, ally = state.get("seat"), ally_of(state)
    pool = [c for c in choices if c not in (seat, ally)]
    return pool or [c for c in choices if c != seat]


@register_bot("heuristic", game="elimination")
def heuristic_bot(options: Mapping[str, Any]) -> BotPolicy:
    """Keeps its first private partner as ally and votes with the public majority."""

    def policy(request: MoveRequest, rng: random.Random) -> str:
        state = request.state
        seat = state.get("seat", "P?")
        active = [s for s in state.get("active", ()) if s != seat]
        ally = ally_of(state)
        kind = request.kind
        if kind == "preference":
            others = list(request.choices)
            rng.shuffle(others)
            if ally in others:
                others.remove(ally)
                others.insert(0, ally)
            return " ".join(others)
        if kind in ("vote", "revote", "jury"):
            pick: str | None
            if kind == "jury" and ally in request.choices:
                pick = next(c for c in request.choices if c != ally)
            else:
                pick = majority_pick(state, _targets(state, request.choices), rng)
            return f"{pick}: the table is against {pick}, and I vote with the table."
        suspect = majority_pick(state, _targets(state, active), rng)
        if kind == "private":
            partner = state.get("partner", "friend")
            return f"{partner}, let us stay allies and protect each other. I plan to vote {suspect}."
        if kind == "tiebreak":
            return f"Keep me in. I have voted with the table every round; {suspect} is the bigger threat."
        if kind == "plea":
            other = next((f for f in state.get("finalists", ()) if f != seat), "my rival")
            return f"I kept faith with my allies and voted with the table. Eliminate {other}."
        return f"{seat} here. I stand by my partners and vote with the table. I am watching {suspect}."

    return policy

"""The Elimination Game's heuristic bot: loyal to its first private partner, votes with the table.

It reads only `request.state`, the same facts its prompt holds (public talk, announced votes, its
own private talk and partners). The generic `random` bot (pipeline.core.models.players) also plays here:
it picks uniformly among `request.choices` and says filler words.

`bot_options: {skill: p}` grades the heuristic bot's strength: each move is a heuristic one with
probability p and the random bot's otherwise, the coin drawn from the request's own seeded rng.
The graded bot's heuristic moves also read the table (`reading_pick`): the seats whose public talk
named no one (the random moves' filler words) are its first suspects. So a bot that plays at random
more often is found out and voted out more often, and a field of graded bots has a known order,
skill 1 (every move heuristic) first and skill 0 (the random bot) last: what the adaptive
schedule's measurements need (docs/adaptive.md). Without the option the bot is the plain heuristic
bot, move for move as before (no coin is drawn), so its games are what they were.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pipeline.core.models import BotPolicy, MoveRequest, register_bot
from pipeline.core.models.players import graded_bot, required_skill

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


def silent_seats(state: Mapping[str, Any]) -> Counter[str]:
    """How many of each seat's public statements (in the history shown) name no other seat: talk
    that says nothing about the game, as the random bot's filler words."""
    counts: Counter[str] = Counter()
    for line in state.get("public", ()):
        seat = line["seat"]
        if seat is None or line.get("kind") not in ("statement", "tiebreak"):
            continue
        if not any(f"P{int(m.group(1))}" != seat for m in _LABEL.finditer(line["text"])):
            counts[seat] += 1
    return counts


def reading_pick(state: Mapping[str, Any], candidates: Sequence[str], rng: random.Random) -> str | None:
    """The graded bot's pick: the candidate whose talk said least about the game (`silent_seats`),
    then as `majority_pick`. Bots that play at random more often are found out more often, which
    is what gives a field of graded bots its order."""
    if not candidates:
        return None
    silent, talk, votes = silent_seats(state), mentions(state), votes_against(state)
    best = max((silent[c], talk[c], votes[c]) for c in candidates)
    top = [c for c in candidates if (silent[c], talk[c], votes[c]) == best]
    return rng.choice(sorted(top))


def _targets(state: Mapping[str, Any], choices: Sequence[str]) -> list[str]:
    seat, ally = state.get("seat"), ally_of(state)
    pool = [c for c in choices if c not in (seat, ally)]
    return pool or [c for c in choices if c != seat]


@register_bot("heuristic", game="elimination")
def heuristic_bot(options: Mapping[str, Any]) -> BotPolicy:
    """Keeps its first private partner as ally and votes with the public majority; with
    `skill` < 1, some moves are the random bot's instead (module docstring)."""
    return graded_bot(options, _heuristic_policy, lambda request, rng: _heuristic_policy(request, rng, reading_pick))


Pick = Callable[[Mapping[str, Any], Sequence[str], random.Random], "str | None"]


def _heuristic_policy(request: MoveRequest, rng: random.Random, pick: Pick = majority_pick) -> str:
    """The heuristic move; `pick` chooses whom to name and vote against (the plain bot: the table's majority)."""
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
        chosen: str | None
        if kind == "jury" and ally in request.choices:
            chosen = next(c for c in request.choices if c != ally)
        else:
            chosen = pick(state, _targets(state, request.choices), rng)
        return f"{chosen}: the table is against {chosen}, and I vote with the table."
    suspect = pick(state, _targets(state, active), rng)
    if kind == "private":
        partner = state.get("partner", "friend")
        return f"{partner}, let us stay allies and protect each other. I plan to vote {suspect}."
    if kind == "tiebreak":
        return f"Keep me in. I have voted with the table every round; {suspect} is the bigger threat."
    if kind == "plea":
        other = next((f for f in state.get("finalists", ()) if f != seat), "my rival")
        return f"I kept faith with my allies and voted with the table. Eliminate {other}."
    return f"{seat} here. I stand by my partners and vote with the table. I am watching {suspect}."


@register_bot("graded", game="elimination")
def graded(options: Mapping[str, Any]) -> BotPolicy:
    """The known-answer player: the heuristic bot at `bot_options.skill` (required), so a field of
    graded bots has a known order, higher skill first (the leaderboard's calibration line)."""
    return heuristic_bot({**options, "skill": required_skill(options)})

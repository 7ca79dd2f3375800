"""The xent heuristic bot: related words from what it can see, then hill climbing over rounds.

Round 1: a few content words of the visible texts, each bent into a neighbour form (plural or
singular) so that it survives `remove_common_words` while still hinting at the text. Later rounds:
the best earlier move for this register, with one word swapped for another candidate (or kept as
is one time in four). For cut games the move is a short span of the story, so the cut exists.

`bot_options: {skill: p}` grades it as the other benchmarks' heuristic bots
(`pipeline.core.models.players.graded_bot`): each move is the heuristic one with probability p and
the random bot's filler words otherwise, the coin from the move's own seeded rng. Without the
option no coin is drawn and every move is what it was.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from typing import Any

from pipeline.core.models import BotPolicy, MoveRequest, register_bot
from pipeline.core.models.players import graded_bot, required_skill

_STOP = set(
    "the and that with from this have were which their there about would could should into than then them they "
    "what when where while your been being after before other some more most very just over also only such".split()
)
_FALLBACK = "harbor lantern orchard meadow village journey silence morning letter window".split()


def _content_words(texts: list[str]) -> list[str]:
    found: list[str] = []
    for text in texts:
        for word in re.findall(r"[A-Za-z]{4,}", text):
            lower = word.lower()
            if lower not in _STOP and lower not in found:
                found.append(lower)
    return found


def _neighbour(word: str) -> str:
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    if word.endswith("y"):
        return word[:-1] + "ies"
    return word + "s"


def _best_move(history: list[Mapping[str, Any]], register: str) -> tuple[str, float] | None:
    best: tuple[str, float] | None = None
    for past in history:
        total = past.get("total_bits")
        if total is None:
            continue
        for move in past.get("moves", []):
            if move["register"] == register and (best is None or total > best[1]):
                best = (move["move"], total)
    return best


_ONLY_USES_WORDS = re.compile(r"only_uses_words\((\w+)\s*,")


def _allowed_words(state: Mapping[str, Any]) -> list[str]:
    """The words of a register that a failed only_uses_words rule named, or that the best move kept to."""
    visible = dict(state.get("visible", {}))
    for condition in (str(c) for c in state.get("failed", [])):
        found = _ONLY_USES_WORDS.search(condition)
        if found and isinstance(visible.get(found.group(1)), str):
            return [w for w in visible[found.group(1)].split(" ") if w]
    best = _best_move(list(state.get("history", [])), str(state.get("register", "")))
    for text in visible.values():  # a move that passed before used one register's words only
        words = [w for w in str(text).split(" ") if w]
        if best and best[0].split() and len(words) > 4 and set(best[0].split()) <= set(words):
            return words
    return []


@register_bot("heuristic", game="xent")
def heuristic_bot(options: Mapping[str, Any]) -> BotPolicy:
    words_wanted = int(options.get("words", 5))

    def policy(request: MoveRequest, rng: random.Random) -> str:
        state = request.state
        visible = [str(v) for v in dict(state.get("visible", {})).values()]
        limit = max(1, min(words_wanted, int(state.get("max_tokens") or request.max_words or words_wanted)))
        if "cut" in str(state.get("game", "")) and visible:  # a span of the story to cut at
            story = max(visible, key=len).split()
            if story:
                start = rng.randrange(len(story))
                return " ".join(story[start : start + rng.randint(1, 3)])
        pool = [_neighbour(w) for w in _content_words(visible)] or list(_FALLBACK)
        allowed = _allowed_words(state)
        if allowed:  # only_uses_words(register, ...) holds the move to that register's words
            pool = allowed
        if state.get("failed") and not allowed:  # a rule refused the last move: use words from nowhere near the texts
            pool = [w for w in _FALLBACK if w not in " ".join(visible).lower()] or list(_FALLBACK)
            return " ".join(rng.sample(pool, min(limit, len(pool))))
        best = _best_move(list(state.get("history", [])), str(state.get("register", "")))
        if best is None or not best[0].split():
            return " ".join(rng.sample(pool, min(limit, len(pool))))
        words = best[0].split()
        if rng.random() < 0.25:
            return best[0]
        words[rng.randrange(len(words))] = rng.choice(pool)
        if len(words) < limit and rng.random() < 0.5:
            words.append(rng.choice(pool))
        return " ".join(words[:limit])

    return graded_bot(options, policy, policy)


@register_bot("graded", game="xent")
def graded(options: Mapping[str, Any]) -> BotPolicy:
    """The known-answer player: the heuristic bot at `bot_options.skill` (required), so a field of
    graded bots has a known order, higher skill first (the leaderboard's calibration line)."""
    return heuristic_bot({**options, "skill": required_skill(options)})

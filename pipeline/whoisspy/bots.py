"""The Who is Spy heuristic bot: describes with associated words, votes against the odd one out.

It knows only its own word (from the request's `state`) and the built-in associations of that word.
Describing, it names two associations it has not used yet. Voting, it scores every candidate by
how many words of the candidate's descriptions fall among its own word's associations and votes
for the lowest score (the describer least like its own word); ties are broken by the seeded rng.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from pipeline.core.models import BotPolicy, MoveRequest, register_bot
from pipeline.whoisspy.fouls import normalize, says_word, tokens, word_forms
from pipeline.whoisspy.words import associations_of

_TEMPLATES = (
    "It makes me think of {a} and {b}.",
    "Picture {a}, and maybe {b} too.",
    "Something you could link with {a} or {b}.",
    "For me it goes together with {a} and {b}.",
    "Think {a}; also {b}.",
)
# for a word missing from the association list: still a legal, non-repeating description
_FALLBACK = ("something familiar", "an everyday thing", "people know it well", "you meet it often", "it is common")


def _stem(token: str) -> str:
    for suffix in ("ing", "ies", "es", "ed", "s"):
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            return token[: -len(suffix)]
    return token


def _known_stems(word: str) -> set[str]:
    stems = {_stem(t) for a in associations_of(word) for t in tokens(a)}
    return stems | {_stem(f) for f in word_forms(word)}


def describe(word: str, said: list[str], rng: random.Random) -> str:
    """A description from two associations of `word` not used in `said`; never the word itself."""
    earlier = {normalize(s) for s in said}
    used = {t for s in said for t in tokens(s)}
    pool = [a for a in associations_of(word) if not says_word(a, word)]
    fresh = [a for a in pool if a not in used]
    stale = [a for a in pool if a in used]
    for _ in range(20):
        # words nobody has said yet first, then the rest, then generic filler
        picks = rng.sample(fresh, len(fresh)) + rng.sample(stale, len(stale)) + rng.sample(_FALLBACK, 2)
        a, b = picks[0], picks[1]
        text = rng.choice(_TEMPLATES).format(a=a, b=b)
        if normalize(text) not in earlier:
            return text
    return f"{text} Round {len(said) + 1}."


def similarity(word: str, texts: list[str]) -> float:
    """Mean count of words per description that match `word`'s associations (by crude stem)."""
    if not texts:
        return 0.0
    known = _known_stems(word)
    return sum(sum(_stem(t) in known for t in tokens(text)) for text in texts) / len(texts)


def vote(state: Mapping[str, Any], choices: tuple[str, ...], rng: random.Random) -> str:
    word = str(state.get("word", ""))
    candidates = [c for c in state.get("candidates", choices) if c in choices]
    if not candidates:
        return "abstain" if "abstain" in choices else rng.choice(choices)
    spoken: dict[str, list[str]] = {c: [] for c in candidates}
    for speech in state.get("speeches", ()):
        if speech["seat"] in spoken:
            spoken[speech["seat"]].append(speech["text"])
    scores = {c: similarity(word, spoken[c]) for c in candidates}
    lowest = min(scores.values())
    return rng.choice([c for c in candidates if scores[c] == lowest])


@register_bot("heuristic", game="whoisspy")
def heuristic_bot(options: Mapping[str, Any]) -> BotPolicy:
    """Options: none."""

    def policy(request: MoveRequest, rng: random.Random) -> str:
        state = request.state
        if request.kind == "speech":
            said = [s["text"] for s in state.get("speeches", ())]
            return describe(str(state.get("word", "")), said, rng)
        if request.kind in ("vote", "reasoned_vote") and request.choices:
            return vote(state, request.choices, rng)
        return rng.choice(request.choices) if request.choices else "pass"

    return policy

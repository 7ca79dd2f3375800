"""The Who is Spy heuristic bot: describes with associated words, votes against the odd one out.

It knows only its own word (from the request's `state`) and the built-in associations of that word.
Describing, it names two associations it has not used yet. Voting, it scores every candidate by
how many words of the candidate's descriptions fall among its own word's associations and votes
for the lowest score (the describer least like its own word); ties are broken by the seeded rng.

`bot_options: {skill: p}` grades the bot's strength, as Elimination's: each move is a heuristic one
with probability p and the random bot's otherwise, the coin drawn from the request's own seeded
rng. The graded bot's heuristic descriptions also echo the table (`echo_describe`): one association
of its own word and the word the other seats' descriptions said most (the random bot's filler and
the templates' own words aside). A civilian so repeats its fellow civilians' words, and a spy
borrows them and blends in, where the plain bot's spy describes its own word and looks as odd as a
filler talker. So a bot that plays at random more often is voted out more often and, as the
spy, caught more often, and a field of graded bots has a known order, skill 1 first and skill 0
(the random bot) last (docs/adaptive.md). Without the option the bot is the plain heuristic bot,
move for move as before (no coin is drawn), so its games are what they were.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from typing import Any

from pipeline.core.models import BotPolicy, MoveRequest, register_bot
from pipeline.core.models.players import FILLER_WORDS, graded_bot, required_skill
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


# words that say nothing about anyone's word: the random bot's filler and the templates' own words
_MEANINGLESS = frozenset(FILLER_WORDS) | frozenset(
    t for template in _TEMPLATES for t in tokens(template.format(a="", b=""))
)


def table_words(state: Mapping[str, Any]) -> Counter[str]:
    """Per meaningful word of the other seats' descriptions (as shown: redacted words are gone),
    how many of those descriptions said it; the bot's own word in any form is left out."""
    seat, word = state.get("seat"), str(state.get("word", ""))
    counts: Counter[str] = Counter()
    for speech in state.get("speeches", ()):
        if speech["seat"] != seat:
            counts.update(t for t in set(tokens(speech["text"])) if t not in _MEANINGLESS and not says_word(t, word))
    return counts


def echo_describe(state: Mapping[str, Any], rng: random.Random) -> str:
    """The graded bot's description: the table's most-said word (`table_words`, one the bot has not
    said itself) beside an association of its own word; `describe` when the table said nothing yet."""
    word, seat = str(state.get("word", "")), state.get("seat")
    speeches = list(state.get("speeches", ()))
    said = [s["text"] for s in speeches]
    mine = {t for s in speeches if s["seat"] == seat for t in tokens(s["text"])}
    heard = table_words(state)
    echoes = sorted(w for w in heard if w not in mine)
    if not echoes:
        return describe(word, said, rng)
    top = max(heard[w] for w in echoes)
    pool = [w for w in echoes if heard[w] == top]
    earlier = {normalize(s) for s in said}
    used = {t for s in said for t in tokens(s)}
    own = [a for a in associations_of(word) if not says_word(a, word)]
    fresh = [a for a in own if a not in used]
    for _ in range(20):
        echo = rng.choice(pool)
        # an unsaid association first, then any, then filler (a word missing from the list)
        other = (rng.sample(fresh, len(fresh)) + rng.sample(own, len(own)) + rng.sample(_FALLBACK, 1))[0]
        a, b = (echo, other) if rng.random() < 0.5 else (other, echo)
        text = rng.choice(_TEMPLATES).format(a=a, b=b)
        # a multi-word secret word could form across the two; a repeat is a foul
        if normalize(text) not in earlier and not says_word(text, word):
            return text
    return describe(word, said, rng)


def _heuristic_policy(request: MoveRequest, rng: random.Random) -> str:
    state = request.state
    if request.kind == "speech":
        said = [s["text"] for s in state.get("speeches", ())]
        return describe(str(state.get("word", "")), said, rng)
    if request.kind in ("vote", "reasoned_vote") and request.choices:
        return vote(state, request.choices, rng)
    return rng.choice(request.choices) if request.choices else "pass"


@register_bot("heuristic", game="whoisspy")
def heuristic_bot(options: Mapping[str, Any]) -> BotPolicy:
    """Describes with associations and votes against the describer least like its word; with
    `skill`, a share 1 - skill of its moves are the random bot's and its descriptions echo the
    table (module docstring)."""
    return graded_bot(options, _heuristic_policy, _graded_move)


def _graded_move(request: MoveRequest, rng: random.Random) -> str:
    """A graded bot's heuristic move: its descriptions echo the table (`echo_describe`)."""
    if request.kind == "speech":
        return echo_describe(request.state, rng)
    return _heuristic_policy(request, rng)


@register_bot("graded", game="whoisspy")
def graded(options: Mapping[str, Any]) -> BotPolicy:
    """The known-answer player: the heuristic bot at `bot_options.skill` (required), so a field of
    graded bots has a known order, higher skill first (the leaderboard's calibration line)."""
    return heuristic_bot({**options, "skill": required_skill(options)})

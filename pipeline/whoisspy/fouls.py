"""The referee's text checks: own word (with simple inflections), repeated descriptions, cuts.

Matching works on whole words of the lowercased text: letters only, so "Tea-time" holds the word
"tea" and "teapot" does not. A word's simple forms are its plural, possessive and the regular
verb endings (-s, -es, -ies, -ves, -ed, -ing, doubled final consonant), which covers what a
player says when it slips.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_WORD = re.compile(r"[^\W\d_]+")
_VOWELS = set("aeiou")

#: kinds of foul, in the order the referee checks them
FOUL_KINDS: tuple[str, ...] = ("no_answer", "timeout", "own_word", "repeat")
REDACTION = "[...]"


def tokens(text: str) -> list[str]:
    """Lowercase letter runs of `text`."""
    return _WORD.findall(text.lower())


def normalize(text: str) -> str:
    """Text reduced to its lowercase words and digits, single-spaced: the key of a repeat."""
    return " ".join(re.findall(r"[^\W_]+", text.lower()))


def word_forms(word: str) -> frozenset[str]:
    """The word and its simple inflections (plural, possessive, -ed, -ing, ...), lowercase."""
    base = word.strip().lower()
    forms = {base, base + "s", base + "es", base + "ed", base + "ing", base + "er"}
    if base.endswith("y") and len(base) > 2 and base[-2] not in _VOWELS:
        forms |= {base[:-1] + "ies", base[:-1] + "ied"}
    if base.endswith("e"):
        forms |= {base + "d", base + "r", base[:-1] + "ing"}
    if base.endswith("f"):
        forms.add(base[:-1] + "ves")
    if base.endswith("fe"):
        forms.add(base[:-2] + "ves")
    if len(base) >= 3 and base[-1] not in _VOWELS | {"w", "x", "y"} and base[-2] in _VOWELS and base[-3] not in _VOWELS:
        forms |= {base + base[-1] + "ing", base + base[-1] + "ed", base + base[-1] + "er"}
    return frozenset(forms)


def _phrase_pattern(word: str) -> re.Pattern[str]:
    """Multi-word secret words: the words in sequence, the last one in any simple form."""
    *head, last = tokens(word)
    last_forms = "|".join(sorted(map(re.escape, word_forms(last)), key=len, reverse=True))
    parts = [re.escape(w) for w in head] + [f"(?:{last_forms})"]
    return re.compile(r"(?<![^\W\d_])" + r"[^\w]+".join(parts) + r"(?![^\W\d_])", re.IGNORECASE)


def says_word(text: str, word: str) -> bool:
    """True when `text` contains `word` or one of its simple forms as a whole word."""
    if len(tokens(word)) > 1:
        return bool(_phrase_pattern(word).search(text))
    forms = word_forms(word)
    return any(t in forms for t in tokens(text))


def redact(text: str, word: str) -> str:
    """`text` with every form of `word` replaced, so no one else ever reads a player's word."""
    if len(tokens(word)) > 1:
        return _phrase_pattern(word).sub(REDACTION, text)
    forms = word_forms(word)
    return _WORD.sub(lambda m: REDACTION if m.group(0).lower() in forms else m.group(0), text)


def cut(text: str, max_chars: int) -> tuple[str, bool]:
    """The first `max_chars` characters (code points) of the stripped text; whether it was cut."""
    stripped = text.strip()
    return (stripped[:max_chars], True) if len(stripped) > max_chars else (stripped, False)


def speech_fouls(text: str, word: str, earlier: Iterable[str], latency_s: float, time_limit_s: float) -> list[str]:
    """Every foul of one (already cut) description, in FOUL_KINDS order.

    `earlier` holds the normalized descriptions given before in the game, by anyone.
    """
    fouls: list[str] = []
    key = normalize(text)
    if not key:
        fouls.append("no_answer")
    if latency_s > time_limit_s:
        fouls.append("timeout")
    if key and says_word(text, word):
        fouls.append("own_word")
    if key and key in set(earlier):
        fouls.append("repeat")
    return fouls

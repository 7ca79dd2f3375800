"""XGL's functions that need no judge, with the reference implementation's semantics.

The reference is xentlabs/xent (its runtime's variables module and its XString/XList types);
docs/xent.md states the rules and tests/xent/test_xent_reference_table.py pins each edge case. The
quirks are kept on purpose, because scores depend on them:

- a *word* for `num_words`, `word_set` and `common_word_set` is what is left after deleting ASCII
  punctuation, lowercasing and splitting on whitespace: "don't" is "dont", "self-aware" is
  "selfaware", and "the The THE" is one distinct word;
- `remove_common_words` removes those words from the text as whole words bounded by whitespace,
  ASCII punctuation or the ends, so "don't" in the text is never matched by "dont" and stays;
- `only_uses_words` splits both sides on single spaces and compares exactly (case-sensitive):
  an empty move or a double space gives the piece "" and fails, punctuation sticks to words;
- `only_uses_chars` allows exactly the listed characters, whitespace included.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Iterable, Sequence

PUNCTUATION = string.punctuation  # ASCII only, as the reference's str.maketrans table
_DELETE_PUNCTUATION = str.maketrans("", "", PUNCTUATION)
_BOUNDARY = "[" + re.escape(PUNCTUATION) + r"\s]"
_WHITESPACE_RUN = re.compile(r"\s{2,}")
DEFAULT_SCALE = 64.0  # punish_negative / reward_positive's default factor


def word_list(text: str) -> list[str]:
    """Lowercased words of `text` after deleting ASCII punctuation (repeats kept, in order)."""
    return text.translate(_DELETE_PUNCTUATION).lower().split()


def word_set(text: str) -> list[str]:
    """The distinct words of `text`, sorted (XGL has no set type: a list register holds it)."""
    return sorted(set(word_list(text)))


def num_words(text: str) -> int:
    """The number of distinct words ("the the the" is 1)."""
    return len(set(word_list(text)))


def common_word_set(first: str, second: str) -> list[str]:
    """The distinct words both texts have, sorted."""
    return sorted(set(word_list(first)) & set(word_list(second)))


def remove_words(text: str, words: Iterable[str]) -> str:
    """`text` without each of `words` where it stands as a whole word (case-insensitive).

    The separator before a removed word stays and the one after is not consumed, so the next
    word can use it; afterwards runs of two or more whitespace characters become one space and
    the ends are stripped. `$` keeps Python's meaning (the very end, or before a final newline),
    as in the reference's pattern.
    """
    for word in words:
        pattern = re.compile(f"(^|{_BOUNDARY}){re.escape(word)}(?=$|{_BOUNDARY})", re.IGNORECASE)
        text = pattern.sub(lambda found: found.group(1), text)
    return _WHITESPACE_RUN.sub(" ", text).strip()


def remove_common_words(text: str, other: str | Sequence[str]) -> str:
    """`text` without the words it shares with `other`; with a list, without the list's items."""
    if isinstance(other, str):
        return remove_words(text, common_word_set(text, other))
    return remove_words(text, list(other))


def only_uses_words(allowed: str | Sequence[str], text: str) -> bool:
    """Every single-space-separated piece of `text` is exactly one of the allowed words."""
    vocabulary = allowed.split(" ") if isinstance(allowed, str) else list(allowed)
    return all(piece in vocabulary for piece in text.split(" "))


def only_uses_chars(allowed: str, text: str) -> bool:
    """Every character of `text` (whitespace included) occurs in `allowed`."""
    chars = set(allowed)
    return all(c in chars for c in text)


def sample(items: Sequence[str], rng: random.Random) -> str:
    """One item drawn with the map's generator; "" for an empty list."""
    return rng.choice(list(items)) if items else ""


def shuffle(items: Sequence[str], rng: random.Random) -> list[str]:
    """A shuffled copy drawn with the map's generator."""
    shuffled = list(items)
    rng.shuffle(shuffled)
    return shuffled


def punish_negative(total: float, scale: float = DEFAULT_SCALE) -> float:
    """A reward total made `scale` times larger when negative and `scale` times smaller otherwise."""
    return total / scale if total >= 0 else total * scale


def reward_positive(total: float, scale: float = DEFAULT_SCALE) -> float:
    """A reward total made `scale` times larger when non-negative and `scale` times smaller otherwise."""
    return total / scale if total < 0 else total * scale


def cut_before(text: str, separator: str) -> str:
    """`a // b`: a before the first occurrence of b; all of a if b is absent or empty."""
    if not separator or separator not in text:
        return text
    return text.split(separator, 1)[0]


def cut_after(text: str, separator: str) -> str:
    """`a % b`: a after the first occurrence of b; empty if b is absent (or empty)."""
    if not separator or separator not in text:
        return ""
    return text.split(separator, 1)[1]


def split(text: str, separator: str | None = None) -> list[str]:
    """`s.split()` / `s.split(sep)`: Python's str.split (the reference's XString.split)."""
    if separator == "":
        raise ValueError("split() needs a non-empty separator (or none: split on whitespace)")
    return text.split(separator)


def join(separator: str, items: Sequence[str]) -> str:
    """`sep.join(l)`: the items of a list joined by the separator."""
    return separator.join(items)

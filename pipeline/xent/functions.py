"""XGL's string functions and operators that need no judge (specs/xent.md, "XGL")."""

from __future__ import annotations

import re
import string

# words are split on whitespace and ASCII punctuation; an apostrophe splits too ("don't" -> don, t)
_SEPARATORS = re.compile(r"[\s" + re.escape(string.punctuation) + r"]+")
_WORD_RUN = re.compile(r"[^\s" + re.escape(string.punctuation) + r"]+")


def words(text: str) -> list[str]:
    return [w for w in _SEPARATORS.split(text) if w]


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


def remove_common_words(text: str, other: str) -> str:
    """`text` without every word that also occurs in `other` (case-insensitive, whole words only).

    Separators between the kept words are kept as they were, so "Hi, there!" minus "there" is
    "Hi, !"; runs of whitespace left behind collapse to one space and the ends are stripped.
    """
    banned = {w.casefold() for w in words(other)}
    kept = _WORD_RUN.sub(lambda m: "" if m.group(0).casefold() in banned else m.group(0), text)
    return re.sub(r"\s+", " ", kept).strip()


def only_uses_words(allowed: str, text: str) -> bool:
    """Every word of `text` is a word of `allowed` (case-insensitive)."""
    vocabulary = {w.casefold() for w in words(allowed)}
    return all(w.casefold() in vocabulary for w in words(text))


def only_uses_chars(allowed: str, text: str) -> bool:
    """Every character of `text` occurs in `allowed` (whitespace is always allowed)."""
    chars = set(allowed)
    return all(c in chars or c.isspace() for c in text)


def num_words(text: str) -> int:
    return len(words(text))

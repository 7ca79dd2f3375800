"""Reading moves out of replies: word limits, votes. Bad moves are described, never guessed at."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from pipeline.elimination.matching import SEAT_LABEL
from pipeline.elimination.records import NO_REASON

_WORD = re.compile(r"\S+")
_LEADING_PUNCT = re.compile(r"^[\s:;,.\-–—>)\]*`\"']+")


@dataclass(frozen=True)
class LimitedText:
    text: str  # what is recorded and shown to the others
    words: int  # words of the reply before any cut
    limit: int
    enforced: bool = True  # False: the limit is only stated, as in the original
    empty_at_token_limit: bool = False  # the token limit cut the reply before any visible text

    @property
    def cut(self) -> bool:
        return self.enforced and self.words > self.limit

    @property
    def overrun(self) -> int:
        return max(0, self.words - self.limit)

    def extra(self) -> dict[str, object] | None:
        """What the log records about the cut and an empty reply at the token limit (nothing
        when neither happened)."""
        data: dict[str, object] = {}
        if self.cut:
            data.update({"cut": True, "words": self.words, "limit": self.limit, "overrun_words": self.overrun})
        if self.empty_at_token_limit:
            data["empty_at_token_limit"] = True
        return data or None


def limit_words(reply: str, limit: int, enforce: bool = True) -> LimitedText:
    """Keep the first `limit` words (original spacing inside them kept); count what was there.
    `enforce=False` keeps the whole reply (the original states limits but does not cut)."""
    text = reply.strip()
    words = list(_WORD.finditer(text))
    if not enforce:
        return LimitedText(text, len(words), limit, enforced=False)
    if len(words) <= limit:
        return LimitedText(text, len(words), limit)
    return LimitedText(text[: words[limit - 1].end()], len(words), limit)


@dataclass(frozen=True)
class ParsedVote:
    target: str | None
    reason: str
    problem: str | None  # why the vote does not count, None when it does


def parse_vote(
    reply: str, voter: str, choices: Sequence[str], seats: Collection[str], eliminated: Collection[str]
) -> ParsedVote:
    """The vote is the first seat label of the reply; the reason is the text after it.

    A label that is not a seat, the voter's own seat, an eliminated seat, or a seat outside
    `choices` makes the vote invalid, with the problem spelled out for the re-ask.
    """
    match = SEAT_LABEL.search(reply)
    if match is None:
        return ParsedVote(None, _reason(reply), "the reply names no seat label (P1, P2, ...)")
    label = f"P{int(match.group(1))}"
    reason = _reason(reply[match.end() :]) if reply[match.end() :].strip() else _reason(reply[: match.start()])
    if label not in seats:
        problem = f"{label} is not a seat in this game"
    elif label == voter:
        problem = f"{label} is your own seat"
    elif label in eliminated:
        problem = f"{label} is already eliminated"
    elif label not in choices:
        problem = f"{label} is not one of the seats you may vote for"
    else:
        return ParsedVote(label, reason, None)
    return ParsedVote(None, reason, problem)


def _reason(text: str) -> str:
    cleaned = _LEADING_PUNCT.sub("", text).strip()
    return cleaned or NO_REASON

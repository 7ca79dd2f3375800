"""Xent values: signed sums of judge measures, kept symbolic until a reward or comparison needs them.

`xed(s | x)` is the term `xent(s | "") - xent(s | x)` on the string s; a value is a list of such
terms. Keeping the (string, prefix, coefficient) parts lets a reward be scored in one batch, shown
per token, recorded, and scored again later by other judges (the rescore stage).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Conditioned:
    """`s | x`: the string s with prefix x (only meaningful as the argument of a judge function)."""

    string: str
    prefix: str


@dataclass(frozen=True)
class Term:
    """Per token of `string`: sum of coefficient * xent(string | prefix) over the parts."""

    string: str
    parts: tuple[tuple[str, float], ...]  # (prefix, coefficient)

    def scaled(self, factor: float) -> Term:
        return Term(self.string, tuple((p, c * factor) for p, c in self.parts))

    def to_dict(self) -> dict[str, Any]:
        return {"string": self.string, "parts": [[p, c] for p, c in self.parts]}

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Term:
        return Term(data["string"], tuple((str(p), float(c)) for p, c in data["parts"]))


@dataclass(frozen=True)
class XentValue:
    """A signed sum of xent terms; supports +, -, unary - and scaling by a number."""

    terms: tuple[Term, ...] = ()

    def __add__(self, other: XentValue) -> XentValue:
        return XentValue(self.terms + other.terms)

    def __sub__(self, other: XentValue) -> XentValue:
        return XentValue(self.terms + tuple(t.scaled(-1.0) for t in other.terms))

    def __neg__(self) -> XentValue:
        return XentValue(tuple(t.scaled(-1.0) for t in self.terms))

    def scaled(self, factor: float) -> XentValue:
        """`value * number`: every term's coefficients times the factor (the reference's scale)."""
        return XentValue(tuple(t.scaled(factor) for t in self.terms))

    def pairs(self) -> list[tuple[str, str]]:
        """Every (string, prefix) the judge must score for this value."""
        return [(t.string, p) for t in self.terms for p, _ in t.parts]


@dataclass(frozen=True)
class TokenBits:
    term: int
    token: str
    bits: float


@dataclass(frozen=True)
class Resolved:
    """A value's numbers: the per-token breakdown (term by term) and the total in bits."""

    tokens: tuple[TokenBits, ...]

    @property
    def total(self) -> float:
        return math.fsum(t.bits for t in self.tokens)


def combine(value: XentValue, scores: Sequence[Any]) -> Resolved:
    """Per-token values from `scores`, one judge XentScore per pair of `value.pairs()`, in order."""
    rows: list[TokenBits] = []
    cursor = 0
    for index, term in enumerate(value.terms):
        tokens: tuple[str, ...] | None = None
        bits: list[float] = []
        for _, coefficient in term.parts:
            score = scores[cursor]
            cursor += 1
            if tokens is None:
                tokens = tuple(score.tokens)
                bits = [0.0] * len(tokens)
            for i, b in enumerate(score.bits):
                bits[i] += coefficient * b
        for token, b in zip(tokens or (), bits):
            rows.append(TokenBits(index, token, b))
    return Resolved(tuple(rows))


ScoreMany = Callable[[Sequence[tuple[str, str]]], Awaitable[Sequence[Any]]]


async def resolve(value: XentValue, score_many: ScoreMany) -> Resolved:
    pairs = value.pairs()
    scores = await score_many(pairs) if pairs else []
    return combine(value, scores)

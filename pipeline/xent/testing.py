"""A judge without a model, for tests and dry runs: hand-checkable bits, same API as the real one.

Tokens are whitespace-separated words (a token keeps its leading space). A scored token costs
2 bits, or 0.5 bits when a word of the prefix shares its first four letters (case-insensitive):
a prefix "helps" a string by mentioning its words' stems, which `remove_common_words` does not
stop ("dogs" survives removing "dog"). `is_true` is true when the statement contains "true".
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipeline.core.artifacts import seed_from
from pipeline.core.judge import JudgeFingerprint, XentScore

_TOKENS = re.compile(r"\s*\S+")


class WordJudge:
    fingerprint = JudgeFingerprint(model_id="word-judge", weights_sha256="none", dtype="none", device="none")

    def __init__(self) -> None:
        self.scored_pairs = 0
        self.stories_drawn = 0

    def tokens(self, text: str) -> list[str]:
        return _TOKENS.findall(text)

    def count_tokens(self, text: str) -> int:
        return len(self.tokens(text))

    def first_n_tokens(self, text: str, n: int) -> str:
        return "".join(self.tokens(text)[:n]).strip() if self.count_tokens(text) > n else text

    def last_n_tokens(self, text: str, n: int) -> str:
        return "".join(self.tokens(text)[-n:] if n else []).strip() if self.count_tokens(text) > n else text

    @staticmethod
    def _stem(token: str) -> str:
        return re.sub(r"[^a-z0-9]", "", token.lower())[:4]

    def xent(self, string: str, prefix: str = "") -> XentScore:
        self.scored_pairs += 1
        stems = {self._stem(t) for t in self.tokens(prefix)} - {""}
        scored = self.tokens(string)[1:]
        bits = tuple(0.5 if self._stem(t) in stems else 2.0 for t in scored)
        return XentScore(tokens=tuple(scored), bits=bits, judge=self.fingerprint)

    def score_many(self, pairs: Sequence[tuple[str, str]]) -> list[XentScore]:
        return [self.xent(s, p) for s, p in pairs]

    async def ascore_many(self, pairs: Sequence[tuple[str, str]]) -> list[XentScore]:
        return self.score_many(pairs)

    async def axent(self, string: str, prefix: str = "") -> XentScore:
        return self.xent(string, prefix)

    def is_true(self, statement: str, *args: object) -> bool:
        return "true" in statement.lower()

    async def ais_true(self, statement: str, *args: object) -> bool:
        return self.is_true(statement, *args)

    def stories(self, seeds: Sequence[int | str], n_tokens: int = 50) -> list[str]:
        self.stories_drawn += len(seeds)
        topics = [
            "the dog chased a ball across the garden",
            "rain fell on the quiet harbour town",
            "the engineer fixed the broken engine",
            "a child planted seeds in spring",
        ]
        return [
            " ".join((topics[seed_from("word-judge-story", str(s)) % len(topics)] + " and then").split()[:n_tokens])
            for s in seeds
        ]

"""A gateway that sends nothing: it notes every request a job's own code would send.

The run plan (pipeline.core.run.plan) runs a benchmark's job code with this gateway instead of the
real one, so the requests it counts are exactly those the job would make, named by the same
cache keys (pipeline.core.models.gateway.completion_request). A request the response cache answers is
counted as cached; the rest would be paid. What a job does next may depend on a reply the plan
cannot know: with `answer_from_cache` off every request gets an empty reply, and with it on a
cached request gets its cached reply; an uncached one always gets an empty reply (and, where
log-probabilities were asked for, one placeholder token), which a game treats like any
unusable answer.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.core.models.errors import GatewayError
from pipeline.core.models.gateway import Completion, Gateway, Message, TokenLogprob, completion_request, reply_cap
from pipeline.core.models.roster import ModelsParams

# chars per token of English and code prompts, for a prompt whose tokens were never measured
CHARS_PER_TOKEN = 4.0
# chat framing per message (role markers) in tokens
TOKENS_PER_MESSAGE = 4


@dataclass(frozen=True)
class ProbedRequest:
    roster_name: str
    key: str
    cached: bool
    prompt_tokens: int  # estimated from the prompt's length
    max_tokens: int  # the reply cap: an upper bound of the reply's tokens
    # the request itself, for sending it later (pipeline.core.models.batch)
    messages: tuple[dict[str, str], ...] = ()
    params: tuple[tuple[str, Any], ...] = ()
    seed: int | None = None


def prompt_tokens(messages: Sequence[Message]) -> int:
    """A tokenizer-free estimate of a chat prompt's tokens (offline, any provider)."""
    chars = sum(len(m.get("content") or "") for m in messages)
    return round(chars / CHARS_PER_TOKEN) + TOKENS_PER_MESSAGE * len(messages)


class ProbeGateway(Gateway):
    """Counts requests and their cache hits; never calls a provider and never writes the cache."""

    def __init__(
        self,
        models: ModelsParams,
        *,
        root: str = ".",
        answer_from_cache: bool = True,
        cache_dir: str | os.PathLike[str] | None = None,
        job: str = "plan",
    ) -> None:
        super().__init__(models, job=job, root=root, cache_dir=cache_dir)
        self.answer_from_cache = answer_from_cache
        self.requests: list[ProbedRequest] = []

    async def complete(
        self,
        entry: Any,
        messages: Sequence[Message],
        *,
        seed: int | None = None,
        sample_index: int = 0,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        top_logprobs: int | None = None,
        kind: str = "text",
        benchmark: str | None = None,
    ) -> Completion:
        if entry.is_bot:
            raise GatewayError(f"roster entry {entry.name!r} is a bot; bots do not call the gateway")
        key, params = completion_request(
            entry,
            messages,
            seed=seed,
            sample_index=sample_index,
            max_tokens=max_tokens,
            temperature=temperature,
            stop=stop,
            top_logprobs=top_logprobs,
            kind=kind,
            benchmark=benchmark,
        )
        cached = self.cache.get(key) if self.read_cache else None
        self.requests.append(
            ProbedRequest(
                entry.name,
                key,
                cached is not None,
                prompt_tokens(messages),
                reply_cap(params),
                tuple(dict(m) for m in messages),
                tuple(params.items()),
                seed,
            )
        )
        if cached is not None and self.answer_from_cache:
            lps = cached.get("logprobs")
            return Completion(
                text=cached.get("text", ""),
                finish_reason=cached.get("finish_reason") or "stop",
                tokens_in=cached.get("tokens_in", 0),
                tokens_out=cached.get("tokens_out", 0),
                cost_usd=0.0,
                latency_s=0.0,
                cache_hit=True,
                request_id=key[:16],
                logprobs=None
                if lps is None
                else tuple(TokenLogprob(r["token"], r["logprob"], tuple(map(tuple, r["top"]))) for r in lps),
                answer_latency_s=float(cached.get("latency_s", 0.0)),
            )
        placeholder = (TokenLogprob("", 0.0),) if top_logprobs else None
        return Completion("", "stop", 0, 0, 0.0, 0.0, False, key[:16], placeholder)

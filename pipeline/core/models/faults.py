"""Injected faults at the provider boundary, for testing that runs survive a flaky provider.

Where: inside `Gateway.complete`, after the response cache (a cached answer sends no request, so
it cannot fail) and around the litellm call of a roster entry with a `model`. Bots never pass
through the gateway, so they are never faulted.

What: each request attempt draws one number from its request key, its attempt number and
`faults.seed` (deterministic: the same run gets the same faults). It falls into one of the kinds
below, in this order, with the configured rates:
- transport faults `timeout`, `rate_limit` (429), `server` (500): the attempt raises the same
  litellm exception a real provider error raises, so it is classified, retried with backoff and
  never becomes a move;
- content faults `empty`, `malformed`, `overlong`: the provider is asked as usual and its reply
  is then replaced (nothing, scrambled text, a reply far over max_tokens). This is what the model
  "said": it is cached and the game's own rules deal with it.
Every faulted attempt is recorded in the calls table (`fault` column).

Settings come from `gateway.faults` in params/models.yaml, or from the YAML file named by the
environment variable PIPELINE_FAULTS (same fields), which wins: faults can then be switched on
for one run without touching the roster (and without DVC seeing a params change).

The write-pause hook of the crash tests (PIPELINE_PAUSE_BEFORE_RENAME) lives in pipeline.core.artifacts.io.
"""

from __future__ import annotations

import os
import random

from pydantic import Field, model_validator

from pipeline.core.artifacts.io import seed_from
from pipeline.core.artifacts.params import StrictParams, load_params

TRANSPORT_FAULTS = ("timeout", "rate_limit", "server")
CONTENT_FAULTS = ("empty", "malformed", "overlong")
FAULT_KINDS = (*TRANSPORT_FAULTS, *CONTENT_FAULTS)
FAULTS_ENV = "PIPELINE_FAULTS"


class FaultSettings(StrictParams):
    """Rates (probability per request attempt) of each injected fault; all 0 turns injection off."""

    seed: int = Field(0, description="an integer: changes which requests are faulted")
    timeout: float = Field(0.0, ge=0, le=1, description="a probability in [0, 1]: the attempt times out")
    rate_limit: float = Field(0.0, ge=0, le=1, description="a probability in [0, 1]: the attempt gets a 429")
    server: float = Field(0.0, ge=0, le=1, description="a probability in [0, 1]: the attempt gets a 500")
    empty: float = Field(0.0, ge=0, le=1, description="a probability in [0, 1]: the reply is empty")
    malformed: float = Field(0.0, ge=0, le=1, description="a probability in [0, 1]: the reply is scrambled")
    overlong: float = Field(0.0, ge=0, le=1, description="a probability in [0, 1]: the reply runs far past max_tokens")
    delay_s: float = Field(0.0, ge=0, description="seconds added before every request (a slow provider)")

    @model_validator(mode="after")
    def _total_at_most_one(self) -> FaultSettings:
        total = sum(getattr(self, kind) for kind in FAULT_KINDS)
        if total > 1.0 + 1e-9:
            raise ValueError(f"the fault rates add up to {total:g}; their sum must be at most 1")
        return self

    @property
    def active(self) -> bool:
        return self.delay_s > 0 or any(getattr(self, kind) > 0 for kind in FAULT_KINDS)


def effective_faults(configured: FaultSettings) -> FaultSettings:
    """The params' fault settings, unless PIPELINE_FAULTS names a file that replaces them."""
    path = os.environ.get(FAULTS_ENV)
    return load_params(FaultSettings, path) if path else configured


def pick_by_rates(u: float, rates: object, kinds: tuple[str, ...]) -> str | None:
    """The kind whose slice of [0, 1) holds `u`, the slices laid end to end in `kinds` order, each
    as wide as that kind's rate (the attribute of `rates`); None past their sum (no fault)."""
    edge = 0.0
    for kind in kinds:
        edge += getattr(rates, kind)
        if u < edge:
            return kind
    return None


def draw_fault(settings: FaultSettings, key: str, attempt: int) -> str | None:
    """The fault of one request attempt (None: no fault); a pure function of its arguments."""
    return pick_by_rates(seed_from("fault", settings.seed, key, attempt) / 2.0**63, settings, FAULT_KINDS)


def transport_exception(kind: str, model: str, provider: str) -> Exception:
    """The litellm exception a real provider raises for this transport fault."""
    import litellm

    message = f"injected {kind} fault (gateway.faults)"
    cls = {"timeout": litellm.Timeout, "rate_limit": litellm.RateLimitError, "server": litellm.InternalServerError}[
        kind
    ]
    return cls(message=message, model=model, llm_provider=provider)


def corrupt_reply(kind: str, text: str, key: str, max_tokens: int | None) -> tuple[str, str]:
    """(new text, finish_reason) of a content fault applied to the provider's reply."""
    rng = random.Random(seed_from("fault-content", key))
    if kind == "empty":
        return "", "stop"
    if kind == "malformed":
        chars = list(text) or list("reply")
        rng.shuffle(chars)
        junk = "".join(rng.choice("{}[]<>#\\|~^") for _ in range(6))
        return f"{junk}{''.join(chars)[:200]}{junk[::-1]}", "stop"
    if kind == "overlong":
        words = max(64, 4 * (max_tokens or 64))
        filler = " ".join(rng.choice(("and", "then", "so", "well", "also", "indeed")) for _ in range(words))
        return f"{text} {filler}".strip(), "length"
    raise ValueError(f"not a content fault: {kind!r}")

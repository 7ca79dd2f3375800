"""The model gateway: every model call of every benchmark goes through here.

litellm speaks to every provider (the embedded model included, as the custom provider `local/`).
Around it the gateway adds what a tournament needs: a disk cache so a rerun never pays twice,
retries with backoff for transport errors (which never count as a move), provider limits
(requests and tokens per minute, requests in flight) shared by every job process on the machine
(pipeline.core.models.limits), and a calls table recording every attempt. A 429 honours `Retry-After`
and is retried on a time budget (`rate_limit_patience_s`), never on an attempt count.
Two guards for unattended runs sit at the provider boundary too: a spend ledger shared by all job
processes with a budget (pipeline.core.models.budget), and seeded fault injection (pipeline.core.models.faults).
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import sys
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, cast

import polars as pl

from pipeline.core.artifacts.io import content_id
from pipeline.core.artifacts.progress import count_call
from pipeline.core.models.budget import LEDGER_NAME, SpendLedger, budget_message
from pipeline.core.models.errors import (
    TRANSPORT_KINDS,
    AuthError,
    BudgetExceeded,
    GatewayError,
    ProviderFault,
    RequestError,
    TransportError,
    auth_message,
    classify_error,
    deadline_message,
    endpoint_of,
    give_up_message,
    key_env_names,
    request_message,
    unreached,
    unreached_detail,
    unreached_message,
)
from pipeline.core.models.faults import (
    TRANSPORT_FAULTS,
    corrupt_reply,
    draw_fault,
    effective_faults,
    transport_exception,
)
from pipeline.core.models.journal import (
    CallRecord,
    append_attempt,
    earlier_attempts,
    is_provider_attempt,
    journal_path,
    new_run_id,
    record_row,
)
from pipeline.core.models.journal import settle as settle_journal
from pipeline.core.models.limits import (
    STORE_NAME,
    WINDOW_S,
    Admission,
    EffectiveLimits,
    ProcessGate,
    ProcessRateLimiter,
    Ticket,
    estimate_tokens,
    shared_limiter,
)
from pipeline.core.models.litellm_setup import load_litellm, supported_openai_params
from pipeline.core.models.reasoning_seen import record_sighting
from pipeline.core.models.reply_budgets import budget_params, reply_budget, reply_cap
from pipeline.core.models.response_cache import PaidAnswer, ResponseCache, answer_writer
from pipeline.core.models.roster import GatewaySettings, ModelsParams, ProviderLimits, RosterEntry, reaches_request

log = logging.getLogger(__name__)


Message = Mapping[str, str]


#: what a provider sent instead of an answer (the request itself was fine): a connection closed
#: before the whole reply arrived, a body that is no chat completion (cut or invalid JSON, a choice
#: without a message), a completion with no choice at all. Retried like transport errors; never a move.
@dataclass(frozen=True)
class TokenLogprob:
    """One generated token with its log-probability and the top alternatives (natural log)."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str
    tokens_in: int
    tokens_out: int
    cost_usd: float | None
    latency_s: float
    cache_hit: bool
    request_id: str
    logprobs: tuple[TokenLogprob, ...] | None = None
    # seconds the provider took when it answered (equal to latency_s unless from the cache)
    answer_latency_s: float = 0.0
    tokens_reasoning: int | None = None  # hidden reasoning tokens inside tokens_out
    dropped_params: tuple[str, ...] = ()  # what the provider refused and the gateway dropped

    @property
    def empty_at_token_limit(self) -> bool:
        """Cut by the token limit before any visible text: a reasoning model whose hidden reasoning
        spent the whole budget."""
        return self.finish_reason == "length" and not self.text.strip()


def request_key(
    model: str, messages: Sequence[Message], params: Mapping[str, Any], seed: int | None, sample_index: int
) -> str:
    """sha256 of everything that decides a reply; keys and secrets are never part of it."""
    payload = {
        "model": model,
        "messages": [dict(m) for m in messages],
        "params": dict(params),
        "seed": seed,
        "sample_index": sample_index,
    }
    return content_id(payload, length=64)


def completion_request(
    entry: RosterEntry,
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
) -> tuple[str, dict[str, Any]]:
    """(cache key, request params) of one chat request: the one place both are decided, so the
    run plan (pipeline.core.run.plan) counts cache hits with exactly the keys the gateway uses.

    `max_tokens` is the game's visible budget for this kind of move (None: the game sets none);
    the entry turns it into what is sent (pipeline.core.models.reply_budgets), a reasoning allowance included.
    """
    assert entry.model is not None
    budget = reply_budget(entry, kind, max_tokens, benchmark)
    params: dict[str, Any] = {
        "temperature": entry.sampling.temperature if temperature is None else temperature,
        "top_p": entry.sampling.top_p,
        **budget_params(entry, budget),
    }
    # only when set: other requests keep their cache keys; Anthropic's thinking budget replaces it
    if entry.sampling.reasoning_effort is not None and "thinking" not in params:
        params["reasoning_effort"] = entry.sampling.reasoning_effort
    if stop:
        params["stop"] = list(stop)
    if top_logprobs:
        params["logprobs"] = True
        params["top_logprobs"] = int(top_logprobs)
    # the extras that change the answer, not the transport ones (api_base, timeouts, ...): a model
    # moved to another endpoint keeps its cached answers, as it keeps its game ids
    answering = {k: v for k, v in entry.extra.items() if reaches_request(k)}
    return request_key(entry.model, messages, {**params, **answering}, seed, sample_index), params


@dataclass
class CallLog:
    """Rows of the calls table for one job; bots write here too (cost 0).

    Each provider attempt is also appended, as it happens, to the job's journal (`journal`,
    pipeline.core.models.journal), so a failed or killed run's attempts reach the job's table when a
    later run writes it (`job_frame`)."""

    job: str
    rows: list[CallRecord] = field(default_factory=list)
    journal: Path | None = None  # None: nothing journaled (a job without a name)
    run: str = field(default_factory=new_run_id)  # this session's name in the journal
    _appended: bool = False  # this session wrote a whole line last: no torn line to close

    def add(self, record: CallRecord) -> None:
        self.rows.append(record)
        if self.journal is None or not is_provider_attempt(record.cache_hit, record.model):
            return
        try:
            append_attempt(self.journal, self.run, record_row(record), check_tail=not self._appended)
            self._appended = True
        except OSError as exc:  # bookkeeping never stops a game; the table at the end still has the row
            log.warning(
                "calls journal %s not written (%s); this run's attempts reach its calls table only if the job ends",
                self.journal,
                exc,
            )
            self.journal = None

    def frame(self) -> pl.DataFrame:
        """This session's rows."""
        from pipeline.core.artifacts.schemas import CallsSchema, calls_frame

        return CallsSchema.validate(calls_frame([record_row(r) for r in self.rows]))

    def job_frame(self) -> pl.DataFrame:
        """The job's calls table: the attempts earlier runs journaled and never settled (failed or
        killed runs of this job), then this session's rows. Not validated here: `write_table` checks
        it against CallsSchema as it writes it (once, not twice: a few ms a game)."""
        from pipeline.core.artifacts.schemas import calls_frame

        earlier = earlier_attempts(self.journal, self.run, tuple(CallRecord.__dataclass_fields__))
        return calls_frame([*earlier, *(record_row(r) for r in self.rows)])

    def settle(self) -> None:
        """The job's table is written: its journal is no longer needed."""
        settle_journal(self.journal)


def _usage(response: Any) -> tuple[int, int]:
    usage = getattr(response, "usage", None)
    if usage is None:
        return 0, 0
    return int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0)


def _reasoning_tokens(response: Any) -> int | None:
    """Hidden reasoning tokens of an answer (inside completion_tokens), or None when not reported."""
    details = getattr(getattr(response, "usage", None), "completion_tokens_details", None)
    if isinstance(details, dict):
        value = details.get("reasoning_tokens")
    else:
        value = getattr(details, "reasoning_tokens", None)
    return int(value) if isinstance(value, (int, float)) else None


#: request parameters a provider may refuse for some models (reasoning models refuse a temperature
#: other than 1, top_p, logprobs, stop...): dropped and sent again, never fatal
DROPPABLE_PARAMS = (
    "temperature",
    "top_p",
    "top_logprobs",
    "logprobs",
    "stop",
    "seed",
    "reasoning_effort",
    "presence_penalty",
    "frequency_penalty",
)
_REFUSAL_WORDS = (
    "unsupported",
    "not supported",
    "does not support",
    "only the default",
    "not allowed",
    "not available",
    "isn't supported",
    "is not permitted",
)


def refused_params(exc: BaseException, sent: Mapping[str, Any], seed: int | None) -> set[str]:
    """The parameters a provider's 400 refuses, among those sent (empty: not a refusal of one).

    OpenAI-style: "Unsupported value: 'temperature' does not support 0.7 with this model",
    "logprobs are not supported with reasoning models", "Unsupported parameter: 'max_tokens' ...
    Use 'max_completion_tokens' instead."
    """
    text = str(exc).lower()
    if not any(word in text for word in _REFUSAL_WORDS):
        return set()
    names = [*sent, *(["seed"] if seed is not None else [])]
    found = {name for name in names if name in DROPPABLE_PARAMS + ("max_tokens",) and name in text}
    if "top_logprobs" in found or "logprobs" in found:
        found |= {"logprobs", "top_logprobs"} & set(sent)
    if "max_tokens" in found and "max_completion_tokens" not in text:
        found.discard("max_tokens")  # a refusal of the cap's size, not of the parameter
    return found


def without_refused(params: Mapping[str, Any], refused: set[str]) -> dict[str, Any]:
    """`params` as the provider accepts them: refused ones dropped, a refused `max_tokens` sent as
    `max_completion_tokens`."""
    kept = {k: v for k, v in params.items() if k not in refused}
    if "max_tokens" in refused and "max_tokens" in params:
        kept["max_completion_tokens"] = params["max_tokens"]
    return kept


def _cost(response: Any, entry: RosterEntry, settings: GatewaySettings | None = None) -> float | None:
    if entry.provider == "local":
        return 0.0
    price = settings.prices.get(entry.model or "") if settings is not None else None
    if price is not None:
        tokens_in, tokens_out = _usage(response)
        return (tokens_in * price.input_usd_per_mtok + tokens_out * price.output_usd_per_mtok) / 1e6
    # litellm prices every answer once already: pricing it again costs ms of CPU per call
    hidden = getattr(response, "_hidden_params", None) or {}
    if "response_cost" in hidden:
        priced = hidden["response_cost"]
        return float(priced) if isinstance(priced, (int, float)) else None
    try:
        return float(load_litellm().completion_cost(completion_response=response))
    except Exception:  # noqa: BLE001 - litellm raises many kinds for an unpriced model
        return None  # unknown price: null, never a made-up 0


def choice_logprobs(choice: Any) -> list[dict[str, Any]] | None:
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if content is None and isinstance(getattr(choice, "logprobs", None), dict):
        content = choice.logprobs.get("content")
    if not content:
        return None
    rows = []
    for item in content:
        get = item.get if isinstance(item, dict) else lambda k, _i=item: getattr(_i, k, None)
        tops = get("top_logprobs") or []
        rows.append(
            {
                "token": get("token"),
                "logprob": float(cast(float, get("logprob"))),  # litellm always sets it
                "top": [
                    [
                        t["token"] if isinstance(t, dict) else t.token,
                        float(t["logprob"] if isinstance(t, dict) else t.logprob),
                    ]
                    for t in tops
                ],
            }
        )
    return rows


def supports_top_logprobs(entry: RosterEntry) -> bool | None:
    """Whether litellm says this entry's provider returns top log-probabilities: False for a
    provider it knows without them (anthropic, gemini, ollama_chat, ...), None when it cannot tell
    (custom providers such as `local/`: the first reply decides), True otherwise; bots: None."""
    if entry.is_bot or entry.model is None:
        return None
    provider, _, model = entry.model.partition("/")
    supported = supported_openai_params(provider, model)  # None: an unknown provider's first reply decides
    return None if supported is None else "top_logprobs" in supported


def read_answer(response: Any) -> tuple[Any, str, str]:
    """(the first choice, its text, its finish_reason) of a reply, or ProviderFault when the reply
    holds no answer: `empty_choices` (no choice at all), `malformed_body` (a choice without a message
    object, a content that is not text, anything else this cannot read).

    A message whose content is null or missing is an answer: the model said nothing (a reasoning
    model whose hidden reasoning spent the cap gives content null with finish_reason "length"); it is
    recorded as the `empty` reply and becomes the move, as a provider's empty string does.
    """
    try:
        choices = getattr(response, "choices", None)
        if choices is None and isinstance(response, Mapping):
            choices = response.get("choices")
        if choices is None or isinstance(choices, (str, bytes)) or not isinstance(choices, Sequence):
            raise ProviderFault("malformed_body", f"the reply has no list of choices ({type(choices).__name__})")
        if len(choices) == 0:
            raise ProviderFault("empty_choices", "the provider answered with `choices: []` (no answer)")
        choice = choices[0]
        message = choice.get("message") if isinstance(choice, Mapping) else getattr(choice, "message", None)
        if message is None:
            raise ProviderFault("malformed_body", "the first choice has no message object")
        content = message.get("content") if isinstance(message, Mapping) else getattr(message, "content", None)
        if content is not None and not isinstance(content, str):
            raise ProviderFault("malformed_body", f"the message content is {type(content).__name__}, not text")
        finish = choice.get("finish_reason") if isinstance(choice, Mapping) else getattr(choice, "finish_reason", None)
        return choice, content or "", str(finish or "stop")
    except ProviderFault:
        raise
    except Exception as exc:  # whatever cannot be read is no answer
        raise ProviderFault("malformed_body", f"unreadable reply: {type(exc).__name__}: {exc}") from exc


def _to_completion(entry: dict[str, Any], *, cache_hit: bool, latency_s: float) -> Completion:
    lps = entry.get("logprobs")
    return Completion(
        text=entry["text"],
        finish_reason=entry.get("finish_reason") or "stop",
        tokens_in=entry.get("tokens_in", 0),
        tokens_out=entry.get("tokens_out", 0),
        cost_usd=0.0 if cache_hit else entry.get("cost_usd"),
        latency_s=latency_s,
        cache_hit=cache_hit,
        request_id=entry["key"][:16],
        answer_latency_s=float(entry.get("latency_s", latency_s)),
        tokens_reasoning=entry.get("tokens_reasoning"),
        dropped_params=tuple(entry.get("dropped_params") or ()),
        logprobs=None
        if lps is None
        else tuple(TokenLogprob(r["token"], r["logprob"], tuple(map(tuple, r["top"]))) for r in lps),
    )


#: tokens an empty reply at the limit must have billed to say the model reasoned unseen
MIN_HIDDEN_TOKENS = 16


class Gateway:
    """Sends chat requests for roster entries through litellm, with cache, limits and retries."""

    def __init__(
        self,
        models: ModelsParams,
        *,
        job: str = "",
        cache_dir: str | os.PathLike[str] | None = None,
        root: str | os.PathLike[str] = ".",
        read_cache: bool = True,
        deadline_s: float | None = None,
    ) -> None:
        """`deadline_s`: the most seconds one request may take, every attempt and wait included
        (None: gateway.timeout_s per attempt and gateway.retries alone decide); `ask` and
        `roster check` set it from their --timeout-s."""
        self.models = models
        self.settings: GatewaySettings = models.gateway
        directory = Path(cache_dir) if cache_dir is not None else Path(root) / self.settings.cache_dir
        self.cache_dir = directory
        self.cache = ResponseCache(directory)
        self.read_cache = read_cache  # False: always ask the provider (answers are still stored)
        self.log = CallLog(job=job, journal=journal_path(directory, job))  # journal: beside the cache
        self.faults = effective_faults(self.settings.faults)
        ledger = Path(root) / self.settings.ledger if self.settings.ledger else directory / LEDGER_NAME
        self.ledger = SpendLedger(ledger)
        self._gates: dict[tuple[int, str], ProcessGate] = {}
        # beside the cache, not in it: the cache holds only answers
        self.limit_store = (
            Path(root) / self.settings.limit_store if self.settings.limit_store else directory.parent / STORE_NAME
        )
        self._checked: set[str] = set()
        self._refused: dict[str, set[str]] = {}  # per roster entry: parameters its provider refused
        self.deadline_s = deadline_s
        self._unreachable: set[str] = set()  # roster entries whose provider was said to be unreachable
        # jitter only spreads retries in time; it never touches what is asked or answered
        self._jitter = random.Random(0)

    # -- limits -----------------------------------------------------------------
    def _gate(self, provider: str) -> ProcessGate:
        loop_key = (id(asyncio.get_running_loop()), provider)
        gate = self._gates.get(loop_key)
        if gate is None:
            limits: ProviderLimits = self.models.limits_for(provider)
            gate = ProcessGate(asyncio.Semaphore(limits.max_concurrency), ProcessRateLimiter(limits.rpm))
            self._gates[loop_key] = gate
        return gate

    def _preflight(self, entry: RosterEntry) -> dict[str, Any]:
        """Fail fast, before any request, when the entry's key is not in the environment."""
        kwargs: dict[str, Any] = {}
        if entry.api_key_env:
            value = os.environ.get(entry.api_key_env)
            if not value:
                raise AuthError(auth_message(entry, [entry.api_key_env]))
            kwargs["api_key"] = value
        elif entry.name not in self._checked and entry.provider != "local" and "mock_response" not in entry.extra:
            missing = load_litellm().validate_environment(model=entry.model).get("missing_keys", [])
            keys = [k for k in missing if "KEY" in k or "TOKEN" in k]
            if keys:
                raise AuthError(auth_message(entry, keys))
        self._checked.add(entry.name)
        return kwargs

    # -- the call -----------------------------------------------------------------
    async def complete(
        self,
        entry: RosterEntry,
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
        """One chat completion for `entry`, from the cache when this exact request was answered.

        `max_tokens` is the game's visible budget for this `kind` of move (None: the game sets
        none); the entry's budgets decide what is sent (pipeline.core.models.reply_budgets)."""
        if entry.is_bot:
            raise GatewayError(f"roster entry {entry.name!r} is a bot; bots do not call the gateway")
        assert entry.model is not None
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

        started = time.monotonic()
        cached = self.cache.get(key) if self.read_cache else None
        if cached is not None:
            completion = _to_completion(cached, cache_hit=True, latency_s=time.monotonic() - started)
            empty = None if completion.text.strip() else "empty"  # as when it was first answered
            self._record(entry, completion.request_id, 0, completion, empty, cached.get("fault"))
            return completion

        auth_kwargs = self._preflight(entry)
        if entry.provider == "local":
            # load outside the timed call so latency_s measures answering, not loading
            from pipeline.core.models.local import local_model

            try:
                await asyncio.to_thread(local_model, entry.model.split("/", 1)[1])
            except load_litellm().BadRequestError as exc:
                raise RequestError(request_message(entry, _short(exc))) from None
        limit_s = self.deadline_s
        if limit_s is not None:
            load_litellm()  # imported before the clock starts: it takes seconds, and is no wait for the provider
        deadline = None if limit_s is None else time.monotonic() + limit_s
        attempt = 0
        first_refusal: float | None = None  # when this request first met a 429
        tokens_guess = estimate_tokens(sum(len(m.get("content") or "") for m in messages), reply_cap(params))
        refused = self._refused.setdefault(entry.name, set())  # what this provider refused for this entry
        refusals = 0
        while True:
            attempt += 1
            sent = without_refused(params, refused)
            async with self._admitted(entry, tokens_guess) as admission:
                self._check_budget(entry)
                fault = draw_fault(self.faults, key, attempt) if self.faults.active else None
                started = time.monotonic()
                try:
                    if self.faults.delay_s:
                        await asyncio.sleep(self.faults.delay_s)
                    if fault in TRANSPORT_FAULTS:
                        raise transport_exception(fault, entry.model, entry.provider)
                    admission.sent = time.time()  # the provider counts it from about now (rpm)
                    response = await load_litellm().acompletion(
                        model=entry.model,
                        messages=[dict(m) for m in messages],
                        seed=None if "seed" in refused else seed,
                        timeout=self._attempt_timeout(deadline),
                        num_retries=0,
                        **sent,
                        **entry.extra,
                        **auth_kwargs,
                    )
                    latency = time.monotonic() - started
                    # inside the try: a reply that is no answer is classified and retried, never raw
                    dropped = sorted(set(params) & refused | ({"seed"} & refused if seed is not None else set()))
                    stored, spent = self._answer_entry(
                        entry, key, response, fault, params, top_logprobs, latency, dropped
                    )
                except Exception as exc:  # noqa: BLE001 - classified below
                    latency = time.monotonic() - started
                    kind = classify_error(exc)
                    self._record_error(entry, key, attempt, latency, kind, fault if fault in TRANSPORT_FAULTS else None)
                    if kind == "auth":
                        variables = [entry.api_key_env] if entry.api_key_env else key_env_names(entry.model)
                        raise AuthError(auth_message(entry, variables, _short(exc))) from None
                    # what this attempt sent and the provider refused (a concurrent request may
                    # have learnt it meanwhile: the next attempt leaves it out all the same)
                    newly = refused_params(exc, sent, None if "seed" in refused else seed)
                    if kind == "bad_request" and newly and refusals < len(DROPPABLE_PARAMS):
                        # a parameter this model refuses: dropped, recorded, sent again at once
                        refusals += 1
                        if newly - refused:
                            log.warning(
                                "%s: the provider refused %s; sent again without",
                                entry.name,
                                ", ".join(sorted(newly - refused)),
                            )
                        refused |= newly
                        continue
                    if kind not in TRANSPORT_KINDS:
                        raise RequestError(request_message(entry, _with_endpoint(exc))) from None
                    reach = unreached(exc, kind)
                    detail = _short(exc) if reach is None else unreached_detail(entry, reach)
                    retry_after = retry_after_s(exc)
                    if kind == "rate_limit":
                        admission.outcome, admission.retry_after_s = "rate_limit", retry_after
                        first_refusal = first_refusal or time.time()
                    if await self._give_up(entry, kind, attempt, first_refusal):
                        raise TransportError(give_up_message(entry, attempt, kind, detail)) from None
                    delay = max(self._backoff(attempt), retry_after or 0.0, 0.05 if kind == "rate_limit" else 0.0)
                    if reach is not None and entry.name not in self._unreachable:
                        # said once, at the first failure (even one the deadline ends): the retries
                        # that follow are quiet
                        self._unreachable.add(entry.name)
                        log.warning(unreached_message(entry, reach, self._retry_plan()))
                    if limit_s is not None and deadline is not None and time.monotonic() + delay >= deadline:
                        raise TransportError(deadline_message(entry, attempt, kind, detail, limit_s)) from None
                else:
                    self._unreachable.discard(entry.name)
                    admission.outcome = "ok"
                    admission.tokens = (stored["tokens_in"] + stored["tokens_out"]) or None
                    # recorded before the slot is given back: a request waiting for it checks the
                    # budget against a ledger that already holds this answer's spend. On the answer
                    # writer's thread: both writes fsync, which would stall every other game on this
                    # loop; the answers that finish together share its ledger append.
                    await answer_writer().write(PaidAnswer(self.cache, key, stored, self.ledger, spent))
                    break
            log.info("%s: %s, retry %d in %.1fs", entry.name, kind, attempt, delay)
            await asyncio.sleep(delay)

        text = stored["text"]
        completion = _to_completion({**stored, "key": key}, cache_hit=False, latency_s=latency)
        self._record(entry, completion.request_id, attempt, completion, None if text.strip() else "empty", fault)
        return completion

    def _answer_entry(
        self,
        entry: RosterEntry,
        key: str,
        response: Any,
        fault: str | None,
        params: dict[str, Any],
        top_logprobs: Any,
        latency: float,
        dropped: Sequence[str] = (),
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """(the answer as the cache keeps it, its spend-ledger line) of a provider's reply; a reply
        that holds no answer, or anything in it that cannot be read, raises ProviderFault."""
        try:
            return self._read_entry(entry, key, response, fault, params, top_logprobs, latency, dropped)
        except ProviderFault:
            raise
        except Exception as exc:  # an unreadable reply is no answer: retried, never raw
            raise ProviderFault("malformed_body", f"unreadable reply: {type(exc).__name__}: {exc}") from exc

    def _read_entry(
        self,
        entry: RosterEntry,
        key: str,
        response: Any,
        fault: str | None,
        params: dict[str, Any],
        top_logprobs: Any,
        latency: float,
        dropped: Sequence[str],
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        choice, text, finish_reason = read_answer(response)
        if fault is not None:  # a content fault: this is what the model "said"
            text, finish_reason = corrupt_reply(fault, text, key, reply_cap(params) or None)
        tokens_in, tokens_out = _usage(response)
        if tokens_in < 0 or tokens_out < 0:
            raise ProviderFault("malformed_body", f"negative token counts in usage ({tokens_in}, {tokens_out})")
        reasoning = _reasoning_tokens(response)
        stored: dict[str, Any] = {
            "model": entry.model,
            "text": text,
            "finish_reason": finish_reason,
            "tokens_in": tokens_in,
            "tokens_out": tokens_out,
            "cost_usd": _cost(response, entry, self.settings),
            "logprobs": choice_logprobs(choice) if top_logprobs else None,
            "latency_s": latency,
            "fault": fault,
        }
        # only when there is something to say: answers of other models keep their cached form
        if reasoning is not None:
            stored["tokens_reasoning"] = reasoning
        if dropped:
            stored["dropped_params"] = list(dropped)
        spent = {
            "key": key,
            "job": self.log.job,
            "roster_name": entry.name,
            "model": entry.model,
            "cost_usd": stored["cost_usd"],
            "tokens_in": tokens_in,
            "tokens_out": tokens_out,
            "tokens_reasoning": reasoning,
        }
        return stored, spent

    def _admitted(self, entry: RosterEntry, tokens: int) -> AbstractAsyncContextManager[Admission]:
        """Wait until the provider's limits allow one more request to start."""
        limits = self.models.limits_for(entry.provider)
        if entry.provider == "local":
            return self._process_admission(entry.provider)  # each process holds its own model
        effective = EffectiveLimits.of(limits, self.settings.limit_share, self.settings.timeout_s + WINDOW_S)
        return shared_limiter(self.limit_store).admitted(entry.provider, effective, tokens)

    @asynccontextmanager
    async def _process_admission(self, provider: str) -> AsyncIterator[Admission]:
        gate = self._gate(provider)
        async with gate.semaphore:
            await gate.limiter.wait()
            yield Admission(Ticket(provider, 0, 0))

    async def _give_up(self, entry: RosterEntry, kind: str, attempt: int, first_refusal: float | None) -> bool:
        """429s: give up only once the provider has answered nobody for rate_limit_patience_s
        (a time budget: a busy provider that still answers others is waited for). Other
        transport errors: after `retries` retries."""
        if kind != "rate_limit":
            return attempt > self.settings.retries
        if entry.provider == "local":
            last = 0.0
        else:
            last = await shared_limiter(self.limit_store).last_answer(entry.provider)
        quiet_since = max(last, first_refusal or 0.0)
        return time.time() - quiet_since > self.settings.rate_limit_patience_s

    def _check_budget(self, entry: RosterEntry | None = None) -> None:
        budget = self.settings.budget_usd
        if budget is None:
            return
        spent = self.ledger.total_usd()
        if spent >= budget:
            text = budget_message(spent, budget, self.ledger.path)
            if entry is not None:  # which request stopped (kind: budget), after the message the CLI shows
                text += f" Stopped before a request of roster entry {entry.name!r} (model {entry.model}) (budget)."
            raise BudgetExceeded(text)

    def _attempt_timeout(self, deadline: float | None) -> float:
        """Seconds one attempt may wait for its answer: gateway.timeout_s, or less where the
        request's deadline comes first."""
        if deadline is None:
            return self.settings.timeout_s
        return max(0.5, min(self.settings.timeout_s, deadline - time.monotonic()))

    def _retry_plan(self) -> str:
        """What the gateway does after a first failed attempt, in words, with the settings to change."""
        settings = self.settings
        waits = sum(min(settings.backoff_max_s, settings.backoff_base_s * 2**i) for i in range(settings.retries))
        plan = (
            f"retrying up to {settings.retries} times with backoff from {settings.backoff_base_s:g} s, doubling "
            f"to at most {settings.backoff_max_s:g} s (up to {waits:.0f} s of waits in all: gateway.retries, "
            "backoff_base_s, backoff_max_s)"
        )
        return plan if self.deadline_s is None else f"{plan}, for at most {self.deadline_s:g} s (--timeout-s)"

    def _backoff(self, attempt: int) -> float:
        base = self.settings.backoff_base_s * (2 ** (attempt - 1))
        return min(self.settings.backoff_max_s, base) * (0.5 + 0.5 * self._jitter.random())

    def _record(
        self,
        entry: RosterEntry,
        request_id: str,
        attempt: int,
        c: Completion,
        kind: str | None,
        fault: str | None = None,
    ) -> None:
        count_call(cache_hit=c.cache_hit, cost_usd=c.cost_usd)  # the stage's progress display
        self.log.add(
            CallRecord(
                job=self.log.job,
                roster_name=entry.name,
                model=entry.model_string,
                request_id=request_id,
                attempt=attempt,
                tokens_in=c.tokens_in,
                tokens_out=c.tokens_out,
                cost_usd=c.cost_usd,
                latency_s=c.latency_s,
                cache_hit=c.cache_hit,
                error_kind=kind,
                fault=fault,
                tokens_reasoning=c.tokens_reasoning,
                finish_reason=c.finish_reason,
                dropped_params=",".join(c.dropped_params) or None,
            )
        )
        # a chat model's entry replying as a reasoning one: hidden reasoning tokens reported, or a whole
        # budget spent without a visible word (not one whitespace token at a one-token cap)
        starved = c.empty_at_token_limit and c.tokens_out >= MIN_HIDDEN_TOKENS
        if c.tokens_reasoning or starved:
            line = record_sighting(
                self.cache_dir, entry, reasoning_tokens=c.tokens_reasoning, empty_at_limit=starved, job=self.log.job
            )
            if line:
                print(line, file=sys.stderr)

    def _record_error(
        self, entry: RosterEntry, key: str, attempt: int, latency: float, kind: str, fault: str | None = None
    ) -> None:
        self.log.add(
            CallRecord(
                self.log.job, entry.name, entry.model_string, key[:16], attempt, 0, 0, 0.0, latency, False, kind, fault
            )
        )

    def record_bot(self, entry: RosterEntry, request_id: str, latency_s: float) -> None:
        """Bots answer without a provider; they still appear in the calls table at zero cost."""
        self.log.add(
            CallRecord(self.log.job, entry.name, entry.model_string, request_id, 1, 0, 0, 0.0, latency_s, False, None)
        )

    def calls_frame(self) -> pl.DataFrame:
        """This gateway's calls (this run of the job)."""
        return self.log.frame()

    def write_calls(self, path: str | os.PathLike[str]) -> None:
        """The job's calls table: every attempt, those of its earlier failed or killed runs first
        (journaled as they happened), then this run's; the journal is then settled."""
        from pipeline.core.artifacts.schemas import CallsSchema, write_table

        write_table(path, self.log.job_frame(), CallsSchema)
        self.log.settle()

    def complete_sync(self, entry: RosterEntry, messages: Sequence[Message], **kwargs: Any) -> Completion:
        return asyncio.run(self.complete(entry, messages, **kwargs))


def retry_after_s(exc: BaseException) -> float | None:
    """Seconds the provider asked us to wait (`Retry-After`: seconds or an HTTP date;
    `retry-after-ms`), or None when it did not say."""
    for headers in (
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
        getattr(exc, "headers", None),
    ):
        if not headers:
            continue
        try:
            lowered = {str(k).lower(): str(v) for k, v in dict(headers).items()}
        except (TypeError, ValueError):
            continue
        if "retry-after-ms" in lowered:
            try:
                return max(0.0, float(lowered["retry-after-ms"]) / 1000)
            except ValueError:
                pass
        value = lowered.get("retry-after")
        if value is None:
            continue
        try:
            return max(0.0, float(value))
        except ValueError:
            try:
                return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
            except (TypeError, ValueError):
                continue
    return None


def _with_endpoint(exc: BaseException) -> str:
    """The exception in short, with the URL the request went to where it does not say (a 404 from
    a wrong api_base path)."""
    text = _short(exc)
    endpoint = endpoint_of(exc)
    return text if endpoint is None or endpoint in text else f"{text} (at {endpoint})"


def _short(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."

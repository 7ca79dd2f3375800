"""What can go wrong with a model call, named: error kinds, the gateway's exceptions, and messages
that say what to do (which key to set, which parameter the provider refused)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from unittest import mock

from pipeline.core.models.litellm_setup import load_litellm
from pipeline.core.models.roster import RosterEntry

PROVIDER_FAULT_KINDS = ("connection_closed", "malformed_body", "empty_choices")
#: error kinds written to the calls table; the transport kinds are retried and never become moves
TRANSPORT_KINDS = ("timeout", "rate_limit", "server", "connection", *PROVIDER_FAULT_KINDS)
ERROR_KINDS = (*TRANSPORT_KINDS, "auth", "bad_request", "empty")

#: what to do when a request gives up on each kind of error (the end of its TransportError message)
GIVE_UP_ADVICE = {
    "timeout": "the provider answered nothing within gateway.timeout_s; raise it for a slow model, or rerun later",
    "rate_limit": "the provider refused every request for gateway.rate_limit_patience_s; check the account's "
    "limits and lower providers.<prefix>.rpm/tpm in params/models.yaml",
    "server": "the provider is failing (5xx); check its status page, or raise gateway.retries to ride out an outage",
    "connection": "the provider could not be reached; check the network and the entry's api_base",
    "connection_closed": "the provider kept closing the connection mid-reply; check the network, a proxy in "
    "between, or the provider's status page",
    "malformed_body": "the provider kept sending bodies that are no chat completion; check the entry's api_base "
    "points at an OpenAI-compatible endpoint (not a proxy's error page)",
    "empty_choices": "the provider kept answering with no choice at all (often a content filter on the prompt); "
    "check the provider's filter settings for this model",
}


class GatewayError(RuntimeError):
    """A model call that cannot succeed; the message names the roster entry."""


class AuthError(GatewayError):
    """Missing or rejected credentials: never retried, stops the run."""


class TransportError(GatewayError):
    """Retries exhausted on timeouts, 429s or 5xx; a rerun resumes from the cache."""


class RequestError(GatewayError):
    """The provider rejected the request itself (bad parameters, context too long)."""


class BudgetExceeded(GatewayError):
    """The run's spend (the ledger shared by all jobs) reached gateway.budget_usd: no new request
    was started. The job fails; raise the budget and rerun to resume from the cache."""


class ProviderFault(Exception):
    """A provider reply that is no usable answer (`kind`: one of PROVIDER_FAULT_KINDS), raised while
    turning a response into an answer; classified and retried like a transport error."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception and what it was raised from or during, outermost first (cycles cut)."""
    links: list[BaseException] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(links) < 32:
        links.append(current)
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return links


#: words of litellm's own messages for a 200 whose body is no chat completion (litellm 1.106:
#: a non-object JSON or HTML body, `choices` not a list, a choice without a message)
_MALFORMED_WORDS = ("empty or invalid response from llm endpoint", "invalid response object", "that is not a list")


def _kind_from_chain(exc: BaseException) -> str | None:
    """The kind behind a litellm exception that its class does not tell (a provider fault, a timeout,
    a connection never made), or None when the provider answered with an HTTP status (the status
    decides) or nothing in the chain says.

    litellm 1.106 (openai/ models over httpx on aiohttp) raises InternalServerError with status 500 for
    all of these, whatever really happened, so the cause chain decides:
    - a JSON body cut short or empty: json.JSONDecodeError ("Unterminated string...", "Expecting value");
    - a body that is JSON but no completion: litellm's own messages (_MALFORMED_WORDS);
    - a connection closed before the whole reply: openai.APIConnectionError ("Connection error.") from
      httpx.ReadError / RemoteProtocolError (aiohttp: ClientPayloadError, ServerDisconnectedError);
    - a connection never made (refused, DNS): httpx.ConnectError: the `connection` kind;
    - a read that waited past the timeout: httpx.TimeoutException / openai.APITimeoutError (litellm
      raises its Timeout for these itself; the chain catches a wrapper that does not).
    """
    import httpx
    import openai

    links = _chain(exc)
    # a real HTTP error status from the provider: httpx's or the SDK's own status error in the chain
    # (litellm's exceptions subclass the SDK's and claim a status of their own, so they do not count)
    if any(
        isinstance(link, httpx.HTTPStatusError)
        or isinstance(link, openai.APIStatusError)
        and type(link).__module__.split(".")[0] == "openai"
        for link in links
    ):
        return None
    for link in links:
        if isinstance(link, ProviderFault):
            return link.kind
    if any(isinstance(link, (httpx.TimeoutException, openai.APITimeoutError)) for link in links):
        return "timeout"
    if any(isinstance(link, (httpx.ConnectError, ConnectionRefusedError)) for link in links):
        return "connection"
    if any(isinstance(link, json.JSONDecodeError) for link in links):
        return "malformed_body"
    dropped: tuple[type[BaseException], ...] = (
        httpx.ReadError,
        httpx.RemoteProtocolError,
        httpx.WriteError,
        ConnectionResetError,
        BrokenPipeError,
    )
    try:
        import aiohttp

        dropped += (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError)
    except ImportError:  # pragma: no cover - litellm installs it
        pass
    if any(isinstance(link, dropped) for link in links):
        return "connection_closed"
    text = " ".join(str(link) for link in links).lower()
    if any(words in text for words in _MALFORMED_WORDS):
        return "malformed_body"
    if any(isinstance(link, openai.APIConnectionError) for link in links):
        return "connection"  # the SDK says the connection failed, and nothing more
    return None


@dataclass(frozen=True)
class Unreached:
    """A provider the request never reached: why, in words (`connection refused`), and the
    endpoint tried (scheme, host, port and path: never a query, which may hold a key), or None."""

    cause: str
    endpoint: str | None


def endpoint_of(exc: BaseException) -> str | None:
    """The URL a failed request went to, from httpx's or the SDK's exception in the chain, without
    its query, fragment or user part; None where the chain does not say (litellm's own exceptions
    carry a placeholder request, so they do not count)."""
    import httpx

    for link in _chain(exc):
        if not isinstance(link, (httpx.RequestError, httpx.HTTPStatusError)) and (
            type(link).__module__.split(".")[0] != "openai"
        ):
            continue
        try:
            url = link.request.url  # type: ignore[attr-defined]
        except (AttributeError, RuntimeError):  # httpx raises RuntimeError for an exception without one
            continue
        if isinstance(url, httpx.URL):
            port = f":{url.port}" if url.port else ""
            host = f"[{url.host}]" if ":" in url.host else url.host
            return f"{url.scheme}://{host}{port}{url.path}"
    return None


def unreached(exc: BaseException, kind: str) -> Unreached | None:
    """Why the provider was never reached (refused, a host name not found, no connection within
    the timeout, TLS), or None when it was: it answered, or dropped a connection it had accepted."""
    import socket
    import ssl

    import httpx

    links = _chain(exc)
    cause: str | None = None
    for link in links:
        if isinstance(link, ConnectionRefusedError):
            cause = "connection refused"
        elif isinstance(link, socket.gaierror):
            cause = f"host name not found (DNS: {link.strerror or link})"
        elif isinstance(link, httpx.ConnectTimeout):
            cause = "no connection within the timeout (connect timeout)"
        elif isinstance(link, ssl.SSLError):
            cause = f"TLS failed ({link.reason or link})"
        if cause is not None:
            break
    if cause is None and any(isinstance(link, httpx.ConnectError) for link in links):
        # another OSError while connecting (no route to host, network unreachable)
        errors = [link for link in links if isinstance(link, OSError) and link.strerror]
        cause = errors[-1].strerror.lower() if errors and errors[-1].strerror else "cannot connect"
    if cause is None and kind == "connection":
        cause = "the connection failed"
    return None if cause is None else Unreached(cause, endpoint_of(exc))


def classify_error(exc: BaseException) -> str:
    """Map a litellm exception (or a ProviderFault of the gateway's own reading) to an error kind of
    the calls table."""
    if isinstance(exc, ProviderFault):
        return exc.kind
    litellm = load_litellm()
    if isinstance(exc, (litellm.AuthenticationError, litellm.PermissionDeniedError)):
        return "auth"
    if isinstance(exc, (litellm.Timeout, asyncio.TimeoutError, TimeoutError)):
        return "timeout"
    if isinstance(exc, litellm.RateLimitError):
        return "rate_limit"
    found = _kind_from_chain(exc)
    if found is not None:
        return found
    if isinstance(
        exc,
        (litellm.InternalServerError, litellm.ServiceUnavailableError, litellm.BadGatewayError),
    ):
        return "server"
    if isinstance(exc, litellm.APIConnectionError):
        return "connection"
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        if status in (401, 403):
            return "auth"
        if status == 429:
            return "rate_limit"
        if status == 408:
            return "timeout"
        if status >= 500:
            return "server"
    return "bad_request"


def key_env_names(model: str) -> list[str]:
    """The environment variables litellm reads a key from for `model` (e.g. OPENAI_API_KEY)."""
    # validate_environment lists only missing variables, so ask it with the keys hidden.
    with mock.patch.dict(os.environ, {}, clear=True):
        missing = load_litellm().validate_environment(model=model).get("missing_keys", [])
    names = [k for k in missing if "KEY" in k or "TOKEN" in k]
    return names or [f"{model.split('/', 1)[0].upper()}_API_KEY"]


def auth_message(entry: RosterEntry, variables: Sequence[str], detail: str = "") -> str:
    names = " or ".join(variables)
    if not detail:
        return (
            f"roster entry {entry.name!r} (model {entry.model}) cannot authenticate (auth): "
            f"set the environment variable {names} (export {variables[0]}=...) and rerun"
        )
    return (
        f"roster entry {entry.name!r} (model {entry.model}) cannot authenticate (auth): the provider "
        f"rejected the key; check the key in {names} (export {variables[0]}=...) and rerun: answered "
        f"requests come from the cache. Provider said: {detail}"
    )


def request_message(entry: RosterEntry, detail: str) -> str:
    """A request the provider rejects itself: retrying it unchanged cannot help."""
    return (
        f"roster entry {entry.name!r} (model {entry.model}): request rejected (bad_request): {detail}. "
        "The provider refuses this request itself, so a rerun would send it again unchanged: check the "
        "entry's model string, sampling and extra in params/models.yaml (and that the prompt fits the "
        "model's context), then rerun: answered requests come from the cache."
    )


def unreached_detail(entry: RosterEntry, reach: Unreached) -> str:
    """`connection refused at http://127.0.0.1:9/v1/chat/completions`."""
    where = reach.endpoint or entry.extra.get("api_base") or entry.extra.get("base_url")
    return f"{reach.cause} at {where}" if where else f"{reach.cause} (the provider's default endpoint)"


def unreached_message(entry: RosterEntry, reach: Unreached, plan: str) -> str:
    """The one line said when a request of `entry` first fails to reach its provider: the entry,
    the model, the endpoint, the cause, what happens next (`plan`) and what to check."""
    own = next((key for key in ("api_base", "base_url") if key in entry.extra), None)
    check = (
        f"if the address is wrong, stop and fix extra.{own} of the entry in the roster"
        if own
        else "check the network, or set extra.api_base of the entry in the roster"
    )
    return (
        f"roster entry {entry.name!r} (model {entry.model}) cannot reach its provider: "
        f"{unreached_detail(entry, reach)}; {plan}; {check}"
    )


def deadline_message(entry: RosterEntry, attempt: int, kind: str, detail: str, deadline_s: float) -> str:
    """A request that found no answer within the command's time limit (`--timeout-s`)."""
    advice = GIVE_UP_ADVICE.get(kind, "check the provider")
    return (
        f"roster entry {entry.name!r} (model {entry.model}): no answer within {deadline_s:g} s (--timeout-s; "
        f"0: no limit) after {attempt} attempt{'s' if attempt != 1 else ''}, last error {kind}: {detail}. "
        f"What to do: {advice}."
    )


def give_up_message(entry: RosterEntry, attempt: int, kind: str, detail: str) -> str:
    """A request that failed on every attempt: which entry, which kind of error, what to do."""
    advice = GIVE_UP_ADVICE.get(kind, "check the provider")
    return (
        f"roster entry {entry.name!r} (model {entry.model}): gave up after {attempt} attempts, last error "
        f"{kind}: {detail}. What to do: {advice}. Then rerun the same command to resume: answered "
        "requests come from the cache."
    )

"""The model roster (`params/models.yaml`): who plays, through which provider, with what limits."""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from pipeline.core.artifacts.params import StrictParams as Strict
from pipeline.core.artifacts.params import load_params
from pipeline.core.models.faults import FaultSettings
from pipeline.core.models.litellm_setup import completion_arguments

#: `extra` keys that say where and how a request travels or how it is counted (the endpoint, the
#: account and region, timeouts and retries, the provider's limits), never what the model answers:
#: no game id reads them
TRANSPORT_KEYS = frozenset(
    {
        "api_base",
        "base_url",
        "api_version",
        "organization",
        "timeout",
        "request_timeout",
        "stream_timeout",
        "max_retries",
        "extra_headers",
        "headers",
        "default_headers",
        "ssl_verify",
        "vertex_project",
        "vertex_location",
        "aws_region_name",
        "aws_profile_name",
        "region_name",
        "rpm",
        "tpm",
        "max_parallel_requests",
    }
)
#: a price stated for litellm in `extra` (`input_cost_per_token`, `output_cost_per_token`, ...): accounting
PRICE_KEY = re.compile(r"(^|_)cost_per_")
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
# Keys that carry secrets must come from the environment, never from a params file.
SECRET_KEYS = {"api_key", "api_token", "token", "password", "secret", "aws_secret_access_key"}
#: litellm arguments the gateway sends with every request itself, and what sets each: in `extra`
#: one would reach litellm twice
GATEWAY_ARGUMENTS = {
    "model": "the entry's `model`",
    "messages": "the game",
    "temperature": "sampling.temperature",
    "top_p": "sampling.top_p",
    "max_tokens": "sampling.max_tokens or sampling.move_max_tokens",
    "max_completion_tokens": "sampling.max_tokens or sampling.move_max_tokens (and sampling.reasoning_tokens)",
    "reasoning_effort": "sampling.reasoning_effort",
    "seed": "the gateway (every move is seeded from the job, the player and the move)",
    "stop": "the game, per move",
    "logprobs": "the game, per move",
    "top_logprobs": "the game, per move",
    "timeout": "gateway.timeout_s",
    "num_retries": "gateway.retries",
}
#: how alike (difflib's ratio) a key of `extra` that litellm does not know and one it knows must be
#: for the key to be a misspelling: api_bse/api_base 0.93, base_uri/base_url 0.88,
#: vertex_projct/vertex_project 0.96; a provider's own arguments that litellm passes on unlisted stay
#: below (safety_settings 0.62, reasoning 0.75, generation_config 0.80)
MISSPELT_CUTOFF = 0.85


def _misspelling_of(key: str, known: frozenset[str]) -> str | None:
    """The litellm argument `key` misspells (api-base, API_BASE, api_bse: api_base), or None."""
    squeezed = re.sub(r"[^a-z0-9]", "", key.lower())
    same = sorted(k for k in known if re.sub(r"[^a-z0-9]", "", k.lower()) == squeezed)
    if same:
        return same[0]
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=MISSPELT_CUTOFF)
    return close[0] if close else None


def extra_problems(extra: dict[str, Any]) -> list[str]:
    """What is wrong with the keys of a roster entry's `extra` (empty: nothing): a secret, an
    argument the gateway sets itself, or a key that litellm does not know but that is a
    misspelling of one it does (litellm's own list: litellm_setup.completion_arguments). Other
    keys litellm does not list are a provider's own arguments, which litellm passes on as they are."""
    problems = []
    leaked = sorted(k for k in extra if k.lower() in SECRET_KEYS)
    if leaked:
        problems.append(
            f"{', '.join(leaked)} must not be written in params: set an environment variable "
            "and name it with api_key_env"
        )
    for key in sorted(k for k in extra if k in GATEWAY_ARGUMENTS):
        problems.append(
            f"{key!r} is set by {GATEWAY_ARGUMENTS[key]}, not in extra (litellm would get it twice); "
            "remove it from extra"
        )
    unknown = [k for k in extra if k.lower() not in SECRET_KEYS and k not in GATEWAY_ARGUMENTS]
    known = completion_arguments() if unknown else frozenset()
    for key in sorted(k for k in unknown if known and k not in known):
        meant = _misspelling_of(key, known)
        if meant is not None:
            problems.append(
                f"{key!r} is no argument of litellm's completion; did you mean {meant!r}? (litellm would "
                f"pass {key!r} to the provider unread, and {meant} would stay unset)"
            )
    return problems


def reaches_request(key: str) -> bool:
    """Whether a key of a roster entry's `extra` changes what the model answers (so a game id reads
    it): every key but the transport ones (TRANSPORT_KEYS) and prices (PRICE_KEY). A key nobody
    classified counts, so an unknown provider argument can only replay games, never reuse a game
    it changed."""
    return key not in TRANSPORT_KEYS and not PRICE_KEY.search(key)


#: the bots whose moves come from outside the pipeline: a person, or a program stepping an
#: environment (pipeline.core.models.outside)
OUTSIDE_BOTS = ("human", "agent")


class Sampling(Strict):
    """How an entry samples, and what its replies may spend (pipeline.core.models.reply_budgets): budgets belong
    to the model, so a game states its rules and this entry decides the caps."""

    #: Every field decides a model's games, each through what its requests carry or how they are
    #: capped (pipeline.core.models.gateway.completion_request, reply_budgets): temperature, top_p,
    #: max_tokens, reasoning_effort, reasoning (the reasoning allowance), reasoning_tokens, and
    #: move_max_tokens with only the keys that apply to the benchmark (`identity`). A field added
    #: here joins one of the two sets (tests/core/models/test_game_identity.py fails otherwise).
    GAME_FIELDS: ClassVar[frozenset[str]] = frozenset(
        {"temperature", "top_p", "max_tokens", "reasoning_effort", "reasoning", "reasoning_tokens", "move_max_tokens"}
    )
    TRANSPORT_FIELDS: ClassVar[frozenset[str]] = frozenset()

    temperature: float = Field(0.7, ge=0.0, le=2.0, description="sampling temperature in [0, 2]; 0 is greedy")
    top_p: float = Field(1.0, gt=0.0, le=1.0, description="nucleus mass in (0, 1]")
    max_tokens: int | None = Field(
        None,
        ge=1,
        le=1_000_000,
        description="a positive integer, or null: the most visible reply tokens of any move (null: the game's "
        "budget, or 4096 where the game sets none); a reasoning model's allowance comes on top",
    )
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = Field(
        None, description="a reasoning model's effort (litellm's reasoning_effort); unset: the provider's default"
    )
    reasoning: bool | None = Field(
        None,
        description="true or false: whether this is a reasoning model (null: from reasoning_effort, "
        "reasoning_tokens or litellm's model map)",
    )
    reasoning_tokens: int | None = Field(
        None,
        ge=1,
        le=1_000_000,
        description="a positive integer: hidden reasoning tokens allowed on top of every visible budget "
        "(null: by effort, minimal 2048, low 4096, medium 8192, high 16384)",
    )
    move_max_tokens: dict[str, int] = Field(
        default_factory=dict,
        description="visible reply tokens per kind of move, keyed `<benchmark>.<kind>` (e.g. elimination.vote: 10) "
        "or `<kind>` for every benchmark; replaces the game's budget for that move",
    )

    @field_validator("move_max_tokens")
    @classmethod
    def _positive_budgets(cls, value: dict[str, int]) -> dict[str, int]:
        bad = sorted(k for k, v in value.items() if not isinstance(v, int) or v < 1)
        if bad:
            raise ValueError(f"move_max_tokens: {', '.join(bad)} need a positive integer number of tokens")
        return value

    def identity(self, benchmark: str) -> dict[str, Any]:
        """What of this sampling decides a game of `benchmark` (part of its content id): the fields
        that are set, with only the per-move budgets that apply there (`<benchmark>.<kind>`, or
        `<kind>`, which applies to every benchmark: the core knows no benchmark's kinds of move), so
        another benchmark's budgets change none of its games."""
        found = self.model_dump(mode="json", include=set(self.GAME_FIELDS), exclude_none=True)
        found["move_max_tokens"] = {
            key: tokens
            for key, tokens in sorted(self.move_max_tokens.items())
            if "." not in key or key.startswith(f"{benchmark}.")
        }
        return found


class RosterEntry(Strict):
    #: What decides this entry's games in a benchmark (`game_identity`), field by field. name: it
    #: seeds every move (players.Player.seed_for) and labels the records; model, bot and bot_options:
    #: the player; sampling: as Sampling.GAME_FIELDS says; extra: its keys that reach the request
    #: (`reaches_request`). Sampling and extra are a model's only: a bot sends no request. Never:
    #: api_key_env (where the key is read from). A field added here joins one of the two sets
    #: (tests/core/models/test_game_identity.py fails otherwise).
    GAME_FIELDS: ClassVar[frozenset[str]] = frozenset({"name", "model", "bot", "bot_options", "sampling", "extra"})
    TRANSPORT_FIELDS: ClassVar[frozenset[str]] = frozenset({"api_key_env"})

    name: str = Field(description="a unique name (letters, digits, . _ -), used in every table and path")
    model: str | None = Field(
        None, description="a litellm model string such as openai/gpt-4o-2024-11-20 or local/smollm2-135m"
    )
    bot: str | None = Field(None, description="a scripted bot, e.g. `random`")
    bot_options: dict[str, Any] = Field(default_factory=dict, description="options of the bot, e.g. {accuracy: 0.7}")
    sampling: Sampling = Field(default_factory=Sampling, description="temperature, top_p, max_tokens")
    api_key_env: str | None = Field(
        None,
        description="name of the environment variable holding this entry's key (default: the provider's usual one)",
    )
    extra: dict[str, Any] = Field(
        default_factory=dict,
        description="more arguments of litellm's completion, such as api_base, api_version or extra_headers; "
        "never secrets (api_key_env names the key's variable), nor what the gateway sets itself (model, "
        "sampling, seed, timeout); a key litellm does not know but that is close to one it does (api_bse) is "
        "an error, any other unknown key is a provider's own argument, passed on as it is",
    )

    @field_validator("name")
    @classmethod
    def _name_ok(cls, value: str) -> str:
        if not NAME_PATTERN.match(value):
            raise ValueError(f"name {value!r} must match {NAME_PATTERN.pattern} (it becomes part of file paths)")
        return value

    @field_validator("model")
    @classmethod
    def _model_ok(cls, value: str | None) -> str | None:
        if value is not None and "/" not in value:
            raise ValueError(f"model {value!r} needs a provider prefix, e.g. openai/{value} or anthropic/{value}")
        return value

    @field_validator("extra")
    @classmethod
    def _extra_ok(cls, value: dict[str, Any]) -> dict[str, Any]:
        problems = extra_problems(value)
        if problems:
            raise ValueError("; ".join(problems))
        return value

    @model_validator(mode="after")
    def _model_xor_bot(self) -> RosterEntry:
        if (self.model is None) == (self.bot is None):
            raise ValueError(
                f"roster entry {self.name!r} needs exactly one of `model: provider/name` "
                "(a language model) or `bot: random` (a scripted player)"
            )
        return self

    @property
    def is_bot(self) -> bool:
        return self.bot is not None

    @property
    def provider(self) -> str:
        return "bot" if self.model is None else self.model.split("/", 1)[0]

    @property
    def model_string(self) -> str:
        return self.model if self.model is not None else f"bot/{self.bot}"

    def game_identity(self, benchmark: str) -> dict[str, Any]:
        """What of this entry decides its games in `benchmark`, and only that: the part of a game or
        job id that a seat contributes, the same in every benchmark. Its name; a bot's `bot` and
        `bot_options`; a model's `model`, its sampling as it reaches this benchmark's requests
        (`Sampling.identity`: another benchmark's budgets are not in it) and, when it has any, the
        keys of `extra` that reach the request (`reaches_request`). Never api_key_env, the endpoint,
        timeouts, retries, limits or prices; the rest of the params file (providers, gateway) and
        the entries no game seats are no entry's identity at all.

        A reasoning sighting (pipeline.core.models.reasoning_seen) is not in it: ids are read from
        the params alone, so a sighting, which adds a reasoning allowance to later requests, renames
        no game, and the games played before it are not played and paid again. Declaring it
        (`sampling.reasoning: true`) is a change of the entry and renames its games."""
        found: dict[str, Any] = {"name": self.name}
        if self.is_bot:
            found.update(bot=self.bot, bot_options=dict(self.bot_options))
            return found
        found.update(model=self.model, sampling=self.sampling.identity(benchmark))
        reaching = {key: value for key, value in sorted(self.extra.items()) if reaches_request(key)}
        if reaching:  # only when there is any: an entry without such keys keeps the ids it had
            found["extra"] = reaching
        return found


class ProviderLimits(Strict):
    """A provider's limits. They hold across every job process on the machine (a shared store,
    pipeline.core.models.limits), except for `local`, whose model lives in each process."""

    max_concurrency: int = Field(
        4, ge=1, description="a positive integer: requests in flight at once, over all jobs on the machine"
    )
    rpm: float = Field(0, ge=0, description="requests per minute over all jobs on the machine; 0 means unlimited")
    tpm: float = Field(
        0, ge=0, description="tokens (prompt + reply) per minute over all jobs on the machine; 0 means unlimited"
    )
    adaptive: bool = Field(
        True,
        description="true or false: halve the requests in flight on a burst of 429s and grow back by one per window of answers",
    )


class Price(Strict):
    input_usd_per_mtok: float = Field(ge=0, description="USD per million prompt tokens")
    output_usd_per_mtok: float = Field(ge=0, description="USD per million completion tokens")


class BatchSettings(Strict):
    enabled: bool = Field(
        False,
        description="true: jobs where nothing waits on a single answer (SKATE answering, the roster check) "
        "send their requests through the provider's batch API (about half the price, answers within 24 h)",
    )
    poll_s: float = Field(30.0, gt=0, description="seconds between status checks of a submitted batch")
    max_wait_s: float = Field(
        86400.0, gt=0, description="seconds a job waits for its batch; then it stops and a rerun polls the same batch"
    )
    max_passes: int = Field(
        6,
        ge=1,
        le=100,
        description="batches per job at most (jobs whose later requests depend on earlier answers need several)",
    )
    discount: float = Field(
        0.5,
        gt=0,
        le=1,
        description="batch price as a fraction of the direct price, where the price map has no batch price",
    )


class GatewaySettings(Strict):
    # 10: a request gives up only when all 11 attempts fail. At a flaky provider's ~27% of faulted
    # attempts (timeouts, 5xx, dropped connections, malformed bodies) that is 0.27**11 = 5.6e-7 per
    # request, i.e. one lost request in ~1.8 million; 5 retries gave 0.27**6 = 3.9e-4, a failed game
    # about every 2,600 requests. The extra retries cost time only when they happen (backoff capped
    # at backoff_max_s), never a cache key.
    retries: int = Field(
        10,
        ge=0,
        le=50,
        description="how many times a timeout, 5xx, dropped connection or malformed reply is retried (429s follow rate_limit_patience_s)",
    )
    backoff_base_s: float = Field(1.0, ge=0, description="first retry delay in seconds; doubles each retry")
    backoff_max_s: float = Field(60.0, ge=0, description="longest retry delay in seconds")
    timeout_s: float = Field(120.0, gt=0, description="seconds before a request counts as timed out")
    cache_dir: str = Field(
        ".cache/responses", description="directory of the response cache (relative to the project root)"
    )
    budget_usd: float | None = Field(
        None,
        ge=0,
        description="a number of USD, or null for no limit: the most the run may spend; no new request starts once the spend ledger reaches it",
    )
    ledger: str | None = Field(
        None, description="path of the spend ledger shared by all jobs (default: spend-ledger.jsonl inside cache_dir)"
    )
    prices: dict[str, Price] = Field(
        default_factory=dict,
        description="per litellm model string: {input_usd_per_mtok, output_usd_per_mtok}, for models litellm cannot price (overrides litellm)",
    )
    batch: BatchSettings = Field(
        default_factory=BatchSettings,
        description="the provider batch API for jobs where nothing waits: enabled, poll_s, max_wait_s, max_passes, discount",
    )
    rate_limit_patience_s: float = Field(
        600.0,
        gt=0,
        description="seconds: a 429 is retried (after Retry-After or backoff) until the provider has answered no request for this long",
    )
    limit_store: str | None = Field(
        None,
        description="path of the SQLite file holding the provider limits shared by all jobs of the machine (default: provider-limits.sqlite beside cache_dir); keep it on a local disk",
    )
    limit_share: int = Field(
        1,
        ge=1,
        description="a positive integer: how many machines share the providers' limits at once (a cluster: the `api_jobs` resource of the profile); each enforces 1/limit_share of every limit",
    )
    faults: FaultSettings = Field(
        default_factory=FaultSettings,
        description="injected provider faults for testing: rates of timeout, rate_limit, server, empty, malformed, overlong (all 0: off)",
    )


DEFAULT_CHECK_PROMPT = "Reply with the single word: blue"


class CheckSettings(Strict):
    prompt: str = Field(DEFAULT_CHECK_PROMPT, description="the instruction the roster stage sends every entry")
    expect: str | None = Field(
        "blue",
        description="the word a reply that follows `prompt` is (case, quotes and end punctuation aside); an entry whose reply is anything else is marked `warn`; null: any reply passes (the default for a prompt of one's own)",
    )
    max_tokens: int = Field(
        8,
        ge=1,
        description="visible reply cap of the roster check (a reasoning model gets its reasoning allowance on top)",
    )

    @model_validator(mode="before")
    @classmethod
    def _own_prompt_expects_nothing(cls, data: Any) -> Any:
        # a prompt of one's own without `expect`: there is no word to compare its replies with
        if (
            isinstance(data, dict)
            and data.get("prompt", DEFAULT_CHECK_PROMPT) != DEFAULT_CHECK_PROMPT
            and "expect" not in data
        ):
            return {**data, "expect": None}
        return data


class ParallelSettings(Strict):
    """How much runs at once: the one place to set it (dvc.yaml and the rules read it from here)."""

    jobs: int | None = Field(
        None,
        ge=1,
        description="a positive integer, or null for the machine's CPU count: Snakemake jobs at once under `python -m pipeline run`",
    )
    games_per_job: int = Field(
        64,
        ge=0,
        le=10000,
        description="an integer >= 0: games one job plays concurrently on one event loop, API games and the embedded model's in shards apart (0: no shards, every game its own job and Snakemake output; bot-only games always keep one job each)",
    )


class ModelsParams(Strict):
    roster: list[RosterEntry] = Field(min_length=1, description="a list of roster entries (name + model or bot)")
    providers: dict[str, ProviderLimits] = Field(
        default_factory=dict,
        description="per provider prefix (openai, local, ...) or `default`: max_concurrency and rpm",
    )
    gateway: GatewaySettings = Field(
        default_factory=GatewaySettings, description="retries, backoff, timeout, cache_dir"
    )
    check: CheckSettings = Field(default_factory=CheckSettings, description="the roster stage's question")
    parallel: ParallelSettings = Field(
        default_factory=ParallelSettings, description="jobs at once and API games per job"
    )

    @model_validator(mode="after")
    def _unique_names(self) -> ModelsParams:
        seen: set[str] = set()
        for entry in self.roster:
            if entry.name in seen:
                raise ValueError(f"roster name {entry.name!r} appears twice; names must be unique")
            seen.add(entry.name)
        return self

    def entry(self, name: str) -> RosterEntry:
        for entry in self.roster:
            if entry.name == name:
                return entry
        known = ", ".join(e.name for e in self.roster)
        raise KeyError(f"no roster entry named {name!r} (known: {known})")

    def limits_for(self, provider: str) -> ProviderLimits:
        return self.providers.get(provider) or self.providers.get("default") or ProviderLimits()

    def outside(self) -> dict[str, str]:
        """The entries played from outside the pipeline, name -> bot (`human`: a person, `agent`: a
        program; pipeline.core.models.outside): a benchmark's params check refuses them as scheduled
        players, since their games would wait for moves nobody sends."""
        return {e.name: e.bot for e in self.roster if e.bot is not None and e.bot in OUTSIDE_BOTS}


def load_models(path: str | Path = "params/models.yaml") -> ModelsParams:
    from pipeline.core.models.reasoning_seen import load_sightings

    models = load_params(ModelsParams, path)
    load_sightings(models)  # entries whose replies showed them reasoning (beside the response cache)
    return models

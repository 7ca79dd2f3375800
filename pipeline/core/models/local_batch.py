"""Continuous batching for the embedded local model, with replies that do not depend on the batch.

Requests from every game of a process go to one worker thread per loaded model. Between decoding
steps the worker admits whatever arrived into free rows (no gather window: a request waits at
most one step and its neighbours' prefills), prefills each new prompt on its own, then decodes
one token for every active row in a single forward pass, so a step reads the weights once for up
to `ROWS` requests. A finished request leaves its row at once and the next pending one takes it.

A reply must be the same whatever shared its steps (timing decides that, and the demo's results
are committed byte for byte), so every step is computed so that a row's logits are bit-identical
to the same request decoded alone (docs/performance.md, bench/embedded_batch.py):

- each prompt is prefilled on its own, in chunks that end at fixed positions (`chunk_ends`), so a
  chunk is the same computation whichever prompt starts with it: kept chunks (a game's system
  prompt and examples) are reused by later prompts without changing a bit;
- a decoding step always has `ROWS` rows, empty rows padded: MKL picks its matmul kernel by the
  number of rows (1 row: a matrix-vector kernel; 5-7 rows on 2 threads: another split), and with
  a fixed row count a row's result depends neither on the other rows nor on its position (on CPU
  the step's linear layers compute W·Xᵀ, which streams the weights once for all rows:
  `_row_product`);
- attention runs per row over that row's own KV cache, with the same shapes as alone; no padding
  or mask ever enters a row's sums.

Sampling uses each request's own seeded generator on its own row's logits, the same code as
alone; stop tokens, stop strings, `max_tokens`, usage and log-probabilities are per request.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import torch

#: rows of every decoding step: the concurrency at which batching pays most on 2 CPU cores, and
#: the fixed shape that keeps a row's logits independent of its neighbours (see the module doc)
ROWS = 8
#: where prefill chunks end: at FIRST_CHUNK, then every CHUNK tokens. A forward pass costs a
#: weight read and some overhead whatever its length, so chunks of 128 prefill a cold 760-token
#: prompt about 13% slower than one pass (chunks of 64: 36%); the short first chunk lets prompts
#: that share only a chat format's system line and examples (about 85 tokens) share a chunk
FIRST_CHUNK = 64
CHUNK = 128
#: memory for kept prompt chunks per model (about 3 MB a chunk for SmolLM2-135M in float32)
PREFIX_BYTES = 256 * 2**20
#: the attention implementation a decoding step runs under (registered with transformers once)
ROW_ATTENTION = "row-sdpa"

LogprobRecord = tuple[str, float, tuple[tuple[str, float], ...]]
T = TypeVar("T")


@dataclass(frozen=True)
class Generation:
    text: str
    finish_reason: str  # "stop" (end of turn or stop string) or "length"
    prompt_tokens: int
    completion_tokens: int
    # per generated token: (token text, logprob, ((alt text, alt logprob), ...)); natural log
    logprobs: tuple[LogprobRecord, ...] | None


@dataclass(eq=False)
class Request:
    """One generation asked of the model: the prompt's token ids and its decoding settings."""

    ids: list[int]
    max_tokens: int
    temperature: float
    top_p: float
    seed: int | None
    stop: tuple[str, ...]
    top_logprobs: int | None
    end_ids: frozenset[int]
    lstrip: bool = False  # drop the whitespace the reply starts with (a transcript's space)
    future: Future[Generation] = field(default_factory=Future)


class _Row:
    """A request being decoded: its sampler, its output so far and its own KV cache."""

    def __init__(self, request: Request, generator: torch.Generator) -> None:
        self.request = request
        self.generator = generator
        self.produced: list[int] = []
        self.records: list[LogprobRecord] = []
        self.text = ""
        self.sampled = 0  # tokens drawn, the end-of-turn token included: what usage reports
        self.last = 0  # the token the next step feeds
        # per layer: a buffer sized for the whole reply, and how much of it is filled
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []
        self.filled: list[int] = []

    @property
    def position(self) -> int:
        """Position of the token the next step feeds (the prompt, then each token drawn)."""
        return len(self.request.ids) + self.sampled - 1


class _StepCache:
    """The cache a decoding step's forward pass sees: each row appends its new key and value to
    its own buffers; attention then reads them per row (`_LayerRows`)."""

    def __init__(self, rows: Sequence[_Row | None]) -> None:
        self.rows = rows

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args: Any, **kwargs: Any
    ) -> tuple[_LayerRows, _LayerRows]:
        for slot, row in enumerate(self.rows):
            if row is None:
                continue
            filled = row.filled[layer_idx]
            row.keys[layer_idx][0, :, filled] = key_states[slot, :, 0]
            row.values[layer_idx][0, :, filled] = value_states[slot, :, 0]
            row.filled[layer_idx] = filled + 1
        view = _LayerRows(self.rows, layer_idx)
        return view, view  # the model passes both on to the attention function untouched


@dataclass(frozen=True)
class _LayerRows:
    rows: Sequence[_Row | None]
    layer: int


def _row_attention(
    module: Any, query: torch.Tensor, key: Any, value: Any, attention_mask: Any, **kwargs: Any
) -> tuple[torch.Tensor, None]:
    """sdpa, row by row over each row's own cache, during a decoding step; plain sdpa otherwise."""
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    sdpa: Callable[..., tuple[torch.Tensor, Any]] = ALL_ATTENTION_FUNCTIONS["sdpa"]
    if not isinstance(key, _LayerRows):
        return sdpa(module, query, key, value, attention_mask, **kwargs)[0], None
    # sdpa's layout: (batch, query length, heads, head dim); empty rows stay zero
    out = query.new_zeros(query.shape[0], query.shape[2], query.shape[1], query.shape[3])
    window = kwargs.get("sliding_window")
    for slot, row in enumerate(key.rows):
        if row is None:
            continue
        filled = row.filled[key.layer]
        keys = row.keys[key.layer][:, :, :filled]
        values = row.values[key.layer][:, :, :filled]
        if window:  # a sliding layer sees its last `window` positions, the new one included
            keys, values = keys[:, :, -window:], values[:, :, -window:]
        out[slot : slot + 1] = sdpa(module, query[slot : slot + 1], keys, values, None, **kwargs)[0]
    return out, None


_REGISTERED = threading.Lock()


def _register_row_attention() -> None:
    """Make `ROW_ATTENTION` a transformers attention implementation. It has no mask function on
    purpose: transformers then builds no mask and never asks the step's cache for one."""
    from transformers import AttentionInterface
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    with _REGISTERED:
        if ROW_ATTENTION not in ALL_ATTENTION_FUNCTIONS:
            AttentionInterface.register(ROW_ATTENTION, _row_attention)


def pick(logits: torch.Tensor, temperature: float, top_p: float, generator: torch.Generator) -> int:
    """The next token: greedy at temperature 0, else sampled from the request's own generator."""
    import torch

    if temperature <= 0:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits / temperature, dim=-1)
    if top_p >= 1.0:
        return int(torch.multinomial(probs.cpu(), 1, generator=generator))
    # drawn among the nucleus alone: the same distribution as from the whole vocabulary with the
    # rest zeroed, for a few random numbers instead of one per vocabulary entry (1.2 ms a token)
    values, tokens = nucleus(probs, top_p)
    return int(tokens[int(torch.multinomial(values.cpu(), 1, generator=generator))])


def nucleus(probs: torch.Tensor, top_p: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The nucleus of `probs`, most likely first: (probabilities, token ids) of the most likely
    tokens up to the first whose preceding mass reaches `top_p` (so the top token always stays)."""
    import torch

    size = probs.shape[-1]
    # the nucleus is mostly a few tokens and sorting the vocabulary costs milliseconds a token: the
    # top k first, sorted as a full sort would (same values, same prefix sums), then larger k
    for k in (64, 1024, size):
        if k >= size:
            values, order = torch.sort(probs, descending=True)
        else:
            values, order = torch.topk(probs, k)
        keep = torch.cumsum(values, dim=-1) - values < top_p
        if k >= size or not bool(keep[-1]):  # the cut falls inside these k
            break
    return values[keep], order[keep]


def chunk_ends(length: int) -> list[int]:
    """Where the prefill chunks of a `length`-token prompt end: FIRST_CHUNK, every CHUNK tokens,
    and the prompt's end."""
    ends = [end for end in (FIRST_CHUNK, *range(CHUNK, length, CHUNK)) if end < length]
    return [*ends, length]


def first_stop(text: str, stop: Sequence[str]) -> int | None:
    positions = [text.find(s) for s in stop if s and s in text]
    return min(positions) if positions else None


class Batcher:
    """Decodes every request for one model in one worker thread, up to `rows` at a time."""

    def __init__(self, model: Any, tokenizer: Any, lock: threading.Lock, device: str, rows: int = ROWS) -> None:
        _register_row_attention()
        self.model = model
        # transformers 5 renamed the forward's `past_key_values` to `cache`
        parameters = inspect.signature(model.forward).parameters
        self._cache_arg = "cache" if "cache" in parameters else "past_key_values"
        self.tokenizer = tokenizer
        self.lock = lock  # the model's lock: a caller that uses the weights directly waits
        self.device = device
        self.rows = rows
        self._chunks = _ChunkStore(PREFIX_BYTES)
        self.decoding = False  # True while a decoding step runs (the linear layers read it)
        if device == "cpu":
            _install_row_products(model, self)
        self._pending: deque[Request | _Job] = deque()
        self._wake = threading.Condition()
        self._worker: threading.Thread | None = None
        self.steps = 0  # decoding steps run (a bench reads rows per step from these two)
        self.row_steps = 0

    @property
    def chunks_reused(self) -> int:
        """Prompt chunks taken from the kept ones instead of computed, since the model loaded."""
        return self._chunks.hits

    def forget_prompts(self) -> None:
        """Drop the kept prompt chunks (replies stay the same: they only cost time)."""
        with self.lock:  # the worker reads them while it holds the lock
            self._chunks = _ChunkStore(self._chunks.budget)

    def submit(self, request: Request) -> Future[Generation]:
        self._enqueue(request)
        return request.future

    def call(self, job: Callable[[], T]) -> Future[T]:
        """Run `job` on the worker thread between two steps. Every use of the weights goes there:
        with libgomp (torch's OpenMP on Linux) each thread that runs parallel torch work keeps a
        team of its own, and once a process holds more teams than cores they stop spinning, so
        every parallel op pays a wake-up: the same eight requests took 35 s instead of 20 s after
        one other thread had decoded (2 cores)."""
        future: Future[T] = Future()
        if threading.current_thread() is self._worker:  # a job that calls again: run it in place
            _settle(future, job)
        else:
            self._enqueue(_Job(job, future))
        return future

    def _enqueue(self, item: Request | _Job) -> None:
        with self._wake:
            self._pending.append(item)
            if self._worker is None:
                # a daemon: a process that exits mid-reply does not wait for it
                self._worker = threading.Thread(target=self._run, name="local-model-batcher", daemon=True)
                self._worker.start()
            self._wake.notify()

    # -- the worker ------------------------------------------------------------------------
    def _run(self) -> None:
        slots: list[_Row | None] = [None] * self.rows
        while True:
            admitted: list[Request] = []
            jobs: list[_Job] = []
            with self._wake:
                while not self._pending and not any(slots):
                    self._wake.wait()
                free = sum(row is None for row in slots)
                # in arrival order; a request with no free row waits, and so does what came after it
                while self._pending and (isinstance(self._pending[0], _Job) or len(admitted) < free):
                    item = self._pending.popleft()
                    if isinstance(item, _Job):
                        jobs.append(item)
                    else:
                        admitted.append(item)
            for job in jobs:
                if job.future.set_running_or_notify_cancel():
                    _settle(job.future, job.run)
            try:
                for request in admitted:
                    row = self._start(request)
                    if row is not None:
                        slots[slots.index(None)] = row
                if any(slots):
                    self._step(slots)
            except BaseException as exc:  # a bug here must not leave callers waiting forever
                for request in [*admitted, *(row.request for row in slots if row is not None)]:
                    _fail(request, exc)
                slots = [None] * self.rows
                if not isinstance(exc, Exception):
                    raise

    def _start(self, request: Request) -> _Row | None:
        """Prefill a new request alone and draw its first token; None when it is already done."""
        if not request.future.set_running_or_notify_cancel():
            return None  # cancelled while it waited
        try:
            import torch

            generator = torch.Generator(device="cpu")
            generator.manual_seed(int(request.seed or 0) % (2**63))
            row = _Row(request, generator)
            if request.max_tokens <= 0:
                self._finish(row, "length")
                return None
            with self.lock, torch.inference_mode():
                cache, logits = self._prefill(request.ids)
                for cached_keys, cached_values in _layers(cache):
                    # benchmark for the whole reply, so a step writes in place (no copy per token)
                    length = cached_keys.shape[2]
                    size = (*cached_keys.shape[:2], length + request.max_tokens, cached_keys.shape[3])
                    keys, values = cached_keys.new_empty(size), cached_values.new_empty(size)
                    keys[:, :, :length] = cached_keys
                    values[:, :, :length] = cached_values
                    row.keys.append(keys)
                    row.values.append(values)
                    row.filled.append(length)
            return row if self._advance(row, logits) else None
        except Exception as exc:  # noqa: BLE001 - the request's own failure, handed to its caller
            _fail(request, exc)
            return None

    def _prefill(self, ids: list[int]) -> tuple[Any, torch.Tensor]:
        """The prompt's KV cache and the logits after its last token.

        The prompt runs in chunks ending at `chunk_ends`, so each chunk is the same computation
        (same shapes, same kernels, bit for bit) whichever prompt it starts; whole chunks are
        kept, and a later prompt that starts with the same tokens (a game's system prompt and
        examples) takes them instead of computing them again. A prompt's logits are therefore
        the same whether its first chunks were kept or not."""
        import torch
        from transformers import DynamicCache

        cache = DynamicCache(config=self.model.config)
        ends = chunk_ends(len(ids))
        kept: list[_Chunk] = []
        for end in ends[:-1]:  # the last chunk always runs: it gives the logits
            chunk = self._chunks.get(tuple(ids[:end]))
            if chunk is None:
                break
            kept.append(chunk)
        if kept:
            for layer, _ in enumerate(kept[0].keys):
                cache.update(
                    torch.cat([c.keys[layer] for c in kept], dim=2),
                    torch.cat([c.values[layer] for c in kept], dim=2),
                    layer,
                )
        logits: torch.Tensor | None = None
        for index in range(len(kept), len(ends)):
            start, end = ends[index - 1] if index else 0, ends[index]
            out = self.model(
                input_ids=torch.tensor([ids[start:end]], device=self.device),
                use_cache=True,
                logits_to_keep=1,
                **{self._cache_arg: cache},
            )
            logits = out.logits[0, -1]  # the cache grew in place
            if index < len(ends) - 1 or end in chunk_ends(end + 1):  # a whole chunk, not a prompt's tail
                self._chunks.put(tuple(ids[:end]), cache, end - start)
        assert logits is not None  # a prompt has at least one token, and its last is computed
        return cache, logits

    def _step(self, slots: list[_Row | None]) -> None:
        """One token for every active row, in one forward pass of `rows` rows."""
        import torch

        tokens = torch.zeros(self.rows, 1, dtype=torch.long)
        positions = torch.zeros(self.rows, 1, dtype=torch.long)
        for slot, row in enumerate(slots):
            if row is not None:
                tokens[slot, 0], positions[slot, 0] = row.last, row.position
        try:
            with self.lock, torch.inference_mode():
                config = self.model.config
                kept = config._attn_implementation
                config._attn_implementation = ROW_ATTENTION  # only while this step runs
                self.decoding = True
                try:
                    out = self.model(
                        input_ids=tokens.to(self.device),
                        position_ids=positions.to(self.device),
                        use_cache=True,
                        logits_to_keep=1,
                        **{self._cache_arg: _StepCache(slots)},
                    )
                finally:
                    config._attn_implementation = kept
                    self.decoding = False
            logits = out.logits
        except Exception as exc:  # noqa: BLE001 - a failed shared pass fails the rows in it, not the worker
            for slot, row in enumerate(slots):
                if row is not None:
                    _fail(row.request, exc)
                    slots[slot] = None
            return
        self.steps += 1
        self.row_steps += sum(row is not None for row in slots)
        for slot, row in enumerate(slots):
            if row is None:
                continue
            try:
                going = self._advance(row, logits[slot, -1])
            except Exception as exc:  # noqa: BLE001 - one request's failure leaves the others decoding
                _fail(row.request, exc)
                going = False
            if not going:
                slots[slot] = None

    def _advance(self, row: _Row, row_logits: torch.Tensor) -> bool:
        """Draw one token from this row's logits and apply the stop rules; False once finished."""
        import torch

        request = row.request
        logits = row_logits.float().clone()  # a row of its own: nothing depends on where it sat
        row.sampled += 1
        token = pick(logits, request.temperature, request.top_p, row.generator)
        if request.top_logprobs:
            row.records.append(self._logprob_record(token, torch.log_softmax(logits, dim=-1), request.top_logprobs))
        if token in request.end_ids:
            return self._finish(row, "stop")
        row.produced.append(token)
        row.text = self.tokenizer.decode(row.produced, skip_special_tokens=True)
        cut = first_stop(row.text, request.stop)
        if cut is not None:
            row.text = row.text[:cut]
            return self._finish(row, "stop")
        if row.sampled >= request.max_tokens:
            return self._finish(row, "length")
        row.last = token
        return True

    def _logprob_record(self, token: int, log_probs: torch.Tensor, k: int) -> LogprobRecord:
        import torch

        values, indices = torch.topk(log_probs, k)
        top = tuple((self.tokenizer.decode([int(i)]), float(v)) for v, i in zip(values.tolist(), indices.tolist()))
        return self.tokenizer.decode([token]), float(log_probs[token]), top

    @staticmethod
    def _finish(row: _Row, reason: str) -> bool:
        request = row.request
        text = row.text.lstrip() if request.lstrip else row.text
        generation = Generation(
            text=text,
            finish_reason=reason,
            prompt_tokens=len(request.ids),
            completion_tokens=row.sampled,
            logprobs=tuple(row.records) if request.top_logprobs else None,
        )
        row.keys.clear()  # the cache goes now, not when the caller drops the request
        row.values.clear()
        if not request.future.done():
            request.future.set_result(generation)
        return False


@dataclass(frozen=True)
class _Chunk:
    """The keys and values of one prompt chunk, per layer."""

    keys: tuple[torch.Tensor, ...]
    values: tuple[torch.Tensor, ...]

    @property
    def bytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (*self.keys, *self.values))


class _ChunkStore:
    """Prompt chunks by the tokens up to their end, least recently used dropped beyond a size."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget = budget_bytes
        self.used = 0
        self._chunks: OrderedDict[tuple[int, ...], _Chunk] = OrderedDict()
        self.hits = 0  # chunks taken instead of computed (a bench reads it)

    def get(self, prefix: tuple[int, ...]) -> _Chunk | None:
        chunk = self._chunks.get(prefix)
        if chunk is not None:
            self._chunks.move_to_end(prefix)
            self.hits += 1
        return chunk

    def put(self, prefix: tuple[int, ...], cache: Any, length: int) -> None:
        """Keep the last `length` positions of every layer of `cache` under `prefix`."""
        if prefix in self._chunks or self.budget <= 0:
            return
        layers = _layers(cache)
        if any(keys.shape[2] < length for keys, _ in layers):
            return  # a sliding window shorter than the chunk: the chunk is not all there
        # copies: a slice would keep the whole cache tensor alive
        chunk = _Chunk(
            tuple(k[:, :, -length:].clone() for k, _ in layers), tuple(v[:, :, -length:].clone() for _, v in layers)
        )
        self._chunks[prefix] = chunk
        self.used += chunk.bytes
        while self.used > self.budget and self._chunks:
            _, dropped = self._chunks.popitem(last=False)
            self.used -= dropped.bytes


def _install_row_products(model: Any, batcher: Batcher) -> None:
    """Make the model's linear layers compute W·Xᵀ during decoding steps (see `_row_product`)."""
    import torch

    for module in model.modules():
        if type(module) is torch.nn.Linear:
            # an instance attribute: this model's layers only, the class stays as it is
            module.forward = functools.partial(_row_product, module, batcher)


def _row_product(module: Any, batcher: Batcher, x: torch.Tensor) -> torch.Tensor:
    """A linear layer. In a decoding step on CPU it is W·Xᵀ with the step's rows as the columns
    of a transposed operand: MKL then streams the weights once for all rows, a step of 8 rows
    costing about what 1 row costs as x·Wᵀ (SmolLM2, 2 cores: 52 ms against 47 ms for one row and
    75 ms for 8 rows as x·Wᵀ). A row's result depends neither on the other columns nor on its
    place among them, as with x·Wᵀ at a fixed row count. Elsewhere (prefill, other callers) the
    layer is unchanged."""
    import torch

    if not batcher.decoding:
        return torch.nn.functional.linear(x, module.weight, module.bias)
    rows = x.reshape(-1, x.shape[-1])
    out = torch.mm(module.weight, rows.t()).t()  # the view, not a copy: MKL's fast layout
    if module.bias is not None:
        out = out + module.bias
    return out.contiguous().view(*x.shape[:-1], out.shape[-1])


def _layers(cache: Any) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(keys, values) of every layer of a prefill's DynamicCache; a sliding layer holds its window."""
    if hasattr(cache, "layers"):
        return [(layer.keys, layer.values) for layer in cache.layers]
    return list(zip(cache.key_cache, cache.value_cache))  # transformers before 4.56


@dataclass(frozen=True)
class _Job:
    run: Callable[[], Any]
    future: Future[Any]


def _settle(future: Future[T], job: Callable[[], T]) -> None:
    try:
        result = job()
    except Exception as exc:  # noqa: BLE001 - the caller's job's failure is the caller's
        future.set_exception(exc)
    else:
        future.set_result(result)


def _fail(request: Request, exc: BaseException) -> None:
    if not request.future.done():
        request.future.set_exception(exc)

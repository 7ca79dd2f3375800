"""The judge: cross-entropy of strings under a causal language model, scored in batches.

Measures (docs/judge.md and docs/xent.md, "Judge scoring"), all in bits:
- `xent(s | x)`: per-token cross-entropy of the tokens of s after the prefix x. x and s are
  tokenized separately and their ids concatenated; which tokens are scored is the judge's
  `scoring` option (the same for `xent(s)` and `xent(s | x)`, so they can be subtracted per token):
  - "reference" (default, the reference implementation's): each side is tokenized the way the
    tokenizer does by default, its special tokens included (a Gemma tokenizer puts a BOS before
    the prefix *and* before the string); the string's first token is not scored. With a BOS
    tokenizer that first token is the string's BOS, so every text token is scored; without one
    (GPT-2, Qwen) the first text token is not scored and an empty prefix gives no context at all.
  - "include_first_token" (the reference's `include_first_token=True`): one BOS (or EOS when the
    tokenizer has no BOS), then both sides as above; every token of the string side is scored.
  - "bos_once" (this project's earlier rule): one BOS, then prefix and string without special
    tokens; the string's first text token is not scored.
  `clip_logprobs` (the reference's option, off by default) caps each token at ln(vocabulary
  size) nats, i.e. log2(vocabulary size) bits.
- `xed(s | x) = xent(s) - xent(s | x)` per token; `nex = -xent`; `dex = -xed`.

How it is fast: requests are deduplicated and looked up in the score cache, the rest sorted by
length and packed into batches (right padding + attention mask). The transformer body runs once
per batch; the vocabulary projection (262k entries for gemma) runs only at the scored positions,
in chunks, and the log-softmax is taken in float32. A judge checks this shortcut against the
model's own logits once at load (softcapping and the like included) and falls back to the
model's full forward pass if they disagree.

Weights dtype (`dtype`): "float32" (the reference implementation's: it loads the model with the
library's default), "bfloat16" (ours on a GPU: faster, half the memory; with gemma-3-270m its
scores differ from float32 by 0.02 bits per token on average, 0.1 at most, docs/judge.md), or
"auto"/None (bfloat16 on CUDA, float32 on CPU). The projection and log-softmax run in float32
either way. The dtype a judge ran in is part of its fingerprint, hence of every score cache key:
switching dtype never reuses a score.

Context: a prefix too long for the judge's context loses its oldest tokens (the BOS token is
kept); the number dropped is recorded in the score (`prefix_tokens_dropped`). A string that does
not fit on its own is a `JudgeError` (cut it first, e.g. with `last_n_tokens`).

Async: `await judge.axent(...)` and friends go through a per-event-loop `JudgeBatcher`, so many
concurrent games share one judge and their requests are run together.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import os
import random
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from pipeline.core.artifacts.io import content_id, seed_from
from pipeline.core.judge.cache import ScoreCache, score_key
from pipeline.core.judge.prompts import (
    FALSE_ANSWER,
    PROMPTS_VERSION,
    STORY_OPENINGS,
    TRUE_ANSWER,
    truth_prompt,
)

log = logging.getLogger(__name__)

DEFAULT_JUDGE = "gemma-3-270m"
# Part of every cache key: bump when what a score means changes (tokenization, scored tokens).
SCORING_VERSION = 2  # 2: scoring modes (the reference's tokenization by default) and clipping
SCORING_MODES = ("reference", "include_first_token", "bos_once")
#: weight dtypes by name; "auto" (or None) picks bfloat16 on CUDA and float32 elsewhere
DTYPES = ("float32", "bfloat16", "auto")
_LN2 = math.log(2.0)


class JudgeError(ValueError):
    """A request the judge cannot score, or a judge that cannot be loaded; the message says why."""


@dataclass(frozen=True)
class JudgeFingerprint:
    """What decides a judge's numbers; recorded in every output and in every cache key."""

    model_id: str
    weights_sha256: str
    dtype: str
    device: str
    scoring: str = "reference"  # which tokens are scored (SCORING_MODES), "+clip" when clipped

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass(frozen=True)
class XentScore:
    """Per-token values in bits for the scored tokens of one string (all but its first token)."""

    tokens: tuple[str, ...]
    bits: tuple[float, ...]
    judge: JudgeFingerprint
    prefix_tokens_dropped: int = 0

    @property
    def total(self) -> float:
        return math.fsum(self.bits)

    def _same_tokens(self, other: XentScore) -> None:
        if not isinstance(other, XentScore) or other.tokens != self.tokens:
            raise ValueError("per-token arithmetic needs scores of the same string; add totals instead")

    def __neg__(self) -> XentScore:
        return replace(self, bits=tuple(0.0 - b for b in self.bits))

    def __sub__(self, other: XentScore) -> XentScore:
        self._same_tokens(other)
        return replace(
            self,
            bits=tuple(a - b for a, b in zip(self.bits, other.bits)),
            prefix_tokens_dropped=max(self.prefix_tokens_dropped, other.prefix_tokens_dropped),
        )

    def __add__(self, other: XentScore) -> XentScore:
        return self - (-other)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tokens": list(self.tokens),
            "xent_bits": list(self.bits),
            "total_bits": self.total,
            "prefix_tokens_dropped": self.prefix_tokens_dropped,
            "judge": self.judge.as_dict(),
        }


@dataclass(frozen=True)
class _Encoded:
    prefix_ids: tuple[int, ...]
    string_ids: tuple[int, ...]
    dropped: int
    skip: int = 1  # leading string tokens that are not scored

    @property
    def ids(self) -> tuple[int, ...]:
        return self.prefix_ids + self.string_ids

    @property
    def scored(self) -> int:
        return max(len(self.string_ids) - self.skip, 0)

    @property
    def first_position(self) -> int:
        """The position whose hidden state predicts the first scored token."""
        return len(self.prefix_ids) + self.skip - 1

    @property
    def targets(self) -> tuple[int, ...]:
        return self.string_ids[self.skip :]

    @property
    def model_length(self) -> int:
        # the last token is only ever a target: no scored position looks at it, so it is not run
        return len(self.prefix_ids) + len(self.string_ids) - 1


def resolve_dtype(dtype: str | None, device: str) -> str:
    """The weight dtype a judge on `device` runs in: `dtype` itself, or for "auto"/None bfloat16 on
    CUDA and float32 elsewhere (the name recorded in the fingerprint, never "auto")."""
    if dtype in (None, "auto"):
        return "bfloat16" if device.startswith("cuda") else "float32"
    if dtype not in DTYPES:
        raise JudgeError(f"unknown dtype {dtype!r}; expected one of {', '.join(DTYPES)}")
    return dtype


def weights_sha256(path: str | os.PathLike[str]) -> str:
    """The embedded model's READY marker (the packaged GGUF's sha256) or a hash of the weight files."""
    directory = Path(path)
    marker = directory / "READY"
    if marker.exists():
        return marker.read_text().strip()
    digest = hashlib.sha256()
    files = sorted([*directory.glob("*.safetensors"), *directory.glob("*.bin")])
    if not files:
        raise JudgeError(f"{directory}: no *.safetensors or *.bin weight files")
    for file in files:
        digest.update(file.name.encode())
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 22), b""):
                digest.update(block)
    return digest.hexdigest()


class Judge:
    """A Hugging Face causal LM used as a cross-entropy judge (thread-safe; one model per instance)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        model_id: str | None = None,
        device: str | None = None,
        dtype: str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        max_batch_tokens: int | None = None,
        head_chunk_bytes: int | None = None,
        scoring: str = "reference",
        clip_logprobs: bool = False,
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if scoring not in SCORING_MODES:
            raise JudgeError(f"unknown scoring {scoring!r}; expected one of {', '.join(SCORING_MODES)}")
        self.scoring = scoring
        self.clip_logprobs = clip_logprobs
        self.path = Path(path)
        if not (self.path / "config.json").exists():
            raise JudgeError(f"{self.path}: not a Hugging Face model directory (no config.json)")
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype_name = resolve_dtype(dtype, self.device)
        torch_dtype = getattr(torch, dtype_name)
        # Any: transformers' stubs type decode() as str | list[str] and .to() as a bare Module
        self.tokenizer: Any = AutoTokenizer.from_pretrained(str(self.path))
        loaded: Any = AutoModelForCausalLM.from_pretrained(str(self.path), dtype=torch_dtype)
        self.model: Any = loaded.to(self.device)
        self.model.eval()
        device_label = self.device
        if self.device.startswith("cuda"):
            device_label = f"{self.device} ({torch.cuda.get_device_name(torch.device(self.device))})"
        self.fingerprint = JudgeFingerprint(
            model_id=model_id or self.path.name,
            weights_sha256=weights_sha256(self.path),
            dtype=dtype_name,
            device=device_label,
            scoring=scoring + ("+clip" if clip_logprobs else ""),
        )
        config = self.model.config
        self.max_context = int(getattr(config, "max_position_embeddings", 0) or 2048)
        self._body = getattr(self.model, self.model.base_model_prefix)
        head = self.model.get_output_embeddings()
        if head is None or getattr(head, "weight", None) is None:
            raise JudgeError(f"{self.path}: the model has no output projection to score tokens with")
        # the projection always runs in float32: bf16 logits would cost ~0.01 bits per token
        self._head_weight = head.weight.detach().float()  # no copy when already float32
        bias = getattr(head, "bias", None)
        self._head_bias = None if bias is None else bias.detach().float()
        self._softcap = getattr(config, "final_logit_softcapping", None)
        self.vocab_size = int(self._head_weight.shape[0])
        on_gpu = self.device.startswith("cuda")
        self.max_batch_tokens = max_batch_tokens or (65536 if on_gpu else 4096)
        chunk_bytes = head_chunk_bytes or ((2 << 30) if on_gpu else (256 << 20))
        self.head_chunk_rows = max(1, chunk_bytes // (4 * self.vocab_size))
        bos = self.tokenizer.bos_token_id
        self._bos: tuple[int, ...] = (bos,) if isinstance(bos, int) else ()
        eos = self.tokenizer.eos_token_id
        # include_first_token starts with BOS, or EOS for a tokenizer without one (the reference's)
        self._start: tuple[int, ...] = self._bos or ((eos,) if isinstance(eos, int) else ())
        if scoring == "include_first_token" and not self._start:
            raise JudgeError(f"{self.path}: include_first_token needs a BOS or EOS token; this tokenizer has neither")
        self._special = frozenset(int(i) for i in self.tokenizer.all_special_ids)
        # the reference's cap: ln(len(tokenizer)) nats per token
        self.max_token_nats = math.log(len(self.tokenizer)) if clip_logprobs else None
        pad = self.tokenizer.pad_token_id
        self._pad = pad if isinstance(pad, int) else (self.tokenizer.eos_token_id or 0)
        self.cache = ScoreCache(cache_dir)
        self._lock = threading.RLock()
        self._batchers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, JudgeBatcher] = weakref.WeakKeyDictionary()
        self.forward_passes = 0  # model body runs (batches), for tests and benchmarks
        self.head_mode = self._check_head()

    def __repr__(self) -> str:
        return f"Judge({self.fingerprint.model_id!r}, dtype={self.fingerprint.dtype}, device={self.device})"

    # -- tokens ------------------------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        """Token ids of `text` with no special tokens (what first_n_tokens and friends count)."""
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"]) if text else []

    def encode_side(self, text: str) -> list[int]:
        """Token ids of one side (prefix or string) as the scoring mode tokenizes it."""
        if self.scoring == "bos_once":
            return self.encode(text)
        return list(self.tokenizer(text)["input_ids"])  # the tokenizer's default: special tokens too

    def count_tokens(self, text: str) -> int:
        return len(self.encode(text))

    def first_n_tokens(self, text: str, n: int) -> str:
        """The first n judge tokens of `text` (all of it when it has n tokens or fewer)."""
        return self._cut(text, n, from_end=False)

    def last_n_tokens(self, text: str, n: int) -> str:
        """The last n judge tokens of `text` (all of it when it has n tokens or fewer)."""
        return self._cut(text, n, from_end=True)

    def _cut(self, text: str, n: int, *, from_end: bool) -> str:
        ids = self.encode(text)
        if len(ids) <= n:
            return text
        # a cut inside a multi-byte character decodes to U+FFFD, which re-encodes to more tokens:
        # give up dangling pieces until the result really has at most n tokens
        for keep in range(max(n, 0), 0, -1):
            piece = self.tokenizer.decode(ids[len(ids) - keep :] if from_end else ids[:keep])
            if len(self.encode(piece)) <= n:
                return piece
        return ""

    def token_texts(self, text: str) -> list[str]:
        """The text of each token of `text`; joined they give `text` back.

        From the tokenizer's character offsets: a character split over several byte tokens is
        shown on its first token, the others show "". Slow tokenizers fall back to decoding
        each token alone.
        """
        if not text:
            return []
        if not getattr(self.tokenizer, "is_fast", False):
            return [self.tokenizer.decode([i]) for i in self.encode(text)]
        encoding = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        pieces: list[str] = []
        done = 0
        for _, end in encoding["offset_mapping"]:
            end = max(end, done)
            pieces.append(text[done:end])
            done = end
        if pieces and done < len(text):
            pieces[-1] += text[done:]
        return pieces

    def _encode_pair(self, string: str, prefix: str) -> _Encoded:
        if not isinstance(string, str) or not isinstance(prefix, str):
            raise JudgeError(f"string and prefix must be str, got {type(string).__name__} and {type(prefix).__name__}")
        if not string:  # nothing to score (the reference returns an empty list too)
            return _Encoded(self._bos, (), 0)
        string_ids = tuple(self.encode_side(string))
        if self.scoring == "bos_once":
            prefix_ids, skip = self._bos + tuple(self.encode(prefix)), 1
        elif self.scoring == "reference":
            prefix_ids, skip = tuple(self.encode_side(prefix)), 1
        else:
            prefix_ids, skip = self._start + tuple(self.encode_side(prefix)), 0
        keep = 1 if prefix_ids and prefix_ids[0] in self._special else 0  # a leading BOS is never dropped
        bench = self.max_context - len(string_ids)
        if bench < keep or (skip == 0 and bench < 1):
            raise JudgeError(
                f"the string has {len(string_ids)} tokens and does not fit the judge's context of "
                f"{self.max_context} tokens{' with its BOS token' if keep else ''}; cut it first "
                "(e.g. last_n_tokens)"
            )
        dropped = max(len(prefix_ids) - bench, 0)
        if dropped:  # the oldest prefix tokens go; the BOS token stays
            prefix_ids = prefix_ids[:keep] + prefix_ids[keep + dropped :]
        return _Encoded(prefix_ids, string_ids, dropped, skip)

    def _scored_texts(self, string: str, encoded: _Encoded) -> list[str]:
        """The text of each scored token: special tokens show as "", text tokens as token_texts."""
        texts = self.token_texts(string)
        text_ids = self.encode(string)
        ids = list(encoded.string_ids)
        lead = next((k for k in range(len(ids) - len(text_ids) + 1) if ids[k : k + len(text_ids)] == text_ids), None)
        if lead is None:  # the tokenizer changed the text's ids around its special tokens
            return [self.tokenizer.decode([i]) for i in encoded.targets]
        shown = [""] * lead + texts + [""] * (len(ids) - lead - len(text_ids))
        return shown[encoded.skip :]

    # -- scoring -----------------------------------------------------------------------------
    def _key(self, string: str, prefix: str) -> str:
        return score_key(SCORING_VERSION, self.fingerprint.as_dict(), prefix, string)

    def cached_score(self, string: str, prefix: str = "") -> XentScore | None:
        entry = self.cache.get(self._key(string, prefix))
        return None if entry is None else self._from_entry(entry)

    def _from_entry(self, entry: dict[str, Any]) -> XentScore:
        return XentScore(
            tokens=tuple(entry["tokens"]),
            bits=tuple(float(b) for b in entry["bits"]),
            judge=self.fingerprint,
            prefix_tokens_dropped=int(entry["dropped"]),
        )

    def score_many(self, pairs: Sequence[tuple[str, str]]) -> list[XentScore]:
        """`xent(string | prefix)` for every (string, prefix) pair, run together in batches."""
        outcomes = self.score_outcomes(pairs)
        for outcome in outcomes:
            if isinstance(outcome, JudgeError):
                raise outcome
        return outcomes  # type: ignore[return-value]

    def score_outcomes(self, pairs: Sequence[tuple[str, str]]) -> list[XentScore | JudgeError]:
        """Like `score_many`, but a request that cannot be scored gets its error, not the batch."""
        outcomes: dict[tuple[str, str], XentScore | JudgeError] = {}
        todo: dict[tuple[str, str], tuple[str, _Encoded]] = {}
        for string, prefix in pairs:
            pair = (string, prefix)
            if pair in outcomes or pair in todo:
                continue
            try:
                key = self._key(string, prefix)
                hit = self.cache.get(key)
                if hit is not None:
                    outcomes[pair] = self._from_entry(hit)
                    continue
                todo[pair] = (key, self._encode_pair(string, prefix))
            except JudgeError as error:
                outcomes[pair] = error
        if todo:
            nats = self._run([encoded for _, encoded in todo.values()])
            for (pair, (key, encoded)), values in zip(todo.items(), nats):
                tokens, bits = self._scored_texts(pair[0], encoded), [v / _LN2 for v in values]
                entry = {"tokens": tokens, "bits": bits, "dropped": encoded.dropped}
                if len(tokens) != len(bits):  # offsets and ids disagree: a tokenizer bug
                    raise JudgeError(f"token texts and scores of {pair[0]!r} do not line up")
                self.cache.put(key, entry)
                outcomes[pair] = self._from_entry(entry)
        return [outcomes[(string, prefix)] for string, prefix in pairs]

    def _batches(self, order: list[int], requests: Sequence[_Encoded]) -> list[list[int]]:
        """Consecutive runs of length-sorted requests, each within the token budget."""
        batches: list[list[int]] = []
        current: list[int] = []
        for index in order:
            longest = requests[current[0]].model_length if current else requests[index].model_length
            if current and (len(current) + 1) * longest > self.max_batch_tokens:
                batches.append(current)
                current = []
            current.append(index)
        if current:
            batches.append(current)
        return batches

    def _run(self, requests: Sequence[_Encoded]) -> list[list[float]]:
        """Natural-log cross-entropies of the scored tokens of each request."""
        import torch

        results: list[list[float]] = [[] for _ in requests]
        order = sorted((i for i, r in enumerate(requests) if r.scored), key=lambda i: -requests[i].model_length)
        with self._lock, torch.inference_mode():
            for batch in self._batches(order, requests):
                rows = [requests[i] for i in batch]
                width = rows[0].model_length
                ids = torch.full((len(rows), width), self._pad, dtype=torch.long)
                mask = torch.zeros((len(rows), width), dtype=torch.long)
                row_index: list[int] = []
                positions: list[int] = []
                targets: list[int] = []
                for b, row in enumerate(rows):
                    ids[b, : row.model_length] = torch.tensor(row.ids[: row.model_length], dtype=torch.long)
                    mask[b, : row.model_length] = 1
                    start = row.first_position  # the hidden state at p predicts the token at p + 1
                    positions.extend(range(start, start + row.scored))
                    row_index.extend([b] * row.scored)
                    targets.extend(row.targets)
                ids, mask = ids.to(self.device), mask.to(self.device)
                rows_t = torch.tensor(row_index, device=self.device)
                pos_t = torch.tensor(positions, device=self.device)
                targets_t = torch.tensor(targets, device=self.device)
                self.forward_passes += 1
                if self.head_mode == "hidden":
                    hidden = self._body(input_ids=ids, attention_mask=mask).last_hidden_state
                    nats = self._cross_entropy(hidden[rows_t, pos_t], targets_t)
                else:
                    logits = self.model(input_ids=ids, attention_mask=mask).logits
                    picked = logits[rows_t, pos_t].float()
                    nats = torch.logsumexp(picked, -1) - picked.gather(1, targets_t[:, None])[:, 0]
                if self.max_token_nats is not None:
                    nats = torch.clamp(nats, max=self.max_token_nats)
                values = nats.cpu().tolist()
                cursor = 0
                for i, row in zip(batch, rows):
                    results[i] = values[cursor : cursor + row.scored]
                    cursor += row.scored
        return results

    def _logits(self, hidden: Any, out: Any = None) -> Any:
        """float32 logits from final hidden states, as the model's own head would give them."""
        import torch

        hidden = hidden.float()
        if out is None:
            logits = torch.nn.functional.linear(hidden, self._head_weight, self._head_bias)
        elif self._head_bias is None:
            logits = torch.mm(hidden, self._head_weight.t(), out=out)
        else:
            logits = torch.addmm(self._head_bias, hidden, self._head_weight.t(), out=out)
        if self._softcap:
            logits.div_(self._softcap).tanh_().mul_(self._softcap)
        return logits

    def _cross_entropy(self, hidden: Any, targets: Any) -> Any:
        """-log softmax(logits)[target] per row, one chunk of rows at a time.

        Every chunk reuses one float32 buffer and is reduced in place (max, subtract, exp, sum):
        a fresh 262k-wide tensor per step would spend much of the time in page faults.
        """
        import torch

        rows = hidden.shape[0]
        out = torch.empty(rows, dtype=torch.float32, device=hidden.device)
        chunk = min(self.head_chunk_rows, rows)
        buffer = torch.empty((chunk, self.vocab_size), dtype=torch.float32, device=hidden.device)
        for start in range(0, rows, chunk):
            stop = min(start + chunk, rows)
            logits = self._logits(hidden[start:stop], out=buffer[: stop - start])
            chosen = logits.gather(1, targets[start:stop, None])[:, 0]
            peak = logits.amax(dim=-1, keepdim=True)
            total = logits.sub_(peak).exp_().sum(dim=-1)
            out[start:stop] = peak[:, 0] + total.log() - chosen
        return out

    def _check_head(self) -> str:
        """'hidden' when body + our projection reproduce the model's logits, else 'full'."""
        import torch

        probe = (list(self._bos) + self.encode("A judge checks its shortcut."))[: min(8, self.max_context)]
        ids = torch.tensor([probe], device=self.device)
        with torch.inference_mode():
            reference = self.model(input_ids=ids).logits[0].float()
            ours = self._logits(self._body(input_ids=ids).last_hidden_state[0])
        tolerance = (1e-3 if self.fingerprint.dtype == "float32" else 5e-2) * max(1.0, float(reference.abs().max()))
        if float((ours - reference).abs().max()) <= tolerance:
            return "hidden"
        log.warning("%s: body + projection do not match the model's logits; scoring with full logits", self)
        return "full"

    # -- measures ----------------------------------------------------------------------------
    def xent(self, string: str, prefix: str = "") -> XentScore:
        return self.score_many([(string, prefix)])[0]

    def xed(self, string: str, prefix: str) -> XentScore:
        """xent(s) - xent(s | x): what the prefix tells the judge about the string."""
        alone, given = self.score_many([(string, ""), (string, prefix)])
        return alone - given

    def nex(self, string: str, prefix: str = "") -> XentScore:
        return -self.xent(string, prefix)

    def dex(self, string: str, prefix: str) -> XentScore:
        return -self.xed(string, prefix)

    def is_true(self, statement: str, *args: object) -> bool:
        """The judge finds "Answer: true" less surprising than "Answer: false" after the claim."""
        prompt = truth_prompt(statement, args)
        yes, no = self.score_many([(TRUE_ANSWER, prompt), (FALSE_ANSWER, prompt)])
        return yes.total < no.total

    def is_false(self, statement: str, *args: object) -> bool:
        return not self.is_true(statement, *args)

    # -- async (many games, one judge) -------------------------------------------------------
    def batcher(self) -> JudgeBatcher:
        """The micro-batcher of the running event loop (one per loop)."""
        loop = asyncio.get_running_loop()
        batcher = self._batchers.get(loop)
        if batcher is None:
            batcher = self._batchers[loop] = JudgeBatcher(self)
        return batcher

    async def ascore_many(self, pairs: Sequence[tuple[str, str]]) -> list[XentScore]:
        batcher = self.batcher()
        return list(await asyncio.gather(*(batcher.score(s, p) for s, p in pairs)))

    async def axent(self, string: str, prefix: str = "") -> XentScore:
        return await self.batcher().score(string, prefix)

    async def axed(self, string: str, prefix: str) -> XentScore:
        alone, given = await self.ascore_many([(string, ""), (string, prefix)])
        return alone - given

    async def anex(self, string: str, prefix: str = "") -> XentScore:
        return -(await self.axent(string, prefix))

    async def adex(self, string: str, prefix: str) -> XentScore:
        return -(await self.axed(string, prefix))

    async def ais_true(self, statement: str, *args: object) -> bool:
        prompt = truth_prompt(statement, args)
        yes, no = await self.ascore_many([(TRUE_ANSWER, prompt), (FALSE_ANSWER, prompt)])
        return yes.total < no.total

    async def ais_false(self, statement: str, *args: object) -> bool:
        return not await self.ais_true(statement, *args)

    # -- stories -----------------------------------------------------------------------------
    def story(self, seed: int | str, n_tokens: int = 50, *, temperature: float = 1.0, top_p: float = 0.95) -> str:
        return self.stories([seed], n_tokens, temperature=temperature, top_p=top_p)[0]

    def stories(
        self, seeds: Sequence[int | str], n_tokens: int = 50, *, temperature: float = 1.0, top_p: float = 0.95
    ) -> list[str]:
        """One sampled text per seed: the judge continues an opening picked by the seed.

        The opening (from `STORY_OPENINGS`) and every sampled token come from generators seeded
        by the seed alone; the story is the continuation, cut to at most `n_tokens` judge tokens.
        Stories for several seeds are sampled in one batch; padding can move logits by float
        noise, so a different batch could in principle flip a near-tied draw. Build maps once and
        keep the texts (a built map stores its stories as literals).
        """
        settings = {"n": n_tokens, "temperature": temperature, "top_p": top_p, "prompts": PROMPTS_VERSION}
        keys = [
            content_id(
                {"v": SCORING_VERSION, "story": str(seed), "settings": settings, "judge": self.fingerprint.as_dict()},
                length=64,
            )
            for seed in seeds
        ]
        found = {key: entry["text"] for key in set(keys) if (entry := self.cache.get(key)) is not None}
        missing = sorted({(key, str(seed)) for key, seed in zip(keys, seeds) if key not in found})
        if missing:
            texts = self._sample([seed for _, seed in missing], n_tokens + 8, temperature, top_p)
            for (key, _), text in zip(missing, texts):
                story = self.first_n_tokens(text.lstrip(), n_tokens)
                self.cache.put(key, {"text": story})
                found[key] = story
        return [found[key] for key in keys]

    def _sample(self, seeds: Sequence[str], steps: int, temperature: float, top_p: float) -> list[str]:
        import torch

        openings = [
            STORY_OPENINGS[random.Random(seed_from("story-opening", s)).randrange(len(STORY_OPENINGS))] for s in seeds
        ]
        generators = []
        for s in seeds:
            generator = torch.Generator(device="cpu")
            generator.manual_seed(seed_from("story-sample", s))
            generators.append(generator)
        bench = self.max_context - steps - len(self._bos)  # a small context keeps the opening's end
        if bench < 1:
            raise JudgeError(
                f"a story of {steps} sampled tokens does not fit the judge's context of {self.max_context}"
            )
        prompts = [list(self._bos) + self.encode(text)[-bench:] for text in openings]
        width = max(len(p) for p in prompts)
        # left padding: every row's next token sits in the last column
        ids = torch.tensor([[self._pad] * (width - len(p)) + p for p in prompts], device=self.device)
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=self.device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        banned = torch.tensor(sorted(set(self.tokenizer.all_special_ids)), dtype=torch.long)
        produced: list[list[int]] = [[] for _ in seeds]
        with self._lock, torch.inference_mode():
            out = self.model(
                input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, logits_to_keep=1
            )
            for _ in range(steps):
                logits = out.logits[:, -1].float().cpu()
                logits[:, banned] = float("-inf")  # stories are plain text: no special tokens
                chosen = [_draw(logits[b], temperature, top_p, generators[b]) for b in range(len(seeds))]
                for b, token in enumerate(chosen):
                    produced[b].append(token)
                step = torch.tensor(chosen, device=self.device)[:, None]
                mask = torch.cat([mask, torch.ones_like(step)], dim=-1)
                positions = positions[:, -1:] + 1
                out = self.model(
                    input_ids=step,
                    attention_mask=mask,
                    position_ids=positions,
                    past_key_values=out.past_key_values,
                    use_cache=True,
                )
        return [self.tokenizer.decode(tokens) for tokens in produced]


def _draw(logits: Any, temperature: float, top_p: float, generator: Any) -> int:
    """One token from softmax(logits / T) restricted to the top-p nucleus, by inverse CDF."""
    import torch

    if temperature <= 0:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits.double() / temperature, dim=-1)
    sorted_probs, order = torch.sort(probs, descending=True)
    keep = int((torch.cumsum(sorted_probs, 0) - sorted_probs < top_p).sum()) if top_p < 1.0 else len(order)
    cdf = torch.cumsum(sorted_probs[: max(keep, 1)], 0)
    u = float(torch.rand((), generator=generator, dtype=torch.float64)) * float(cdf[-1])
    index = min(int(torch.searchsorted(cdf, torch.tensor([u], dtype=torch.float64))[0]), len(cdf) - 1)
    return int(order[index])


class JudgeBatcher:
    """Collects score requests from concurrent coroutines and runs them through the judge together.

    The first request starts a drain task that waits `max_wait_s` for company, then runs
    everything pending in one `score_outcomes` call in a worker thread (the event loop keeps
    serving other games meanwhile); what arrives during that call forms the next batch.
    """

    def __init__(self, judge: Judge, *, max_wait_s: float = 0.005, max_pairs: int = 2048) -> None:
        self.judge = judge
        self.max_wait_s = max_wait_s
        self.max_pairs = max_pairs
        self._pending: list[tuple[tuple[str, str], asyncio.Future[XentScore]]] = []
        self._drainer: asyncio.Task[None] | None = None
        self.batches_run = 0
        self.pairs_run = 0

    async def score(self, string: str, prefix: str = "") -> XentScore:
        cached = self.judge.cached_score(string, prefix)
        if cached is not None:
            return cached
        future: asyncio.Future[XentScore] = asyncio.get_running_loop().create_future()
        self._pending.append(((string, prefix), future))
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        await asyncio.sleep(self.max_wait_s)
        while self._pending:
            batch = self._pending[: self.max_pairs]
            del self._pending[: len(batch)]
            self.batches_run += 1
            self.pairs_run += len(batch)
            try:
                outcomes = await asyncio.to_thread(self.judge.score_outcomes, [pair for pair, _ in batch])
            except asyncio.CancelledError:
                for _, future in batch:
                    future.cancel()
                raise
            except Exception as exc:  # noqa: BLE001 - the model failed: every waiter of this batch hears it
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            for (_, future), outcome in zip(batch, outcomes):
                if future.done():  # its waiter was cancelled
                    continue
                if isinstance(outcome, Exception):
                    future.set_exception(outcome)
                else:
                    future.set_result(outcome)


# -- which judges exist, one load per process ---------------------------------------------------
def _gemma_dir() -> Path:
    from pipeline.core.models.weights import gemma_weights_dir

    return gemma_weights_dir()


_LOCATORS: dict[str, Callable[[], str | os.PathLike[str]]] = {DEFAULT_JUDGE: _gemma_dir}
_LOADED: dict[tuple[str, str | None, str, str, bool], Judge] = {}
_LOAD_LOCK = threading.Lock()


def register_judge(name: str, locate: Callable[[], str | os.PathLike[str]]) -> None:
    """Make `name` resolve to a Hugging Face causal LM directory (tests register tiny models)."""
    _LOCATORS[name] = locate
    for key in [k for k in _LOADED if k[0] == name]:
        del _LOADED[key]


def known_judges() -> list[str]:
    return sorted(_LOCATORS)


def load_judge(
    name: str | None = None,
    *,
    device: str | None = None,
    dtype: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    scoring: str = "reference",
    clip_logprobs: bool = False,
) -> Judge:
    """The process-wide judge for a registered name (`local/` prefix optional), a model directory,
    or a Hugging Face model id already in the local Hugging Face cache (e.g. Qwen/Qwen3-14B-Base
    after `huggingface-cli download Qwen/Qwen3-14B-Base`; nothing is downloaded here).

    `cache_dir` turns on the on-disk score cache (the in-memory one is always on); `dtype`
    (DTYPES), `scoring` and `clip_logprobs` are the Judge options (one loaded judge per combination).
    """
    import torch

    name = (name or DEFAULT_JUDGE).removeprefix("local/")
    dtype_name = resolve_dtype(dtype, device or ("cuda" if torch.cuda.is_available() else "cpu"))
    with _LOAD_LOCK:
        key = (name, device, dtype_name, scoring, clip_logprobs)
        if key not in _LOADED:
            path, model_id = _locate(name)
            _LOADED[key] = Judge(
                path, model_id=model_id, device=device, dtype=dtype_name, scoring=scoring, clip_logprobs=clip_logprobs
            )
        judge = _LOADED[key]
    if cache_dir is not None and judge.cache.directory != Path(cache_dir):
        judge.cache.directory = Path(cache_dir)
    return judge


def _locate(name: str) -> tuple[Path, str | None]:
    """(model directory, model id for the fingerprint) of a registered name, a directory or a cached hub id."""
    if name in _LOCATORS:
        return Path(_LOCATORS[name]()), name
    if Path(name).is_dir():
        return Path(name), None
    cached = _hub_snapshot(name)
    if cached is not None:
        return cached, name
    raise JudgeError(
        f"unknown judge {name!r}: expected a registered judge ({', '.join(known_judges())}), a Hugging Face "
        f"model directory, or a Hugging Face model id in the local cache (`huggingface-cli download {name}`, "
        "or download it to a directory and give that path)"
    )


def _hub_snapshot(repo_id: str) -> Path | None:
    """The local Hugging Face cache's copy of `repo_id`, or None (never downloads)."""
    if repo_id.count("/") != 1 or repo_id.startswith((".", "/", "~")):
        return None
    try:
        from huggingface_hub import snapshot_download

        path = Path(snapshot_download(repo_id, local_files_only=True))
    except Exception:  # noqa: BLE001 - not cached, not a valid id, or no hub library: not a hub model we can use
        return None
    return path if (path / "config.json").exists() else None

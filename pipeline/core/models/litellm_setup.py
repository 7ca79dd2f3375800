"""litellm as every model call uses it: imported on first use and set up once."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any


def load_litellm() -> Any:
    """litellm, imported on first use: it takes seconds to import, and a job whose answers all
    come from the cache (or whose players are all bots) never needs it."""
    import litellm

    from pipeline.core.models.local import register_local_provider

    litellm.suppress_debug_info = True
    # Providers that reject a parameter (seed, top_p...) get it dropped instead of failing.
    litellm.drop_params = True
    register_local_provider()  # cheap when already registered; tests may reset the provider map
    return litellm


def _remembered_path(name: str) -> Path:
    """The user-cache file that remembers an answer of the installed litellm (`name`, then its version)."""
    import importlib.metadata

    from pipeline.core.artifacts.io import user_cache_dir

    return user_cache_dir("litellm") / f"{name}-{importlib.metadata.version('litellm')}.json"


@functools.cache  # every roster entry with `extra` asks: read the file once per process
def completion_arguments() -> frozenset[str]:
    """Every keyword argument litellm's completion knows, as litellm itself lists them: the
    parameters of `litellm.completion`, litellm's own arguments (`all_litellm_params`: api_base,
    mock_response, num_retries...), the OpenAI chat parameters and the credential and pricing
    arguments it reads from its keyword arguments (vertex_project, aws_region_name...), and each
    provider's own parameters (its chat config: top_k, num_ctx, safe_prompt...). Empty where
    litellm cannot be asked. Remembered per litellm version in the user cache: the params check
    asks while Snakemake parses the workflow, and importing litellm there costs seconds."""
    import json

    from pipeline.core.artifacts.io import write_json_atomic

    try:
        path = _remembered_path("completion-arguments")
    except Exception:  # noqa: BLE001 - litellm not installed: nothing to check against
        return frozenset()
    try:
        return frozenset(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        pass
    try:
        known = _ask_completion_arguments()
    except Exception:  # noqa: BLE001 - a litellm this code does not know: check nothing
        return frozenset()
    try:  # a lost race or an unwritable cache only means asking litellm again next time
        write_json_atomic(path, sorted(known))
    except OSError:
        pass
    return frozenset(known)


def _ask_completion_arguments() -> set[str]:
    import contextlib
    import inspect
    import io

    litellm = load_litellm()
    signature = inspect.signature(litellm.completion).parameters.values()
    known = {p.name for p in signature if p.kind is not inspect.Parameter.VAR_KEYWORD}
    from litellm.types.utils import all_litellm_params

    known |= set(all_litellm_params)
    known |= set(getattr(litellm, "OPENAI_CHAT_COMPLETION_PARAMS", ()))
    known |= set(getattr(litellm, "OPTIONAL_KWARGS_KEYS", ()))
    from litellm.utils import ProviderConfigManager

    with contextlib.redirect_stdout(io.StringIO()):  # litellm prints its provider list on some misses
        for provider in litellm.LlmProviders:
            try:
                config = ProviderConfigManager.get_provider_chat_config(model="m", provider=provider)
            except Exception:  # noqa: BLE001 - a provider without a chat config of its own
                continue
            if config is not None:
                known |= _provider_arguments(config)
    return {name for name in known if isinstance(name, str) and name}


def _provider_arguments(config: Any) -> set[str]:
    """A provider chat config's own parameters: its constructor's, its declared fields and the
    OpenAI parameters it maps."""
    import inspect

    found: set[str] = set()
    for cls in type(config).__mro__:
        if not cls.__module__.startswith("litellm"):
            continue
        found |= {a for a in getattr(cls, "__annotations__", {}) if a.islower() and not a.startswith("_")}
        if "__init__" in vars(cls):
            parameters = inspect.signature(vars(cls)["__init__"]).parameters.values()
            found |= {p.name for p in parameters if p.name != "self" and p.kind is p.POSITIONAL_OR_KEYWORD}
            found |= {p.name for p in parameters if p.kind is p.KEYWORD_ONLY}
    try:
        found |= {str(name) for name in config.get_supported_openai_params(model="m")}
    except Exception:  # noqa: BLE001 - some configs need a real model name to answer
        pass
    return found


@functools.cache  # the job graph asks once per round and model: read the file once per process
def supported_openai_params(provider: str, model: str) -> tuple[str, ...] | None:
    """litellm's `get_supported_openai_params` for one model (None where litellm cannot tell),
    remembered per litellm version in the user cache: the workflow asks it while building its job
    graph, and importing litellm there cost every Snakemake run about 3.5 CPU-s. The answer is a
    function of litellm's version and the model alone, so the remembered one is the same answer."""
    import json

    from pipeline.core.artifacts.io import write_json_atomic

    path = _remembered_path("supported-params")
    key = f"{provider}/{model}"
    try:
        known: dict[str, list[str] | None] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    if key in known:
        remembered = known[key]
        return None if remembered is None else tuple(remembered)
    try:
        answer = load_litellm().get_supported_openai_params(model=model, custom_llm_provider=provider)
    except Exception:  # noqa: BLE001 - a provider litellm does not know: it cannot tell
        answer = None
    supported = tuple(str(name) for name in answer) if isinstance(answer, list) else None
    try:  # a lost race or an unwritable cache only means asking litellm again next time
        write_json_atomic(path, {**known, key: None if supported is None else list(supported)})
    except OSError:
        pass
    return supported

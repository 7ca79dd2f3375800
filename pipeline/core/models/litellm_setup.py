"""litellm as every model call uses it: imported on first use and set up once."""

from __future__ import annotations

import functools
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


@functools.cache  # the job graph asks once per round and model: read the file once per process
def supported_openai_params(provider: str, model: str) -> tuple[str, ...] | None:
    """litellm's `get_supported_openai_params` for one model (None where litellm cannot tell),
    remembered per litellm version in the user cache: the workflow asks it while building its job
    graph, and importing litellm there cost every Snakemake run about 3.5 CPU-s. The answer is a
    function of litellm's version and the model alone, so the remembered one is the same answer."""
    import importlib.metadata
    import json

    from pipeline.core.artifacts.io import user_cache_dir, write_json_atomic

    path = user_cache_dir("litellm") / f"supported-params-{importlib.metadata.version('litellm')}.json"
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

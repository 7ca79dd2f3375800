"""litellm as every model call uses it: imported on first use and set up once."""

from __future__ import annotations

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

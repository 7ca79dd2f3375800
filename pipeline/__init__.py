"""A tournament pipeline that ranks language models by the games they play."""

import os

# Offline first: litellm must read its bundled price map instead of fetching one, and
# Hugging Face libraries must never reach for a hub. Set before either is imported.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

__version__ = "0.2.0"  # the one place the version is written (pyproject reads it)

"""A tournament pipeline that ranks language models by the games they play."""

import os

#: Offline first: litellm must read its bundled price map instead of fetching one, and Hugging
#: Face libraries must never reach for a hub. Set when the package is imported, before either is.
#: (The CPU kernels are pinned by the command line instead: `pipeline.cpu`.)
OFFLINE_ENVIRONMENT = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
for _name, _value in OFFLINE_ENVIRONMENT.items():
    os.environ.setdefault(_name, _value)

__version__ = "0.2.0"  # the one place the version is written (pyproject reads it)

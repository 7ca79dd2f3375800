"""A tournament pipeline that ranks language models by the games they play."""

import os

# Offline first: litellm must read its bundled price map instead of fetching one, and
# Hugging Face libraries must never reach for a hub. Set before either is imported.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Same numbers on any machine: on a CPU with AVX-512, numpy dispatches exp, log and power to its
# own SIMD code, which differs from the C library's in the last bit for about 5% of inputs (the
# compiled rating kernel, the trueskill package and every AVX2 machine use the C library's).
# Read once, when numpy loads (numpy 2.4's names); naming a feature the CPU lacks is harmless.
os.environ.setdefault("NPY_DISABLE_CPU_FEATURES", "X86_V4 AVX512_ICL AVX512_SPR")


def _cpu_has_avx2() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as cpuinfo:
            return any(line.startswith("flags") and "avx2" in line.split() for line in cpuinfo)
    except OSError:
        return False


# The same for torch (the embedded models and the xent judge): its kernels for AVX-512 give other
# logits than its AVX2 kernels, so a sampled reply, and the game it is part of, would depend on
# the machine. AVX2 is pinned only where the CPU has it (naming it elsewhere would be illegal).
if "ATEN_CPU_CAPABILITY" not in os.environ and _cpu_has_avx2():
    os.environ["ATEN_CPU_CAPABILITY"] = "avx2"

__version__ = "0.2.0"  # the one place the version is written (pyproject reads it)

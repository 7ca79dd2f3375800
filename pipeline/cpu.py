"""The same floating point on every x86 CPU, for the processes that compute tables.

numpy, OpenBLAS and torch each pick their kernels by the CPU they run on, and the kernels for
newer CPUs round differently:

- numpy's AVX-512 `exp`, `log` and `power` differ from the C library's in the last bit for about
  5% of inputs (the compiled rating kernel, the trueskill package and numpy on every AVX2 machine
  use the C library's); the adaptive schedule and the joint leaderboard fit call them;
- OpenBLAS's kernels (numpy's `linalg` and `@`, in the same two) differ by core type: on one
  machine, OPENBLAS_CORETYPE Haswell, Sandybridge, Nehalem and Prescott gave four different
  results of the joint fit and the schedule's pair values (AVX-512 machines get other kernels);
- torch's AVX-512 kernels give other logits than its AVX2 kernels, so a reply sampled from an
  embedded model, or a judge's score, would depend on the machine when no cache holds it.

`pin_cpu_kernels` asks each for its AVX2 kernels (numpy: its AVX-512 code off) through the
environment variables they read when they load; a variable the user set wins. It must run before
numpy or torch is first imported: the command line (`pipeline.cli.main`) calls it first, so every
`python -m pipeline` process, every Snakemake job, is pinned; so do the tests (tests/conftest.py)
and their fork server. Importing `pipeline` pins nothing: a program of one's own that imports the
package keeps its libraries' own choice unless it calls this first.
"""

from __future__ import annotations

import functools
import os

#: numpy 2.4's names for its AVX-512 code (naming a feature the CPU lacks is harmless)
NUMPY_AVX512 = "X86_V4 AVX512_ICL AVX512_SPR"
#: what each library reads, and the AVX2 choice it is given where the CPU has AVX2 and FMA
AVX2_KERNELS = {"ATEN_CPU_CAPABILITY": "avx2", "OPENBLAS_CORETYPE": "Haswell"}


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (/proc/cpuinfo), empty where they cannot be read."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def pin_cpu_kernels() -> None:
    """Pin numpy, OpenBLAS and torch to the kernels every AVX2 machine runs (see the module's
    docstring). AVX2 is named only where the CPU has it: naming it elsewhere would be illegal."""
    os.environ.setdefault("NPY_DISABLE_CPU_FEATURES", NUMPY_AVX512)
    if {"avx2", "fma"} <= cpu_flags():
        for name, value in AVX2_KERNELS.items():
            os.environ.setdefault(name, value)

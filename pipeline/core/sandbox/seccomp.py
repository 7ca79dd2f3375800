"""A seccomp filter that refuses the calls that read or steer another process: ptrace and
process_vm_readv / process_vm_writev.

A program holds no capability, but under a fresh bubblewrap sandbox its pid 1 (bubblewrap's init)
has the same uid and can be traced: a program could stop it and hang its own sandbox until the
wall limit. The warm worker is not traceable (it is not dumpable), so the filter changes nothing
there but keeps both paths alike. Bubblewrap loads it (`--seccomp FD`) just before it starts the
command; every process of the program inherits it. Calls of another architecture's table (the
i386 or x32 entry points on x86-64) are refused too, so the numbers below cannot be bypassed.
Machines of other architectures run without the filter (`filter_bytes` returns None).
"""

from __future__ import annotations

import errno
import os
import platform
import struct
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

# struct sock_filter {u16 code; u8 jt; u8 jf; u32 k}
_LOAD_WORD, _JUMP_EQUAL, _JUMP_AT_LEAST, _RETURN = 0x20, 0x15, 0x35, 0x06
_ARCH_OFFSET, _NUMBER_OFFSET = 4, 0  # struct seccomp_data: nr, arch, ...
_ALLOW = 0x7FFF0000
_REFUSE = 0x00050000 | errno.EPERM  # SECCOMP_RET_ERRNO
_X32_BIT = 0x40000000
#: machine -> (AUDIT_ARCH_*, numbers of ptrace, process_vm_readv, process_vm_writev)
_TABLES = {
    "x86_64": (0xC000003E, (101, 310, 311)),
    "aarch64": (0xC00000B7, (117, 270, 271)),
}


def _instruction(code: int, jump_true: int, jump_false: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jump_true, jump_false, k)


@cache
def filter_bytes() -> bytes | None:
    """The compiled filter for this machine's architecture, or None where it is not known."""
    machine = platform.machine()
    if machine not in _TABLES:
        return None
    arch, numbers = _TABLES[machine]
    checks = [(_JUMP_EQUAL, n) for n in numbers]
    if machine == "x86_64":
        checks.insert(0, (_JUMP_AT_LEAST, _X32_BIT))
    # 0: load arch; 1: another arch -> refuse; 2: load the number; checks; allow; refuse
    refuse_at = 3 + len(checks) + 1
    program = [
        _instruction(_LOAD_WORD, 0, 0, _ARCH_OFFSET),
        _instruction(_JUMP_EQUAL, 0, refuse_at - 2, arch),
        _instruction(_LOAD_WORD, 0, 0, _NUMBER_OFFSET),
    ]
    for position, (code, value) in enumerate(checks, start=3):
        program.append(_instruction(code, refuse_at - position - 1, 0, value))
    program += [_instruction(_RETURN, 0, 0, _ALLOW), _instruction(_RETURN, 0, 0, _REFUSE)]
    return b"".join(program)


@contextmanager
def filter_fd() -> Iterator[int | None]:
    """A fresh descriptor holding the filter, for one bubblewrap (which reads it to the end), or
    None on an architecture without one."""
    program = filter_bytes()
    if program is None:
        yield None
        return
    with tempfile.TemporaryFile() as handle:
        handle.write(program)
        handle.flush()
        fd = os.dup(handle.fileno())
    os.lseek(fd, 0, os.SEEK_SET)
    try:
        yield fd
    finally:
        os.close(fd)

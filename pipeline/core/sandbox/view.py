"""What an untrusted program sees of the host: the interpreter, its standard library and the system
libraries they load, read-only, and nothing else (issue 49).

Bubblewrap builds the program's root from an empty tmpfs. Into it go, bound read-only at their own
paths:
- the interpreter binary (the path the sandbox runs, and the symlinks to it);
- its standard library (`sysconfig`'s stdlib and platstdlib, lib-dynload among them);
- the directories of the shared libraries the interpreter and its extension modules load, as
  `ldd` resolves them, and the dynamic loader;
- `/etc/ld.so.cache`, the loader's index of those libraries (the only file of /etc Python needs
  to start; without it the loader still searches its default directories).
Symlinks on the way (`/lib64 -> usr/lib64`, `python3 -> python3.11`) are recreated as symlinks, so
every path resolves as on the host. Nothing of the project, results/, the caches, home
directories, the rest of /etc or the host's other mounts exists in the sandbox: a program that
looks for them gets FileNotFoundError, its own error.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

#: the loader's index of the system libraries: the one file of /etc the interpreter needs
LOADER_CACHE = "/etc/ld.so.cache"
#: bound when `ldd` cannot say which libraries are needed: the system's library directories
_FALLBACK_LIBRARIES = ("/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/local/lib")
_LDD_LINE = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x[0-9a-f]+\)")
_QUERY = (
    "import json, sys, sysconfig;"
    "print(json.dumps({'stdlib': sysconfig.get_path('stdlib'), 'platstdlib': sysconfig.get_path('platstdlib'),"
    "'executable': sys.executable}))"
)


@dataclass(frozen=True)
class HostView:
    """The bubblewrap arguments of a program's read-only view of the host."""

    binds: tuple[str, ...]  # real files and directories, bound read-only at their own path
    symlinks: tuple[tuple[str, str], ...]  # (target, link) as on the host

    def bwrap_args(self) -> list[str]:
        args: list[str] = []
        for path in self.binds:
            args += ["--ro-bind", path, path]
        for target, link in self.symlinks:
            args += ["--symlink", target, link]
        return args


def _resolve(path: str, binds: set[str], links: dict[str, str]) -> None:
    """Record what makes `path` resolve in the sandbox as on the host: every symlink on the way
    (as a symlink) and the real file or directory at its end (as a bind)."""
    parts = Path(os.path.abspath(path)).parts[1:]
    current = Path("/")
    for depth, part in enumerate(parts):
        candidate = current / part
        if candidate.is_symlink():
            target = os.readlink(candidate)
            links[str(candidate)] = target
            rest = Path(*parts[depth + 1 :]) if depth + 1 < len(parts) else None
            resolved = (current / target) if not os.path.isabs(target) else Path(target)
            _resolve(str(resolved / rest) if rest else str(resolved), binds, links)
            return
        current = candidate
    if current.exists():
        binds.add(os.path.normpath(str(current)))


def _libraries(files: list[str]) -> list[str] | None:
    """The shared libraries (and the loader) `files` load, as `ldd` resolves them; None without ldd."""
    ldd = shutil.which("ldd")
    if ldd is None:
        return None
    found: list[str] = []
    for chunk in range(0, len(files), 64):
        done = subprocess.run([ldd, *files[chunk : chunk + 64]], capture_output=True, text=True, timeout=60)
        found += [m.group(1) for line in done.stdout.splitlines() if (m := _LDD_LINE.search(line))]
    return sorted(set(found))


def _outermost(paths: set[str]) -> tuple[str, ...]:
    """The paths no other path contains (a bound directory already shows what lies beneath)."""
    kept: list[str] = []
    for path in sorted(paths, key=lambda p: (p.count("/"), p)):
        if not any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    return tuple(sorted(kept))


@functools.cache
def host_view(interpreter: str) -> HostView:
    """The read-only view of the host a program run by `interpreter` needs (see the module's text)."""
    real = os.path.realpath(interpreter)
    query = subprocess.run([real, "-s", "-S", "-c", _QUERY], capture_output=True, text=True, timeout=60, check=True)
    paths = json.loads(query.stdout)
    stdlib = {paths["stdlib"], paths["platstdlib"]}
    binds: set[str] = set()
    links: dict[str, str] = {}
    for path in (interpreter, real, *stdlib):
        _resolve(path, binds, links)
    extensions = [str(p) for folder in stdlib for p in Path(folder).rglob("*.so")]
    libraries = _libraries([real, *extensions])
    if libraries is None:
        for folder in _FALLBACK_LIBRARIES:
            _resolve(folder, binds, links)
    else:
        for library in libraries:
            _resolve(library, binds, links)
            # a library's own directory, whole: what it dlopens at run time lies beside it
            _resolve(os.path.dirname(os.path.realpath(library)), binds, links)
    if os.path.exists(LOADER_CACHE):
        binds.add(LOADER_CACHE)
    kept = _outermost(binds)
    # a link inside a bound directory is there already (and bubblewrap cannot make it over a read-only bind)
    symlinks = tuple(
        sorted(
            (target, link)
            for link, target in links.items()
            if not any(link.startswith(k.rstrip("/") + "/") for k in kept)
        )
    )
    return HostView(kept, symlinks)

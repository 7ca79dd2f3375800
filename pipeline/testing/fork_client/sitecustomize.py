"""The tests' route to their fork server (pipeline/testing/forkserver.py), run by Python at start-up.

With this folder on PYTHONPATH, every interpreter imports this module before it runs anything. One
started as `python [options] -m pipeline ARGS` while PIPELINE_FORK_SERVER names a server's socket
hands ARGS to that server and ends as the command ended; any other interpreter, or one whose command
the server declines, carries on as if this module were not here. The package itself is not
imported here (the command may be meant for a project copy's own code), so the client is loaded
from its file. Nothing but the tests puts this folder on PYTHONPATH (`client_environment`).
"""

import os
import sys


def _module_run() -> tuple[str, list[str]] | None:
    """(module, its arguments) of `python -m MODULE ARGS`; None for any other start. At this point
    sys.argv is ['-m', *ARGS] and the module's name is only in sys.orig_argv."""
    if not sys.argv or sys.argv[0] != "-m":
        return None
    name = sys.orig_argv[len(sys.orig_argv) - len(sys.argv)]
    return name.removeprefix("-m") or name, sys.argv[1:]


def _hand_over() -> None:
    address = os.environ.get("PIPELINE_FORK_SERVER")
    run = _module_run()
    if not address or run is None or run[0] != "pipeline":
        return
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "forkserver.py")
    spec = importlib.util.spec_from_file_location("_pipeline_fork_client", path)
    if spec is None or spec.loader is None:
        return
    client = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = client  # its dataclasses look their module up there
    spec.loader.exec_module(client)
    status = client.delegate(address, run[1])
    if status is None:
        return  # declined: this interpreter runs the command
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(status)  # as the command ended (a SystemExit here would abort the interpreter's start-up)


_hand_over()

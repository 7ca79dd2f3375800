import os
import sys

# a warm fork server takes the command when one is named (pipeline/forkserver.py); else, or
# when it declines, this process runs it
if os.environ.get("PIPELINE_FORK_SERVER"):
    from pipeline.forkserver import delegate

    status = delegate(os.environ["PIPELINE_FORK_SERVER"], sys.argv[1:])
    if status is not None:
        raise SystemExit(status)

from pipeline.cli import main

raise SystemExit(main())

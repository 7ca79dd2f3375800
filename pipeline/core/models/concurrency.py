"""Moves asked at the same time: every benchmark's concurrent moves go through `gather_moves`; and
`take_batch`, how the gateway's worker threads (the limit store, the answer writer) take their work.

`asyncio.gather` raises the first error at once and leaves the other moves running as orphans;
when the game then ends (its job's `asyncio.run`, or a shard's loop closing), they are cancelled
mid-request. A provider that had already answered them was paid, yet the answers never reached
the response cache or the spend ledger, so the rerun asked (and paid) again.

`gather_moves` waits for every move instead: a move already sent finishes into the cache and the
ledger, and only then is the first error raised (the first to happen, not the first in argument
order: later ones are often its consequences, such as a budget reached meanwhile). A game that
fails therefore leaves nothing in flight, and no teardown can cancel a request it paid for.
"""

from __future__ import annotations

import asyncio
import logging
import queue
from collections.abc import Awaitable
from typing import TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


async def gather_moves(*moves: Awaitable[T]) -> list[T]:
    """The results of `moves`, run concurrently, in argument order.

    When one fails, the others still run to their end (their answers are cached and paid once);
    then the earliest error is raised. When the caller itself is cancelled, every move is
    cancelled with it and waited for (an interrupted run stops as it always did)."""
    tasks = [asyncio.ensure_future(move) for move in moves]
    if not tasks:
        return []
    failed: list[BaseException] = []  # in the order the moves failed

    def note(task: asyncio.Future[T]) -> None:
        error = None if task.cancelled() else task.exception()
        if error is not None:
            failed.append(error)

    for task in tasks:
        task.add_done_callback(note)
    try:
        await asyncio.wait(tasks)
    except asyncio.CancelledError:
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks)
        raise
    if failed:
        for other in failed[1:]:
            log.warning("a sibling move failed too: %s: %s", type(other).__name__, other)
        raise failed[0]
    return [task.result() for task in tasks]  # a move cancelled by someone else raises CancelledError


def take_batch(jobs: queue.SimpleQueue[T]) -> list[T]:
    """The next job, waited for, and every job queued meanwhile: a worker thread handles them
    together (one transaction, one ledger append) instead of one hand-off each."""
    batch = [jobs.get()]
    while True:
        try:
            batch.append(jobs.get_nowait())
        except queue.Empty:
            return batch

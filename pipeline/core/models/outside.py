"""Seats played from outside the pipeline: a person (`bot: human`) or a program that steps an
environment (`bot: agent`).

Such a seat is a roster entry like any other, so a game records, rates and replays it as it does a
model's seat; it sends no request and costs nothing, which is why it is declared as a bot. Its moves
come through a `SeatChannel`: the game, on its event loop, asks the channel for the seat's move and
waits, without a time limit, until the outside side (another thread: a web page's server, a
terminal, an environment's `step`) takes the turn and answers it. The outside side sees exactly the
messages a model in that seat would get (`Turn.request.messages`).

A channel is opened by the roster name it serves (`open_seat`) before the game starts; a game that
seats such an entry without an open channel stops with a message naming the command that opens one.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pipeline.core.models.moves import MoveRequest
from pipeline.core.models.roster import OUTSIDE_BOTS as OUTSIDE_BOTS
from pipeline.core.models.roster import RosterEntry


@dataclass(frozen=True)
class Turn:
    """One move the game waits for: answer it with `SeatChannel.answer(turn, text)`."""

    seat: str  # the roster name of the seat
    request: MoveRequest  # its `messages` are what a model in this seat would get

    @property
    def key(self) -> str:
        return self.request.key


@dataclass(frozen=True)
class GameOver:
    """The game ended: `record` is what its play returned, `error` what stopped it (else None)."""

    record: Any = None
    error: BaseException | None = None


class SeatChannel:
    """One seat's mailbox between a running game and whoever plays the seat from outside.

    The game side (`ask`) runs on the game's event loop; the outside side (`next`, `answer`,
    `finish`) may run on any thread. A game may ask several moves of one seat at once (SKATE answers
    questions concurrently): each is its own turn, answered by its key."""

    def __init__(self, seat: str) -> None:
        self.seat = seat
        self._events: queue.Queue[Turn | GameOver] = queue.Queue()
        self._pending: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Future[str]]] = {}
        self._lock = threading.Lock()

    async def ask(self, request: MoveRequest) -> str:
        """The game side: publish the turn and wait for its answer, however long it takes."""
        loop = asyncio.get_running_loop()
        answered: asyncio.Future[str] = loop.create_future()
        with self._lock:
            if request.key in self._pending:
                raise RuntimeError(f"seat {self.seat!r}: move {request.key!r} asked twice at once")
            self._pending[request.key] = (loop, answered)
        self._events.put(Turn(self.seat, request))
        try:
            return await answered
        finally:
            with self._lock:
                self._pending.pop(request.key, None)

    def next(self, timeout: float | None = None) -> Turn | GameOver:
        """The outside side: the next turn to play, or the game's end (blocks; `queue.Empty` on timeout)."""
        return self._events.get(timeout=timeout)

    def answer(self, turn: Turn, text: str) -> None:
        """The outside side: the seat's move for `turn` (any text: the game's rules judge it)."""
        with self._lock:
            waiting = self._pending.get(turn.key)
        if waiting is None:
            raise ValueError(f"seat {self.seat!r}: no move {turn.key!r} is waiting (answered already?)")
        loop, answered = waiting

        def settle() -> None:  # on the game's loop; a move answered twice, or cancelled, keeps its first end
            if not answered.done():
                answered.set_result(text)

        loop.call_soon_threadsafe(settle)

    def finish(self, record: Any = None, error: BaseException | None = None) -> None:
        """Tell the outside side the game is over (the runner of the game calls it)."""
        self._events.put(GameOver(record, error))

    @property
    def waiting(self) -> list[str]:
        """The keys of the moves the game waits for now."""
        with self._lock:
            return sorted(self._pending)


_OPEN: dict[str, SeatChannel] = {}
_OPEN_LOCK = threading.Lock()


def open_seat(seat: str) -> SeatChannel:
    """Open the channel of the roster entry `seat` for this process's next games (replacing any)."""
    channel = SeatChannel(seat)
    with _OPEN_LOCK:
        _OPEN[seat] = channel
    return channel


def close_seat(seat: str) -> None:
    with _OPEN_LOCK:
        _OPEN.pop(seat, None)


@contextmanager
def seated(seat: str) -> Iterator[SeatChannel]:
    """`open_seat` for the duration of a block."""
    channel = open_seat(seat)
    try:
        yield channel
    finally:
        close_seat(seat)


def seat_channel(seat: str) -> SeatChannel | None:
    with _OPEN_LOCK:
        return _OPEN.get(seat)


def is_outside(entry: RosterEntry) -> bool:
    return entry.bot in OUTSIDE_BOTS


def unopened_message(entry: RosterEntry) -> str:
    return (
        f"roster entry {entry.name!r} (bot: {entry.bot}) is played from outside the pipeline, and no seat is "
        f"open for it in this process: play it with `python -m pipeline seat BENCHMARK --as {entry.name}` "
        "(a person) or through pipeline.environments.make (a program); a scheduled run cannot play it"
    )

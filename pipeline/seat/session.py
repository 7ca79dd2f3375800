"""One person's seat in one running game: what the web page and the terminal show and send.

The game plays on a worker thread (it runs its own event loop); its outside seat's channel
(pipeline.core.models.outside.SeatChannel) is pumped on a second thread into a `SeatSession`: the
turns waiting for the person, a numbered log of what happened (public events, the person's own
moves, the end) and the outcome. The page polls `view(since)` as JSON, the terminal blocks on
`wait(since)`; both answer with `answer(key, text)`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.core.models.outside import GameOver, SeatChannel, Turn

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """How the game ended, for the person: a line, the seat's score and every seat's, the record's path."""

    summary: str
    score: float | None = None
    scores: Mapping[str, float] = field(default_factory=dict)
    record: str | None = None  # where the game record was written
    error: str | None = None  # what stopped the game, when it did not end by its rules

    def to_json(self) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "score": self.score,
            "scores": dict(self.scores),
            "record": self.record,
            "error": self.error,
        }


#: what the command makes of the game's end: the record (None when it failed) or the error
Describe = Callable[[GameOver], Outcome]


def message_json(message: Mapping[str, Any]) -> dict[str, str]:
    """A chat message as the page shows it: its role and its text (a list of parts joined)."""
    content = message.get("content")
    if isinstance(content, list):
        content = "\n".join(str(part.get("text", "")) if isinstance(part, Mapping) else str(part) for part in content)
    return {"role": str(message.get("role", "")), "content": "" if content is None else str(content)}


def turn_json(turn: Turn) -> dict[str, Any]:
    request = turn.request
    return {
        "key": turn.key,
        "kind": request.kind,
        "choices": list(request.choices),
        "max_words": request.max_words,
        "messages": [message_json(m) for m in request.messages],
    }


class SeatSession:
    """The state of one outside seat while its game runs; thread-safe."""

    def __init__(self, channel: SeatChannel, describe: Describe, title: str = "") -> None:
        self.channel = channel
        self.describe = describe
        self.title = title  # e.g. "Who is Spy, seat P3"
        self._changed = threading.Condition()
        self._log: list[dict[str, Any]] = []
        self._turns: dict[str, Turn] = {}  # waiting for the person, in the order the game asked
        self._outcome: Outcome | None = None
        self.seen_end = threading.Event()  # a page or the terminal has shown the outcome

    # -- the game's side --------------------------------------------------------------------
    def start(self, play: Callable[[], Any]) -> None:
        """Play the game on a worker thread (`play` posts the channel's end, as contract.play_one does),
        and pump the channel's turns into this session on another."""
        threading.Thread(target=self._play, args=(play,), name="seat-game", daemon=True).start()
        threading.Thread(target=self._pump, name="seat-channel", daemon=True).start()

    def _play(self, play: Callable[[], Any]) -> None:
        try:
            play()
        except BaseException:  # (play posted it on the channel: the outcome says it)
            log.debug("the game stopped", exc_info=True)

    def _pump(self) -> None:
        while True:
            event = self.channel.next()
            if isinstance(event, Turn):
                with self._changed:
                    self._turns[event.key] = event
                    self._add({"type": "turn", "kind": event.request.kind, "key": event.key})
                continue
            try:
                outcome = self.describe(event)
            except Exception as exc:  # noqa: BLE001  (the person must still see the end)
                outcome = Outcome("the game ended, and its outcome could not be read", error=repr(exc))
            with self._changed:
                self._outcome = outcome
                self._turns.clear()
                self._add({"type": "end", **outcome.to_json()})
            return

    def note(self, event: Mapping[str, Any]) -> None:
        """A public event of the game, as it happens (any thread)."""
        with self._changed:
            self._add({"type": "event", **event})

    def _add(self, entry: dict[str, Any]) -> None:  # with the lock held
        self._log.append({"seq": len(self._log) + 1, **entry})
        self._changed.notify_all()

    # -- the person's side ------------------------------------------------------------------
    def answer(self, key: str, text: str) -> None:
        """The person's move for the waiting turn `key`; ValueError when none waits under it."""
        with self._changed:
            turn = self._turns.pop(key, None)
            if turn is None:
                raise ValueError(f"no move {key!r} is waiting (answered already, or the game is over)")
            self._add({"type": "move", "key": key, "kind": turn.request.kind, "text": text})
        self.channel.answer(turn, text)

    @property
    def outcome(self) -> Outcome | None:
        with self._changed:
            return self._outcome

    def turn(self) -> Turn | None:
        """The first turn waiting for the person (a game may ask several moves of a seat at once)."""
        with self._changed:
            return next(iter(self._turns.values()), None)

    def entries(self, since: int = 0) -> list[dict[str, Any]]:
        with self._changed:
            return list(self._log[since:])

    def wait(self, since: int, timeout: float | None = None) -> bool:
        """Block until the log holds more than `since` entries (True) or `timeout` passes (False)."""
        with self._changed:
            return self._changed.wait_for(lambda: len(self._log) > since, timeout)

    def view(self, since: int = 0) -> dict[str, Any]:
        """Everything the page shows, as JSON: the waiting turn, the log after `since`, the outcome."""
        with self._changed:
            turn = next(iter(self._turns.values()), None)
            outcome = self._outcome
            found = {
                "title": self.title,
                "seat": self.channel.seat,
                "turn": None if turn is None else turn_json(turn),
                "waiting": len(self._turns),
                "log": list(self._log[since:]),
                "next": len(self._log),
                "outcome": None if outcome is None else outcome.to_json(),
            }
        if outcome is not None:
            self.seen_end.set()
        return found


def scores_line(scores: Mapping[str, float], seat: str) -> str:
    return ", ".join(f"{name}{' (you)' if name == seat else ''} {value:g}" for name, value in scores.items())


def choices_line(choices: Sequence[str]) -> str:
    return ", ".join(choices)

"""A benchmark's game as a Gymnasium-style environment: an agent plays one seat of a real game.

An episode is one game of the benchmark (docs/environments.md says what that is for each), drawn as
its schedule draws games (`pipeline.core.run.contract.seat_game`): the agent's seat is a roster entry
`{name: agent, bot: agent}` among the opponents (the benchmark's scripted bots by default), and the
game runs as any other, on its own event loop in a background thread, asking the agent's seat for
its moves through the seat's channel (pipeline.core.models.outside). `reset` starts a game and
returns the first move's observation; `step(text)` answers the move and returns the next one, or the
end: `terminated`, the seat's score as the reward, and the game's record in `info`, which rates like
any game (`contract.events(record)`).

The observation is the text of the last message a model in that seat would get (the user turn; the
whole conversation, system prompt included, is `info["messages"]`). The action is the reply text: the
game reads it by its own rules, exactly as it reads a model's reply, malformed ones included.
"""

from __future__ import annotations

import queue
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pipeline.core.models.outside import GameOver, SeatChannel, Turn, close_seat, open_seat, seat_channel
from pipeline.core.run.contract import (
    GameContract,
    ParamsSource,
    RosterSource,
    RunningGame,
    Seating,
    game_contract,
    seat_game,
    seat_params,
    start_game,
)

#: seconds `reset` and `step` wait for the game's next move before saying what it waits for
DEFAULT_WAIT_S = 600.0


class EpisodeError(RuntimeError):
    """The game behind an environment stopped with an error, or the environment was used out of turn."""


class GameEnv:
    """One seat of a benchmark's games (see the module docstring); make it with `make`."""

    def __init__(
        self,
        benchmark: str,
        opponents: RosterSource = None,
        params: ParamsSource = None,
        seat: str | None = None,
        *,
        name: str = "agent",
        cache_dir: str | Path | None = None,
        wait_s: float = DEFAULT_WAIT_S,
    ) -> None:
        self.benchmark = benchmark
        self.contract: GameContract[Any, Any, Any] = game_contract(benchmark)
        self.params = seat_params(self.contract, params)
        self.opponents = opponents
        self.seat = seat or self.contract.seat_choices[0]
        if self.seat not in self.contract.seat_choices:
            raise ValueError(
                f"{benchmark}: seat must be one of {', '.join(self.contract.seat_choices)}, not {self.seat!r}"
            )
        self.name = name
        self.cache_dir = cache_dir
        self.wait_s = wait_s
        self.seating: Seating | None = None
        self._game: RunningGame | None = None
        self._channel: SeatChannel | None = None
        self._turn: Turn | None = None
        self._next_seed = 0

    # -- the Gymnasium API --------------------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: Mapping[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start a game (the one `seed` picks; None: the seed after the last episode's) and return
        the agent's first observation. A game still running is stopped first."""
        del options  # Gymnasium's signature; nothing to choose beyond the seed
        self._stop()
        chosen = self._next_seed if seed is None else int(seed)
        self._next_seed = chosen + 1
        seating = seat_game(
            self.contract,
            name=self.name,
            bot="agent",
            opponents=self.opponents,
            params=self.params,
            seed=chosen,
            seat=self.seat,
        )
        self._channel = self._open()
        self.seating = seating
        self._game = start_game(seating, cache_dir=self.cache_dir)
        observation, _, done, info = self._advance()
        if done:  # a game that never asked the seat anything (cannot happen in the four benchmarks)
            raise EpisodeError(f"{self.benchmark} game {seating.game.id} ended before the agent's first move")
        info["seed"] = chosen
        return observation, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Answer the move the game waits for with `action` (the reply text); the next observation,
        the reward (the seat's score when the game ends, else 0), terminated, truncated (never) and info."""
        if self._channel is None or self._turn is None:
            raise EpisodeError("no move is waiting: call reset() to start an episode")
        turn, self._turn = self._turn, None
        self._channel.answer(turn, str(action))
        observation, reward, done, info = self._advance()
        return observation, reward, done, False, info

    def close(self) -> None:
        """Stop a running game and release the seat."""
        self._stop()

    def __enter__(self) -> GameEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- inside ------------------------------------------------------------------------------------------
    def _open(self) -> SeatChannel:
        held = seat_channel(self.name)
        if held is not None and held is not self._channel:
            raise EpisodeError(
                f"another seat named {self.name!r} is open in this process (another environment?): "
                "make this one with another name (make(..., name=...))"
            )
        return open_seat(self.name)

    def _advance(self) -> tuple[str, float, bool, dict[str, Any]]:
        assert self._channel is not None and self.seating is not None
        try:
            event = self._channel.next(timeout=self.wait_s)
        except queue.Empty:
            raise EpisodeError(
                f"{self.benchmark} game {self.seating.game.id}: no move for the agent within {self.wait_s:.0f} s "
                "(an opponent model still answering?)"
            ) from None
        if isinstance(event, GameOver):
            return self._ended(event)
        self._turn = event
        return observation_of(event), 0.0, False, self._info(event)

    def _ended(self, over: GameOver) -> tuple[str, float, bool, dict[str, Any]]:
        assert self.seating is not None
        seating = self.seating
        if over.error is not None:
            raise EpisodeError(
                f"{self.benchmark} game {seating.game.id} stopped: {type(over.error).__name__}: {over.error}"
            ) from over.error
        score = seating.score(over.record)
        info = {**self._game_info(), "record": over.record, "score": score}
        return "", score, True, info

    def _game_info(self) -> dict[str, Any]:
        assert self.seating is not None
        return {
            "benchmark": self.benchmark,
            "game_id": self.seating.game.id,
            "seat": self.seating.seat,
            "seats": dict(zip(self.seating.game.labels, self.seating.game.seats)),
        }

    def _info(self, turn: Turn) -> dict[str, Any]:
        request = turn.request
        return {
            **self._game_info(),
            "messages": [dict(message) for message in request.messages],
            "kind": request.kind,
            "choices": list(request.choices),
            "key": request.key,
            "max_words": request.max_words,
        }

    def _stop(self) -> None:
        if self._game is not None:
            self._game.cancel()
            self._game = None
        if self._channel is not None and seat_channel(self.name) is self._channel:
            close_seat(self.name)
        self._channel = None
        self._turn = None


def observation_of(turn: Turn) -> str:
    """The text of the last user message of the turn: what is new to the seat at this move."""
    users = [m for m in turn.request.messages if m.get("role") == "user"]
    last = users[-1] if users else turn.request.messages[-1]
    return str(last.get("content", ""))


def make(
    benchmark: str,
    opponents: RosterSource = None,
    params: ParamsSource = None,
    seat: str | None = None,
    **options: Any,
) -> GameEnv:
    """An environment of `benchmark`: the agent plays `seat` (None: the benchmark's first seat choice)
    against `opponents` (None: the benchmark's scripted bots; or a models.yaml path, roster entries or
    a ModelsParams) under `params` (None: the project's params/<benchmark>.yaml, as the environment
    trims it: docs/environments.md; or a params file or mapping). `options`: GameEnv's `name`,
    `cache_dir`, `wait_s`."""
    return GameEnv(benchmark, opponents, params, seat, **options)

"""`python -m pipeline seat BENCHMARK --as NAME`: play one game yourself, in a local web page or the terminal."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipeline.seat.session import Outcome, SeatSession


def _cmd_seat(args: argparse.Namespace) -> int:
    from pipeline.core.models.outside import seated
    from pipeline.seat.game import SeatRequest, new_session, play_and_record, seating_for

    request = SeatRequest(
        benchmark=args.benchmark,
        name=args.name,
        params=args.params,
        models=args.models,
        seed=args.seed,
        seat=args.seat,
        out=args.out,
    )
    seating = seating_for(request)
    out = request.games
    with seated(seating.name) as channel:
        session = new_session(seating, channel, out)
        print(f"{session.title}; the record goes to {out}/{seating.game.id}.json", file=sys.stderr)
        game = partial(play_and_record, seating, session, out, request.cache_dir)
        outcome = _on_terminal(session, game) if args.terminal else _on_page(session, game, args.port)
    if outcome is None:
        print("stopped: the game did not finish and nothing was recorded", file=sys.stderr)
        return 130
    if not args.terminal:  # (the terminal has shown it)
        print(f"game over: {outcome.summary}" + (f"; recorded in {outcome.record}" if outcome.record else ""))
    if outcome.error:
        print(f"error: {outcome.error}", file=sys.stderr)
        return 1
    return 0


def _on_terminal(session: SeatSession, game: Callable[[], Any]) -> Outcome | None:
    from pipeline.seat.terminal import play_on_terminal

    session.start(game)
    try:
        return play_on_terminal(session, sys.stdin, sys.stdout)
    except KeyboardInterrupt:
        return None


def _on_page(session: SeatSession, game: Callable[[], Any], port: int) -> Outcome | None:
    """Serve the page until it has shown the game's end (or Ctrl+C)."""
    from pipeline.seat.server import SeatServer

    server = SeatServer(session, port)  # bound before the game starts: a busy port stops nothing
    session.start(game)
    print(f"play at {server.start()}  (open it in a browser; Ctrl+C stops the game)", flush=True)
    try:
        session.seen_end.wait()
        time.sleep(1.0)  # the page's last answer is on its way
    except KeyboardInterrupt:
        return None
    finally:
        server.stop()
    return session.outcome


def _port(value: str) -> int:
    port = int(value)
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{value}: a port is 0 (any free one) to 65535")
    return port


def register(commands: argparse._SubParsersAction) -> None:
    seat = commands.add_parser(
        "seat",
        help="play one game of a benchmark yourself, as a roster entry with `bot: human`, in a local web page "
        "or the terminal; the game is recorded like any other",
        description="Play one game of BENCHMARK in the seat of roster entry NAME (`bot: human`) against the "
        "players --params schedules, or the benchmark's scripted bots. You see what a model in that seat "
        "sees; the game waits for your moves without a time limit (docs/human-seat.md).",
    )
    seat.add_argument("benchmark", metavar="BENCHMARK", help="the benchmark to play, e.g. whoisspy")
    seat.add_argument("--as", dest="name", required=True, metavar="NAME", help="your roster entry (bot: human)")
    seat.add_argument(
        "--params",
        default=None,
        metavar="DIR",
        help="a params directory: the rules of its BENCHMARK.yaml and the players it schedules are your "
        "opponents (default: params/BENCHMARK.yaml's rules and the benchmark's scripted bots)",
    )
    seat.add_argument("--models", default=None, metavar="FILE", help="the roster (default: DIR/models.yaml)")
    seat.add_argument(
        "--seed",
        type=int,
        default=None,
        help="picks the game (words, seats, maps) as a schedule would (default: the first one NAME has not played)",
    )
    seat.add_argument(
        "--seat", default=None, metavar="SEAT", help="the seat to take, where the benchmark offers a choice"
    )
    seat.add_argument("--out", default=None, metavar="DIR", help="the games folder (default: the benchmark's)")
    mode = seat.add_mutually_exclusive_group()
    mode.add_argument(
        "--port", type=_port, default=8765, help="the page's port on 127.0.0.1 (default 8765; 0: any free port)"
    )
    mode.add_argument("--terminal", action="store_true", help="play on stdin and stdout instead of a web page")
    seat.set_defaults(func=_cmd_seat)

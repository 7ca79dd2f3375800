"""The seat on a terminal: the page's loop on stdin and stdout.

At each turn it prints the conversation a model in the seat would get (one block per message, by
role), the kind of move and its valid moves, then reads the move: every line up to an empty line
or the end of input. Between turns it prints the game's log as it goes on; at the end, the
outcome. Piped input plays too: once it runs out, every later move is empty (a move with no answer,
judged by the game's rules as a model's empty reply).
"""

from __future__ import annotations

from typing import Any, TextIO

from pipeline.seat.session import Outcome, SeatSession, choices_line, scores_line, turn_json

RULE = "-" * 72


def log_line(entry: dict[str, Any]) -> str | None:
    """One entry of the session's log as a line (None: not printed; a turn prints itself)."""
    if entry["type"] == "move":
        return f"> you sent ({entry['kind']}): {entry['text']}"
    if entry["type"] == "event":
        return f"  {entry.get('text', entry)}"
    return None


def print_turn(turn: dict[str, Any], out: TextIO) -> None:
    print(RULE, file=out)
    for message in turn["messages"]:
        print(f"[{message['role']}]", file=out)
        print(message["content"], file=out)
        print(file=out)
    words = f", at most {turn['max_words']} words" if turn["max_words"] else ""
    print(f"== your move: {turn['kind']}{words}", file=out)
    if turn["choices"]:
        print(f"   valid moves: {choices_line(turn['choices'])}", file=out)
    print("   type it, then an empty line (or end of input) to send:", file=out, flush=True)


def read_move(source: TextIO) -> str:
    """Lines up to an empty line or the end of input, joined."""
    lines: list[str] = []
    while True:
        line = source.readline()
        if not line or not line.rstrip("\r\n"):
            return "\n".join(lines)
        lines.append(line.rstrip("\r\n"))


def print_outcome(outcome: Outcome, seat: str, out: TextIO) -> None:
    print(RULE, file=out)
    print(f"game over: {outcome.summary}", file=out)
    if outcome.score is not None:
        print(f"your score: {outcome.score:g}", file=out)
    if outcome.scores:
        print(f"scores: {scores_line(outcome.scores, seat)}", file=out)
    if outcome.record:
        print(f"recorded in {outcome.record}", file=out)
    if outcome.error:
        print(f"error: {outcome.error}", file=out)
    out.flush()


def play_on_terminal(session: SeatSession, source: TextIO, out: TextIO) -> Outcome:
    """Play the session's seat from `source` until the game ends; its outcome."""
    seen = 0
    while True:
        session.wait(seen)
        for entry in session.entries(seen):
            seen = entry["seq"]
            line = log_line(entry)
            if line is not None:
                print(line, file=out, flush=True)
        outcome = session.outcome
        if outcome is not None:
            print_outcome(outcome, session.channel.seat, out)
            session.seen_end.set()
            return outcome
        turn = session.turn()
        if turn is not None:
            print_turn(turn_json(turn), out)
            session.answer(turn.key, read_move(source))

"""`python -m pipeline seat ... --terminal` on piped input: a person's moves, typed on stdin, are
recorded as typed; a slow person is not fouled for thinking time; a malformed move is read by the
game's rules as a model's malformed reply is."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.cli import main
from pipeline.testing.project import make_workdir
from tests.seat.helpers import add_person, only_record, spy_seat


def seat(project: Path, monkeypatch: pytest.MonkeyPatch, typed: io.StringIO | SlowTypist, *args: str) -> int:
    monkeypatch.chdir(project)
    monkeypatch.setattr("sys.stdin", typed)
    return main(["seat", *args, "--as", "alice", "--terminal"])


def test_elimination_on_piped_stdin(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    add_person(project)
    # one move of two lines, ended by an empty line; then the input runs out: every later move is empty
    assert seat(project, monkeypatch, io.StringIO("Hello table, I come in peace.\nTrust me.\n\n"), "elimination") == 0
    shown = capsys.readouterr().out
    assert "[system]" in shown and "== your move:" in shown  # the conversation a model in the seat gets
    assert "> you sent" in shown and "game over:" in shown and "your score:" in shown
    # Elimination's play writes a folder of logs per game, so a seat game goes to results/elimination/seat
    lines = only_record(project / "results" / "elimination" / "seat")
    assert isinstance(lines, list)
    said = [line["message"] for line in lines if "_alice" in str(line.get("player_id") or line.get("speaker_id"))]
    assert "Hello table, I come in peace.\nTrust me." in said
    assert said.count("") >= 1  # the moves after the input ran out: empty, recorded as such


class SlowTypist:
    """Input that takes `pause` seconds a line: a person thinking."""

    def __init__(self, text: str, pause: float) -> None:
        self.lines = io.StringIO(text)
        self.pause = pause

    def readline(self) -> str:
        time.sleep(self.pause)
        return self.lines.readline()


@pytest.fixture(scope="module")
def spy_game(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, Any], str]]:
    """A Who is Spy game among bots, its rules' time limit 0.2 s, played by a person who takes 0.3 s a
    line: a description, then a vote that names nobody ("banana"), then nothing (input runs out)."""
    project = make_workdir(tmp_path_factory.mktemp("spy"))
    add_person(project)
    rules = project / "params" / "whoisspy.yaml"
    params = yaml.safe_load(rules.read_text())
    params.update(players=["graded-90", "graded-50", "graded-10"], fill=["graded-90", "graded-50", "graded-10"])
    params["rules"]["time_limit_s"] = 0.2
    rules.write_text(yaml.safe_dump(params))
    typed = SlowTypist("it grows on the ground\n\nbanana\n\n", pause=0.3)
    with pytest.MonkeyPatch.context() as patch:
        assert seat(project, patch, typed, "whoisspy", "--params", "params", "--seed", "3") == 0
    record = only_record(project / "results" / "whoisspy" / "games")  # where Who is Spy's play writes games
    assert isinstance(record, dict)
    yield record, spy_seat(record)


def test_a_slow_person_is_not_fouled_for_time(spy_game: tuple[dict[str, Any], str]) -> None:
    record, label = spy_game
    assert record["rules"]["time_limit_s"] == 0.2
    first = next(e for e in record["events"] if e["type"] == "speech" and e["seat"] == label)
    assert first["text"] == "it grows on the ground"
    assert "timeout" not in first["fouls"]
    assert first["shown"] != "(no description)"  # heard by everyone, as typed (the word hidden, if said)


def test_a_malformed_move_is_read_as_a_models(spy_game: tuple[dict[str, Any], str]) -> None:
    record, label = spy_game
    vote = next(e for e in record["events"] if e["type"] == "vote" and e["voter"] == label)
    # paper parse (appendix A): a reply that is no candidate's name is an abstention, recorded as invalid
    assert (vote["reply"], vote["target"], vote["ballot"]) == ("banana", None, "invalid")
    # the input ran out: an empty reply, a model's "no answer" foul (this game reaches round 2)
    later = [e for e in record["events"] if e["type"] == "speech" and e["seat"] == label][1:]
    assert later and all(speech["text"] == "" and speech["fouls"] == ["no_answer"] for speech in later)

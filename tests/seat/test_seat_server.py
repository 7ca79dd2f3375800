"""The seat's server: loopback only, one self-contained page, moves only as JSON for a waiting turn."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from pipeline.core.models.outside import SeatChannel
from pipeline.seat.server import SeatServer
from pipeline.seat.session import Outcome, SeatSession


@pytest.fixture
def server() -> Iterator[SeatServer]:
    """A server for a seat whose game has asked nothing yet."""
    session = SeatSession(SeatChannel("alice"), lambda over: Outcome("over"), "a game")
    serving = SeatServer(session, 0)
    serving.start()
    yield serving
    serving.stop()


def fetch(
    url: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], str]:
    request = urllib.request.Request(url, data=body, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, dict(refused.headers), refused.read().decode()


def test_the_page_is_self_contained_and_locked_down(server: SeatServer) -> None:
    assert server.url.startswith("http://127.0.0.1:")
    status, headers, html = fetch(server.url)
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    assert re.findall(r"\b(?:src|href)\s*=", html) == []  # no script, style, font or image from anywhere
    assert 'for="move"' in html and 'role="status"' in html  # labelled, and announced


def test_state_is_json_and_moves_need_a_waiting_turn(server: SeatServer) -> None:
    status, _, body = fetch(server.url + "state?since=0")
    state = json.loads(body)
    assert status == 200 and state["turn"] is None and state["outcome"] is None and state["seat"] == "alice"
    move = json.dumps({"key": "r1/speech/P1", "text": "hi"}).encode()
    assert fetch(server.url + "move", move, {"Content-Type": "text/plain"})[0] == 415  # a cross-site form's
    assert fetch(server.url + "move", move, {"Content-Type": "application/json"})[0] == 409  # nothing waits


def test_another_host_name_is_refused(server: SeatServer) -> None:
    # a page elsewhere that rebinds its own name to 127.0.0.1 still sends its name as the Host
    assert fetch(server.url, headers={"Host": f"attacker.example:{server.port}"})[0] == 403

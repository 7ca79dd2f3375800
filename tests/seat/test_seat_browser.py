"""`python -m pipeline seat whoisspy --as alice` in headless Chromium: a person types every move
into the page until the game against the bots ends; the record holds the moves as typed, the page
shows the outcome, and the page loads nothing from elsewhere and runs no markup a move carries."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.leaderboard.test_leaderboard_browser import ARGS, CHROMIUM
from tests.seat.helpers import add_person, only_record, spy_seat

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason="Debian's chromium is not installed at /usr/bin/chromium "
        "(`apt-get install chromium`; the Makefile installs it)",
    ),
]

#: a description that is also markup: shown back in the log and in later turns' messages, never run
MARKUP = '<img src=x onerror="window.__pwned=1">'


@pytest.fixture
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package drives Chromium")
    with sync_api.sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield instance
        instance.close()


@pytest.fixture
def seat_server(project: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """The `seat` command serving its page on a free port of 127.0.0.1; (the process, the page's URL)."""
    add_person(project)
    process = subprocess.Popen(
        [sys.executable, "-m", "pipeline", "seat", "whoisspy", "--as", "alice", "--port", "0"],
        cwd=project,
        env={k: v for k, v in os.environ.items() if k != "PIPELINE_PARAMS"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    assert first.startswith("play at http://127.0.0.1:"), (first, process.stderr.read() if process.stderr else "")
    yield process, first.split()[2]
    if process.poll() is None:
        process.kill()
        process.wait()


def test_a_person_plays_who_is_spy_in_the_page(
    project: Path, browser: Any, seat_server: tuple[subprocess.Popen[str], str]
) -> None:
    process, url = seat_server
    page = browser.new_page()
    errors: list[str] = []
    elsewhere: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: None if r.url.startswith(url) else elsewhere.append(r.url))
    page.goto(url)
    speeches: list[str] = []
    votes: list[str] = []
    while True:
        page.wait_for_selector("#move-section:not([hidden]), #outcome:not([hidden])", timeout=60_000)
        if page.is_visible("#outcome"):
            break
        assert page.locator("#messages .message h3").first.inner_text() == "SYSTEM"  # what the model sees
        assert page.evaluate("document.activeElement.id") == "move"  # ready to type
        if page.locator("#choices button").count():  # a vote: its valid moves are buttons
            choice = page.locator("#choices button").first.inner_text()
            page.locator("#choices button").first.click()
            votes.append(choice)
            page.get_by_label("Your reply").press("Control+Enter")
        else:
            speech = f"{MARKUP} something round, clue {len(speeches) + 1}"
            page.get_by_label("Your reply").press_sequentially(speech)
            speeches.append(speech)
            page.get_by_role("button", name="Send").click()
        sent = len(speeches) + len(votes)
        page.locator("#log .mine").nth(sent - 1).wait_for()  # the server took it (the page's CSP allows no eval)
    outcome = page.inner_text("#outcome")
    assert "Game over" in outcome and "Your score:" in outcome and "scored" in outcome
    assert "The game is recorded in results/whoisspy/games/" in outcome
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert MARKUP in page.inner_text("#log")  # shown as text
    assert errors == [] and elsewhere == []
    assert process.wait(timeout=30) == 0
    assert process.stdout is not None and "game over:" in process.stdout.read()

    record = only_record(project / "results" / "whoisspy" / "games")
    assert isinstance(record, dict)
    label = spy_seat(record)
    assert speeches and votes
    assert [e["text"] for e in record["events"] if e["type"] == "speech" and e["seat"] == label] == speeches
    assert [e["reply"] for e in record["events"] if e["type"] == "vote" and e["voter"] == label] == votes

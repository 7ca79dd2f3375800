"""The published site in headless Chromium: every page type loads from disk with no console error
and no network request, model text stays text, and a replay steps forward and back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.cli import main
from tests.leaderboard.test_leaderboard_helpers import build_results

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
REPO = Path(__file__).resolve().parents[2]
# alpha a model; beta and gamma graded bots (gamma missed xent: provisional)
ROSTER = """\
roster:
  - {name: alpha, model: openai/gpt-4o}
  - {name: beta, bot: graded, bot_options: {skill: 0.9}}
  - {name: gamma, bot: graded, bot_options: {skill: 0.1}}
"""

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason="Debian's chromium is not installed at /usr/bin/chromium "
        "(`apt-get install chromium`; the Makefile installs it)",
    ),
]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("site")
    build_results(root / "results")
    (root / "models.yaml").write_text(ROSTER)
    assert (
        main(
            [
                "leaderboard",
                "--models",
                str(root / "models.yaml"),
                "--params",
                str(REPO / "params" / "leaderboard.yaml"),
                "--results",
                str(root / "results"),
                "--out",
                str(root / "lb"),
                "--workspace",
                str(root),
            ]
        )
        == 0
    )
    return root / "lb" / "site"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package drives Chromium")
    with sync_api.sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield instance
        instance.close()


class Watched:
    """A page that records console errors, uncaught exceptions and every non-file request."""

    def __init__(self, browser: Any) -> None:
        self.page = browser.new_page()
        self.errors: list[str] = []
        self.remote: list[str] = []
        self.page.on(
            "console", lambda m: self.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None
        )
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        self.page.on("requestfailed", lambda r: self.errors.append(f"failed: {r.url}"))
        self.page.on(
            "request",
            lambda r: None if r.url.startswith(("file:", "data:", "blob:", "about:")) else self.remote.append(r.url),
        )

    def open(self, path: Path) -> Any:
        self.page.goto(path.as_uri(), wait_until="load")
        self.page.wait_for_timeout(150)  # let deferred scripts and Vega finish
        return self.page


PAGE_TYPES = [
    "index.html",
    "charts/combined.html",
    "elimination/index.html",
    "elimination/list/page-1.html",
    "elimination/games/e1.html",
    "whoisspy/index.html",
    "whoisspy/games/w1.html",
    "skate/index.html",
    "skate/games/q2.html",
    "xent/index.html",
    "xent/games/condense--m1--beta.html",
    "releases.html",
]


@pytest.mark.parametrize("relative", PAGE_TYPES)
def test_every_page_type_loads_cleanly(site: Path, browser: Any, relative: str) -> None:
    watched = Watched(browser)
    page = watched.open(site / relative)
    assert watched.errors == [], watched.errors
    assert watched.remote == [], watched.remote
    assert page.evaluate("typeof window.__pwned") == "undefined"  # model text was not executed
    broken = page.evaluate(
        "Array.from(document.images).filter(i => i.complete && i.naturalWidth === 0).map(i => i.src)"
    )
    assert broken == []
    watched.page.close()


def test_links_from_the_index_reach_every_benchmark(site: Path, browser: Any) -> None:
    watched = Watched(browser)
    page = watched.open(site / "index.html")
    for bench in ("skate", "xent", "elimination", "whoisspy"):
        page.click(f"text={bench} >> nth=0")
        page.wait_for_load_state("load")
        assert page.url.endswith(f"{bench}/index.html")
        page.go_back()
    assert watched.errors == []
    watched.page.close()


def test_replay_steps_forward_and_back(site: Path, browser: Any) -> None:
    watched = Watched(browser)
    page = watched.open(site / "elimination/games/e1.html")
    visible = "Array.from(document.querySelectorAll('.step')).filter(s => !s.hidden).map(s => s.id)"
    assert page.evaluate(visible) == ["step-1"]
    assert page.is_visible("#stepper") and page.is_disabled("#step-prev")
    assert "Round 1 (1 of 3)" in page.inner_text("#step-label")
    page.click("#step-next")
    assert page.evaluate(visible) == ["step-2"]
    assert "Round 2 (2 of 3)" in page.inner_text("#step-label")
    assert page.is_visible("text=Eliminated: P3")
    page.click("#step-next")
    assert page.evaluate(visible) == ["step-3"] and page.is_disabled("#step-next")
    page.click("#step-prev")
    assert page.evaluate(visible) == ["step-2"]
    page.click("#step-all")
    assert len(page.evaluate(visible)) == 3
    # the script text a model wrote is shown as text
    assert "<script>window.__pwned" in page.inner_text("#step-1")
    assert watched.errors == []
    watched.page.close()


def test_the_index_reads_at_a_glance(site: Path, browser: Any, tmp_path: Path) -> None:
    """Calibration line, provisional section, a models-only view and not-separable names on a click."""
    watched = Watched(browser)
    page = watched.open(site / "index.html")
    assert "calibration: 2 graded bots in their known order" in page.inner_text("#calibration")
    assert page.is_visible("text=Provisional") and page.is_visible("text=3/4, missed xent")
    rows = "Array.from(document.querySelectorAll('table.combined tr.bot')).filter(r => r.offsetParent).length"
    assert page.evaluate(rows) == 2  # beta, gamma
    page.check("#models-only")
    assert page.evaluate(rows) == 0 and page.is_visible("table.combined tr.model >> text=alpha")
    page.uncheck("#models-only")
    names = page.locator("table.combined tr.model td.ns details").first
    assert not names.evaluate("d => d.open")
    names.locator("summary").click()
    assert names.evaluate("d => d.open") and "beta" in names.inner_text()
    page.set_viewport_size({"width": 1280, "height": 900})
    page.screenshot(path=str(tmp_path / "index.png"), full_page=True)
    assert (tmp_path / "index.png").stat().st_size > 10_000
    assert watched.errors == []
    watched.page.close()

"""`python -m pipeline diff REV_A REV_B` on a temp git repo with two committed leaderboard versions,
and `python -m pipeline compare MODEL_A MODEL_B` on a small fixture."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from pipeline.cli import main
from tests.conftest import GIT_ENV
from tests.leaderboard.test_leaderboard_helpers import build_results

REPO = Path(__file__).resolve().parents[2]


def git(root: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True, env=env).stdout.strip()


def row(rank: tuple[int, int, int], score: float, mu: float, elim_rank: tuple[int, int, int]) -> dict[str, float]:
    return {
        "combined_rank": rank[0],
        "combined_rank_lo": rank[1],
        "combined_rank_hi": rank[2],
        "combined_score": score,
        "elimination_trueskill_mu": mu,
        "elimination_rank": elim_rank[0],
        "elimination_rank_lo": elim_rank[1],
        "elimination_rank_hi": elim_rank[2],
    }


def commit_version(root: Path, board: dict, version: str, message: str) -> str:
    folder = root / "results" / "leaderboard"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "leaderboard.json").write_text(json.dumps(board, indent=2, sort_keys=True))
    (folder / "version.json").write_text(
        json.dumps({"leaderboard_version": version, "git_commit": None, "inputs_id": message})
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


@pytest.fixture
def two_versions(tmp_path: Path) -> tuple[Path, str, str]:
    git(tmp_path, "init", "-q")
    old = commit_version(
        tmp_path,
        {
            "alpha": row((1, 1, 1), 100.0, 10.0, (1, 1, 1)),
            "beta": row((2, 2, 3), 40.0, 5.0, (2, 2, 3)),
            "gamma": row((3, 2, 3), 0.0, 1.0, (3, 2, 3)),
        },
        "1.0",
        "v1",
    )
    new = commit_version(
        tmp_path,
        {
            "alpha": row((3, 3, 3), 10.0, 2.0, (3, 2, 3)),  # fell beyond both intervals
            "beta": row((2, 1, 2), 45.0, 5.5, (2, 1, 2)),  # moved within its intervals
            "delta": row((1, 1, 1), 100.0, 12.0, (1, 1, 1)),  # entered; gamma left
        },
        "1.1",
        "v2",
    )
    return tmp_path, old, new


def test_diff_markdown_lists_entered_left_and_rank_changes(two_versions, capsys: pytest.CaptureFixture[str]) -> None:
    root, old, new = two_versions
    assert main(["diff", old, new, "--repo", str(root), "--html", str(root / "diff.html")]) == 0
    out = capsys.readouterr().out
    entered = out.split("## Entered")[1].split("## Left")[0]
    left = out.split("## Left")[1].split("## Rank changes")[0]
    beyond = out.split("## Rank changes beyond the intervals")[1].split("## Model by model")[0]
    assert "delta" in entered and "gamma" not in entered
    assert "gamma" in left and "delta" not in left
    assert "| combined | alpha | 1 | 3 |" in beyond and "| elimination | alpha | 1 | 3 (2–3) |" in beyond
    assert "beta" not in beyond
    assert "| alpha | elimination | 10.00 → 2.00 | -8.00 | 1 → 3 (2–3) * |" in out
    assert "| beta | combined | 40.00 → 45.00 | +5.00 | 2 (2–3) → 2 (1–2) |" in out
    assert "leaderboard v1.0" in out and "leaderboard v1.1" in out and "not comparable" not in out
    page = (root / "diff.html").read_text()
    assert "<table>" in page and "alpha" in page and "http" not in page


def test_diff_json_and_workspace_default(two_versions, capsys: pytest.CaptureFixture[str]) -> None:
    root, old, _ = two_versions
    board = json.loads((root / "results/leaderboard/leaderboard.json").read_text())
    board["beta"]["elimination_trueskill_mu"] = 9.0  # an uncommitted change in the workspace
    (root / "results/leaderboard/leaderboard.json").write_text(json.dumps(board))
    assert main(["diff", old, "--repo", str(root), "--json"]) == 0
    diff = json.loads(capsys.readouterr().out)
    assert diff["b"]["rev"] == "workspace"
    assert diff["models"]["beta"]["elimination"]["delta"] == 4.0
    assert [c["model"] for c in diff["rank_changes_beyond_intervals"]] == ["alpha", "alpha"]
    assert [e["model"] for e in diff["entered"]] == ["delta"] and [e["model"] for e in diff["left"]] == ["gamma"]


def test_diff_warns_across_major_versions_and_reports_bad_revisions(
    two_versions, capsys: pytest.CaptureFixture[str]
) -> None:
    root, old, _ = two_versions
    board = json.loads((root / "results/leaderboard/leaderboard.json").read_text())
    major = commit_version(root, board, "2.0", "v3")
    assert main(["diff", old, major, "--repo", str(root)]) == 0
    assert "not comparable" in capsys.readouterr().out
    assert main(["diff", "no-such-rev", major, "--repo", str(root)]) == 2
    assert "unknown git revision 'no-such-rev'" in capsys.readouterr().err


def test_compare_two_models(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build_results(tmp_path / "results")
    html = tmp_path / "compare.html"
    assert (
        main(
            [
                "compare",
                "alpha",
                "beta",
                "--params",
                str(REPO / "params/leaderboard.yaml"),
                "--results",
                str(tmp_path / "results"),
                "--html",
                str(html),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    # 2 games each: not "separable", whatever the mu intervals say
    assert (
        "| elimination | 10.00 [8.00, 12.00], rank 1 (1–3) unsettled | 5.00 [3.00, 7.50], rank 2 (1–3) unsettled | "
        "+5.00 | not enough games "
        "to tell (2 vs 2 games per model, 20 resamples; needs 20+ games per model and 20+ resamples) |"
    ) in out
    assert (
        "| whoisspy | 30.00 [27.00, 33.00], rank 1 (1–2) | 25.00 [22.00, 28.00], rank 2 (1–3) | +5.00 | "
        "not separable: rank intervals overlap (50 vs 50 games per model, 100 resamples) |"
    ) in out
    assert "| combined |" in out and "separable (" not in out
    # e1: alpha (P1) wins, beta second; e2: beta (P1) wins, alpha second. w1: beta is the spy and
    # loses; w2: both are winning civilians (even)
    h2h = out.split("## Head to head in shared games")[1].split("## SKATE")[0]
    assert "| elimination | 2 | 1 | 1 | 0 |" in h2h and "| whoisspy | 2 | 1 | 0 | 1 |" in h2h
    skate = out.split("## SKATE questions where p(correct) differs most")[1].split("## xent")[0]
    lines = [line for line in skate.splitlines() if line.startswith(("| q1 ", "| q2 "))]
    assert lines[0].startswith("| q1 | gamma | question 0 | 0.950 | 0.200 | +0.750 |")
    assert lines[1].startswith("| q2 |")
    xent = out.split("## xent maps with the largest gaps")[1]
    assert xent.index("| condense | m2 | 10.00 | 6.00 | +4.00 |") < xent.index(
        "| condense | m1 | 8.00 | 6.00 | +2.00 |"
    )
    assert "&lt;script&gt;" not in out and "<script>" not in html.read_text()
    assert (
        main(
            [
                "compare",
                "alpha",
                "omega",
                "--params",
                str(REPO / "params/leaderboard.yaml"),
                "--results",
                str(tmp_path / "results"),
            ]
        )
        == 2
    )
    assert "no results for 'omega'" in capsys.readouterr().err


def test_release_notes_report_combined_score_changes_on_the_anchors_scale(two_versions) -> None:
    from pipeline.leaderboard.diff import load_version
    from pipeline.leaderboard.notes import record_lines, release_record
    from pipeline.leaderboard.vcs import Repo

    root, old, new = two_versions
    previous = load_version(root, old, "results/leaderboard")
    current = load_version(root, new, "results/leaderboard")
    current.stamp["anchor"] = previous.stamp["anchor"] = "beta"
    record = release_record(Repo(root), previous, current, "params", ["elimination"])
    assert record["anchor"] == "beta" and not record["warnings"]
    lines = record_lines(record)
    assert "- Combined score changes (scale: anchor beta = 1000): alpha -90 (100 → 10); beta +5 (40 → 45)" in lines
    current.stamp["anchor"] = "delta"  # another anchor: another scale, said as a warning
    moved = release_record(Repo(root), previous, current, "params", ["elimination"])
    assert any("the anchor changed (beta → delta)" in w for w in moved["warnings"])

"""`python -m pipeline diff REV_A [REV_B]`: two leaderboard versions (git revisions) model by model.

Reads leaderboard.json and version.json at each revision with `git show REV:path` (REV_B left out:
the files in the workspace). A rank change is "beyond the intervals" when each version's rank lies
outside the other version's rank interval.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.core.artifacts import write_text_atomic
from pipeline.leaderboard.report import Report

Board = dict[str, dict[str, float]]


class DiffError(RuntimeError):
    """A revision or file that cannot be read; the message says which and why."""


@dataclass
class Version:
    label: str
    board: Board
    stamp: dict[str, Any]


def repo_root(folder: Path) -> Path:
    from pipeline.leaderboard.vcs import PublishError, git_toplevel

    try:
        return git_toplevel(folder)
    except PublishError as exc:
        raise DiffError(str(exc)) from None


def read_file(root: Path, rev: str | None, path: str) -> str | None:
    if rev is None:
        target = root / path
        return target.read_text(encoding="utf-8") if target.exists() else None
    done = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=root, capture_output=True, text=True)
    if done.returncode == 0:
        return done.stdout
    check = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd=root, capture_output=True, text=True
    )
    if check.returncode != 0:
        raise DiffError(f"unknown git revision {rev!r}")
    return None


def load_version(root: Path, rev: str | None, folder: str) -> Version:
    label = rev or "workspace"
    text = read_file(root, rev, f"{folder}/leaderboard.json")
    if text is None:
        raise DiffError(f"{folder}/leaderboard.json does not exist at {label}")
    try:
        board = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DiffError(f"{folder}/leaderboard.json at {label} is not valid JSON: {exc}") from None
    stamp_text = read_file(root, rev, f"{folder}/version.json")
    stamp = json.loads(stamp_text) if stamp_text else {}
    return Version(label, board, stamp)


def rankings(board: Board) -> list[str]:
    """'combined' plus every benchmark that has ranks in this board."""
    names = {key[: -len("_rank")] for row in board.values() for key in row if key.endswith("_rank")}
    return sorted(names, key=lambda n: (n != "combined", n))


def rank_of(row: dict[str, float], name: str) -> tuple[int, int, int] | None:
    try:
        return int(row[f"{name}_rank"]), int(row[f"{name}_rank_lo"]), int(row[f"{name}_rank_hi"])
    except KeyError:
        return None


def fmt_rank(r: tuple[int, int, int] | None) -> str:
    if r is None:
        return "–"
    return str(r[0]) if r[1] == r[2] else f"{r[0]} ({r[1]}–{r[2]})"


def rating_key(name: str) -> str:
    return "combined_score" if name == "combined" else f"{name}_trueskill_mu"


def compute_diff(a: Version, b: Version) -> dict[str, Any]:
    entered = sorted(set(b.board) - set(a.board))
    left = sorted(set(a.board) - set(b.board))
    names = sorted(set(rankings(a.board)) | set(rankings(b.board)), key=lambda n: (n != "combined", n))
    beyond, models = [], {}
    for model in sorted(set(a.board) & set(b.board)):
        row_a, row_b = a.board[model], b.board[model]
        changes = {}
        for name in names:
            ra, rb = rank_of(row_a, name), rank_of(row_b, name)
            va, vb = row_a.get(rating_key(name)), row_b.get(rating_key(name))
            if ra is None and rb is None and va is None and vb is None:
                continue
            delta = round(vb - va, 4) if isinstance(va, (int, float)) and isinstance(vb, (int, float)) else None
            significant = (
                ra is not None and rb is not None and not ra[1] <= rb[0] <= ra[2] and not rb[1] <= ra[0] <= rb[2]
            )
            changes[name] = {
                "rating_a": va,
                "rating_b": vb,
                "delta": delta,
                "rank_a": ra and list(ra),
                "rank_b": rb and list(rb),
                "beyond_intervals": significant,
            }
            if significant and ra is not None and rb is not None:  # significant needs both ranks
                beyond.append({"model": model, "ranking": name, "rank_a": list(ra), "rank_b": list(rb)})
        models[model] = changes
    major = [str(v.stamp.get("leaderboard_version", "?")).split(".")[0] for v in (a, b)]
    return {
        "a": {"rev": a.label, **{k: a.stamp.get(k) for k in ("leaderboard_version", "git_commit", "inputs_id")}},
        "b": {"rev": b.label, **{k: b.stamp.get(k) for k in ("leaderboard_version", "git_commit", "inputs_id")}},
        "comparable": major[0] == major[1],
        "entered": [{"model": m, "combined_rank": b.board[m].get("combined_rank")} for m in entered],
        "left": [{"model": m, "combined_rank": a.board[m].get("combined_rank")} for m in left],
        "rank_changes_beyond_intervals": beyond,
        "rankings": names,
        "models": models,
    }


def signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.2f}"


def fmt_value(value: Any) -> str:
    return "–" if value is None else f"{value:.2f}"


def diff_report(diff: dict[str, Any]) -> Report:
    a, b = diff["a"], diff["b"]
    report = Report(f"Leaderboard diff: {a['rev']} → {b['rev']}")
    for side in (a, b):
        report.paragraph(
            f"{side['rev']}: leaderboard v{side['leaderboard_version']} · commit "
            f"{side['git_commit']} · inputs {side['inputs_id']}"
        )
    if not diff["comparable"]:
        report.paragraph(
            "WARNING: the major versions differ (rules, prompts or scoring changed): "
            "ratings are not comparable across them."
        )
    report.heading("Entered")
    report.table(["model", "combined rank"], [[e["model"], e["combined_rank"] or "–"] for e in diff["entered"]])
    report.heading("Left")
    report.table(["model", "combined rank"], [[e["model"], e["combined_rank"] or "–"] for e in diff["left"]])
    report.heading("Rank changes beyond the intervals")
    report.table(
        ["ranking", "model", f"rank at {a['rev']}", f"rank at {b['rev']}"],
        [
            [c["ranking"], c["model"], fmt_rank(tuple(c["rank_a"])), fmt_rank(tuple(c["rank_b"]))]
            for c in diff["rank_changes_beyond_intervals"]
        ],
        empty="(none: every rank stayed within the other version's interval)",
    )
    report.heading("Model by model")
    report.paragraph(
        "rating: combined score, else the benchmark's TrueSkill mu; old → new (delta); "
        "rank old → new with 95% intervals; * = beyond the intervals."
    )
    rows = []
    for model, changes in diff["models"].items():
        for name, c in changes.items():
            ra = fmt_rank(tuple(c["rank_a"]) if c["rank_a"] else None)
            rb = fmt_rank(tuple(c["rank_b"]) if c["rank_b"] else None)
            rows.append(
                [
                    model,
                    name,
                    f"{fmt_value(c['rating_a'])} → {fmt_value(c['rating_b'])}",
                    signed(c["delta"]),
                    f"{ra} → {rb}" + (" *" if c["beyond_intervals"] else ""),
                ]
            )
    report.table(["model", "ranking", "rating", "delta", "rank"], rows)
    return report


def run_diff(args: argparse.Namespace) -> int:
    try:
        root = repo_root(Path(args.repo))
        folder = args.path.strip("/")
        a = load_version(root, args.rev_a, folder)
        b = load_version(root, args.rev_b, folder)
    except DiffError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    diff = compute_diff(a, b)
    report = diff_report(diff)
    if args.html:
        write_text_atomic(args.html, report.html())
    if args.json:
        print(json.dumps(diff, indent=2, sort_keys=True))
    else:
        print(report.markdown())
    return 0

"""`python -m pipeline metrics`: every declared metrics file, in rows that fit the terminal."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def _project(tmp_path: Path) -> Path:
    stages = {
        "alpha": {"cmd": "true", "metrics": [{"results/alpha/metrics.json": {"cache": False}}]},
        "board": {"cmd": "true", "metrics": [{"results/board/leaderboard.json": {"cache": False}}]},
        "later": {"cmd": "true", "metrics": [{"results/later/metrics.json": {"cache": False}}]},
    }
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump({"stages": stages}))
    per_model = {f"model-{i}": {f"metric_{j:02d}": i * 0.123456 + j for j in range(30)} for i in range(3)}
    (tmp_path / "results" / "alpha").mkdir(parents=True)
    (tmp_path / "results" / "alpha" / "metrics.json").write_text(json.dumps(per_model))
    (tmp_path / "results" / "board").mkdir(parents=True)
    (tmp_path / "results" / "board" / "leaderboard.json").write_text(
        json.dumps({"version": "1.2", "games": {"total": 7}})
    )
    return tmp_path


def _metrics(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pipeline", "metrics", "--root", str(root), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_every_declared_file_fits_the_width(tmp_path: Path) -> None:
    done = _metrics(_project(tmp_path), "--width", "80")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    # a per-model file: one row per metric, one column per model, values as written (4 digits)
    row = next(line for line in lines if line.strip().startswith("metric_29"))
    assert row.split()[1:] == ["29", "29.12", "29.25"]
    # another shape: key paths; a declared file not yet written says how to make it
    assert any(line.split() == ["games.total", "7"] for line in lines)
    assert "results/later/metrics.json" in done.stdout and "not written yet" in done.stdout


def test_filter_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the command in this process (`python -m pipeline` is main(); the test above runs the command
    # itself): a new interpreter per call costs 1.2 CPU-s
    from pipeline.cli import main

    root = _project(tmp_path)
    code = main(["metrics", "--root", str(root), "alpha", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert list(json.loads(out)) == ["results/alpha/metrics.json"]
    missing = main(["metrics", "--root", str(root), "nothing-like-this"])
    assert missing != 0 and "no metrics file" in capsys.readouterr().err

"""Typed game records (pipeline.core.artifacts.records and each benchmark's records module): every
committed game file reads into its model and writes back byte for byte, and a malformed record
stops with the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from pipeline.core.artifacts import RecordError, read_record, write_json_atomic, write_record
from pipeline.elimination.records import read_log, write_log
from pipeline.skate.records import SkateGenerate, SkateRound
from pipeline.whoisspy.records import WhoIsSpyGame
from pipeline.xent.records import XentPlay

REPO = Path(__file__).resolve().parents[3]
RESULTS = REPO / "results"
# one record of each kind, copied from a demo run: a clean clone has no game files under results/
# (DVC keeps them), so these are read there; a checkout with results reads every committed file too
FIXTURES = REPO / "tests" / "data" / "records"


def _json_files(pattern: str) -> list[Path]:
    found = [*RESULTS.glob(pattern), *FIXTURES.glob(pattern.split("/", 1)[0] + "/**/*.json")]
    return sorted({p for p in found if not p.name.endswith(".calls.json")})


def _skate_files(kind: str) -> list[Path]:
    found = [*RESULTS.glob(f"skate/{kind}/*.json"), *RESULTS.glob(f"skate/strategies/*/{kind}/*.json")]
    # the adaptive schedule's round files (round-NNN.json) share the round jobs' folder and are no records
    return sorted(p for p in {*found, *FIXTURES.glob(f"skate/{kind}/*.json")} if not p.name.startswith("round-"))


RECORD_FILES: list[tuple[Path, type[BaseModel]]] = (
    [(p, WhoIsSpyGame) for p in _json_files("whoisspy/games/*.json")]
    + [(p, XentPlay) for p in _json_files("xent/play/*/*.json")]
    + [(p, SkateGenerate) for p in _skate_files("generate")]
    + [(p, SkateRound) for p in _skate_files("rounds")]
)
ELIMINATION_LOGS = sorted(
    list(RESULTS.glob("elimination/games/*/*.jsonl"))
    + list((REPO / "tests" / "data" / "elimination-corpus").glob("*.jsonl"))
    + list((REPO / "tests" / "data" / "elimination").glob("*.jsonl"))
    + list((REPO.parent / "shared" / "samples" / "elimination-corpus").glob("*.jsonl"))
)


def test_every_benchmark_has_committed_records() -> None:
    kinds = {model for _, model in RECORD_FILES}
    assert kinds == {WhoIsSpyGame, XentPlay, SkateGenerate, SkateRound}
    assert ELIMINATION_LOGS


@pytest.mark.parametrize(
    ("path", "model"), RECORD_FILES, ids=lambda v: str(v.relative_to(REPO)) if isinstance(v, Path) else ""
)
def test_a_committed_record_reads_and_writes_back_byte_for_byte(
    path: Path, model: type[BaseModel], tmp_path: Path
) -> None:
    record = read_record(path, model)
    write_record(tmp_path / "out.json", record)
    assert (tmp_path / "out.json").read_bytes() == path.read_bytes()
    # and the record's JSON object gives the same bytes through the dict writer
    write_json_atomic(tmp_path / "dict.json", json.loads(path.read_text(encoding="utf-8")))
    assert (tmp_path / "dict.json").read_bytes() == path.read_bytes()


@pytest.mark.parametrize("path", ELIMINATION_LOGS, ids=lambda p: p.name)
def test_an_elimination_log_reads_and_writes_back_byte_for_byte(path: Path, tmp_path: Path) -> None:
    log = read_log(path)
    assert log.records
    assert write_log(tmp_path / path.name, log).read_bytes() == path.read_bytes()


def test_the_shared_corpus_is_covered_when_present() -> None:
    shared = REPO.parent / "shared" / "samples" / "elimination-corpus"
    if not shared.is_dir():
        pytest.skip("no shared corpus in this checkout")
    assert len(list(shared.glob("*.jsonl"))) == 60


def test_a_malformed_record_names_the_file_and_the_field(tmp_path: Path) -> None:
    good = next(p for p, model in RECORD_FILES if model is WhoIsSpyGame)
    data = json.loads(good.read_text(encoding="utf-8"))
    data["players"][0]["score"] = "lots"
    del data["winner"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(RecordError) as caught:
        read_record(bad, WhoIsSpyGame)
    message = str(caught.value)
    assert str(bad) in message and "players.0.score" in message and "winner" in message
    with pytest.raises(RecordError, match="missing"):
        read_record(tmp_path / "absent.json", WhoIsSpyGame)
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    with pytest.raises(RecordError, match="not JSON"):
        read_record(tmp_path / "broken.json", WhoIsSpyGame)


def test_an_unknown_key_is_refused(tmp_path: Path) -> None:
    path, _ = next((p, m) for p, m in RECORD_FILES if m is XentPlay)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["maps"][0]["surprise"] = 1
    (tmp_path / "x.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(RecordError, match=r"maps\.0\.surprise"):
        read_record(tmp_path / "x.json", XentPlay)

"""Importing the reference's built benchmark and playing it through the stages (WordJudge, bots: fast)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from pipeline.cli import main
from pipeline.core.artifacts.params import ParamsError
from pipeline.core.artifacts.schemas import read_table
from pipeline.xent.mapset import import_benchmark, load_map_set
from pipeline.xent.schemas import MovesSchema, ScoresSchema
from pipeline.xent.stages import build_stage, load_schedule, play_stage, rescore_stage
from pipeline.xent.xgl import load_program

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "xent" / "benchmark-sample.json"


def test_import_writes_every_map_as_a_program_with_its_seed_and_our_presentation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sample"
    assert main(["xent", "maps", "import", str(SAMPLE), "--out", str(out)]) == 0
    assert "condense" in capsys.readouterr().out
    manifest = json.loads((out / "mapset.json").read_text())
    assert manifest["benchmark_id"] == "benchmark_0.2" and manifest["rounds"] == 20
    assert [(m["game"], m["map_seed"]) for m in manifest["maps"]] == [
        ("alethiometer", "gameAlethiometer_map1"),
        ("condense", "gameCondense_map0"),
    ]
    condense = load_program(out / "condense" / "gameCondense_map0.xgl")
    assert condense.meta["seed"] == "gameCondense_map0" and condense.meta["rng_seed"] == "notrandom_gameCondense_map0"
    assert condense.meta["judge"] == "Qwen/Qwen3-14B-Base" and not condense.has_story_calls
    assert "palindrome" in condense.source  # the reference's story literal, kept as it is
    mapset = load_map_set(out)
    assert "assign(s=story())" in mapset.games["condense"].source  # the game's own code, shown in prompts
    assert "single spaces" in mapset.games["alethiometer"].description  # our text, not theirs
    for path in out.rglob("*"):
        if path.is_file():
            assert "PresentationBuilder" not in path.read_text() and "def present" not in path.read_text()
    again = tmp_path / "again"
    import_benchmark(SAMPLE, again)
    assert all((again / p.relative_to(out)).read_bytes() == p.read_bytes() for p in out.rglob("*") if p.is_file())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"config_type": "condensed_xega_config"}, "config_type: 'condensed_xega_config' is not a built benchmark"),
        ({"metadata": {"seed": "x"}}, "metadata.benchmark_id: missing"),
        ({"maps": [{"name": "Condense", "code": "elicit(x)", "map_seed": "m0"}]}, "maps[0] (Condense m0)"),
        ({"maps": [{"name": "Condense", "code": 3, "map_seed": "m0"}]}, "maps[0].code: expected str"),
    ],
)
def test_a_broken_benchmark_file_names_the_field(tmp_path: Path, change: dict, message: str) -> None:
    data = json.loads(SAMPLE.read_text())
    data.update(change)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(
        ParamsError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[").replace("]", r"\]")
    ):
        import_benchmark(bad, tmp_path / "out")


def test_a_map_set_plays_through_the_stages_with_seeds_and_token_usage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    import_benchmark(SAMPLE, tmp_path / "sets" / "sample")
    shutil.copytree(Path(__file__).resolve().parents[2] / "params", tmp_path / "params")
    models = yaml.safe_load((tmp_path / "params/models.yaml").read_text())
    models["roster"] = [{"name": "heuristic-bot", "bot": "heuristic"}, {"name": "random-bot", "bot": "random"}]
    models.setdefault("gateway", {})["cache_dir"] = str(tmp_path / ".cache")
    (tmp_path / "params/models.yaml").write_text(yaml.safe_dump(models))
    params = {
        "players": ["heuristic-bot", "random-bot"],
        "opponent": "random-bot",
        "map_set": "sets/sample",
        "rounds": 2,
        "judge": "word",
        "rating": {"passes": 2, "bootstrap_resamples": 2},
    }
    (tmp_path / "params/xent.yaml").write_text(yaml.safe_dump(params))
    schedule = load_schedule("params/xent.yaml", "params/models.yaml")
    assert sorted(schedule.maps) == ["alethiometer", "condense"]
    assert schedule.maps["condense"][0].seed == "gameCondense_map0"
    for game in schedule.maps:
        build_stage("params/xent.yaml", "params/models.yaml", game, "maps", None)
    built = Path("maps/condense") / f"{schedule.maps['condense'][0].map_id}.xgl"
    assert built.read_text() == (tmp_path / "sets/sample/condense/gameCondense_map0.xgl").read_text()
    for job in schedule.jobs:
        play_stage("params/xent.yaml", "params/models.yaml", job.game, job.job_id, "maps", "play")
    rescore_stage("params/xent.yaml", "params/models.yaml", "play", "out")
    moves = read_table(Path("out/moves.parquet"), MovesSchema)
    assert {"tagged", "tokens_in", "tokens_out"} <= set(moves.columns) and moves.height >= 8
    record = json.loads(schedule.jobs[0].path("play").read_text())
    assert {m["seed"] for m in record["maps"]} <= {"gameCondense_map0", "gameAlethiometer_map1"}

    from pipeline.xent.report import write_rate

    write_rate("params/xent.yaml", "out", "params/models.yaml")
    scores = read_table(Path("out/scores.parquet"), ScoresSchema)
    assert set(scores["game"]) == {"alethiometer", "condense"} and scores.height == 4
    # a published table shows that these scores are not the map set's: another judge, rounds and field
    metrics = json.loads(Path("out/metrics.json").read_text())
    assert all(entry["map_set_differs"] == ["judge", "players", "rounds"] for entry in metrics.values())


def test_a_missing_map_set_is_a_params_error_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(
        ParamsError, match="map_set: .* has no mapset.json; create it with `python -m pipeline xent maps import"
    ):
        load_map_set(tmp_path / "nowhere")


def test_xent_play_runs_an_imported_map_with_its_games_presentation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import_benchmark(SAMPLE, tmp_path / "sample")
    program = tmp_path / "sample" / "alethiometer" / "gameAlethiometer_map1.xgl"
    assert (
        main(
            [
                "xent",
                "play-program",
                str(program),
                "--player",
                "bot:heuristic",
                "--judge",
                "word",
                "--rounds",
                "2",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["game"] == "alethiometer" and len(out["rounds"]) == 2
    moves = [m["move"] for r in out["rounds"] for m in r["moves"]]
    symbols = set(load_program(program).source.split("assign(s1='")[1].split("'")[0].split(" "))
    assert all(set(move.split(" ")) <= symbols for move in moves)  # the heuristic bot keeps to the symbols

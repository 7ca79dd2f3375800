"""What an imported map set decides: our presentation of each game (tied to its code), the map
set's judge and rounds applied where params leave them out, every other difference said plainly,
and the judge dtype in map and job ids. Model-free (fast)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.cli import main
from pipeline.core.artifacts.params import ParamsError
from pipeline.xent.config import load_xent
from pipeline.xent.mapset import import_benchmark, load_map_set
from pipeline.xent.presentations import GENERIC, PRESENTATIONS, has_own_text
from pipeline.xent.schedule import build_schedule
from pipeline.xent.settings import map_set_differences, same_judge
from tests.conftest import models_params

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "xent" / "benchmark-sample.json"
# the two games' code in the reference's benchmark 0.2 (configs/benchmark0.2.json of xentlabs/xent)
HORIZON = (
    'assign(s=story())\nassign(t1="After the rain", t2=" I eat food")\n\nelicit(x1, 5)\n'
    "ensure(xed(x1 | s) >= xed(t2 | t1))\n\nelicit(x2, 5)\nensure(xed(x2 | s + x1) >= xed(t2 | t1))\n\n"
    "reward(dex(x2 | s))\n"
)
TWO_WAYS = (
    'assign(s1=story(), s2=story())\nassign(s="I have a fun story to tell you:")\nelicit(t, 10)\n'
    "reward(nex(s2 | s + s1 + t))\nreward(nex(s1 | s + s2 + t))\nreward(xent(s2 | s + s1))\n"
    "reward(xent(s1 | s + s2))\n# TODO consider doing min for the reward to make it the lesser of the two direction"
)
ROSTER = [
    {"name": "gpt-5", "model": "openai/gpt-5"},
    {"name": "claude-opus-4.5", "model": "anthropic/claude-opus-4-5"},
    {"name": "heuristic-bot", "bot": "heuristic"},
    {"name": "random-bot", "bot": "random"},
]


def built(code: str, *stories: str) -> str:
    """A map's code as the reference builds it: each story() draw replaced by a literal."""
    for story in stories:
        code = code.replace("story()", repr(story), 1)
    return code


def benchmark_file(tmp_path: Path, horizon: str = HORIZON) -> Path:
    """The sample benchmark plus a Horizon and a Two-Ways game, one map each."""
    data = json.loads(SAMPLE.read_text())
    data["games"] += [{"name": "Horizon", "code": horizon}, {"name": "Two-Ways", "code": TWO_WAYS}]
    data["maps"] += [
        {"name": "Horizon", "code": built(horizon, "The tide went out."), "map_seed": "gameHorizon_map0"},
        {"name": "Two-Ways", "code": built(TWO_WAYS, "A fox ran.", "The bell rang."), "map_seed": "gameTwo-Ways_map0"},
    ]
    path = tmp_path / "benchmark.json"
    path.write_text(json.dumps(data))
    return path


def params_file(tmp_path: Path, **fields: Any) -> Path:
    path = tmp_path / "params" / "xent.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"players": ["gpt-5"], "games": [], **fields}))
    return path


def test_horizon_and_two_ways_state_their_real_goal_and_score(tmp_path: Path) -> None:
    out = tmp_path / "set"
    import_benchmark(benchmark_file(tmp_path), out)
    games = load_map_set(out).games
    horizon, two_ways = (" ".join(games[name].description.split()) for name in ("horizon", "two_ways"))
    # Horizon: two short texts, each a likely step, and only the second is scored, by how much the
    # start text alone makes it harder to predict
    assert "two short texts of at most 5 tokens" in horizon and "Only x2 is scored" in horizon
    assert "dex(x2 | s) = xent(x2 | s) - xent(x2)" in horizon
    assert 'xed(x1 | s) >= xed(" I eat food" | "After the rain")' in horizon and "xed(x2 | s + x1)" in horizon
    assert "ending predictable" not in horizon
    # Two-Ways: one bridge scored in both directions, after the fixed opening
    assert "bridge text B" in two_ways and "both orders" in two_ways and "I have a fun story to tell you:" in two_ways
    assert "[xent(C | s + A) - xent(C | s + A + B)] + [xent(A | s + C) - xent(A | s + C + B)]" in two_ways
    assert "itself predictable after the story" not in two_ways
    assert has_own_text("Horizon", HORIZON) and has_own_text("Two-Ways", TWO_WAYS)


def test_a_game_whose_code_is_not_the_one_our_text_describes_gets_the_generic_explanation(tmp_path: Path) -> None:
    changed = HORIZON.replace("reward(dex(x2 | s))", "reward(xed(x2 | s))")  # same name, another score
    out = tmp_path / "set"
    import_benchmark(benchmark_file(tmp_path, horizon=changed), out)
    description = " ".join(load_map_set(out).games["horizon"].description.split())
    assert description == GENERIC.format(name="Horizon") and "read the code below" in description
    assert not has_own_text("Horizon", changed) and not has_own_text("Unknown", HORIZON)
    assert set(PRESENTATIONS) == {"Condense", "Alethiometer", "Contrast", "Synthesize", "Horizon", "Two-Ways"}


def test_a_map_set_imported_with_an_older_text_is_refused_with_the_command_to_import_it_again(tmp_path: Path) -> None:
    out = tmp_path / "set"
    import_benchmark(benchmark_file(tmp_path), out)
    game = out / "games" / "horizon.xgl"
    game.write_text(game.read_text().replace("Only x2 is scored", "The ending is scored"))
    with pytest.raises(
        ParamsError,
        match=r"horizon.xgl explains Horizon with an older text .* "
        r"`python -m pipeline xent maps import benchmark.json --out .*set`",
    ):
        load_map_set(out)


def test_the_manifest_records_the_field_the_scores_were_normalised_over(tmp_path: Path) -> None:
    import_benchmark(SAMPLE, tmp_path / "set")
    mapset = load_map_set(tmp_path / "set")
    assert mapset.judge_model == "Qwen/Qwen3-14B-Base" and mapset.rounds == 20
    assert mapset.field is not None and len(mapset.field) == 11
    assert {"gpt-5", "grok-4-0709", "deepseek-chat"} <= set(mapset.field)


def test_the_map_sets_judge_and_rounds_apply_when_params_leave_them_out(tmp_path: Path) -> None:
    import_benchmark(SAMPLE, tmp_path / "set")
    params = load_xent(params_file(tmp_path, map_set=str(tmp_path / "set")))
    assert (params.judge, params.rounds, params.judge_dtype) == ("Qwen/Qwen3-14B-Base", 20, "float32")
    schedule = build_schedule(params, models_params(ROSTER))
    assert {job.rounds for job in schedule.jobs} == {20}
    # only the field differs: one roster model of the reference's eleven
    assert [d.field for d in schedule.differences] == ["players"]
    (field,) = schedule.differences
    assert "without claude-opus-4-1-20250805" in field.run and "field of 11" in field.map_set
    # a model directory named after the judge is the map set's judge
    same = load_xent(
        params_file(tmp_path, map_set=str(tmp_path / "set"), judge="data/models/Qwen3-14B-Base", rounds=20)
    )
    assert [d.field for d in map_set_differences(same)] == []
    assert same_judge("data/models/Qwen3-14B-Base/", "Qwen/Qwen3-14B-Base") and not same_judge(
        "gemma-3-270m", "Qwen/Qwen3-14B-Base"
    )


def test_a_run_that_differs_from_its_map_set_says_so_plainly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    import_benchmark(SAMPLE, tmp_path / "set")
    path = params_file(
        tmp_path, map_set="set", judge="word", rounds=2, judge_dtype="bfloat16", players=["gpt-5", "heuristic-bot"]
    )
    (tmp_path / "params" / "models.yaml").write_text(yaml.safe_dump({"roster": ROSTER}))
    differences = map_set_differences(load_xent(path), models_params(ROSTER))
    assert [d.field for d in differences] == ["judge", "judge_dtype", "players", "rounds"]
    assert "with heuristic-bot (a bot)" in str(differences[2])
    assert main(["xent", "schedule", "--params", str(path), "--models", "params/models.yaml"]) == 0
    err = capsys.readouterr().err
    assert "WARNING: " in err and "differs from its map set set (benchmark_0.2)" in err
    assert (
        "rounds: the map set's 20, this run's 2" in err
        and "judge: the map set's Qwen/Qwen3-14B-Base, this run's word" in err
    )
    assert "judge_dtype: the map set's float32 (the reference's), this run's bfloat16" in err


def test_without_a_map_set_nothing_is_applied_or_reported(tmp_path: Path) -> None:
    params = load_xent(params_file(tmp_path, games=["condense"]))
    assert (params.judge, params.rounds) == ("gemma-3-270m", 3) and map_set_differences(params) == []


def test_the_judge_dtype_is_in_map_and_job_ids_and_the_default_keeps_them(tmp_path: Path) -> None:
    models = models_params(ROSTER)

    def ids(**fields: Any) -> tuple[list[str], list[str]]:
        schedule = build_schedule(load_xent(params_file(tmp_path, games=["condense"], **fields)), models)
        return [m.map_id for m in schedule.maps["condense"]], [j.job_id for j in schedule.jobs]

    default = ids()
    assert ids(judge_dtype="float32") == default  # the default adds nothing: ids made before the option stay
    half = ids(judge_dtype="bfloat16")
    assert half[0] != default[0] and half[1] != default[1] and ids(judge_dtype="auto") != half

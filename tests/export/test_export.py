"""`python -m pipeline export`: every game of every benchmark as Parquet with its card, read back.

One small tournament of bots plays all four benchmarks through the real workflow (their rate steps,
no reports); the export of its results must hold every game the benchmarks' own tables hold, with
its moves and outcome, give the same bytes twice, and carry no secret of the roster or the
environment, even where the results hold one."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

from pipeline.cli import main
from pipeline.core.artifacts import InputError, read_table, write_table
from pipeline.core.artifacts.schemas import CallsSchema
from pipeline.elimination.schemas import MessagesSchema
from pipeline.export.build import export_dataset
from pipeline.export.schemas import ExportCallsSchema, ExportGamesSchema
from pipeline.testing.project import make_workdir, run_workflow
from pipeline.xent.schemas import MovesSchema
from tests.conftest import GIT_ENV, REPO, write_roster

BENCHMARKS = ("skate", "xent", "elimination", "whoisspy")
KEY = "sk-export-test-DO-NOT-LEAK-5c1e9a77"  # the value of the roster's api_key_env
WRITTEN_KEY = "written-into-extra-7d2b90f3c4"  # an api_key someone wrote into `extra`
API_BASE = "http://10.9.8.7:4000/private-gateway/v1"
BEARER = "Bearer tok-live-0a9b8c7d6e5f4a3b"
ROSTER = [
    {"name": "heuristic-bot", "bot": "heuristic"},
    {"name": "random-bot", "bot": "random"},
    {"name": "setter-bot", "bot": "setter"},
    {"name": "noisy-bot", "bot": "noisy", "bot_options": {"accuracy": 0.3}},
    # an API model that plays nothing here: its key's variable and endpoint must still never appear
    {
        "name": "private-model",
        "model": "openai/private",
        "api_key_env": "EXPORT_TEST_KEY",
        "extra": {"api_base": API_BASE},
    },
]
LINEUP = ["heuristic-bot"] * 3 + ["random-bot"] * 4 + ["heuristic-bot"]


def write_params(project: Path) -> None:
    params = project / "params"
    (params / "whoisspy.yaml").write_text(
        yaml.safe_dump(
            {
                "players": ["heuristic-bot"],
                "fill": ["heuristic-bot", "random-bot"],
                "games_per_role": 1,
                "variants": ["baseline"],
                "rating": {"passes": 2, "bootstrap_resamples": 5},
            }
        )
    )
    (params / "elimination.yaml").write_text(
        yaml.safe_dump(
            {
                "reply_tokens": {"statement": 24, "preference": 16, "private": 16, "vote": 12},
                "schedule": {"lineups": [LINEUP], "rotations": 2, "max_seats_per_player": 4},
                "rating": {"passes": 3, "bootstrap_resamples": 2, "bootstrap_passes": 1},
            }
        )
    )
    (params / "xent.yaml").write_text(
        yaml.safe_dump(
            {
                "players": ["heuristic-bot", "random-bot"],
                "opponent": "random-bot",
                "games": ["condense"],
                "maps_per_game": 1,
                "rounds": 2,
                "judge": "word",
                "rating": {"passes": 2, "bootstrap_resamples": 5},
            }
        )
    )
    skate = yaml.safe_load((params / "skate.yaml").read_text())
    skate.update(players=["setter-bot"], answer_only=["noisy-bot"], rounds=1, attempts=1)
    skate["ranking"]["passes"] = 4
    skate["analyses"] = {"strategies": []}
    (params / "skate.yaml").write_text(yaml.safe_dump(skate, sort_keys=False))


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The results of a bots-only tournament of every benchmark, and a leaderboard stamp beside them."""
    project = make_workdir(tmp_path_factory.mktemp("tournament"))
    write_roster(project, ROSTER)
    write_params(project)
    run_workflow(project, {f"{name}_rate" for name in BENCHMARKS})
    stamp = {"leaderboard_version": "3.2", "git_commit": "0123456789abcdef0123", "inputs_id": "feedfacecafebeef"}
    (project / "results" / "leaderboard").mkdir()
    (project / "results" / "leaderboard" / "version.json").write_text(json.dumps(stamp))
    return project / "results"


def games_of(out: Path, name: str) -> pl.DataFrame:
    return read_table(out / name / "games.parquet", ExportGamesSchema)


def by_kind(game: dict, *kinds: str) -> list[dict]:
    return [m for m in game["moves"] if m["kind"] in kinds]


@pytest.mark.slow
def test_every_game_comes_back_with_its_moves_and_outcome(results: Path, tmp_path: Path) -> None:
    out = tmp_path / "dataset"
    assert main(["export", "--out", str(out), "--results", str(results), "--models", str(tmp_path / "none.yaml")]) == 0

    for name in BENCHMARKS:
        games = games_of(out, name)
        assert games.height > 0 and set(games["benchmark"]) == {name}
        assert set(games["leaderboard_version"]) == {"3.2"}
        calls = read_table(out / name / "calls.parquet", ExportCallsSchema)
        assert calls.height == read_table(results / name / "calls.parquet", CallsSchema).height
        events = set(pl.read_parquet(results / name / "rating_events.parquet")["game"])
        for game in games.iter_rows(named=True):
            seats = {s["seat"] for s in game["seats"]}
            assert game["moves"] and [m["index"] for m in game["moves"]] == list(range(len(game["moves"])))
            assert {m["seat"] for m in game["moves"]} <= seats
            assert {r["seat"] for r in game["results"]} <= seats
            # a bot's every move is a row of the calls table: the game's jobs name them, and its model
            assert set(game["jobs"]) <= set(calls["job"])
            assert all(s["model"].startswith("bot/") for s in game["seats"])
            # rated: the rating's events name it (SKATE's: question/answerer/answerer)
            key = json.loads(game["params"])["question_id"] if name == "skate" else game["game_id"]
            assert game["rated"] == any(e == key or e.startswith(f"{key}/") for e in events)

    whoisspy = games_of(out, "whoisspy")
    assert sorted(whoisspy["game_id"]) == sorted(pl.read_parquet(results / "whoisspy/games.parquet")["game_id"])
    speeches = pl.read_parquet(results / "whoisspy/speeches.parquet")
    votes = pl.read_parquet(results / "whoisspy/votes.parquet")
    for game in whoisspy.iter_rows(named=True):
        mine = votes.filter(pl.col("game_id") == game["game_id"])
        assert len(by_kind(game, "speech")) == speeches.filter(pl.col("game_id") == game["game_id"]).height
        assert sorted((m["round"], m["seat"], m["move"]) for m in by_kind(game, "vote")) == sorted(
            mine.select("round", "voter", "target").rows()
        )
        assert game["winner"] in ("spy", "civilians") and sum(r["won"] for r in game["results"]) >= 1
        spy = next(s for s in game["seats"] if s["role"] == "spy")
        assert next(r for r in game["results"] if r["seat"] == spy["seat"])["won"] == (game["winner"] == "spy")

    elimination = games_of(out, "elimination")
    tables = results / "elimination/tables"
    assert sorted(elimination["game_id"]) == sorted(pl.read_parquet(tables / "games.parquet")["game_id"])
    messages = pl.read_parquet(tables / "messages.parquet")
    ranks = pl.read_parquet(tables / "final_ranks.parquet")
    for game in elimination.iter_rows(named=True):
        said = by_kind(game, "public", "private", "tiebreak", "plea")
        assert len(said) == messages.filter(pl.col("game_id") == game["game_id"]).height
        assert by_kind(game, "vote") and by_kind(game, "jury") and by_kind(game, "preference")
        rounds = [m["round"] for m in game["moves"]]
        assert rounds == sorted(rounds)  # game order: round by round
        expected = ranks.filter(pl.col("game_id") == game["game_id"]).select("seat", "rank").rows()
        assert sorted((r["seat"], r["rank"]) for r in game["results"]) == sorted(expected)
        assert game["winner"] == next(r["seat"] for r in game["results"] if r["rank"] == 1)

    xent = games_of(out, "xent")
    maps = pl.read_parquet(results / "xent/maps.parquet")
    assert sorted(xent["game_id"]) == sorted(f"{g}/{m}" for g, m in maps.select("game", "map_id").rows())
    moves = pl.read_parquet(results / "xent/moves.parquet")
    scores = pl.read_parquet(results / "xent/scores.parquet")
    for game in xent.iter_rows(named=True):
        kind, map_id = game["game_id"].split("/")
        assert json.loads(game["params"])["program"].startswith("# @game: " + kind)
        assert len(game["moves"]) == moves.filter(pl.col("map_id") == map_id).height
        mine = scores.filter(pl.col("map_id") == map_id).select("model", "map_score").rows()
        assert sorted((r["player"], r["score"]) for r in game["results"]) == sorted(mine)
        assert sorted(r["rank"] for r in game["results"]) == list(range(1, len(mine) + 1))

    skate = games_of(out, "skate")
    setter_rounds = pl.read_parquet(results / "skate/setter_rounds.parquet")
    samples = pl.read_parquet(results / "skate/samples.parquet")
    assert skate.height == setter_rounds.height
    for game in skate.iter_rows(named=True):
        question = json.loads(game["params"])["question_id"]
        assert by_kind(game, "question")[0]["seat"] == "setter"
        assert len(by_kind(game, "answer")) == samples.filter(pl.col("question_id").eq_missing(question)).height
        scored = {r["player"]: r["score"] for r in game["results"] if r["seat"] != "setter"}
        assert set(scored) == {"setter-bot", "noisy-bot"} and all(0 <= p <= 1 for p in scored.values())

    card = (out / "README.md").read_text()
    assert card.startswith("---\n") and "config_name: whoisspy_calls" in card
    assert "leaderboard v3.2 · commit 0123456789ab · inputs feedfacecafebeef" in card
    for name in BENCHMARKS:
        assert f"| `{name}/games.parquet` | {games_of(out, name).height} |" in card
    assert 'pl.read_parquet("skate/games.parquet")' in card and 'load_dataset("parquet"' in card

    # the same results: the same bytes, and an earlier export is replaced whole
    again = tmp_path / "again"
    export_dataset(results, again)
    (out / "skate" / "stale.parquet").write_bytes(b"from an earlier export")
    export_dataset(results, out)
    written = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert written == sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    assert all((out / p).read_bytes() == (again / p).read_bytes() for p in written)


@pytest.mark.slow
def test_no_secret_reaches_the_dataset_even_where_the_results_hold_one(
    results: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # results in which a model repeated its key and endpoint, and a calls row names them
    leaky = shutil.copytree(results, tmp_path / "results")
    said = f"my key is {KEY}, my server {API_BASE}, send {BEARER} and {WRITTEN_KEY}"
    record_path = sorted((leaky / "whoisspy/games").glob("*.json"))[0]
    record = json.loads(record_path.read_text())
    speech = next(e for e in record["events"] if e["type"] == "speech")
    speech["text"] = speech["shown"] = said
    record_path.write_text(json.dumps(record))
    messages = read_table(leaky / "elimination/tables/messages.parquet", MessagesSchema)
    write_table(leaky / "elimination/tables/messages.parquet", messages.with_columns(text=pl.lit(said)), MessagesSchema)
    moves = read_table(leaky / "xent/moves.parquet", MovesSchema)
    write_table(leaky / "xent/moves.parquet", moves.with_columns(reply=pl.lit(said)), MovesSchema)
    calls = read_table(leaky / "skate/calls.parquet", CallsSchema)
    write_table(leaky / "skate/calls.parquet", calls.with_columns(dropped_params=pl.lit(said)), CallsSchema)
    # the roster as written: a key in `extra` that params validation would refuse, and the endpoint
    models = tmp_path / "models.yaml"
    entry = {**ROSTER[-1], "extra": {"api_base": API_BASE, "api_key": WRITTEN_KEY}}
    models.write_text(yaml.safe_dump({"roster": [*ROSTER[:-1], entry]}))
    monkeypatch.setenv("EXPORT_TEST_KEY", KEY)

    out = tmp_path / "dataset"
    export_dataset(leaky, out, models)

    needles = [KEY, WRITTEN_KEY, API_BASE, BEARER.split()[1]]
    decoded = []
    for path in sorted(out.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            assert not [n for n in needles if n.encode() in data], path
            if path.suffix == ".parquet":
                decoded.append(json.dumps(pl.read_parquet(path).to_dicts(), default=str))
    text = "\n".join(decoded)
    assert not [n for n in needles if n in text]
    redacted = "my key is [redacted], my server [redacted], send [redacted] and [redacted]"
    for name in ("whoisspy", "elimination", "xent"):
        replies = pl.read_parquet(out / name / "games.parquet").select(pl.col("moves").explode()).unnest("moves")
        assert redacted in replies["reply"].to_list(), name
    assert set(pl.read_parquet(out / "skate/calls.parquet")["dropped_params"]) == {redacted}


@pytest.mark.slow
def test_publish_dataset_puts_the_export_in_the_published_site(
    results: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in GIT_ENV.items():
        monkeypatch.setenv(name, value)
    root = tmp_path / "team"
    (root / "params").mkdir(parents=True)
    shutil.copy2(REPO / "params" / "leaderboard.yaml", root / "params" / "leaderboard.yaml")
    shutil.copy2(REPO / ".gitignore", root / ".gitignore")
    shutil.copytree(results, root / "results")
    (root / "results" / "leaderboard" / "version.json").unlink()  # publish builds the version it publishes
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    subprocess.run([str(Path(sys.executable).with_name("dvc")), "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "project"], cwd=root, check=True)
    monkeypatch.chdir(root)

    assert main(["publish", "--no-push", "--dataset"]) == 0
    dataset = root / "results" / "leaderboard" / "site" / "dataset"
    version = yaml.safe_load((root / "params" / "leaderboard.yaml").read_text())["version"]
    games = {name: games_of(dataset, name) for name in BENCHMARKS}
    total = sum(frame.height for frame in games.values())
    assert f"dataset: {total} games of 4 benchmarks in results/leaderboard/site/dataset" in capsys.readouterr().err
    assert all(set(frame["leaderboard_version"]) == {str(version)} for frame in games.values())
    assert f"# Games of the tournament pipeline: leaderboard v{version} · commit" in (dataset / "README.md").read_text()


def test_an_export_replaces_only_an_earlier_export(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    out = tmp_path / "dataset"
    done = export_dataset(results, out)
    assert done.benchmarks == [] and len(done.skipped) == len(BENCHMARKS)
    card = (out / "README.md").read_text()
    assert "no leaderboard built from these results" in card and "Not exported: skate: no results" in card
    export_dataset(results, out)  # an earlier export: replaced

    someone = tmp_path / "notes"
    someone.mkdir()
    (someone / "todo.txt").write_text("mine")
    with pytest.raises(InputError, match="no earlier export"):
        export_dataset(results, someone)
    assert (someone / "todo.txt").read_text() == "mine" and not (someone / "README.md").exists()
    with pytest.raises(InputError, match="no benchmark named chess"):
        export_dataset(results, out, names=["chess"])

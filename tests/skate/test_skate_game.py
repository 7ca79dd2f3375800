"""SKATE games in one process: known-skill bots ranked in order, setters' prompts per strategy,
the retry feedback, answer-only players, and the content-addressed schedule."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipeline.core.artifacts.params import ParamsError
from pipeline.core.artifacts.schemas import read_table
from pipeline.core.models.gateway import TokenLogprob
from pipeline.skate.config import STRATEGIES, SkateParams
from pipeline.skate.mcq import letter_distribution
from pipeline.skate.play import play_game
from pipeline.skate.schedule import build_schedule
from pipeline.skate.schemas import PCorrectSchema, QuestionsSchema, SkateRatingsSchema
from tests.conftest import models_params

BOTS = [
    {"name": "setter-bot", "bot": "setter"},
    {"name": "oracle-bot", "bot": "oracle"},
    {"name": "good-bot", "bot": "noisy", "bot_options": {"accuracy": 0.6}},
    {"name": "poor-bot", "bot": "noisy", "bot_options": {"accuracy": 0.2}},
]


def skate_params(**overrides: Any) -> SkateParams:
    data: dict[str, Any] = {
        "players": ["setter-bot"],
        "answer_only": [],
        "rounds": 2,
        "attempts": 2,
        "strategy": "historical_tasks",
        "similarity_threshold": 0.95,
        "ranking": {"passes": 8},
        "sandbox": {"cpu_s": 1, "wall_s": 3},
    }
    data.update(overrides)
    return SkateParams.model_validate(data)


def test_known_skill_bots_come_out_in_order_under_both_ranking_modes(tmp_path: Path) -> None:
    params = skate_params(rounds=6, players=["setter-bot", "good-bot"], answer_only=["oracle-bot", "poor-bot"])
    models = models_params(BOTS, gateway={"cache_dir": str(tmp_path / "cache")})
    metrics = play_game(params, models, tmp_path / "skate")

    questions = read_table(tmp_path / "skate/questions.parquet", QuestionsSchema)
    assert questions.filter(pl.col("status") == "accepted").height == 12, questions.select("round", "status", "failure")
    pcorrect = read_table(tmp_path / "skate/pcorrect.parquet", PCorrectSchema)
    mean_p = dict(pcorrect.group_by("answerer").agg(pl.col("p_correct").mean()).iter_rows())
    assert mean_p["oracle-bot"] == 1.0
    assert abs(mean_p["good-bot"] - 0.6) < 0.1 and abs(mean_p["poor-bot"] - 0.2) < 0.1
    # adaptive sampling stopped at the floor for certain answers and kept sampling uncertain ones
    samples = dict(pcorrect.group_by("answerer").agg(pl.col("samples").mean()).iter_rows())
    assert samples["oracle-bot"] < 20 and samples["good-bot"] > 50

    ratings = read_table(tmp_path / "skate/ratings.parquet", SkateRatingsSchema)
    for mode in ("relative", "absolute"):
        mu = dict(ratings.filter(pl.col("mode") == mode).select("player", "mu").iter_rows())
        assert mu["oracle-bot"] > mu["good-bot"] > mu["poor-bot"], (mode, mu)
        assert metrics["oracle-bot"][f"trueskill_{mode}_mu"] == pytest.approx(mu["oracle-bot"], abs=1e-3)

    # the setter bot knows its own answers and guesses on nothing else: it asks well. Its only
    # other setter is good-bot (answer-only bots never count among "others")
    assert metrics["setter-bot"]["asking_skill"] == pytest.approx(1 - 0.6, abs=0.1)
    assert metrics["good-bot"]["asking_skill"] == pytest.approx(1 - 0.25, abs=0.1)
    assert metrics["setter-bot"]["self_preference"] == pytest.approx(1 - 0.6, abs=0.1)
    assert metrics["oracle-bot"]["answering_skill"] == 1.0 and metrics["oracle-bot"]["asking_skill"] is None
    for name in (
        "trueskill_history",
        "asking_vs_answering",
        "cumulative_p_correct",
        "self_preference",
        "p_correct_variance",
    ):
        assert (tmp_path / f"skate/plots/{name}.png").stat().st_size > 1000
    assert "## " in (tmp_path / "skate/points_of_difference.md").read_text()
    on_disk = json.loads((tmp_path / "skate/metrics.json").read_text())
    assert on_disk == metrics and set(on_disk) == {"setter-bot", "oracle-bot", "good-bot", "poor-bot"}
    for values in on_disk.values():  # flat numbers for `dvc metrics diff`
        assert all(v is None or isinstance(v, (int, float)) for v in values.values())


VALID = (
    "DESCRIPTION: floor division of negatives\nPROGRAM:\n```python\nprint(-7 // 2, -7 % 2)\n```\n"
    "DISTRACTORS:\n"
    + "\n".join(
        f"{i}. {w}"
        for i, w in enumerate(["-3 -1", "-3 1", "-4 -1", "-4 0", "-3.5 1", "3 1", "-4, 1", "(-4, 1)", "-7 1"], 1)
    )
)


def _setter_prompts(provider) -> list[str]:
    return [
        c["messages"][-1]["content"] for c in provider.calls if "Write one new question" in c["messages"][-1]["content"]
    ]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_what_enters_the_setters_prompt_per_strategy(strategy: str, tmp_path: Path, fake_provider) -> None:
    # a model setter whose first try has no code: its second try must be told why
    fake_provider.script = ["Sorry, no code from me.", VALID]
    fake_provider.default = "B"
    roster = [{"name": "fake-setter", "model": "fake/setter"}, *BOTS]
    params = skate_params(players=["fake-setter", "setter-bot"], answer_only=["oracle-bot"], strategy=strategy)
    models = models_params(roster, gateway={"cache_dir": str(tmp_path / "cache")})
    play_game(params, models, tmp_path / "skate", report=False)

    prompts = _setter_prompts(fake_provider)
    assert "Attempt 1: no program found" in prompts[1] and "1 attempt(s) left" in prompts[1]
    # the paper's rules: the round counter and a value that is not a boolean
    assert prompts[0].startswith("Round 1 of 2.") and "never a boolean" in prompts[0]
    round2 = [p for p in prompts if p.startswith("Round 2 of 2.")][0]
    if strategy == "no_info":
        assert "Question 1" not in round2
        return
    assert "Question 1 (round 1" in round2 and "-7 // 2" in round2  # its own earlier question
    assert "oracle-bot" not in round2  # answer-only players never enter a setter's prompt
    assert ("p(correct)" in round2) == (strategy != "historical_tasks")
    assert ("setter-bot" in round2) == (strategy in ("full_personal_context", "full_context"))
    # only full_context shows other setters' questions
    assert ("set by setter-bot" in round2) == (strategy == "full_context")

    questions = read_table(tmp_path / "skate/questions.parquet", QuestionsSchema)
    first = questions.filter((pl.col("setter") == "fake-setter") & (pl.col("round") == 1)).sort("attempt")
    assert first["status"].to_list() == ["invalid", "accepted"]
    assert first["answer"].to_list()[1] == "-4 1"  # what the sandbox printed


def test_a_question_too_similar_to_an_earlier_one_is_not_unique(tmp_path: Path, fake_provider) -> None:
    # the same question twice: round 2 must reject it as too similar and say to which question
    fake_provider.default = VALID
    roster = [{"name": "fake-setter", "model": "fake/setter"}, *BOTS]
    params = skate_params(players=["fake-setter"], answer_only=["oracle-bot"], attempts=1, similarity_threshold=0.9)
    models = models_params(roster, gateway={"cache_dir": str(tmp_path / "cache")})
    play_game(params, models, tmp_path / "skate", report=False)
    questions = read_table(tmp_path / "skate/questions.parquet", QuestionsSchema).sort("round")
    assert questions["status"].to_list() == ["accepted", "not_unique"]
    second = questions.row(1, named=True)
    assert second["failure_kind"] == "too_similar" and second["max_similarity"] > 0.99
    assert second["similar_to"] == questions["question_id"][0] and "round 1" in second["failure"]


def test_schedule_ids_are_content_addressed() -> None:
    models = models_params([*BOTS, {"name": "extra-bot", "bot": "noisy"}])
    for strategy in STRATEGIES:
        base = build_schedule(skate_params(strategy=strategy, answer_only=["oracle-bot"]), models)
        ids = {j.job_id for group in (base.generate, base.rounds, base.answers) for j in group.values()}
        # an extra answer-only player adds jobs and renames none
        more = build_schedule(skate_params(strategy=strategy, answer_only=["oracle-bot", "extra-bot"]), models)
        more_ids = {j.job_id for group in (more.generate, more.rounds, more.answers) for j in group.values()}
        assert ids < more_ids, strategy
        # the setter's prompt says "round n of N": a longer game is another game
        longer = build_schedule(skate_params(strategy=strategy, rounds=3, answer_only=["oracle-bot"]), models)
        assert not {j.job_id for j in longer.generate.values()} & {j.job_id for j in base.generate.values()}
        # a changed setting upstream renames what depends on it
        other = build_schedule(skate_params(strategy=strategy, answer_only=["oracle-bot"], attempts=3), models)
        assert not {j.job_id for j in other.generate.values()} & {j.job_id for j in base.generate.values()}


def test_names_missing_from_the_roster_stop_with_the_file_and_the_fix() -> None:
    with pytest.raises(ParamsError, match=r"params/skate.yaml: answer_only\[0\]: 'ghost' is not a roster name in"):
        build_schedule(skate_params(answer_only=["ghost"]), models_params(BOTS))


def test_exact_mode_reads_letters_from_the_first_token() -> None:
    first = TokenLogprob(
        "A", math.log(0.5), (("A", math.log(0.5)), (" B", math.log(0.2)), ("b", math.log(0.1)), ("What", math.log(0.2)))
    )
    distribution, mass = letter_distribution(first, temperature=1.0)
    assert mass == pytest.approx(0.8)
    assert distribution["A"] == pytest.approx(0.5 / 0.8) and distribution["B"] == pytest.approx(0.3 / 0.8)
    assert distribution["C"] == distribution["D"] == 0.0
    greedy, _ = letter_distribution(first, temperature=0.0)
    assert greedy == {"A": 1.0, "B": 0.0, "C": 0.0, "D": 0.0}
    sharper, _ = letter_distribution(first, temperature=0.5)
    assert sharper["A"] > distribution["A"]


def test_a_game_without_a_single_valid_question_still_reports(tmp_path: Path, fake_provider) -> None:
    # whatever the models say, the game runs to the end: every attempt recorded, empty ratings
    fake_provider.default = "```python\nimport time\nprint(time.time())\n```"
    roster = [{"name": "fake-setter", "model": "fake/setter"}, *BOTS]
    params = skate_params(players=["fake-setter"], answer_only=["oracle-bot"], rounds=1)
    metrics = play_game(params, models_params(roster, gateway={"cache_dir": str(tmp_path / "c")}), tmp_path / "skate")
    questions = read_table(tmp_path / "skate/questions.parquet", QuestionsSchema)
    assert questions["failure_kind"].to_list() == ["nondeterministic", "nondeterministic"]
    assert metrics["fake-setter"]["questions_entered"] == 0 and metrics["oracle-bot"]["questions_answered"] == 0
    assert read_table(tmp_path / "skate/ratings.parquet", SkateRatingsSchema).height == 0
    assert (tmp_path / "skate/plots/trueskill_history.svg").exists()


def test_an_answer_only_bot_leaves_the_setters_metrics_unchanged(tmp_path: Path) -> None:
    # "others" are the setting models only: adding an answerer changes no existing model's
    # asking skill or self-preference, and the Figure 4 panels are drawn from the setter's side
    models = models_params(BOTS, gateway={"cache_dir": str(tmp_path / "cache")})
    players = ["setter-bot", "good-bot"]
    base = play_game(skate_params(players=players, answer_only=[]), models, tmp_path / "a")
    more = play_game(skate_params(players=players, answer_only=["oracle-bot", "poor-bot"]), models, tmp_path / "b")
    for setter in players:
        for key in ("asking_skill", "self_preference", "self_preference_confident", "p_correct_own_questions"):
            assert more[setter][key] == base[setter][key], (setter, key)
    assert more["oracle-bot"]["asking_skill"] is None and more["poor-bot"]["self_preference"] is None
    # the headline and the paper's single sequential pass are both reported
    assert {"trueskill_mu", "trueskill_sequential_mu", "trueskill_sequential_sigma"} <= set(more["oracle-bot"])

"""SKATE with the real embedded model (local/gemma-3-270m): exact mode against sampling, and one
round set and answered by it. Slow: a few dozen short calls."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import polars as pl
import pytest

from pipeline.core.artifacts.schemas import read_table
from pipeline.core.models.gateway import Gateway
from pipeline.core.models.players import MoveRequest, make_players
from pipeline.skate.config import AnsweringParams
from pipeline.skate.mcq import Question, answer_exact, letter_distribution, option_set
from pipeline.skate.parsing import LETTERS, parse_answer
from pipeline.skate.play import play_game
from pipeline.skate.prompts import answer_messages
from pipeline.skate.schemas import PCorrectSchema, QuestionsSchema, SamplesSchema
from tests.conftest import models_params
from tests.skate.test_skate_game import skate_params

pytestmark = pytest.mark.slow

QUESTION = Question(
    "q-local",
    1,
    "setter-bot",
    "sorting",
    "xs = [3, 1, 2]\nprint(sorted(xs)[::-1])",
    "[3, 2, 1]",
    ("[1, 2, 3]", "[3, 1, 2]", "[2, 1, 3]", "[1, 3, 2]", "[2, 3, 1]", "3 2 1", "[3, 2]", "[1, 2]", "[]"),
)
SAMPLES = 32


def test_exact_mode_agrees_with_sampled_frequencies_at_temperature_1(tmp_path: Path) -> None:
    entry = {
        "name": "gemma-t1",
        "model": "local/gemma-3-270m",
        "sampling": {"temperature": 1.0, "top_p": 1.0, "max_tokens": 4},
    }
    models = models_params([entry], gateway={"cache_dir": str(tmp_path / "cache")})
    player = make_players(models, Gateway(models, job="test"), 0, names=["gemma-t1"])["gemma-t1"]
    settings = AnsweringParams(exact_option_sets=1, few_shot=1)

    rows, summary = asyncio.run(answer_exact(player, QUESTION, settings, game_seed=0))
    options, correct = option_set(QUESTION, 0, 0)
    assert rows[0]["letter_mass"] > 0.5  # one solved example is enough for a letter to come first

    async def sample() -> list[str | None]:
        letters = []
        for i in range(SAMPLES):  # the same question and options, fresh seeds
            reply = await player.act(
                MoveRequest(
                    messages=answer_messages(QUESTION.program, options, few_shot=1),
                    key=f"sample/{i}",
                    max_tokens=1,
                    sample_index=i + 1,
                    top_logprobs=20,
                )
            )
            letters.append(parse_answer(reply.text, options))
            first = reply.logprobs[0]
        return letters, first

    letters, first = asyncio.run(sample())
    exact, mass = letter_distribution(first, temperature=1.0)
    # the same first-token distribution whatever the seed: exact mode's number is its correct letter's share
    assert exact[correct] == pytest.approx(summary["p_correct"], abs=1e-4)
    for letter in LETTERS:
        # sampled: share of all replies; exact: share among letters, times the letter mass
        observed = sum(x == letter for x in letters) / SAMPLES
        expected = exact[letter] * mass
        tolerance = 3.5 * math.sqrt(max(expected * (1 - expected), 0.01) / SAMPLES) + (1 - mass)
        assert abs(observed - expected) <= tolerance, (letter, observed, expected, tolerance)
    # the correct option's exact p(correct) is what the sampled frequency estimates
    observed_correct = sum(x == correct for x in letters) / SAMPLES
    assert abs(observed_correct - rows[0]["p_correct"] * mass) <= 3.5 * math.sqrt(0.25 / SAMPLES) + (1 - mass)


def test_the_local_model_sets_and_answers_one_round(tmp_path: Path) -> None:
    roster = [
        {"name": "gemma-270m", "model": "local/gemma-3-270m", "sampling": {"temperature": 0.7, "max_tokens": 24}},
        {"name": "setter-bot", "bot": "setter"},
        {"name": "oracle-bot", "bot": "oracle"},
    ]
    params = skate_params(
        players=["gemma-270m", "setter-bot"],
        answer_only=["oracle-bot"],
        rounds=1,
        attempts=1,
        strategy="historical_performance",
        answering={"mode": "exact", "exact_option_sets": 2},
    )
    models = models_params(roster, gateway={"cache_dir": str(tmp_path / "cache")})
    play_game(params, models, tmp_path / "skate", report=False)

    questions = read_table(tmp_path / "skate/questions.parquet", QuestionsSchema)
    gemma = questions.filter(pl.col("setter") == "gemma-270m").row(0, named=True)
    # whatever the small model wrote, its attempt is recorded with a status and, if invalid, why
    assert gemma["reply"] and gemma["status"] in ("accepted", "invalid", "not_unique")
    assert gemma["status"] == "accepted" or gemma["failure_kind"] is not None
    pcorrect = read_table(tmp_path / "skate/pcorrect.parquet", PCorrectSchema)
    mine = pcorrect.filter(pl.col("answerer") == "gemma-270m")
    assert mine.height >= 1 and set(pcorrect["mode"]) == {"exact"} and (mine["samples"] == 2).all()
    # the mass the model put outside A-D is reported, not hidden
    assert ((mine["outside_mass"] >= 0) & (mine["outside_mass"] < 0.5)).all()
    samples = read_table(tmp_path / "skate/samples.parquet", SamplesSchema).filter(pl.col("answerer") == "gemma-270m")
    assert (samples["letter_mass"] > 0.5).all()
    ratings = pl.read_parquet(tmp_path / "skate/ratings.parquet")
    assert {"gemma-270m", "setter-bot", "oracle-bot"} <= set(ratings["player"])

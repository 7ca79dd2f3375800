"""SKATE's sampling stopping rules: the paper's standard error (the default) and ours,
`answering.stopping: predictive`, with either estimate it reports (`predictive_estimate`). What a
user sees: how many samples each answerer used, the estimate, that both are the same on every
run, and that the paper's games keep their job ids."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import pytest

from pipeline.core.artifacts.schemas import read_table
from pipeline.core.models.gateway import Gateway
from pipeline.core.models.players import make_players
from pipeline.skate.config import AnsweringParams, SkateParams, load_skate
from pipeline.skate.mcq import Question, answer_sampled, predictive_estimate, predictive_risk, should_stop
from pipeline.skate.play import play_game
from pipeline.skate.schedule import build_schedule
from pipeline.skate.schemas import PCorrectSchema
from tests.conftest import models_params

QUESTION = Question("q-stop", 1, "setter-bot", "d", "print(1)", "1", tuple(str(i) for i in range(2, 11)))
PREDICTIVE = {"stopping": "predictive"}
# the predictive rule as it was before it reported the median: right answers / samples, risk 0.04
RATIO = {"stopping": "predictive", "predictive_estimate": "ratio", "predictive_risk": 0.04}


def bots(tmp_path: Path) -> dict[str, Any]:
    roster = [
        {"name": "oracle-bot", "bot": "oracle"},
        {"name": "setter-bot", "bot": "setter"},
        *({"name": f"noisy-{q}", "bot": "noisy", "bot_options": {"accuracy": q}} for q in (0.1, 0.5, 0.8)),
    ]
    models = models_params(roster, gateway={"cache_dir": str(tmp_path / "cache")})
    return make_players(models, Gateway(models, job="test"), 0, game="skate")


def sample(player: Any, question: Question = QUESTION, **settings: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    return asyncio.run(answer_sampled(player, question, AnsweringParams(**settings), game_seed=0))


def brute_force_pmf(correct: int, n: int, cap: int) -> list[float]:
    """P(r more right answers in the cap - n to come): the beta-binomial pmf written out term by term."""
    a, b, rest = correct + 0.5, n - correct + 0.5, cap - n

    def log_beta(x: float, y: float) -> float:
        return math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y)

    return [math.comb(rest, r) * math.exp(log_beta(a + r, b + rest - r) - log_beta(a, b)) for r in range(rest + 1)]


def brute_force_median(correct: int, n: int, cap: int) -> float:
    pmf = brute_force_pmf(correct, n, cap)
    return (correct + next(r for r in range(len(pmf)) if sum(pmf[: r + 1]) >= 0.5)) / cap


def brute_force_risk(correct: int, n: int, cap: int, tolerance: float, reported: float | None = None) -> float:
    reported = correct / n if reported is None else reported
    return sum(
        p
        for r, p in enumerate(brute_force_pmf(correct, n, cap))
        if abs(reported - (correct + r) / cap) > tolerance + 1e-9
    )


def test_the_default_is_the_papers_standard_error_rule() -> None:
    settings = AnsweringParams()
    assert settings.stopping == "standard_error"
    assert (settings.sigma_stop, settings.min_samples, settings.max_samples) == (0.05, 10, 100)
    assert load_skate("params/paper/skate.yaml").answering.stopping == "standard_error"


def test_an_oracle_stops_after_14_samples_with_the_papers_rule_and_15_with_ours(tmp_path: Path) -> None:
    players = bots(tmp_path)
    paper_rows, paper = sample(players["oracle-bot"])
    ours_rows, ours = sample(players["oracle-bot"], **PREDICTIVE)
    ratio_rows, ratio = sample(players["oracle-bot"], **RATIO)
    assert (paper["samples"], paper["p_correct"]) == (14, 1.0)
    # a run of identical answers is no proof of p = 1 (0.9 gives 15 right in a row 21% of the
    # time): the rule reports what 100 samples would most likely say, 99 right, and stops once
    # it is 95% sure they would end within 0.1 of that
    assert (ours["samples"], ours["p_correct"]) == (15, 0.99)
    # reporting right answers / samples, 1.0, it must rule out more of the runs below 0.9: 17
    assert (ratio["samples"], ratio["p_correct"]) == (17, 1.0)
    assert [r["reply"] for r in ours_rows[:14]] == [r["reply"] for r in paper_rows]
    assert [r["reply"] for r in ratio_rows[:15]] == [r["reply"] for r in ours_rows]


@pytest.mark.parametrize(("settings", "risk"), [(PREDICTIVE, 0.05), (RATIO, 0.04)], ids=["median", "ratio"])
def test_predictive_stops_at_the_first_sample_whose_risk_is_small_enough(
    tmp_path: Path, settings: dict[str, Any], risk: float
) -> None:
    """The samples used are the first n (at least min_samples) at which the risk that the whole
    100 samples end more than 0.1 from the reported estimate is at most the rule's risk, read off
    the full run; the estimate reported is that of those n samples."""
    players = bots(tmp_path)
    estimate = "ratio" if settings is RATIO else "median"
    for name in ("noisy-0.1", "noisy-0.5", "noisy-0.8"):
        full_rows, full = sample(players[name], min_samples=100)
        hits = [int(r["p_correct"]) for r in full_rows]
        expected = next(n for n in range(10, 101) if predictive_risk(sum(hits[:n]), n, 100, 0.1, estimate) <= risk)
        rows, ours = sample(players[name], **settings)
        assert ours["samples"] == len(rows) == expected < 100
        assert ours["p_correct"] == predictive_estimate(sum(hits[:expected]), expected, 100, estimate)
        assert [r["reply"] for r in rows] == [r["reply"] for r in full_rows[:expected]]


def test_predictive_needs_about_half_the_samples_at_p_one_half_and_agrees_with_100(tmp_path: Path) -> None:
    questions = 40
    player = bots(tmp_path)["noisy-0.5"]
    used, paper_used, close = [], [], 0
    for i in range(questions):
        question = Question(f"q-half-{i}", 1, "setter-bot", "d", "print(1)", "1", QUESTION.distractors)
        _, full = sample(player, question, min_samples=100)
        _, paper = sample(player, question)
        _, ours = sample(player, question, **PREDICTIVE)
        used.append(ours["samples"])
        paper_used.append(paper["samples"])
        close += abs(ours["p_correct"] - full["p_correct"]) <= 0.1 + 1e-9
    assert sum(paper_used) / questions >= 85  # the paper's rule needs about 100 at p = 0.5
    assert 35 <= sum(used) / questions <= 60
    # the rule allows 5% of pairs to end over 0.1 from 100 samples; at p = 0.5, the hardest case,
    # bench/skate_mcq_cost.py measures 94% within it (300 pairs)
    assert close >= 0.875 * questions


def test_the_same_inputs_give_the_same_samples_and_stopping_point(tmp_path: Path) -> None:
    first = sample(bots(tmp_path / "a")["noisy-0.5"], **PREDICTIVE)
    again = sample(bots(tmp_path / "b")["noisy-0.5"], **PREDICTIVE)
    assert first == again
    other = Question("q-other", 1, "setter-bot", "d", "print(1)", "1", QUESTION.distractors)
    assert sample(bots(tmp_path / "c")["noisy-0.5"], other, **PREDICTIVE)[0] != first[0]


def test_predictive_risk_is_the_beta_binomial_tail() -> None:
    for correct, n in ((0, 1), (0, 10), (3, 10), (12, 25), (40, 60), (98, 99)):
        median = brute_force_median(correct, n, 100)
        assert predictive_estimate(correct, n, 100, "median") == median
        assert predictive_estimate(correct, n, 100, "ratio") == correct / n
        for tolerance in (0.05, 0.1):
            assert predictive_risk(correct, n, 100, tolerance) == pytest.approx(
                brute_force_risk(correct, n, 100, tolerance), abs=1e-12
            )
            assert predictive_risk(correct, n, 100, tolerance, "median") == pytest.approx(
                brute_force_risk(correct, n, 100, tolerance, median), abs=1e-12
            )
    # the median sits where the run of 100 most likely ends: about correct / n in mid-range, a
    # little inside after identical answers (0 of 12: 0.01, not 0)
    assert predictive_estimate(20, 40, 100, "median") == 0.5
    assert predictive_estimate(0, 12, 100, "median") == 0.01
    assert predictive_estimate(30, 100, 100, "median") == 0.3  # at the cap: right answers / samples
    assert predictive_risk(30, 100, 100, 0.1) == 0.0  # at the cap nothing is left to move it
    assert predictive_risk(0, 0, 100, 0.1) == 1.0
    streak = [predictive_risk(0, n, 100, 0.1) for n in range(5, 40)]
    assert streak == sorted(streak, reverse=True)
    assert predictive_risk(3, 20, 100, 0.1) == pytest.approx(predictive_risk(17, 20, 100, 0.1))


def test_the_floor_and_the_cap_bound_either_rule() -> None:
    assert not should_stop(0, 16, AnsweringParams(stopping="predictive", min_samples=20))
    assert should_stop(0, 20, AnsweringParams(stopping="predictive", min_samples=20))
    # a cap of 30: the rule asks what 30 samples would say, so it stops sooner
    assert predictive_risk(0, 12, 30, 0.1) < predictive_risk(0, 12, 100, 0.1)
    assert predictive_risk(0, 12, 30, 0.1, "median") < predictive_risk(0, 12, 100, 0.1, "median")


@pytest.mark.parametrize(
    ("answering", "field"),
    [
        ({"stopping": "bayes"}, "stopping"),
        ({"predictive_risk": 0}, "predictive_risk"),
        ({"predictive_tolerance": 1.5}, "predictive_tolerance"),
        ({"predictive_estimate": "mean"}, "predictive_estimate"),
    ],
)
def test_bad_stopping_params_are_refused(answering: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        SkateParams.model_validate({"players": ["a"], "answering": answering})


def test_the_papers_rule_keeps_its_job_ids_and_ours_changes_them(tmp_path: Path) -> None:
    models = models_params([{"name": "setter-bot", "bot": "setter"}, {"name": "oracle-bot", "bot": "oracle"}])

    def ids(**answering: Any) -> set[str]:
        chosen = SkateParams.model_validate(
            {"players": ["setter-bot"], "answer_only": ["oracle-bot"], "answering": {"mode": "sampled", **answering}}
        )
        return {job.job_id for job in build_schedule(chosen, models).answers.values()}

    # settings the paper's rule never reads leave its games' ids (and results) as they were
    assert ids() == ids(stopping="standard_error", predictive_risk=0.2, predictive_tolerance=0.3)
    assert ids() == ids(stopping="standard_error", predictive_estimate="ratio")
    assert ids(**PREDICTIVE).isdisjoint(ids())
    assert ids(**PREDICTIVE) != ids(stopping="predictive", predictive_risk=0.02)
    # the estimate decides what is reported: a game on the other estimate is another game
    assert ids(**PREDICTIVE).isdisjoint(ids(stopping="predictive", predictive_estimate="ratio"))


def test_a_sampled_game_reports_each_rules_samples(tmp_path: Path) -> None:
    models = models_params(
        [{"name": "setter-bot", "bot": "setter"}, {"name": "oracle-bot", "bot": "oracle"}],
        gateway={"cache_dir": str(tmp_path / "cache")},
    )
    used = {}
    for stopping in ("standard_error", "predictive"):
        chosen = SkateParams.model_validate(
            {
                "players": ["setter-bot"],
                "answer_only": ["oracle-bot"],
                "rounds": 1,
                "attempts": 1,
                "strategy": "no_info",
                "answering": {"mode": "sampled", "stopping": stopping},
                "ranking": {"passes": 2, "bootstrap_resamples": 0},
                "sandbox": {"cpu_s": 1, "wall_s": 3},
            }
        )
        play_game(chosen, models, tmp_path / stopping, report=False)
        pcorrect = read_table(tmp_path / stopping / "pcorrect.parquet", PCorrectSchema)
        used[stopping] = {a: (s, p) for a, s, p in pcorrect.select("answerer", "samples", "p_correct").iter_rows()}
    # setter-bot answers its own question right; both always answer right: 14 samples and p = 1
    # on the paper's rule, 15 and the median of what 100 would say, 0.99, on ours
    assert used == {
        "standard_error": {"setter-bot": (14, 1.0), "oracle-bot": (14, 1.0)},
        "predictive": {"setter-bot": (15, 0.99), "oracle-bot": (15, 0.99)},
    }

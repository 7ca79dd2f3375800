"""SKATE's adaptive schedule, as the round ledger (pipeline.core.run.rounds) asks for it.

A round of the adaptive game is a SKATE round whose questions are set as in the fixed game (every
player of the time sets one) but whose answerers are chosen: the ledger seats tables of
`adaptive.seats` answerers (`decide_round`, pairwise tables by default), and each table's answerers
answer the round's questions. Answering is where SKATE's cost lies (every answerer, every question,
up to `max_samples` calls), so that is what the schedule chooses.

- `setup`: the `adaptive` block of params/skate.yaml, the pool (players and answer_only), the seats,
  the ranking's TrueSkill settings, and a table's events per game (one per player's question);
- `games`: a round's tables become games (`schedule.seated_games`): a new round of the game, its
  id the content id of its round job and its answer jobs;
- `parts`: a table is played by its round's generate jobs and its seats' answer jobs, named as
  `generate/<id>` and `answers/<id>`; a part is finished once its calls table exists (the answer
  job writes its p(correct) table last: `event` (`table_events`) reads a table whose answers are all there), and the
  dollars `max_cost_usd` counts are those calls tables, the round's setting charged to its first
  table (shared parts are paid once);
- `event` (`table_events`): per question of the round, in game order, the pairwise comparison of every two answerers
  of the table under the ranking's primary mode (`ranking.question_games`: the events the rating
  builds), read from the table's answer jobs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.core.run.rounds import AdaptiveSetup, AdaptiveSpec, RoundGame, RoundRequest

if TYPE_CHECKING:  # the rating core (and trueskill) loads only when a ledger is read, not at every parse
    from pipeline.core.rating.events import RatingEvent

PART = "{game_id}.calls.parquet"  # every part (a generate or an answer job) writes its calls table


def setup(params_path: Path, models_path: Path) -> AdaptiveSetup:
    from pipeline.core.artifacts import ParamsError
    from pipeline.skate.config import load_skate

    params = load_skate(params_path)
    problems = params.adaptive_problems(str(params_path))
    if problems:
        raise ParamsError("\n".join(problems))
    return AdaptiveSetup(
        settings=params.adaptive,
        pool=tuple(params.answerers),
        seats=params.adaptive.seats,
        rating=params.ranking.rating_params(),
        events_per_game=len(params.players),  # one question per player a round, at most
    )


def games(request: RoundRequest) -> list[RoundGame]:
    from pipeline.core.models import load_models
    from pipeline.skate.config import load_skate
    from pipeline.skate.schedule import seated_games

    return seated_games(request.tables, request.earlier, load_skate(request.params), load_models(request.models))


def parts(game: RoundGame) -> tuple[str, ...]:
    """The jobs that play a table, relative to results/skate/: its round's setting, its answers."""
    setting = tuple(f"generate/{job}" for job in game.fields["generate_jobs"])
    return setting + tuple(f"answers/{job}" for job in game.fields["answer_jobs"])


def table_events(results: Path, game: RoundGame) -> tuple[RatingEvent, ...] | None:
    """The table's pairwise events per question (None until every seat's p(correct) table exists)."""
    import polars as pl

    from pipeline.core.artifacts import read_table
    from pipeline.skate.ranking import question_games
    from pipeline.skate.schedule import answer_paths
    from pipeline.skate.schemas import PCorrectSchema

    files = [answer_paths(results, job)["pcorrect"] for job in game.fields["answer_jobs"]]
    if not all(f.is_file() for f in files):
        return None
    pcorrect = pl.concat([read_table(f, PCorrectSchema) for f in files])
    rule = game.fields["compare"]
    by_question = question_games(
        pcorrect, rule["mode"], float(rule["sigma_stop"]), float(rule["pass_threshold"]), game.fields["setters"]
    )
    return tuple(event for question in by_question for event in question.games)


SPEC = AdaptiveSpec(
    setup=setup,
    games=games,
    event=table_events,
    play_target="skate_rounds",
    # no rule plays a whole table: the plan prices each part, a generate or an answer job, through
    # the answer rule's estimator (estimators.estimate_answer_or_part)
    play_rule="skate_answer",
    finished=(PART,),
    calls=PART,
    job_wildcard="part",
    parts=parts,
)

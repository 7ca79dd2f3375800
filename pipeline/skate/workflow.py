"""What SKATE's Snakemake rules need at parse time: the schedule's job ids and each job's inputs
(its own rules file), and what its standard rules wait for and are decided by (its declaration's
`rules`: `scheduled`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.core.artifacts import ParamsError
from pipeline.core.run.declaration import ScheduleCall, Scheduled
from pipeline.skate.outputs import (
    analysis_outputs,
    strategy_game_output,
    strategy_outputs,
)

if TYPE_CHECKING:  # the schedule (and what it imports) loads when the rules are parsed, not with the declaration
    from pipeline.skate.schedule import Schedule

__all__ = [
    "SkateWorkflow",
    "scheduled",
    "analysis_outputs",
    "strategy_game_output",
    "strategy_outputs",
]


class SkateWorkflow:
    """The schedule of params/skate.yaml, or an empty one when it cannot be read.

    A broken params file must not stop other benchmarks' targets from parsing: its problem goes into
    `problems` (the Snakefile's PARAMS_PROBLEMS), and building a target that needs skate stops on it
    (core.run.workflow.params_guard), naming the file, the field and the fix.
    """

    def __init__(
        self, params_path: str, models_path: str, out: str = "results/skate", problems: dict[str, str] | None = None
    ) -> None:
        self.out = out
        self.schedule: Schedule | None = None
        self.settings: dict[str, Any] = {}
        self.strategies: list[str] = []
        self.game_settings: dict[str, Any] = {}  # what decides a strategy game, beyond its strategy
        if not Path(params_path).exists():
            return
        from pipeline.core.models import load_models
        from pipeline.skate.config import load_skate
        from pipeline.skate.prompts import PROMPT_VERSION
        from pipeline.skate.schedule import SKATE_VERSION, game_schedule

        try:
            params = load_skate(params_path)
            models = load_models(models_path)
            # the fixed game, or the adaptive rounds' jobs (their ledger lies beside the round jobs)
            self.schedule = game_schedule(params, models, source=params_path, rounds=f"{out}/rounds")
        except ParamsError as exc:
            if problems is not None:
                problems.setdefault("skate", str(exc))
            return
        self.settings = {
            "players": params.players,
            "answer_only": params.answer_only,
            "seed": params.seed,
            "rounds": params.rounds,
            "ranking": params.ranking.model_dump(mode="json"),
            "sigma_stop": params.answering.sigma_stop,
            "analyses": params.analyses.model_dump(mode="json"),
            # the adaptive schedule adds the opponent rates to metrics.json; a fixed game's settings stay as they were
            **({"adaptive": True} if params.adaptive.enabled else {}),
        }
        self.strategies = list(params.analyses.strategies)
        self.game_settings = {  # the versions: a code change that alters games reruns them too
            "version": SKATE_VERSION,
            "prompts": PROMPT_VERSION,
            # a strategy game is a whole fixed game whatever `adaptive` says (SkateParams.fixed)
            **params.model_dump(mode="json", exclude={"strategy", "analyses", "adaptive"}),
            "answering": params.answering.identity(),
            "roster": [models.entry(n).model_dump(mode="json") for n in params.answerers],
        }

    # ids, for the wildcard constraints and the final inputs
    def generate_ids(self) -> list[str]:
        return [j.job_id for j in self.schedule.generate.values()] if self.schedule else []

    def round_ids(self) -> list[str]:
        return [j.job_id for j in self.schedule.rounds.values()] if self.schedule else []

    def answer_ids(self) -> list[str]:
        return [j.job_id for j in self.schedule.answers.values()] if self.schedule else []

    # inputs of one job, given its id (functions of wildcards in the rules)
    def generate_inputs(self, job_id: str) -> list[str]:
        from pipeline.skate.schedule import generate_inputs

        assert self.schedule is not None
        return generate_inputs(self.schedule, self.schedule.find_generate(job_id), self.out)

    def round_inputs(self, job_id: str) -> list[str]:
        from pipeline.skate.schedule import generate_path

        assert self.schedule is not None
        return [str(generate_path(self.out, g)) for g in self.schedule.find_round(job_id).generate]

    def answer_inputs(self, job_id: str) -> list[str]:
        from pipeline.skate.schedule import round_path

        assert self.schedule is not None
        return [str(round_path(self.out, self.schedule.find_answer(job_id).round_id))]

    def rate_inputs(self) -> list[str]:
        from pipeline.skate.schedule import answer_paths, generate_path

        files = [str(generate_path(self.out, i)) for i in self.generate_ids()]
        files += [str(p) for i in self.answer_ids() for p in answer_paths(self.out, i).values()]
        return files


def scheduled(call: ScheduleCall) -> Scheduled[SkateWorkflow]:
    """The game as SKATE's rules play it (the state its rules file reads: `SkateWorkflow`), and for the
    standard rules: the jobs rate and rounds wait for, the settings that decide rate and report, and
    the final files of its own stages (the analyses, and the strategy comparison when asked for)."""
    skate = SkateWorkflow(call.params, call.models, call.results, call.problems)
    final = [*analysis_outputs(call.results), *(strategy_outputs(call.results) if skate.strategies else [])]
    return Scheduled(
        played=tuple(skate.rate_inputs()),
        rate_settings=skate.settings,
        report_settings=skate.settings,
        final=tuple(final),
        state=skate,
    )

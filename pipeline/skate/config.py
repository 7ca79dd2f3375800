"""`params/skate.yaml`: who plays, how the game runs, how answers are scored and ranked."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator, model_validator

from pipeline.core.artifacts import ParamsError, indexed, load_params, roster_problems
from pipeline.core.artifacts.params import StrictParams as Strict
from pipeline.core.models import ModelsParams
from pipeline.core.rating import with_defaults
from pipeline.core.rating.settings import AdaptiveSettings
from pipeline.core.sandbox import SandboxLimits

Strategy = Literal["no_info", "historical_tasks", "historical_performance", "full_personal_context", "full_context"]
STRATEGIES: tuple[Strategy, ...] = (
    "no_info",
    "historical_tasks",
    "historical_performance",
    "full_personal_context",
    "full_context",
)
RankingMode = Literal["relative", "absolute"]
#: the estimator asked for: exact where the answerer gives log-probabilities, sampled otherwise
AnswerMode = Literal["sampled", "exact"]
OutsideLetters = Literal["renormalise", "count_wrong"]
#: when sampling stops: the paper's standard error, or ours (how likely more samples move p)
Stopping = Literal["standard_error", "predictive"]
#: what the predictive rule reports: the median of the capped run's p(correct) under the posterior,
#: or right answers / samples
PredictiveEstimate = Literal["median", "ratio"]
#: answering settings that decide nothing while `stopping` is the paper's (kept out of job ids)
PREDICTIVE_SETTINGS: tuple[str, ...] = ("stopping", "predictive_tolerance", "predictive_risk", "predictive_estimate")


class SandboxParams(Strict):
    cpu_s: float = Field(2.0, gt=0, le=600, description="CPU seconds a question's program may use")
    wall_s: float = Field(5.0, gt=0, le=600, description="wall-clock seconds before the program is killed")
    memory_mb: int = Field(256, ge=32, le=65536, description="address-space limit in MiB")
    output_bytes: int = Field(65536, ge=1024, description="bytes of output before the program is stopped")
    processes: int = Field(16, ge=1, le=4096, description="processes/threads the program may start")
    allow_unisolated: bool = Field(
        False,
        description="true runs programs with rlimits only when no namespace isolation works "
        "(no network or file-system isolation): only on a machine you can throw away",
    )

    def limits(self) -> SandboxLimits:
        return SandboxLimits(self.cpu_s, self.wall_s, self.memory_mb, self.output_bytes, self.processes)


class GenerationParams(Strict):
    max_tokens: int | None = Field(
        None,
        ge=1,
        description="visible token budget of a setter's reply; null: the roster entry "
        "decides (its max_tokens, else the default budget), plus a reasoning model's allowance",
    )
    max_program_chars: int = Field(4000, ge=20, description="longer programs are rejected")
    max_output_chars: int = Field(
        200, ge=1, description="a program printing more than this (as one option line) is rejected"
    )
    max_context_items: int | None = Field(
        None,
        ge=0,
        description="null (the paper): every earlier question the strategy allows enters "
        "a setter's prompt; a number keeps only that many of the latest (for short context windows)",
    )


class AnsweringParams(Strict):
    mode: AnswerMode = Field(
        "sampled",
        description="the p(correct) estimator asked for: sampled (the paper: adaptive sampling, an "
        "unparseable answer counts as wrong) or exact (next-token log-probabilities, no sampling "
        "noise). In exact mode an answerer that gives no log-probabilities (a reasoning model, a "
        "provider without them, a refusal at run time) is sampled instead; the mode used is "
        "recorded per question and answerer",
    )
    outside_letters: OutsideLetters = Field(
        "renormalise",
        description="exact mode: what happens to the probability mass on tokens other than A-D: "
        "renormalise (p over the four letters; the mass is reported) or count_wrong (that mass "
        "counts as a wrong answer, like an unparseable sample)",
    )
    stopping: Stopping = Field(
        "standard_error",
        description="sampled: when to stop. standard_error (the paper): once the standard error of "
        "p(correct) is at most sigma_stop. predictive (ours, fewer samples): once the Beta(1/2, 1/2) "
        "posterior gives at most predictive_risk that the run of max_samples would end more than "
        "predictive_tolerance from the reported p(correct) (predictive_estimate)",
    )
    sigma_stop: float = Field(
        0.05,
        gt=0,
        lt=0.5,
        description="stopping standard_error: stop sampling when the standard "
        "error is at most this; also the relative ranking's draw margin",
    )
    predictive_tolerance: float = Field(
        0.1,
        gt=0,
        lt=1,
        description="stopping predictive: the change of p(correct) that more "
        "samples (up to max_samples) should not make",
    )
    predictive_risk: float = Field(
        0.05,
        gt=0,
        lt=1,
        description="stopping predictive: stop once the posterior probability of such a change is at most this",
    )
    predictive_estimate: PredictiveEstimate = Field(
        "median",
        description="stopping predictive: the p(correct) reported, and the one the risk is measured from. "
        "median: the posterior median of what the run of max_samples would report (shrinks a short "
        "run of identical answers slightly toward the middle: 0 of 12 reports 0.01); ratio: right "
        "answers / samples, as the paper's rule reports",
    )
    min_samples: int = Field(10, ge=1, description="sampled mode's floor of samples per question")
    max_samples: int = Field(
        100,
        ge=1,
        description="sampled mode's cap of samples per question (stopping predictive: the run it must agree with)",
    )
    exact_option_sets: int = Field(8, ge=1, le=1000, description="option sets averaged in exact mode (one call each)")
    top_logprobs: int = Field(20, ge=4, le=20, description="alternatives per token asked for in exact mode")
    max_tokens: int = Field(
        8,
        ge=1,
        description="visible token budget of a sampled answer (a letter); a reasoning model "
        "gets its reasoning allowance on top (params/models.yaml)",
    )
    few_shot: int = Field(
        2,
        ge=0,
        le=3,
        description="solved example questions (0-3) shown before each question, as "
        "earlier chat turns; base models then answer with a letter",
    )

    @model_validator(mode="before")
    @classmethod
    def _one_mode(cls, data: Any) -> Any:
        """Earlier params chose estimators per model by hand; say what replaced them."""
        if isinstance(data, dict):
            if "exact_players" in data:
                raise ValueError(
                    "exact_players is gone: answering.mode: exact scores every model that gives "
                    "log-probabilities exactly and samples the others (decided from the roster); set "
                    "answering.mode and delete exact_players"
                )
            if data.get("mode") in ("auto", "adaptive"):
                raise ValueError(
                    f"answering.mode {data['mode']!r} is gone: one ranking uses one estimator per model, "
                    "chosen from its roster entry; use sampled (the paper's adaptive sampling for every "
                    "model) or exact (log-probabilities where a model gives them, sampling where not)"
                )
        return data

    def identity(self) -> dict[str, Any]:
        """These settings as they decide answers (job ids, rerun triggers): the predictive rule's
        settings only when it is chosen, so games on the paper's rule keep the ids they had
        before that rule existed."""
        settings = self.model_dump(mode="json")
        if self.stopping == "standard_error":
            for key in PREDICTIVE_SETTINGS:
                settings.pop(key)
        return settings

    @model_validator(mode="after")
    def _floor_below_cap(self) -> AnsweringParams:
        if self.min_samples > self.max_samples:
            raise ValueError(f"min_samples ({self.min_samples}) must not exceed max_samples ({self.max_samples})")
        return self


if TYPE_CHECKING:  # to mypy the base is what with_defaults builds it from: TrueSkillSettings
    from pipeline.core.rating.settings import TrueSkillSettings

    _RankingBase = TrueSkillSettings
else:
    _RankingBase = with_defaults("SkateTrueSkill", draw_probability=0.2, passes=20, bootstrap_resamples=100)


class RankingParams(_RankingBase):
    """trueskill's defaults with many draws: pairs of answerers often draw here (must be in (0, 1))."""

    primary: RankingMode = Field("relative", description="relative or absolute: the mode behind the headline rating")
    pass_threshold: float = Field(0.55, gt=0, le=1, description="absolute mode: p(correct) at or above this passes")
    headline: Literal["multipass", "sequential"] = Field(
        "multipass",
        description="the headline rating (metrics trueskill_mu, trueskill_rank): multipass (the mean "
        "over `passes` shuffled orders, with bootstrap intervals; ours) or sequential (the paper's "
        "single pass over the questions in game order). Both are always reported.",
    )
    draw_probability: float = Field(
        0.2, gt=0, lt=1, description="TrueSkill draw probability in (0, 1): pairs often draw here"
    )


class AnalysesParams(Strict):
    stability_order: list[str] | None = Field(
        None,
        description="the order in which models join for the stability analysis (paper Figure 7); "
        "null: players, then answer_only, as listed",
    )
    strategies: list[Strategy] = Field(
        default_factory=lambda: list(STRATEGIES),
        description="augmentation strategies compared (one whole game each, same roster and "
        "seed); [] skips the comparison",
    )


class AdaptiveParams(AdaptiveSettings):
    """`adaptive`: rounds whose answerers are chosen from the results so far (docs/adaptive.md). Off
    by default: the fixed game, every answerer on every question, is the paper's. When on, every
    player still sets a question each round, but only the answerers seated at the round's tables
    answer them; the rounds run until neighbours are separated or a budget is spent (`rounds` is
    then not the game's length)."""

    seats: int = Field(
        2,
        ge=2,
        le=100,
        description="an integer from 2 to 100: answerers per table; each table answers the round's questions "
        "and is compared pairwise on each (2: one pair; k: k answer jobs compare k(k-1)/2 pairs)",
    )


class SkateParams(Strict):
    players: list[str] = Field(
        min_length=1,
        description="roster names (params/models.yaml) that set one question per round and answer every question",
    )
    answer_only: list[str] = Field(
        default_factory=list,
        description="roster names that answer every question of the game but set none (their "
        "answers never enter a setter's prompt)",
    )
    rounds: int = Field(2, ge=1, le=1000, description="rounds of the game (paper: 50)")
    attempts: int = Field(5, ge=1, le=50, description="tries per setter and round to write a valid, unique question")
    strategy: Strategy = Field(
        "historical_performance",
        description="what enters a setter's prompt: no_info, historical_tasks, "
        "historical_performance, full_personal_context or full_context",
    )
    similarity_threshold: float = Field(
        0.9,
        gt=0,
        le=1,
        description="a question whose cosine similarity to one of its setter's "
        "earlier questions reaches this is not unique",
    )
    seed: int = Field(0, ge=0, description="seeds every random choice of the game")
    generation: GenerationParams = Field(default_factory=GenerationParams, description="setter reply limits")
    answering: AnsweringParams = Field(default_factory=AnsweringParams, description="how p(correct) is estimated")
    ranking: RankingParams = Field(default_factory=RankingParams, description="pairwise TrueSkill settings")
    sandbox: SandboxParams = Field(default_factory=SandboxParams, description="limits of the program sandbox")
    analyses: AnalysesParams = Field(
        default_factory=AnalysesParams, description="the paper's analyses: stability, strategy comparison"
    )
    adaptive: AdaptiveParams = Field(
        default_factory=AdaptiveParams,
        description="the adaptive schedule: enabled (false: the fixed game), seats, tables_per_round, z, "
        "max_games, max_rounds, max_cost_usd, seed; its pool is players and answer_only",
    )

    @field_validator("players", "answer_only")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        repeated = sorted({v for v in value if value.count(v) > 1})
        if repeated:
            raise ValueError(f"{', '.join(repeated)} listed twice; list each once")
        return value

    @model_validator(mode="after")
    def _disjoint(self) -> SkateParams:
        both = sorted(set(self.players) & set(self.answer_only))
        if both:
            raise ValueError(f"{', '.join(both)} in both players and answer_only; keep each in one list")
        unknown = sorted(set(self.analyses.stability_order or ()) - set(self.answerers))
        if unknown:
            raise ValueError(
                f"analyses.stability_order: {', '.join(unknown)} is not among players or answer_only; "
                "list the game's models in the order they join"
            )
        return self

    @property
    def answerers(self) -> list[str]:
        return [*self.players, *self.answer_only]

    def adaptive_problems(self, source: str = "params/skate.yaml") -> list[str]:
        """What keeps the adaptive schedule from seating a table, with the fix (none when it is off)."""
        seats = self.adaptive.seats
        if not self.adaptive.enabled or len(self.answerers) >= seats:
            return []
        return [
            f"{source}: adaptive.enabled is true but players and answer_only list {len(self.answerers)} "
            f"answerer(s), fewer than adaptive.seats={seats}: a table seats distinct answerers; list at least "
            f"{seats} answerers, lower adaptive.seats, or set adaptive.enabled: false"
        ]

    def check_roster(
        self,
        models: ModelsParams,
        source: str = "params/skate.yaml",
        models_source: str = "params/models.yaml",
        *,
        outside_ok: bool = False,
    ) -> None:
        """Every name must be a roster entry: stop with a message naming the file, the field, the name,
        the closest roster name and the fix (every unknown name at once). A seat played from outside
        the pipeline (`bot: human` or `agent`) is refused: a scheduled game would wait for it;
        `outside_ok` allows it (a game drawn for such a seat, pipeline.core.run.contract.seat_game)."""
        known = [e.name for e in models.roster]
        named = [*indexed("players", self.players), *indexed("answer_only", self.answer_only)]
        problems = roster_problems(named, known, source, models_source, None if outside_ok else models.outside())
        problems += self.adaptive_problems(source)
        if problems:
            raise ParamsError("\n".join(problems))

    def fixed(self) -> SkateParams:
        """These params with the adaptive schedule off: a whole fixed game (the strategy games)."""
        if not self.adaptive.enabled:
            return self
        return self.model_copy(update={"adaptive": self.adaptive.model_copy(update={"enabled": False})})


def load_skate(path: str | Path = "params/skate.yaml") -> SkateParams:
    return load_params(SkateParams, path)

"""pandera schemas of SKATE's tables (validated when written and when read)."""

from __future__ import annotations

from pipeline.core.artifacts import Field, RatingSummarySchema, StrictTable
from pipeline.skate.verify import FAILURE_KINDS


class QuestionsSchema(StrictTable):
    """One row per setter attempt: what was written, what the sandbox printed, why it failed."""

    round: int = Field(ge=1)
    setter: str
    attempt: int = Field(ge=1)
    status: str = Field(isin=["accepted", "invalid", "not_unique"])
    failure_kind: str = Field(nullable=True, isin=list(FAILURE_KINDS))
    failure: str = Field(nullable=True)
    question_id: str = Field(nullable=True)
    description: str
    program: str = Field(nullable=True)
    answer: str = Field(nullable=True)  # the sandbox's output as an option line
    distractors: str  # JSON list of the cleaned distractors
    n_distractors: int = Field(ge=0)
    max_similarity: float = Field(nullable=True)
    similar_to: str = Field(nullable=True)
    reply: str
    generate_job: str


class SetterRoundsSchema(StrictTable):
    """One row per (round, setter): the question it entered, or none after all attempts."""

    round: int = Field(ge=1)
    setter: str
    question_id: str = Field(nullable=True)
    attempts_used: int = Field(ge=0)
    outcome: str = Field(isin=["question", "no_question"])


class SamplesSchema(StrictTable):
    """Every answer drawn (sampled) or scored from log-probabilities (exact)."""

    question_id: str
    round: int = Field(ge=1)
    setter: str
    answerer: str
    mode: str = Field(isin=["sampled", "exact"])
    sample_index: int = Field(ge=0)
    options: str  # the four options in display order, one per line
    correct_letter: str = Field(isin=["A", "B", "C", "D"])
    reply: str
    parsed: str = Field(nullable=True, isin=["A", "B", "C", "D"])
    p_correct: float = Field(ge=0, le=1)  # 0/1 for a drawn answer
    letter_mass: float = Field(nullable=True, ge=0, le=1.0001)


class PCorrectSchema(StrictTable):
    """p(correct) per question and answerer, with the estimator that measured it (`mode`: the game's
    answering.mode where the answerer gives log-probabilities, else sampled)."""

    question_id: str
    round: int = Field(ge=1)
    setter: str
    answerer: str
    mode: str = Field(isin=["sampled", "exact"])
    p_correct: float = Field(ge=0, le=1)
    std_error: float = Field(ge=0)
    samples: int = Field(ge=1)
    answer_only: bool
    # exact: mean probability mass on tokens other than A-D (null when sampled)
    outside_mass: float = Field(nullable=True, ge=0, le=1)
    unparsed_share: float = Field(ge=0, le=1)  # replies not parsed to a letter


class SkateRatingsSchema(RatingSummarySchema):
    """Multi-pass pairwise TrueSkill per ranking mode, with bootstrap intervals for mu and the rank
    (rank by mu within the mode, 1 = best)."""

    mode: str = Field(isin=["relative", "absolute"])
    passes: int = Field(ge=1)


class RatingHistorySchema(StrictTable):
    """TrueSkill after each question, in game order (one pass)."""

    mode: str = Field(isin=["relative", "absolute"])
    step: int = Field(ge=1)
    round: int = Field(ge=1)
    question_id: str
    player: str
    mu: float
    sigma: float = Field(ge=0)


class VarianceSchema(StrictTable):
    """Points of difference: how much answerers disagree on each question."""

    question_id: str
    round: int = Field(ge=1)
    setter: str
    variance: float = Field(ge=0)
    answerers: int = Field(ge=1)
    description: str
    program: str
    answer: str
    p_correct_by_answerer: str  # JSON object


class SimilarityPairsSchema(StrictTable):
    """Calibration: the cosine similarity of each labelled question pair."""

    question_a: str
    question_b: str
    label: str = Field(isin=["same", "different"])
    cosine: float = Field(ge=-1.0001, le=1.0001)


class ThresholdSweepSchema(StrictTable):
    """Calibration: each candidate threshold as a detector of repeated questions."""

    threshold: float = Field(gt=0, le=1)
    flagged: int = Field(ge=0)
    true_positives: int = Field(ge=0)
    false_positives: int = Field(ge=0)
    false_negatives: int = Field(ge=0)
    precision: float = Field(ge=0, le=1)
    recall: float = Field(ge=0, le=1)
    f1: float = Field(ge=0, le=1)
    f_half: float = Field(ge=0, le=1)  # F0.5: precision weighted twice; the choice maximises it


class StabilitySchema(StrictTable):
    """Analysis: ratings after each model joins (primary ranking mode, multi-pass)."""

    models: int = Field(ge=2)  # models present
    joined: str  # the model that joined last
    player: str
    mu: float
    sigma: float = Field(ge=0)
    rank: int = Field(ge=1)


class AnswerOnlyRankingSchema(StrictTable):
    """Analysis: the setters ranked alone, then with the answer-only models (paper Figure 6)."""

    panel: str = Field(isin=["setters only", "with answer-only models"])
    player: str
    mu: float
    sigma: float = Field(ge=0)
    rank: int = Field(ge=1)


class StrategyComparisonSchema(StrictTable):
    """Analysis: one row per augmentation strategy and model, from that strategy's game."""

    strategy: str
    model: str
    trueskill_mu: float = Field(nullable=True)
    trueskill_sigma: float = Field(nullable=True)
    trueskill_rank: int = Field(nullable=True, ge=1)
    asking_skill: float = Field(nullable=True)
    answering_skill: float = Field(nullable=True)
    self_preference: float = Field(nullable=True)
    p_correct_own_questions: float = Field(nullable=True)
    valid_rate: float = Field(nullable=True)
    questions_entered: int = Field(nullable=True, ge=0)

"""Robust p(correct): how often a player picks the true output among shuffled options.

A sample shows the program with four options (the true output and 3 of the 9 distractors, in
random order). Option set i of a question is the same for every answerer (common random
numbers make answerers' estimates comparable) and depends only on the question and i.

`answering.mode` is the estimator asked for; each answerer uses it where it can (`answer_mode`):
- `sampled` (the paper) draws answers, at least min_samples and at most max_samples, until the
  stopping rule holds (`should_stop`); an unparseable answer is wrong. `stopping: standard_error`
  (the paper's, default) stops once the standard error (see `standard_error`) is at most
  sigma_stop; `stopping: predictive` (ours) stops once, by the Beta(1/2, 1/2) posterior, the run
  of max_samples would end more than predictive_tolerance from the reported p(correct) with
  probability at most predictive_risk (see `predictive_risk`); it reports the posterior median of
  that run's p(correct) (`predictive_estimate`).
- `exact` reads the first answer token's log-probabilities and computes, for each of a fixed
  number of option sets, the probability of the correct letter under the player's sampling
  temperature (bots: 1) over the letter tokens A-D; p(correct) is their mean. No sampling
  noise, one call per option set. The mass that fell outside A-D is reported per sample
  (`letter_mass`) and per question (`outside_mass`); `outside_letters: renormalise` drops it
  from p(correct), `count_wrong` counts it as wrong (as sampled mode counts an unparseable
  answer).

An answerer that cannot give log-probabilities answers `sampled` in an exact-mode game: decided
before the first call from its roster entry (a reasoning model, whose API refuses logprobs; a
provider litellm lists without top_logprobs; a generic bot), and per question at run time when an
exact answer comes back without them (the provider refused them and the gateway dropped them:
the calls table's `dropped_params`). Both estimate the same p(correct); the mode actually used is
recorded per question and answerer.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pipeline.core.artifacts import seed_from
from pipeline.skate.config import AnsweringParams, PredictiveEstimate
from pipeline.skate.parsing import LETTERS, parse_answer
from pipeline.skate.prompts import answer_messages

if TYPE_CHECKING:  # the gateway's import of litellm costs seconds; jobs without players skip it
    from pipeline.core.models import MoveRequest, Player, RosterEntry, TokenLogprob


@dataclass(frozen=True)
class Question:
    question_id: str
    round: int
    setter: str
    description: str
    program: str
    answer: str
    distractors: tuple[str, ...]


def option_set(question: Question, index: int, game_seed: int) -> tuple[tuple[str, ...], str]:
    """(four options in display order, the correct letter) for sample `index` of `question`."""
    rng = random.Random(seed_from("skate-options", game_seed, question.question_id, index))
    options = [question.answer, *rng.sample(list(question.distractors), 3)]
    rng.shuffle(options)
    return tuple(options), LETTERS[options.index(question.answer)]


def standard_error(correct: int, n: int) -> float:
    """Standard error of the running p(correct), from a slightly smoothed p.

    The plain sqrt(p(1-p)/n) is 0 after any all-wrong or all-right start (0 of 10), which
    would stop sampling a 10%-accuracy answerer at p = 0; shrinking p by half a sample toward
    0.5 keeps such streaks honest (0 of 10 gives 0.066, 0 of 20 gives 0.034).
    """
    if n == 0:
        return math.inf
    p = (correct + 0.5) / (n + 1)
    return math.sqrt(p * (1.0 - p) / n)


def _hits_to_come(correct: int, n: int, cap: int) -> list[float]:
    """P(h more right answers in the cap - n samples still to come), h = 0..cap - n: beta-binomial
    under the Beta(1/2, 1/2) (Jeffreys) posterior of p(correct) after `correct` of n."""
    remaining = cap - n
    a, b = correct + 0.5, n - correct + 0.5
    # pmf(0) = B(a, b + remaining) / B(a, b); later terms by the ratio of consecutive terms, in
    # logs so that long runs neither overflow nor underflow
    log_pmf = math.lgamma(a + b) + math.lgamma(b + remaining) - math.lgamma(b) - math.lgamma(a + b + remaining)
    pmf = []
    for hits in range(remaining + 1):
        pmf.append(math.exp(log_pmf))
        if hits < remaining:
            log_pmf += math.log((remaining - hits) * (hits + a)) - math.log((hits + 1) * (remaining - hits - 1 + b))
    return pmf


def predictive_estimate(correct: int, n: int, cap: int, estimate: PredictiveEstimate = "ratio") -> float:
    """The p(correct) the predictive rule reports after `correct` of n: `ratio`, correct / n;
    `median`, the posterior median of what the run of `cap` samples would report, (correct + h) /
    cap for the median h still to come. At the cap both are correct / cap."""
    if estimate == "ratio" or n >= cap:
        return correct / n
    return _median_of_run(correct, cap, _hits_to_come(correct, n, cap))


def _median_of_run(correct: int, cap: int, to_come: list[float]) -> float:
    """(correct + h) / cap for the median h of `to_come` (the pmf of the hits still to come)."""
    cumulative = 0.0
    for hits, p in enumerate(to_come):
        cumulative += p
        if cumulative >= 0.5:
            return (correct + hits) / cap
    return (correct + len(to_come) - 1) / cap  # rounding left the total a hair under 1/2


def predictive_risk(correct: int, n: int, cap: int, tolerance: float, estimate: PredictiveEstimate = "ratio") -> float:
    """Probability that the run of `cap` samples ends more than `tolerance` from the estimate
    reported after `correct` of n (`predictive_estimate`).

    The hits still to come are beta-binomial under the Beta(1/2, 1/2) (Jeffreys) posterior of
    p(correct). Unlike a plug-in standard error it is never 0 after a run of identical answers
    (at cap 100 and tolerance 0.1, from correct / n: 0 of 10 gives 0.117, 0 of 17 gives 0.038),
    and it asks what the run of `cap` samples would say, not how precisely p itself is known,
    which needs fewer samples (at p = 0.5 about 50, not 100).
    """
    if n == 0:
        return 1.0
    if n >= cap:
        return 0.0
    to_come = _hits_to_come(correct, n, cap)  # once: the median and the tail both read it
    reported = correct / n if estimate == "ratio" else _median_of_run(correct, cap, to_come)
    risk = 0.0
    for hits, p in enumerate(to_come):
        # 1e-9: a change of exactly `tolerance` (0.5 -> 0.6) counts as within it despite rounding
        if abs(reported - (correct + hits) / cap) > tolerance + 1e-9:
            risk += p
    return min(1.0, risk)


def should_stop(correct: int, n: int, settings: AnsweringParams) -> bool:
    """Whether sampling stops after n answers, `correct` of them right (the cap aside)."""
    if n < settings.min_samples:
        return False
    if settings.stopping == "predictive":
        risk = predictive_risk(
            correct, n, settings.max_samples, settings.predictive_tolerance, settings.predictive_estimate
        )
        return risk <= settings.predictive_risk
    return standard_error(correct, n) <= settings.sigma_stop


def sampled_p_correct(correct: int, n: int, settings: AnsweringParams) -> float:
    """The p(correct) a sampled answer reports: right answers / samples, or under the predictive
    rule its `predictive_estimate`."""
    if settings.stopping == "predictive":
        return predictive_estimate(correct, n, settings.max_samples, settings.predictive_estimate)
    return correct / n


def letter_distribution(first: TokenLogprob, temperature: float) -> tuple[dict[str, float], float]:
    """(P(letter) over A-D at `temperature`, probability mass of letter tokens at temperature 1)."""
    logps: dict[str, list[float]] = {letter: [] for letter in LETTERS}
    for token, logprob in first.top or ((first.token, first.logprob),):
        text = token.strip()
        if len(text) == 1 and text.upper() in logps:
            logps[text.upper()].append(logprob)
    merged = {letter: math.log(sum(math.exp(v) for v in values)) for letter, values in logps.items() if values}
    mass = sum(math.exp(v) for v in merged.values())
    if not merged:
        return {letter: 0.0 for letter in LETTERS}, 0.0
    if temperature <= 0:
        best = max(merged, key=lambda k: (merged[k], -LETTERS.index(k)))
        return {letter: float(letter == best) for letter in LETTERS}, mass
    top = max(merged.values())
    weights = {k: math.exp((v - top) / temperature) for k, v in merged.items()}
    total = sum(weights.values())
    return {letter: weights.get(letter, 0.0) / total for letter in LETTERS}, mass


def _request(
    question: Question,
    options: Sequence[str],
    correct: str,
    answerer: str,
    index: int,
    max_tokens: int | None,
    top_logprobs: int | None,
    few_shot: int,
) -> MoveRequest:
    from pipeline.core.models import MoveRequest

    return MoveRequest(
        messages=answer_messages(question.program, options, few_shot),
        key=f"answer/{question.question_id}/{index}",
        kind="answer",
        choices=LETTERS,
        max_tokens=max_tokens,
        top_logprobs=top_logprobs,
        sample_index=index,
        state={
            "correct": correct,
            "setter": question.setter,
            "answerer": answerer,
            "question_id": question.question_id,
        },
    )


def _row(
    question: Question,
    answerer: str,
    mode: str,
    index: int,
    options: Sequence[str],
    correct: str,
    reply: str,
    parsed: str | None,
    p_correct: float,
    letter_mass: float | None,
) -> dict[str, Any]:
    return {
        "question_id": question.question_id,
        "round": question.round,
        "setter": question.setter,
        "answerer": answerer,
        "mode": mode,
        "sample_index": index,
        "options": "\n".join(options),
        "correct_letter": correct,
        "reply": reply,
        "parsed": parsed,
        "p_correct": p_correct,
        "letter_mass": letter_mass,
    }


async def answer_sampled(
    player: Player, question: Question, settings: AnsweringParams, game_seed: int
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Samples until the stopping rule holds (`should_stop`; between the floor and the cap)."""
    rows: list[dict[str, Any]] = []
    hits = 0
    for index in range(settings.max_samples):
        options, correct = option_set(question, index, game_seed)
        reply = await player.act(
            _request(question, options, correct, player.name, index, settings.max_tokens, None, settings.few_shot)
        )
        parsed = parse_answer(reply.text, options)
        hits += parsed == correct
        rows.append(
            _row(
                question,
                player.name,
                "sampled",
                index,
                options,
                correct,
                reply.text,
                parsed,
                float(parsed == correct),
                None,
            )
        )
        if should_stop(hits, index + 1, settings):
            break
    n = len(rows)
    return rows, {
        "mode": "sampled",
        "p_correct": sampled_p_correct(hits, n, settings),
        "std_error": standard_error(hits, n),
        "samples": n,
        "outside_mass": None,
        "unparsed_share": _unparsed_share(rows),
    }


def _unparsed_share(rows: Sequence[Mapping[str, Any]]) -> float:
    return sum(r["parsed"] is None for r in rows) / len(rows)


def why_not_exact(entry: RosterEntry) -> str | None:
    """Why `entry` cannot be scored from log-probabilities, known before any call (None: it can,
    or only its first reply can tell). Never imports litellm for bots or the embedded model."""
    from pipeline.core.models import is_generic_bot

    if entry.is_bot:
        if entry.bot is not None and is_generic_bot(entry.bot):
            return f"the generic {entry.bot!r} bot has no answer distribution"
        return None
    if entry.provider == "local":  # the embedded model returns them (its provider is ours)
        return None
    from pipeline.core.models import is_reasoning_model, supports_top_logprobs

    if is_reasoning_model(entry):
        return "a reasoning model: reasoning APIs refuse logprobs"
    if supports_top_logprobs(entry) is False:
        return f"provider {entry.provider!r} returns no top_logprobs, says litellm"
    return None


def answer_mode(requested: str, entry: RosterEntry) -> tuple[str, str | None]:
    """(the mode `entry` answers in, why it is not the requested exact mode): exact where the model
    gives log-probabilities, sampled otherwise."""
    if requested != "exact":
        return "sampled", None
    why = why_not_exact(entry)
    return ("sampled", why) if why else ("exact", None)


class NoLogprobs(Exception):
    """An exact-mode reply came back without log-probabilities: the question is sampled instead."""


async def answer_exact(
    player: Player, question: Question, settings: AnsweringParams, game_seed: int
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Mean over a fixed number of option sets of P(correct letter) from next-token log-probs.
    Raises NoLogprobs when a reply comes back without them."""
    # a bot's distribution is its policy itself, not logits to be re-tempered
    temperature = 1.0 if player.is_bot else player.entry.sampling.temperature
    rows: list[dict[str, Any]] = []
    for index in range(settings.exact_option_sets):
        options, correct = option_set(question, index, game_seed)
        reply = await player.act(
            _request(question, options, correct, player.name, index, 1, settings.top_logprobs, settings.few_shot)
        )
        if not reply.logprobs:
            raise NoLogprobs(f"{player.name}: no log-probabilities on {question.question_id} (option set {index})")
        distribution, mass = letter_distribution(reply.logprobs[0], temperature)
        p = distribution[correct] * (mass if settings.outside_letters == "count_wrong" else 1.0)
        rows.append(
            _row(
                question,
                player.name,
                "exact",
                index,
                options,
                correct,
                reply.text,
                parse_answer(reply.text, options),
                min(1.0, p),
                min(1.0, mass),
            )
        )
    values = [r["p_correct"] for r in rows]
    mean = sum(values) / len(values)
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / max(1, len(values) - 1) / len(values))
    outside = 1.0 - sum(r["letter_mass"] for r in rows) / len(rows)
    return rows, {
        "mode": "exact",
        "p_correct": mean,
        "std_error": spread,
        "samples": len(rows),
        "outside_mass": max(0.0, outside),
        "unparsed_share": _unparsed_share(rows),
    }


async def answer_question(
    player: Player, question: Question, mode: str, settings: AnsweringParams, game_seed: int
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(sample rows, summary) of one question; the summary's `mode` is the estimator used: an
    exact answer that comes back without log-probabilities (a provider that refused them) makes
    the question sampled instead, its exact replies set aside (they stay in the calls table)."""
    if mode == "exact":
        try:
            return await answer_exact(player, question, settings, game_seed)
        except NoLogprobs:
            pass
    return await answer_sampled(player, question, settings, game_seed)


def summary_row(
    question: Question, answerer: str, mode: str, summary: Mapping[str, Any], answer_only: bool
) -> dict[str, Any]:
    return {
        "question_id": question.question_id,
        "round": question.round,
        "setter": question.setter,
        "answerer": answerer,
        "mode": mode,
        "p_correct": summary["p_correct"],
        "std_error": summary["std_error"],
        "samples": summary["samples"],
        "answer_only": answer_only,
        "outside_mass": summary["outside_mass"],
        "unparsed_share": summary["unparsed_share"],
    }

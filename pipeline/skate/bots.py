"""SKATE's scripted players: a ground truth of known skill.

- `oracle`: answers every question correctly (it reads the correct letter from the request's
  game state, which models never see).
- `noisy`: answers correctly with probability `accuracy` (bot_options), else a wrong letter drawn
  uniformly, so its true p(correct) is exactly `accuracy` on every question.
- `setter`: writes template programs with plausible distractors (near-miss programs' outputs),
  answers its own questions with `self_accuracy` (default 1) and others' with `accuracy`
  (default 0.25, chance).

- `graded`: the known-answer player of every benchmark (docs/ratings.md#calibration-graded-bots-with-a-known-order):
  sets template questions and answers correctly with probability 1/4 + 3/4 * `skill`.

All of them can set questions (with the setter's templates) and answer them, so any of them may be
a full player; only the names params/skate.yaml lists are built. Asked for log-probabilities
(exact mode), they also return their answer distribution as the first token's alternatives, so
their exact p(correct) is their accuracy.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any

from pipeline.core.models import BotPolicy, BotReply, MoveRequest, TokenLogprob, register_bot
from pipeline.core.models.players import required_skill
from pipeline.skate.parsing import LETTERS
from pipeline.skate.templates import draw_template, plausible_distractors, run_trusted

DESCRIPTION_PREFIX = "template:"


def _accuracy(options: Mapping[str, Any], key: str, default: float) -> float:
    value = float(options.get(key, default))
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"bot option {key} must be in [0, 1], got {value}")
    return value


def write_question(request: MoveRequest, rng: random.Random, distractors: int = 9) -> str:
    """A template question in the format setters are asked for."""
    used = {
        d.split(DESCRIPTION_PREFIX, 1)[1].split()[0]
        for d in request.state.get("history", ())
        if DESCRIPTION_PREFIX in d
    }
    template = draw_template(rng, used)
    answer = run_trusted(template.program)
    wrong = plausible_distractors(template, answer, distractors, rng)
    listed = "\n".join(f"{i}. {w}" for i, w in enumerate(wrong, start=1))
    return (
        f"DESCRIPTION: {DESCRIPTION_PREFIX}{template.family} {template.description}\n"
        f"PROGRAM:\n```python\n{template.program}\n```\nDISTRACTORS:\n{listed}\n"
    )


def answer_letter(request: MoveRequest, rng: random.Random, accuracy: float) -> str:
    correct = request.state.get("correct")
    choices = request.choices or LETTERS
    if correct not in choices:  # no ground truth given: guess
        return rng.choice(choices)
    if rng.random() < accuracy:
        return correct
    return rng.choice([c for c in choices if c != correct])


def answer_distribution(request: MoveRequest, accuracy: float) -> tuple[TokenLogprob, ...]:
    """The first token's log-probabilities: `accuracy` on the correct letter, the rest spread evenly
    over the wrong ones (letters of probability 0 are left out, as a provider's top list would)."""
    choices = request.choices or LETTERS
    correct = request.state.get("correct")
    wrong = [c for c in choices if c != correct]
    weights = (
        {c: (accuracy if c == correct else (1.0 - accuracy) / len(wrong)) for c in choices}
        if correct in choices
        else {c: 1.0 / len(choices) for c in choices}
    )
    top = tuple((c, math.log(w)) for c, w in sorted(weights.items(), key=lambda kv: -kv[1]) if w > 0)
    return (TokenLogprob(top[0][0], top[0][1], top),)


def _policy(answer_accuracy: float, own_accuracy: float, distractors: int) -> BotPolicy:
    def policy(request: MoveRequest, rng: random.Random) -> str | BotReply:
        if request.kind == "set":
            return write_question(request, rng, distractors)
        own = request.state.get("setter") is not None and request.state.get("setter") == request.state.get("answerer")
        accuracy = own_accuracy if own else answer_accuracy
        letter = answer_letter(request, rng, accuracy)
        return BotReply(letter, answer_distribution(request, accuracy)) if request.top_logprobs else letter

    return policy


@register_bot("oracle", game="skate")
def oracle_bot(options: Mapping[str, Any]) -> BotPolicy:
    return _policy(1.0, 1.0, int(options.get("distractors", 9)))


@register_bot("noisy", game="skate")
def noisy_bot(options: Mapping[str, Any]) -> BotPolicy:
    accuracy = _accuracy(options, "accuracy", 0.6)
    return _policy(accuracy, accuracy, int(options.get("distractors", 9)))


@register_bot("setter", game="skate")
def setter_bot(options: Mapping[str, Any]) -> BotPolicy:
    return _policy(
        _accuracy(options, "accuracy", 0.25),
        _accuracy(options, "self_accuracy", 1.0),
        int(options.get("distractors", 9)),
    )


@register_bot("graded", game="skate")
def graded_bot(options: Mapping[str, Any]) -> BotPolicy:
    """The known-answer player: sets template questions like `setter` and answers every question,
    its own included, correctly with probability chance + (1 - chance) * skill (chance: one letter
    of four), so p(correct) rises with `bot_options.skill` from chance (0) to always (1)."""
    chance = 1.0 / len(LETTERS)
    accuracy = chance + (1.0 - chance) * required_skill(options)
    return _policy(accuracy, accuracy, int(options.get("distractors", 9)))

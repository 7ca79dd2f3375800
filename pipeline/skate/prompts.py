"""Every word a model reads in SKATE: the setter's prompt (rules, incentives, context, failed
attempts, format) and the multiple-choice question an answerer sees."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pipeline.skate.parsing import LETTERS

Message = Mapping[str, str]  # a chat message, as pipeline.core.models.gateway takes it

PROMPT_VERSION = "skate-prompts-2"

SETTER_SYSTEM = (
    "You are a player in SKATE, a game between language models. In every round each player writes "
    "one Python output-prediction question for everyone, and every player, its author included, "
    "answers every question as a multiple-choice question."
)

SETTER_RULES = """\
How points are earned:
- +1 when your question is valid and new (clearly different from every question you asked before).
- +1 for each question you answer correctly, your own included.
So the way to win is a question that you can answer and your opponents cannot: make it as hard as \
you can while staying sure of the output yourself.

A valid question:
- is one short, complete Python 3 program using only the standard library, which prints one \
deterministic output: no randomness, clock, input, files, network, or object addresses;
- prints a value such as a number, a string, a list, a tuple or a dict, never a boolean: an \
output of True or False is not allowed;
- runs without errors and finishes in well under a second;
- comes with exactly 9 wrong answers ("distractors"): outputs a careless reader might predict, \
all different from each other and from the true output. Do not state the true output: it is \
found by running your program.
- If the output has several lines, write each wrong answer on one line, with \\n between its lines."""

SETTER_FORMAT = """\
Reply in exactly this format, with nothing before or after it:
DESCRIPTION: <one line: the Python behaviour your question tests>
PROGRAM:
```python
<the program>
```
DISTRACTORS:
1. <wrong output>
2. <wrong output>
...
9. <wrong output>"""

_STRATEGY_INTRO = {
    "historical_tasks": "Your earlier questions (numbered in the order you asked them, listed in random order):",
    "historical_performance": (
        "Your earlier questions with the share of the time you answered each correctly, p(correct) "
        "(numbered in the order you asked them, listed in random order). Above 0.8 a question is "
        "probably easy for your opponents too; below 0.55 it is too hard for you. Aim between."
    ),
    "full_personal_context": (
        "Your earlier questions with every player's p(correct), the share of the time each answered "
        "it correctly (numbered in the order you asked them, listed in random order). Look for what "
        "you get right and the others get wrong."
    ),
    "full_context": (
        "Every question of the game so far, by every setter, with every player's p(correct), the "
        "share of the time each answered it correctly (numbered in the order they were asked, "
        "listed in random order). Look for what you get right and the others get wrong."
    ),
}


@dataclass(frozen=True)
class ContextItem:
    """One earlier question as a setter may see it."""

    number: int  # position in the order asked, kept when the list is shuffled
    round: int
    setter: str
    description: str
    program: str
    p_correct: Mapping[str, float]  # answerer -> p(correct); only what the strategy allows


@dataclass(frozen=True)
class FailedAttempt:
    attempt: int
    reason: str
    program: str | None


def _fmt_p(values: Mapping[str, float], own: str, strategy: str) -> str:
    if strategy == "historical_performance":
        return f"your p(correct): {values[own]:.2f}" if own in values else "your p(correct): not measured"
    if not values:
        return "p(correct): not measured"
    parts = [f"{'you' if name == own else name} {value:.2f}" for name, value in sorted(values.items())]
    return "p(correct): " + ", ".join(parts)


def render_context(items: Sequence[ContextItem], setter: str, strategy: str) -> str:
    """The context block of a setter's prompt (empty for no_info or an empty history)."""
    if strategy == "no_info" or not items:
        return ""
    lines = [_STRATEGY_INTRO[strategy]]
    for item in items:
        head = f"Question {item.number} (round {item.round}"
        head += f", set by {'you' if item.setter == setter else item.setter})" if strategy == "full_context" else ")"
        if strategy != "historical_tasks":
            head += f", {_fmt_p(item.p_correct, setter, strategy)}"
        lines.append(f"{head}: {item.description or '(no description)'}\n```python\n{item.program}\n```")
    return "\n\n".join(lines)


def render_failures(failures: Sequence[FailedAttempt], attempts_left: int) -> str:
    if not failures:
        return ""
    lines = [
        f"Your earlier attempts this round failed; you have {attempts_left} attempt(s) left. "
        "Learn from them and do not repeat them:"
    ]
    for failure in failures:
        shown = failure.program if failure.program is not None else "(no program)"
        if len(shown) > 600:
            shown = shown[:600] + "\n# ..."
        lines.append(f"Attempt {failure.attempt}: {failure.reason}\n```python\n{shown}\n```")
    return "\n\n".join(lines)


def setter_messages(*, round_number: int, rounds: int | None, context: str, failures: str) -> list[Message]:
    # as in the paper, the setter knows how far the game has gone (so a longer game reruns it); an
    # adaptive game (rounds None) has no length fixed in advance, so its prompt names none
    where = f"Round {round_number}" if rounds is None else f"Round {round_number} of {rounds}"
    parts = [f"{where}. Write one new question.", SETTER_RULES]
    if context:
        parts.append(context)
    if failures:
        parts.append(failures)
    parts.append(SETTER_FORMAT)
    return [{"role": "system", "content": SETTER_SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


#: solved examples shown before the question as earlier chat turns (answering.few_shot of them): a
#: base model then answers with a letter instead of echoing the question. The correct letters
#: differ so the examples teach the format, not a position.
FEW_SHOT: tuple[tuple[str, tuple[str, str, str, str], str], ...] = (
    ("print(2 * 3 + 1)", ("6", "8", "7", "9"), "C"),
    ("print('ab' * 2)", ("abab", "ab2", "aabb", "ab ab"), "A"),
    ("print(len([1, [2, 3], 4]))", ("4", "3", "2", "1"), "B"),
)


def _question_text(program: str, options: Sequence[str]) -> str:
    listed = "\n".join(f"{letter}) {option}" for letter, option in zip(LETTERS, options))
    return (
        "What does this Python program print? (Line breaks in the output are shown as \\n.)\n\n"
        f"```python\n{program}\n```\n\n{listed}\n\n"
        "Reply with the letter of the correct option (A, B, C or D) only."
    )


def answer_messages(program: str, options: Sequence[str], few_shot: int = 0) -> list[Message]:
    """The multiple-choice question (program and options A-D), after `few_shot` solved examples."""
    messages: list[Message] = []
    for example, example_options, letter in FEW_SHOT[:few_shot]:
        messages.append({"role": "user", "content": _question_text(example, example_options)})
        messages.append({"role": "assistant", "content": letter})
    messages.append({"role": "user", "content": _question_text(program, options)})
    return messages

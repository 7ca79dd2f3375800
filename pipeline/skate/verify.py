"""Is a setter's question valid? The sandbox decides the answer; the setter's claims never do.

Valid means: the program runs without error within the limits, twice, printing the same
non-empty output both times (a program whose runs differ is nondeterministic), and after
dropping distractors equal to that output and duplicates, at least 9 distractors remain.
The sandbox fixes the hash seed, so set and dict-of-set orders print the same on every run and
machine (the answer key never depends on which run came first); output that still differs
between the runs (randomness, time, addresses) is rejected.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pipeline.core.sandbox import Sandbox, SandboxResult
from pipeline.skate.parsing import ParsedQuestion, option_text

DISTRACTORS_NEEDED = 9

#: failure kinds, in the order the checks run
FAILURE_KINDS = (
    "no_program",
    "several_programs",
    "too_long",
    "not_runnable",
    "limit",
    "nondeterministic",
    "empty_output",
    "output_too_long",
    "too_few_distractors",
    "too_similar",
)


@dataclass(frozen=True)
class Verdict:
    """The outcome of the checks on one attempt (uniqueness comes later, in uniqueness.py)."""

    valid: bool
    failure_kind: str | None
    failure: str | None  # what the setter is told
    stdout: str
    answer: str  # option_text(stdout): what the correct option shows
    distractors: tuple[str, ...]  # cleaned: first 9 distinct, none equal to the answer
    runs: tuple[SandboxResult, ...] = ()


def _last_line(text: str, limit: int = 200) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    line = lines[-1].strip() if lines else "(no message)"
    return line if len(line) <= limit else line[: limit - 3] + "..."


def clean_distractors(answer: str, distractors: Sequence[str]) -> tuple[str, ...]:
    """Distinct distractors in the setter's order, none equal to the answer, at most 9."""
    seen: set[str] = {answer}
    kept: list[str] = []
    for item in distractors:
        text = option_text(item)
        if text and text not in seen:
            seen.add(text)
            kept.append(text)
    return tuple(kept[:DISTRACTORS_NEEDED])


def check_output(runs: Sequence[SandboxResult], max_output_chars: int) -> tuple[str | None, str | None]:
    """(failure kind, message) for two sandbox runs of one program, or (None, None)."""
    for run in runs:
        if run.limit is not None:
            return "limit", f"the program hit the sandbox's {run.limit} limit (it must finish quickly and print little)"
        if run.exit_code != 0:
            return "not_runnable", f"the program failed (exit status {run.exit_code}): {_last_line(run.stderr)}"
    first, second = runs[0].stdout, runs[1].stdout
    if first != second:
        return (
            "nondeterministic",
            "two runs printed different outputs (randomness, time or addresses); the output must be deterministic",
        )
    answer = option_text(first)
    if not answer:
        return "empty_output", "the program printed nothing"
    if len(answer) > max_output_chars:
        return "output_too_long", f"the output has {len(answer)} characters; keep it under {max_output_chars}"
    return None, None


def verify_question(
    parsed: ParsedQuestion, sandbox: Sandbox, *, max_program_chars: int, max_output_chars: int
) -> Verdict:
    """Run the checks in order; the first that fails names the failure."""
    if parsed.program is None:
        kind: str | None = (
            "several_programs" if parsed.problem and "programs in the reply" in parsed.problem else "no_program"
        )
        return Verdict(False, kind, parsed.problem or "no program found", "", "", ())
    if len(parsed.program) > max_program_chars:
        return Verdict(
            False,
            "too_long",
            f"the program has {len(parsed.program)} characters; keep it under {max_program_chars}",
            "",
            "",
            (),
        )
    runs = tuple(sandbox.run_many([parsed.program, parsed.program], jobs=2))
    kind, message = check_output(runs, max_output_chars)
    stdout = runs[0].stdout
    answer = option_text(stdout) if kind is None else ""
    if kind is not None:
        return Verdict(False, kind, message, stdout, answer, (), runs)
    distractors = clean_distractors(answer, parsed.distractors)
    if len(distractors) < DISTRACTORS_NEEDED:
        given = len(parsed.distractors)
        return Verdict(
            False,
            "too_few_distractors",
            f"only {len(distractors)} distinct wrong answers different from the true output "
            f"(you gave {given}); give {DISTRACTORS_NEEDED}",
            stdout,
            answer,
            distractors,
            runs,
        )
    return Verdict(True, None, None, stdout, answer, distractors, runs)

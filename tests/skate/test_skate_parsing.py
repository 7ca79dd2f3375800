"""SKATE: reading setters' replies and answers, and verifying questions in the real sandbox."""

from __future__ import annotations

import pytest

from pipeline.core.sandbox.runner import Sandbox, SandboxLimits
from pipeline.skate.parsing import option_text, parse_answer, parse_question
from pipeline.skate.verify import DISTRACTORS_NEEDED, verify_question

NINE = "\n".join(f"{i}. {w}" for i, w in enumerate(["5", "7", "8", "9", "10", "12", "-6", "0", "66"], start=1))


def reply(program: str, distractors: str = NINE, description: str = "integer arithmetic") -> str:
    return f"DESCRIPTION: {description}\nPROGRAM:\n```python\n{program}\n```\nDISTRACTORS:\n{distractors}\n"


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(SandboxLimits(cpu_s=1, wall_s=3, memory_mb=256, output_bytes=4096, processes=8))


def verify(text: str, sandbox: Sandbox):
    return verify_question(parse_question(text), sandbox, max_program_chars=2000, max_output_chars=200)


def test_a_clean_reply_is_valid_and_the_answer_comes_from_the_sandbox(sandbox: Sandbox) -> None:
    # the setter never states the answer; the sandbox's output is the truth
    verdict = verify(reply("print(2 * 3)"), sandbox)
    assert verdict.valid and verdict.failure_kind is None
    assert verdict.answer == "6"
    assert verdict.distractors == ("5", "7", "8", "9", "10", "12", "-6", "0", "66")
    assert len(verdict.runs) == 2 and all(r.ok for r in verdict.runs)


def test_prose_around_fences_and_markdown_headers_are_tolerated(sandbox: Sandbox) -> None:
    text = (
        "Sure! Here is a tricky one for my opponents.\n\n**Description:** slicing with a step\n\n"
        "**Program:**\n```py\nxs = list(range(6))\nprint(xs[::2])\n```\n\n"
        "**Distractors:**\n"
        + "\n".join(
            f"- `{w}`"
            for w in [
                "[0, 2]",
                "[1, 3, 5]",
                "[0, 1, 2]",
                "[0, 2, 4, 6]",
                "[2, 4]",
                "[0, 3]",
                "(0, 2, 4)",
                "[4, 2, 0]",
                "[0, 4]",
            ]
        )
        + "\n\nGood luck!"
    )
    verdict = verify(text, sandbox)
    assert verdict.valid, verdict.failure
    assert verdict.answer == "[0, 2, 4]"
    assert parse_question(text).description == "slicing with a step"


def test_unfenced_program_section_and_json_distractors(sandbox: Sandbox) -> None:
    text = (
        "DESCRIPTION: multi-line output\nPROGRAM:\nfor i in range(2):\n    print(i)\n"
        'DISTRACTORS: ["0", "1", "0\\n1\\n2", "1\\n0", "0 1", "[0, 1]", "0\\n0", "1\\n1", "2"]\n'
    )
    verdict = verify(text, sandbox)
    assert verdict.valid, verdict.failure
    assert verdict.answer == "0\\n1"  # line breaks shown as \n in the option


def test_several_programs_are_rejected_with_a_reason(sandbox: Sandbox) -> None:
    text = "Option one:\n```python\nprint(1)\n```\nOption two:\n```python\nprint(2)\n```\n"
    verdict = verify(text, sandbox)
    assert not verdict.valid and verdict.failure_kind == "several_programs"
    assert "2 programs" in verdict.failure


@pytest.mark.parametrize(
    "text", ["", "I'm sorry, I can't write code today.", "DESCRIPTION: nothing here\nDISTRACTORS:\n1. a"]
)
def test_no_code_is_rejected(text: str, sandbox: Sandbox) -> None:
    verdict = verify(text, sandbox)
    assert not verdict.valid and verdict.failure_kind == "no_program"


def test_fewer_than_nine_distractors(sandbox: Sandbox) -> None:
    verdict = verify(reply("print(6)", "1. 5\n2. 7\n3. 8"), sandbox)
    assert verdict.failure_kind == "too_few_distractors"
    assert "only 3" in verdict.failure and f"give {DISTRACTORS_NEEDED}" in verdict.failure


def test_duplicate_distractors_and_one_equal_to_the_answer_do_not_count(sandbox: Sandbox) -> None:
    # 9 given, but "6" is the true output and "7" appears twice (also with trailing spaces)
    listed = "\n".join(f"{i}. {w}" for i, w in enumerate(["5", "7", "7  ", "6", "8", "9", "10", "11", "12"], 1))
    verdict = verify(reply("print(6)", listed), sandbox)
    assert verdict.failure_kind == "too_few_distractors"
    assert verdict.distractors == ("5", "7", "8", "9", "10", "11", "12")
    # with two more, it becomes valid, and the answer is never among the distractors
    verdict = verify(reply("print(6)", listed + "\n10. 13\n11. 14"), sandbox)
    assert verdict.valid and "6" not in verdict.distractors and len(verdict.distractors) == 9


@pytest.mark.parametrize(
    ("program", "kind"),
    [
        ("import random\nprint(random.random())", "nondeterministic"),
        ("print(object())", "nondeterministic"),
        ("while True:\n    pass", "limit"),
        ("print('x' * 10_000_000)", "limit"),
        ("def f(n):\n    return f(n + 1)\nprint(f(0))", "not_runnable"),
        ("import socket\nprint(socket.create_connection(('127.0.0.1', 9), timeout=1))", "not_runnable"),
        ("import os\nprint(os.environ.get('OPENAI_API_KEY', ''))", "empty_output"),
        ("raise SystemExit(3)", "not_runnable"),
        ("print('a' * 300)", "output_too_long"),
    ],
)
def test_bad_programs_are_recorded_not_raised(program: str, kind: str, sandbox: Sandbox) -> None:
    verdict = verify(reply(program), sandbox)
    assert not verdict.valid
    assert verdict.failure_kind == kind, verdict.failure


def test_non_ascii_output_is_fine(sandbox: Sandbox) -> None:
    listed = "\n".join(f"{i}. {w}" for i, w in enumerate(["ç", "ß", "é", "ü", "à", "ø", "ñ", "å", "ï"], 1))
    verdict = verify(reply("print('\\u00e9' * 2)", listed), sandbox)
    assert verdict.valid and verdict.answer == "éé"


def test_option_text_is_one_line() -> None:
    assert option_text("a  \nb\n\n") == "a\\nb"
    assert option_text("\n\n[1, 2]\n") == "[1, 2]"


OPTIONS = ("[2, 1]", "[1, 2]", "[1]", "[]")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The answer is (B)", "B"),
        ("b", "B"),
        ("B) [1, 2]", "B"),
        ("(c)", "C"),
        ("**D**", "D"),
        ("Answer: A", "A"),
        ("I think the correct option is C.", "C"),
        ("[1, 2]", "B"),  # an option's exact text
        ("", None),
        ("   ", None),
        ("I'm sorry, but I can't help with that.", None),
        ("As an AI language model, I cannot run code.", None),
        ("A or B, hard to say", None),  # two letters: no choice
        ("A list that is reversed", None),  # an article, not a choice
        ("E", None),
    ],
)
def test_answer_parsing(text: str, expected: str | None) -> None:
    assert parse_answer(text, OPTIONS) == expected


HASH_ORDER_PROGRAMS = [
    "print({'apple', 'banana', 'cherry', 'date', 'elder', 'fig', 'grape'})",
    "print(list(set('the quick brown fox jumps over'.split())))",
    "print(''.join({c: 1 for c in set('abcdefghij')}))",
    "print(hash('skate') % 1000)",
]


@pytest.mark.parametrize("program", HASH_ORDER_PROGRAMS)
def test_hash_order_programs_get_one_answer_key(program: str, sandbox: Sandbox) -> None:
    # set order and str hashes follow the sandbox's fixed hash seed: valid, and the same answer on
    # every verification (the answer key never depends on which run came first)
    listed = "\n".join(f"{i}. wrong {i}" for i in range(1, 10))
    answers = {verify(reply(program, listed), sandbox).answer for _ in range(3)}
    assert len(answers) == 1 and "" not in answers


@pytest.mark.parametrize(
    "program",
    [
        "import time\nprint(time.perf_counter_ns())",
        "print(id(object()) % 997)",
        "import os\nprint(os.urandom(4).hex())",
    ],
)
def test_output_that_still_varies_is_rejected(program: str, sandbox: Sandbox) -> None:
    assert verify(reply(program), sandbox).failure_kind == "nondeterministic"

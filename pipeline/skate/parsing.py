"""Reading what players write: a setter's question (program, description, distractors) and an
answerer's choice of letter. Both must survive anything a model says: a reply that cannot be
read becomes a recorded failure (an invalid attempt, a wrong answer), never an exception.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

LETTERS: tuple[str, ...] = ("A", "B", "C", "D")

_HEADER = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*)?(?:\*\*|__)?[ \t]*"
    r"(description|behaviou?r|concept|program|code|python|distractors?|wrong answers?|wrong outputs?)"
    r"[ \t]*(?:\*\*|__)?[ \t]*:[ \t]*(?:\*\*|__)?[ \t]*(.*)$",
    re.IGNORECASE | re.MULTILINE,
)
_SECTION_OF = {
    "description": "description",
    "behaviour": "description",
    "behavior": "description",
    "concept": "description",
    "program": "program",
    "code": "program",
    "python": "program",
}
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_CODE_LANGS = {"", "python", "py", "python3", "py3"}
_LIST_MARKER = re.compile(r"^\s*(?:[-*\u2022]|\(?\d{1,2}[.):]|\(?[A-Ia-i][.)])\s+")


@dataclass(frozen=True)
class ParsedQuestion:
    """A setter's reply taken apart; `problem` says why no single program could be read."""

    description: str
    program: str | None
    distractors: tuple[str, ...]
    problem: str | None = None


def option_text(output: str) -> str:
    """The one-line form in which outputs are shown as options and compared.

    Trailing spaces and blank edge lines are dropped; line breaks become the two characters
    `\\n`, which is how setters are asked to write multi-line distractors.
    """
    lines = [line.rstrip() for line in output.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\\n".join(lines).strip()


def _sections(reply: str) -> dict[str, str]:
    """Header name -> its body (text up to the next header); the first header of a kind wins."""
    found = list(_HEADER.finditer(reply))
    sections: dict[str, str] = {}
    for index, match in enumerate(found):
        word = match.group(1).lower()
        kind = _SECTION_OF.get(word, "distractors")
        end = found[index + 1].start() if index + 1 < len(found) else len(reply)
        body = (match.group(2) + "\n" + reply[match.end() : end]).strip("\n")
        sections.setdefault(kind, body)
    return sections


def _code_blocks(text: str) -> list[str]:
    return [m.group(2).strip("\n") for m in _FENCE.finditer(text) if m.group(1).lower() in _CODE_LANGS]


def _looks_like_program(text: str) -> bool:
    try:
        compile(text, "<reply>", "exec")
    except (SyntaxError, ValueError):
        return False
    return "print" in text


def _distractor_items(body: str) -> list[str]:
    fenced = [m.group(2) for m in _FENCE.finditer(body)]
    text = fenced[0] if fenced else body
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            items = json.loads(stripped)
        except json.JSONDecodeError:
            items = None
        if isinstance(items, list):
            return [option_text(i if isinstance(i, str) else json.dumps(i)) for i in items]
    items = []
    for line in text.splitlines():
        item = _LIST_MARKER.sub("", line, count=1).strip()
        if len(item) >= 2 and item[0] == item[-1] == "`":
            item = item[1:-1].strip()
        if item:
            items.append(item)
    return items


def parse_question(reply: str) -> ParsedQuestion:
    """Take a setter's reply apart: DESCRIPTION, PROGRAM and DISTRACTORS sections, fenced or not."""
    sections = _sections(reply)
    description = " ".join(sections.get("description", "").split("\n", 1)[0].split())[:300]
    distractors = tuple(_distractor_items(sections["distractors"])) if "distractors" in sections else ()

    if "program" in sections:
        body = sections["program"]
        blocks = _code_blocks(body) if "```" in body else [body.strip("\n")]
    else:
        # no PROGRAM header: fenced code anywhere outside the distractor list
        outside = reply
        if "distractors" in sections:
            outside = reply.replace(sections["distractors"], "")
        blocks = _code_blocks(outside)
        if not blocks and not sections and _looks_like_program(reply.strip()):
            blocks = [reply.strip("\n")]
    blocks = [b for b in blocks if b.strip()]
    if not blocks:
        return ParsedQuestion(description, None, distractors, "no program found in the reply")
    if len(blocks) > 1:
        return ParsedQuestion(description, None, distractors, f"{len(blocks)} programs in the reply; write exactly one")
    return ParsedQuestion(description, blocks[0], distractors)


# -- answers ------------------------------------------------------------------------------------
_EXPLICIT = re.compile(
    r"(?:answer|option|choice)\s*(?:is|would be|:|=)?\s*(?:option\s*)?[\(\[\*\"']*\s*([A-Da-d])\b(?![\w'])",
    re.IGNORECASE,
)
# a leading capital letter counts unless a lowercase word follows ("A list ..." is an article)
_LEADING = re.compile(r"^[\s\*\"'`]*[\(\[]?([A-D])(?:[\)\]\.:,]|\s*$|\s+(?![a-z]))")
_ALONE = re.compile(r"^[\s\*\"'`\(\[]*([A-Da-d])[\s\*\"'`\)\]\.:!]*$")
_STANDALONE = re.compile(r"(?<![\w'])([A-D])(?![\w'])")
# "A" opening a sentence before a lowercase word is the article, not a choice
_ARTICLE = re.compile(r"(?:^|[.!?]\s+)[\s\*\"'`]*(A)\s+(?!(?:or|and|is|was|seems)\b)[a-z]")


def parse_answer(reply: str, options: Sequence[str] = ()) -> str | None:
    """The letter an answer chose, or None when it chose none or several (counted as wrong).

    Accepts "B", "b", "(B)", "B) [1, 2]", "The answer is (B)", an option's exact text, and a
    reply that names exactly one capital letter A-D.
    """
    text = reply.strip()
    if not text:
        return None
    if match := _ALONE.match(text):
        return match.group(1).upper()
    if match := _LEADING.match(text):
        return match.group(1)
    if match := _EXPLICIT.search(text):
        return match.group(1).upper()
    for letter, option in zip(LETTERS, options):
        if option and text.strip("`'\" .") == option:
            return letter
    articles = {m.start(1) for m in _ARTICLE.finditer(text)}
    named = {m.group(1) for m in _STANDALONE.finditer(text) if m.start(1) not in articles}
    if len(named) == 1:
        return named.pop()
    return None

"""What a seat is told: the rules, its seat, who is still in, the public history and its own private
talk. A prompt is built from a `SeatView`, which holds only what that seat may know."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pipeline.elimination.config import WordLimits


@dataclass(frozen=True)
class PublicLine:
    round: int
    kind: str  # "statement" | "tiebreak" | "plea" | "votes" | "revotes" | "elimination"
    seat: str | None
    text: str


@dataclass(frozen=True)
class PrivateLine:
    round: int
    subround: int
    speaker: str
    target: str
    text: str


@dataclass(frozen=True)
class SeatView:
    """Everything one seat may see at one moment of the game."""

    seat: str
    round: int
    active: tuple[str, ...]
    eliminated: tuple[tuple[str, int], ...]  # (seat, round it went out)
    public: tuple[PublicLine, ...]
    private: tuple[PrivateLine, ...]  # only conversations this seat took part in
    memory: tuple[tuple[int, str], ...] = ()  # the memory variant: this seat's own notes (round, note)


def system_prompt(seat: str, seats: int, words: WordLimits, votes: str = "anonymous", variant: str = "standard") -> str:
    p2, p3, p4 = words.private
    announced = (
        "Only how many votes each seat got is announced; who voted for whom stays secret, and so do the reasons."
        if votes == "anonymous"
        else "Who voted for whom is announced afterwards; reasons stay secret."
    )
    memory = (
        f"Before each vote you write a private memory note (at most {words.memory} words); only "
        "you see your notes, in every later round.\n"
        if variant == "memory"
        else ""
    )
    if variant == "public_only":
        return (
            f"You are seat {seat} in the Elimination Game, a social strategy game for {seats} seats "
            f"(P1 to P{seats}). Goal: be the last seat standing. All talk is public.\n"
            "Each round:\n"
            f"1. Everyone still in makes one public statement (at most {words.public} words).\n"
            f"2. Everyone secretly votes to eliminate one seat and gives a private reason. {announced} "
            "Most votes goes out.\n"
            "3. A tie: the tied seats each speak, then the other seats re-vote between them. Still tied: "
            "the tied seat with the most votes over the whole game goes out; still tied: chance decides.\n"
            "When two seats remain, each makes a final plea and the eliminated seats (the jury) vote to "
            "eliminate one of them; the other wins. A split jury is settled like a tie.\n"
            + ("Words over a limit are cut off. " if words.cut else "Keep to the word limits. ")
            + "Refer to seats by their labels (P1, P2, ...)."
        )
    return (
        f"You are seat {seat} in the Elimination Game, a social strategy game for {seats} seats "
        f"(P1 to P{seats}). Goal: be the last seat standing.\n"
        "Each round:\n"
        f"1. Everyone still in makes one public statement (at most {words.public} words).\n"
        "2. Everyone ranks the others as private partners; pairs are formed from the rankings "
        "(with an odd count one seat has no partner).\n"
        f"3. Partners exchange three private messages each (at most {p2}, {p3}, then {p4} words). "
        "Nobody else sees them.\n"
        f"4. Everyone secretly votes to eliminate one seat and gives a private reason. {announced} "
        "Most votes goes out.\n"
        "5. A tie: the tied seats each speak, then the other seats re-vote between them. Still tied: "
        "the tied seat with the most votes over the whole game goes out; still tied: chance decides.\n"
        "When two seats remain, each makes a final plea and the eliminated seats (the jury) vote to "
        "eliminate one of them; the other wins. A split jury is settled like a tie.\n"
        + memory
        + ("Words over a limit are cut off. " if words.cut else "Keep to the word limits. ")
        + "Refer to seats by their labels (P1, P2, ...)."
    )


def render_view(view: SeatView) -> str:
    lines = [f"Round {view.round}. You are {view.seat}. Still in: {', '.join(view.active)}."]
    if view.eliminated:
        out = ", ".join(f"{seat} (round {r})" for seat, r in view.eliminated)
        lines.append(f"Eliminated: {out}.")
    lines.append("")
    lines.append("Public history:")
    if not view.public:
        lines.append("(nothing yet)")
    for line in view.public:
        if line.seat is None:
            lines.append(f"[round {line.round}] {line.text}")
        else:
            tag = {"statement": "", "tiebreak": " tie-break", "plea": " final plea"}.get(line.kind, "")
            lines.append(f"[round {line.round}{tag}] {line.seat}: {line.text}")
    lines.append("")
    lines.append("Your private conversations:")
    if not view.private:
        lines.append("(none yet)")
    for said in view.private:
        other = said.target if said.speaker == view.seat else said.speaker
        lines.append(f"[round {said.round}, with {other}] {said.speaker}: {said.text}")
    if view.memory:
        lines.append("")
        lines.append("Your private memory notes:")
        lines.extend(f"[round {r}] {note}" for r, note in view.memory)
    return "\n".join(lines)


def messages_for(system: str, view: SeatView, task: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": render_view(view) + "\n\n" + task},
    ]


def statement_task(limit: int) -> str:
    return f"Your public statement (at most {limit} words). Reply with the statement only."


def preference_task(others: Sequence[str]) -> str:
    example = " ".join(list(others)[:3])
    return (
        f"Rank these seats as your private partner, most wanted first: {', '.join(others)}. "
        f"Reply with the seat labels only, e.g. {example}"
    )


def private_task(partner: str, limit: int, subround_index: int) -> str:
    return (
        f"Private exchange {subround_index} of 3 with {partner}. Your message to {partner} "
        f"(at most {limit} words). Reply with the message only."
    )


def memory_task(limit: int) -> str:
    return (
        f"Write a private memory note to yourself (at most {limit} words): what you want to remember "
        "in later rounds. Nobody else will see it. Reply with the note only."
    )


def vote_task(choices: Sequence[str]) -> str:
    return (
        f"Secret vote: which seat do you eliminate? Choose one of {', '.join(choices)}. "
        "Reply as `P<n>: <reason>`; only you see the reason."
    )


def tiebreak_task(tied: Sequence[str], voters: Sequence[str], limit: int) -> str:
    if not voters:  # every seat is tied: nobody re-votes, the votes over the whole game decide
        return (
            f"The vote is tied between every seat still in ({', '.join(tied)}), so nobody is left to re-vote: "
            "the votes over the whole game decide, then chance. Make a short statement to everyone "
            f"(at most {limit} words). Reply with the statement only."
        )
    return (
        f"The vote is tied between {', '.join(tied)}. You are one of them. Speak to the seats that "
        f"will re-vote ({', '.join(voters)}) in at most {limit} words. Reply with the statement only."
    )


def revote_task(tied: Sequence[str]) -> str:
    return (
        f"Re-vote: the vote tied between {', '.join(tied)}. Which of them do you eliminate? "
        "Reply as `P<n>: <reason>`; only you see the reason."
    )


def plea_task(other: str, limit: int) -> str:
    return (
        f"You are a finalist with {other}. Make your final plea to the jury (at most {limit} words). "
        "Reply with the plea only."
    )


def jury_task(finalists: Sequence[str]) -> str:
    return (
        f"You are on the jury. Vote to eliminate one finalist: {' or '.join(finalists)}; the other "
        "wins. Reply as `P<n>: <reason>`; only you see the reason."
    )


def reask_note(problem: str, choices: Sequence[str]) -> str:
    return (
        f"That vote does not count: {problem}. Reply again as `P<n>: <reason>`, choosing one of {', '.join(choices)}."
    )

"""One Elimination Game from the first public statement to the jury, written as the original's log.

Rules (docs/elimination.md), with the choices the rules leave open:
- Speaking order (public statements, tie-break statements, pleas) and proposing order are seeded
  shuffles; each speaker sees what was said before it. Rankings, votes and jury votes are asked
  at the same time and are secret.
- Each seat is told only its own partner. Votes are anonymous as in the original: after each
  vote only the tally is announced (`votes: public`, an option of ours, announces who voted for
  whom); vote reasons are never shown to anyone.
- Word limits are stated in the prompts and not enforced, as in the original (`words.cut: true`
  cuts replies at the limit); the log records what was said.
- A vote is the first seat label of the reply. An invalid vote (no label, unknown, own,
  eliminated, or not among the choices) is re-asked once with the problem named; if the second
  reply is invalid too, it counts for nobody (an abstention) and is logged with the original's
  markers: `"(invalid/skipped)"` in the vote record, `"(invalid_or_skipped)"` in the reason record.
- Ties: the tied seats speak (subround 600), also when every seat is tied, as in the original;
  the seats not tied (if any) re-vote between them. If that does not settle it, the tied seat
  with the most votes against it over the whole game so far (votes and re-votes, not jury votes)
  goes; still tied, a seeded random pick. As in the original's logs, `tie_break` is true only
  when the votes did not settle it (the cumulative count or chance did).
- The jury is settled the same way, without statements or a re-vote; as in the original's logs
  its `elimination` record is written only when the jury was split.
- The log is the original's: integer game id (from the content id), its record kinds and keys
  in its order (reason before vote), no `cumu_check` (its later logs dropped it); what we add
  goes into each record's `extra` key only.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.core.artifacts import seed_from
from pipeline.core.artifacts.progress import expect_moves
from pipeline.core.models import Gateway, ModelsParams, MoveRequest, Player, gather_moves, make_players
from pipeline.elimination import bots as _bots  # noqa: F401  (registers the heuristic bot)
from pipeline.elimination import prompts, records
from pipeline.elimination.config import GAME_VERSION, EliminationParams, ReplyTokens, WordLimits
from pipeline.elimination.matching import clean_ranking, match_pairs
from pipeline.elimination.moves import LimitedText, limit_words, parse_vote
from pipeline.elimination.prompts import PrivateLine, PublicLine, SeatView
from pipeline.elimination.schedule import ScheduledGame

log = logging.getLogger(__name__)
GAME = "elimination"


@dataclass(frozen=True)
class GameSpec:
    """What decides a game: its id, who sits where, the rules' numbers."""

    game_id: str
    seats: tuple[str, ...]  # roster name per seat, P1 first
    words: WordLimits = field(default_factory=WordLimits)
    reply_tokens: ReplyTokens = field(default_factory=ReplyTokens)
    history_rounds: int = 0  # rounds of history in prompts; 0: the whole game
    votes: str = "anonymous"  # "anonymous" (the original: tallies only) | "public" (who voted for whom)
    variant: str = "standard"  # "standard" | "public_only" | "memory"
    memory_players: tuple[str, ...] = ()  # variant memory: roster names keeping notes (empty: all)

    @property
    def log_game_id(self) -> int:
        """The integer game id of the log, as in the original: the content id's first 52 bits
        (exact in every JSON reader, doubles included)."""
        return (
            int(self.game_id[:13], 16)
            if all(c in "0123456789abcdef" for c in self.game_id[:13])
            else int.from_bytes(self.game_id.encode()[:6], "big")
        )


@dataclass(frozen=True)
class VoteResult:
    voter: str
    target: str | None
    reason: str
    attempts: tuple[dict[str, str], ...]  # the replies that did not count, with their problem

    def extra(self, phase: str) -> dict[str, Any]:
        data: dict[str, Any] = {"phase": phase}
        if self.attempts:
            data["invalid_attempts"] = list(self.attempts)
        if self.target is None:
            data["valid"] = False
            # every try cut by the token limit before any text: its own outcome, not a choice to abstain
            cut_out = bool(self.attempts) and all(a.get("problem") == TOKEN_LIMIT_PROBLEM for a in self.attempts)
            data["resolution"] = "token_limit" if cut_out else "abstain"
        return data


TOKEN_LIMIT_PROBLEM = "the reply was cut by the token limit before any visible text"
INVALID_VOTE = "(invalid/skipped)"  # the original's vote record for a vote that counts for nobody
INVALID_REASON = "(invalid_or_skipped)"  # and its reason record


@dataclass(frozen=True)
class Decision:
    seat: str
    rule: str  # "votes" | "revote" | "cumulative" | "random"
    tally: dict[str, int]
    revote_tally: dict[str, int] | None
    cumulative: dict[str, int] | None

    def extra(self) -> dict[str, Any]:
        data: dict[str, Any] = {"rule": self.rule, "tally": self.tally}
        if self.revote_tally is not None:
            data["revote_tally"] = self.revote_tally
        if self.cumulative is not None:
            data["cumulative"] = self.cumulative
        return data


class EliminationGame:
    def __init__(
        self, spec: GameSpec, players: Mapping[str, Player], progress: Callable[[str], None] | None = None
    ) -> None:
        self.spec = spec
        self.players = players
        self.progress = progress or (lambda _message: None)
        self.labels = [f"P{i + 1}" for i in range(len(spec.seats))]
        self.name_of = dict(zip(self.labels, spec.seats))
        self.gid = spec.log_game_id
        self.pid = {
            label: records.player_id(i + 1, self.gid, name) for i, (label, name) in enumerate(self.name_of.items())
        }
        self.active: list[str] = list(self.labels)
        self.out: list[tuple[str, int]] = []  # (seat, round) in elimination order
        self.public: list[PublicLine] = []
        self.private: list[PrivateLine] = []
        self.revealed: list[dict[str, Any]] = []  # announced votes: round, phase, voter, target
        self.partners: dict[str, list[str | None]] = {s: [] for s in self.labels}
        self.votes_against: Counter[str] = Counter()
        self.memory: dict[str, list[tuple[int, str]]] = {s: [] for s in self.labels}  # variant memory
        self.empty_at_limit: set[str] = set()  # request keys answered with nothing at the token limit
        self.log: list[records.Record] = []
        self.round = 0

    # -- helpers ---------------------------------------------------------------------------
    def rng(self, *parts: Any) -> random.Random:
        return random.Random(seed_from(self.spec.game_id, *parts))

    def shuffled(self, seats: Sequence[str], *parts: Any) -> list[str]:
        order = list(seats)
        self.rng(*parts).shuffle(order)
        return order

    def first_shown_round(self) -> int:
        window = self.spec.history_rounds
        return self.round - window + 1 if window else 1

    def view(self, seat: str, extra_private: Sequence[PrivateLine] = ()) -> SeatView:
        since = self.first_shown_round()
        own = [
            line
            for line in (*self.private, *extra_private)
            if seat in (line.speaker, line.target) and line.round >= since
        ]
        public = [line for line in self.public if line.round >= since]
        return SeatView(
            seat=seat,
            round=self.round,
            active=tuple(self.active),
            eliminated=tuple(self.out),
            public=tuple(public),
            private=tuple(own),
            memory=tuple(self.memory[seat]),
        )

    def state(self, view: SeatView, kind: str, **extra: Any) -> dict[str, Any]:
        """The structured game view bots get: the same facts as the seat's prompt, nothing more."""
        return {
            "seat": view.seat,
            "round": view.round,
            "kind": kind,
            "active": list(view.active),
            "eliminated": [seat for seat, _ in view.eliminated],
            # every field of a line is a str or an int: a copy of its attributes is `asdict` at a
            # fraction of the cost (built for every move of every seat, the whole game long)
            "public": [dict(vars(line)) for line in view.public],
            "private": [dict(vars(line)) for line in view.private],
            "votes": [dict(v) for v in self.revealed if v["round"] >= self.first_shown_round()],
            # the seat's own partners so far (what its own memory holds, whatever the prompt window)
            "partners": [p for p in self.partners[view.seat] if p is not None],
            **extra,
        }

    async def ask(self, seat: str, request: MoveRequest) -> str:
        reply = await self.players[self.name_of[seat]].act(request)
        if reply.empty_at_token_limit:
            self.empty_at_limit.add(request.key)
        return reply.text or ""

    def system(self, seat: str) -> str:
        return prompts.system_prompt(seat, len(self.labels), self.spec.words, self.spec.votes, self.spec.variant)

    async def say(
        self,
        seat: str,
        kind: str,
        key: str,
        task: str,
        limit: int,
        extra_private: Sequence[PrivateLine] = (),
        **state: Any,
    ) -> LimitedText:
        view = self.view(seat, extra_private)
        budget = self.spec.reply_tokens.private if kind == "private" else self.spec.reply_tokens.statement
        request = MoveRequest(
            messages=prompts.messages_for(self.system(seat), view, task),
            key=key,
            kind=kind,
            max_words=limit,
            max_tokens=budget,
            state=self.state(view, kind, **state),
        )
        said = limit_words(await self.ask(seat, request), limit, enforce=self.spec.words.cut)
        return dataclasses.replace(said, empty_at_token_limit=key in self.empty_at_limit)

    async def cast_vote(
        self, seat: str, phase: str, choices: Sequence[str], task: str, key: str, **state: Any
    ) -> VoteResult:
        view = self.view(seat)
        messages = prompts.messages_for(self.system(seat), view, task)
        eliminated = {s for s, _ in self.out}
        attempts: list[dict[str, str]] = []
        for attempt in (1, 2):
            request = MoveRequest(
                messages=messages,
                key=f"{key}/try{attempt}",
                kind=phase,
                choices=tuple(choices),
                max_tokens=self.spec.reply_tokens.vote,
                state=self.state(
                    view,
                    phase,
                    choices=list(choices),
                    attempt=attempt,
                    problem=attempts[-1]["problem"] if attempts else None,
                    **state,
                ),
            )
            text = await self.ask(seat, request)
            parsed = parse_vote(text, seat, choices, self.labels, eliminated)
            if parsed.problem is None:
                return VoteResult(seat, parsed.target, parsed.reason, tuple(attempts))
            problem = TOKEN_LIMIT_PROBLEM if request.key in self.empty_at_limit else parsed.problem
            attempts.append({"reply": text, "problem": problem})
            messages = [
                *messages,
                {"role": "assistant", "content": text},
                {"role": "user", "content": prompts.reask_note(problem, choices)},
            ]
        return VoteResult(seat, None, parsed.reason, tuple(attempts))

    def record_vote(self, result: VoteResult, phase: str) -> None:
        gid, voter = self.gid, self.pid[result.voter]
        target = self.pid[result.target] if result.target else None
        extra = result.extra(phase)
        self.log.append(records.vote_reason(gid, self.round, phase, voter, target or INVALID_REASON, result.reason))
        if phase != "jury":  # the original logs jury votes as reasons only
            self.log.append(records.vote(gid, self.round, voter, target or INVALID_VOTE, extra=extra))
        else:
            self.log[-1]["extra"] = extra
        if result.target is not None and phase != "jury":
            self.votes_against[result.target] += 1

    def announce_votes(self, results: Sequence[VoteResult], phase: str) -> None:
        """Public votes: who voted for whom. Anonymous (the original): the tally only."""
        title = "Votes" if phase == "vote" else "Re-vote"
        public = self.spec.votes == "public"
        parts = []
        for r in results:
            self.revealed.append(
                {"round": self.round, "phase": phase, "target": r.target} | ({"voter": r.voter} if public else {})
            )
            if public:
                parts.append(f"{r.voter}->{r.target}" if r.target else f"{r.voter} (no valid vote)")
        if not public:
            tally = Counter(r.target for r in results if r.target)
            parts = [f"{seat} {tally[seat]}" for seat in sorted(tally, key=lambda s: (-tally[s], int(s[1:])))]
            invalid = sum(r.target is None for r in results)
            if invalid:
                parts.append(f"{invalid} invalid")
        self.public.append(
            PublicLine(
                self.round,
                "votes" if phase == "vote" else "revotes",
                None,
                f"{title}: {', '.join(parts) or 'no valid vote'}.",
            )
        )

    # -- the phases ----------------------------------------------------------------------
    async def public_subround(self) -> None:
        limit = self.spec.words.public
        for seat in self.shuffled(self.active, "speak", self.round):
            said = await self.say(
                seat, "statement", f"r{self.round}/statement/{seat}", prompts.statement_task(limit), limit
            )
            self.log.append(
                records.conversation(
                    self.gid, self.round, records.PUBLIC_SUBROUND, self.pid[seat], said.text, said.extra()
                )
            )
            self.public.append(PublicLine(self.round, "statement", seat, said.text))

    async def pairing(self) -> list[tuple[str, str]]:
        seats = list(self.active)

        async def rank(seat: str) -> str:
            others = [s for s in seats if s != seat]
            view = self.view(seat)
            request = MoveRequest(
                messages=prompts.messages_for(self.system(seat), view, prompts.preference_task(others)),
                key=f"r{self.round}/preference/{seat}",
                kind="preference",
                choices=tuple(others),
                max_tokens=self.spec.reply_tokens.preference,
                state=self.state(view, "preference"),
            )
            return await self.ask(seat, request)

        replies = await gather_moves(*(rank(s) for s in seats))
        cleaned = {
            s: clean_ranking(reply, s, seats, self.rng("fill", self.round, s)) for s, reply in zip(seats, replies)
        }
        matching = match_pairs(self.shuffled(seats, "propose", self.round), {s: c.ranking for s, c in cleaned.items()})
        gid = self.gid
        for p in matching.proposals:
            self.log.append(records.preference_proposal(gid, self.round, p.proposer, p.target, p.rank))
            if p.outcome == "accepted":
                self.log.append(records.preference_outcome(gid, self.round, p.target, accepted=p.proposer))
            elif p.outcome == "rejected":
                self.log.append(records.preference_outcome(gid, self.round, p.target, rejected=p.proposer))
            else:
                self.log.append(
                    records.preference_outcome(gid, self.round, p.target, replaced=p.displaced, accepted=p.proposer)
                )
        extra: dict[str, Any] = {"rankings": {s: list(c.ranking) for s, c in cleaned.items()}}
        dropped = {s: list(c.dropped) for s, c in cleaned.items() if c.dropped}
        filled = {s: list(c.filled) for s, c in cleaned.items() if c.filled}
        if dropped:
            extra["dropped"] = dropped
        if filled:
            extra["filled"] = filled
        if matching.fallback_pairs:
            extra["fallback_pairs"] = [list(p) for p in matching.fallback_pairs]
        if matching.unpaired:
            extra["unpaired"] = list(matching.unpaired)
        self.log.append(records.preference_result(gid, self.round, matching.pairs, extra))
        partner_of = {a: b for a, b in matching.pairs} | {b: a for a, b in matching.pairs}
        for seat in seats:
            self.partners[seat].append(partner_of.get(seat))
        return list(matching.pairs)

    async def private_subrounds(self, pairs: Sequence[tuple[str, str]]) -> None:
        for index, (subround, limit) in enumerate(zip(records.PRIVATE_SUBROUNDS, self.spec.words.private), 1):

            async def exchange(
                pair: tuple[str, str], subround: int = subround, limit: int = limit, index: int = index
            ) -> list[tuple[PrivateLine, LimitedText]]:
                said: list[tuple[PrivateLine, LimitedText]] = []
                for speaker, target in (pair, pair[::-1]):
                    text = await self.say(
                        speaker,
                        "private",
                        f"r{self.round}/private{subround}/{speaker}",
                        prompts.private_task(target, limit, index),
                        limit,
                        extra_private=[line for line, _ in said],
                        partner=target,
                        subround=subround,
                    )
                    said.append((PrivateLine(self.round, subround, speaker, target, text.text), text))
                return said

            results = await gather_moves(*(exchange(p) for p in pairs))
            for said in results:  # committed in pair order, whatever order the replies came in
                for line, text in said:
                    self.private.append(line)
                    self.log.append(
                        records.private(
                            self.gid,
                            self.round,
                            subround,
                            self.pid[line.speaker],
                            self.pid[line.target],
                            line.text,
                            text.extra(),
                        )
                    )

    def keeps_memory(self, seat: str) -> bool:
        return self.spec.variant == "memory" and (
            not self.spec.memory_players or self.name_of[seat] in self.spec.memory_players
        )

    async def memory_notes(self) -> None:
        """The memory variant: after the private talk and before the vote (where the original logs
        them), each seat keeping memory writes a note that only it sees in later rounds."""
        limit = self.spec.words.memory
        seats = [s for s in self.active if self.keeps_memory(s)]
        notes = await gather_moves(
            *(self.say(s, "memory", f"r{self.round}/memory/{s}", prompts.memory_task(limit), limit) for s in seats)
        )
        for seat, note in zip(seats, notes):
            self.memory[seat].append((self.round, note.text))
            self.log.append(records.memory_note(self.gid, self.round, self.pid[seat], note.text, note.extra()))

    async def vote_round(self) -> None:
        voters = self.shuffled(self.active, "vote", self.round)
        results = await gather_moves(
            *(
                self.cast_vote(
                    s,
                    "vote",
                    [o for o in self.active if o != s],
                    prompts.vote_task([o for o in self.active if o != s]),
                    f"r{self.round}/vote/{s}",
                )
                for s in voters
            )
        )
        for result in results:
            self.record_vote(result, "vote")
        self.announce_votes(results, "vote")
        tally = {s: 0 for s in self.active}
        for r in results:
            if r.target is not None:
                tally[r.target] += 1
        decision = await self.settle(tally, revote=True)
        self.eliminate(decision)

    async def settle(self, tally: dict[str, int], revote: bool) -> Decision:
        top = max(tally.values())
        tied = [s for s in tally if tally[s] == top]
        if len(tied) == 1:
            return Decision(tied[0], "votes", tally, None, None)
        revote_tally: dict[str, int] | None = None
        voters = [s for s in self.active if s not in tied]
        if revote:  # the tied seats speak even when every seat is tied and nobody can re-vote
            await self.tiebreak_statements(tied, voters)
        if revote and voters:
            order = self.shuffled(voters, "revote", self.round)
            results = await gather_moves(
                *(
                    self.cast_vote(
                        s, "revote", tied, prompts.revote_task(tied), f"r{self.round}/revote/{s}", tied=list(tied)
                    )
                    for s in order
                )
            )
            for result in results:
                self.record_vote(result, "revote")
            self.announce_votes(results, "revote")
            revote_tally = {s: 0 for s in tied}
            for r in results:
                if r.target is not None:
                    revote_tally[r.target] += 1
            top = max(revote_tally.values())
            tied = [s for s in tied if revote_tally[s] == top]
            if len(tied) == 1:
                return Decision(tied[0], "revote", tally, revote_tally, None)
        cumulative = {s: self.votes_against[s] for s in tied}
        top = max(cumulative.values())
        tied = [s for s in tied if cumulative[s] == top]
        if len(tied) == 1:
            return Decision(tied[0], "cumulative", tally, revote_tally, cumulative)
        pick = self.rng("random", self.round).choice(sorted(tied, key=lambda s: int(s[1:])))
        return Decision(pick, "random", tally, revote_tally, cumulative)

    async def tiebreak_statements(self, tied: Sequence[str], voters: Sequence[str]) -> None:
        limit = self.spec.words.tiebreak
        for seat in self.shuffled(tied, "tiebreak", self.round):
            said = await self.say(
                seat,
                "tiebreak",
                f"r{self.round}/tiebreak/{seat}",
                prompts.tiebreak_task(tied, voters, limit),
                limit,
                tied=list(tied),
            )
            self.log.append(
                records.conversation(
                    self.gid, self.round, records.TIEBREAK_SUBROUND, self.pid[seat], said.text, said.extra()
                )
            )
            self.public.append(PublicLine(self.round, "tiebreak", seat, said.text))

    def eliminate(self, decision: Decision, jury: bool = False) -> None:
        seat = decision.seat
        if not jury or decision.rule != "votes":  # the original logs a jury's verdict only when split
            self.log.append(
                records.elimination(
                    self.gid,
                    self.round,
                    self.pid[seat],
                    tie_break=decision.rule in ("cumulative", "random"),
                    random_pick=decision.rule == "random",
                    extra=decision.extra(),
                )
            )
        self.active.remove(seat)
        self.out.append((seat, self.round))
        how = {
            "votes": "by vote",
            "revote": "by re-vote",
            "cumulative": "on votes over the whole game",
            "random": "by chance after a tie",
        }[decision.rule]
        self.public.append(PublicLine(self.round, "elimination", None, f"{seat} is eliminated ({how})."))
        self.progress(f"round {self.round}: {seat} ({self.name_of[seat]}) out {how}")

    async def final(self) -> None:
        finalists = list(self.active)
        limit = self.spec.words.plea
        for seat in self.shuffled(finalists, "plea", self.round):
            other = next(s for s in finalists if s != seat)
            said = await self.say(
                seat, "plea", f"final/plea/{seat}", prompts.plea_task(other, limit), limit, finalists=finalists
            )
            self.log.append(
                records.conversation(
                    self.gid, self.round, records.PLEA_SUBROUND, self.pid[seat], said.text, said.extra()
                )
            )
            self.public.append(PublicLine(self.round, "plea", seat, said.text))
        jury = [seat for seat, _ in self.out]
        results = await gather_moves(
            *(
                self.cast_vote(
                    s, "jury", finalists, prompts.jury_task(finalists), f"final/jury/{s}", finalists=finalists
                )
                for s in jury
            )
        )
        for result in results:
            self.record_vote(result, "jury")
        tally = {s: 0 for s in finalists}
        for r in results:
            if r.target is not None:
                tally[r.target] += 1
        decision = await self.settle(tally, revote=False)
        self.eliminate(decision, jury=True)

    def final_ranks(self) -> dict[str, int]:
        n = len(self.labels)
        ranks = {self.pid[self.active[0]]: 1}
        for position, (seat, _) in enumerate(self.out):
            ranks[self.pid[seat]] = n - position
        return ranks

    async def play(self) -> list[records.Record]:
        while len(self.active) > 2:
            self.round += 1
            await self.public_subround()
            if self.spec.variant != "public_only":  # the public-only variant has no pairing or private talk
                pairs = await self.pairing()
                await self.private_subrounds(pairs)
            await self.memory_notes()
            await self.vote_round()
        self.round += 1
        await self.final()
        extra = {
            "game_version": GAME_VERSION,
            "seats": dict(self.name_of),
            "winner_seat": self.active[0],
            "history_rounds": self.spec.history_rounds,
            "content_id": self.spec.game_id,
            "votes": self.spec.votes,
            "variant": self.spec.variant,
        }
        self.log.append(records.final_results(self.gid, self.final_ranks(), extra))
        self.progress(f"winner: {self.active[0]} ({self.name_of[self.active[0]]})")
        return self.log


def planned_moves(spec: GameSpec) -> int:
    """The moves of a game as its structure plans them, for the job's progress line: every round
    until two seats remain (k statements, k partner rankings and 2 * floor(k / 2) private messages in
    each of the 3 subrounds unless public_only, a memory note per seat keeping one, k votes), then 2
    pleas and n - 2 jury votes. Re-asked votes and ties add a few more."""
    n = len(spec.seats)
    keeping = sum(1 for name in spec.seats if not spec.memory_players or name in spec.memory_players)
    moves = 0.0
    for k in range(n, 2, -1):
        moves += 2 * k  # statements and votes
        if spec.variant != "public_only":
            moves += k + len(records.PRIVATE_SUBROUNDS) * 2 * (k // 2)
        if spec.variant == "memory":
            moves += k * keeping / n  # the seats still in keep memory as often as all seats do
    return round(moves) + 2 + max(0, n - 2)


def game_spec(params: EliminationParams, scheduled: ScheduledGame) -> GameSpec:
    """The spec of a scheduled game under these params (one place, for one game or a shard)."""
    return GameSpec(
        scheduled.game_id,
        scheduled.seats,
        params.words,
        params.reply_tokens,
        params.history_rounds,
        votes=params.votes,
        variant=params.variant,
        memory_players=tuple(params.memory_players),
    )


def player_seed(spec: GameSpec) -> int:
    """The players' job seed of a game: every bot move and model sample is drawn from it."""
    return seed_from(GAME, spec.game_id)


async def play(
    spec: GameSpec, players: Mapping[str, Player], progress: Callable[[str], None] | None = None
) -> list[records.Record]:
    """Play one game with `players` (roster name -> Player, seeded from the game: `player_seed`);
    its log records, in the order the original writes them."""
    expect_moves(planned_moves(spec))
    return await EliminationGame(spec, players, progress).play()


@dataclass(frozen=True)
class GameOutput:
    log_path: Path
    calls_path: Path
    records: list[records.Record]


def run_game(
    spec: GameSpec,
    models: ModelsParams,
    out_dir: str | Path,
    *,
    root: str | Path = ".",
    progress: Callable[[str], None] | None = None,
) -> GameOutput:
    """Play one game; write `game_<id>.jsonl` and `calls.parquet` under `out_dir`."""
    return asyncio.run(play_game(spec, models, out_dir, root=root, progress=progress))


async def play_game(
    spec: GameSpec,
    models: ModelsParams,
    out_dir: str | Path,
    *,
    root: str | Path = ".",
    progress: Callable[[str], None] | None = None,
) -> GameOutput:
    """run_game on the running event loop (a shard job plays many games on one loop)."""
    out = Path(out_dir)
    gateway = Gateway(models, job=f"{GAME}/{spec.game_id}", root=root)
    players = make_players(models, gateway, player_seed(spec), names=sorted(set(spec.seats)), game=GAME)
    log_records = await play(spec, players, progress)
    for stale in [*out.glob(f"game_{spec.log_game_id}_*.jsonl"), *out.glob(f"game_{spec.game_id}*.jsonl")]:
        stale.unlink(missing_ok=True)  # an earlier run of the same game: only one log per game id
    log_path = records.write_log(out / records.log_file_name(spec.log_game_id, log_records), log_records)
    calls_path = out / "calls.parquet"
    gateway.write_calls(calls_path)
    return GameOutput(log_path, calls_path, log_records)

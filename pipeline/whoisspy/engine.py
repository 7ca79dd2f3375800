"""One game of Who is Spy, from its spec to its record.

A round: every surviving player describes its word in seat order from the starter; the referee
then removes every player who broke a rule in that round (own word, repeated description, no
answer or over the time limit); unless the game is over, every survivor votes for a player or
abstains, and a unique most-voted player is out. The game ends when the spy is out, when fewer
than `min_players` survive, or after `rounds` rounds; the spy wins if it is still in.

Every reply follows the rules whatever it says: a vote is read by `rules.vote_parse` (by default
the paper's appendix A: only a reply that is exactly one of the candidates' names counts, any other
output is an abstention), each vote event records how it was read (`ballot`), and a description is
cut at `max_chars` characters. In the reasoning variant the reasoning seat votes first and, by
default (`reasoning_analysis: public`, the paper), its analysis joins the public record before the
others vote, so they and every later prompt hear it. A reply the token limit cut before any visible text
(a reasoning model whose hidden reasoning spent its budget) still counts as that move (no answer,
an abstention), and its event says so (`empty_at_token_limit: true`), counted per model. Gateway
errors (auth, transport, a rejected request) are not moves: they stop the job, and a rerun resumes
from the response cache.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.core.artifacts import seed_from
from pipeline.core.artifacts.progress import expect_moves
from pipeline.core.models import Gateway, ModelsParams, MoveRequest, Player, Reply, gather_moves, make_players
from pipeline.whoisspy import bots as _bots  # noqa: F401  (registers the heuristic bot)
from pipeline.whoisspy.fouls import cut, normalize, redact, speech_fouls
from pipeline.whoisspy.prompts import INJECTED_LINES, RulesText, prompt_fingerprint, speech_messages, vote_messages
from pipeline.whoisspy.records import WhoIsSpyGame
from pipeline.whoisspy.schedule import ENGINE_VERSION, GameSpec
from pipeline.whoisspy.scoring import base_scores, vote_transfers

GAME = "whoisspy"
NO_DESCRIPTION = "(no description)"
_SEAT_MENTION = re.compile(r"\b(?:p|player)\s*(\d{1,2})\b|\b(abstain)\b", re.IGNORECASE)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Ballot:
    target: str | None  # the candidate voted for; None: an abstention
    kind: str  # one of config.BALLOTS: named, abstain, invalid


def _after_vote_marker(text: str) -> str | None:
    """What follows the last "VOTE:" marker (any case), or None when there is none."""
    marker = text.lower().rfind("vote:")
    return text[marker + 5 :] if marker >= 0 else None


def _paper_ballot(text: str, candidates: list[str], reasoned: bool) -> Ballot:
    # appendix A: "The content of the votes must be from the given list of names; any other output
    # will be counted as an abstention." A reasoned vote's content is its final VOTE line (a reply
    # without one, such as a bot's bare name, is all content).
    marked = _after_vote_marker(text) if reasoned else None
    content = (text if marked is None else marked).strip()
    if content in candidates:
        return Ballot(content, "named")
    return Ballot(None, "abstain" if content.lower() == "abstain" else "invalid")


def _lenient_ballot(text: str, candidates: list[str]) -> Ballot:
    # after the last "VOTE:" marker when there is one, else anywhere: the first mention of a
    # candidate ("P3", "player 3") counts; "abstain" before any candidate abstains
    scope = _after_vote_marker(text)
    for match in _SEAT_MENTION.finditer(text if scope is None else scope):
        if match.group(2):
            return Ballot(None, "abstain")
        name = f"P{int(match.group(1))}"
        if name in candidates:
            return Ballot(name, "named")
    return Ballot(None, "invalid")


def read_ballot(text: str, candidates: list[str], parse: str = "paper", reasoned: bool = False) -> Ballot:
    """How a vote reply reads under `parse` ("paper" or "lenient", params `rules.vote_parse`);
    `reasoned`: the reasoning variant's analysis followed by a "VOTE: <name>" line."""
    if parse == "paper":
        return _paper_ballot(text, candidates, reasoned)
    if parse == "lenient":
        return _lenient_ballot(text, candidates)
    raise ValueError(f"vote parse must be 'paper' or 'lenient', got {parse!r}")


def parse_vote(text: str, candidates: list[str], parse: str = "paper", reasoned: bool = False) -> str | None:
    """The candidate a vote names, or None (an abstention)."""
    return read_ballot(text, candidates, parse, reasoned).target


def spoken_analysis(reply: str, word: str, candidates: list[str]) -> str:
    """The part of a reasoned vote the others hear: the analysis without its final VOTE line (none
    when the reply is a bare vote), the speaker's own word hidden as in every description."""
    marker = reply.lower().rfind("vote:")
    if marker < 0 and _paper_ballot(reply, candidates, reasoned=False).kind != "invalid":
        return ""
    analysis = reply[:marker] if marker >= 0 else reply
    return redact(analysis.strip(), word)


async def timed_act(player: Player, request: MoveRequest) -> tuple[Reply, float]:
    """The player's reply and the seconds it took; a cached model reply counts its recorded time."""
    reply = await player.act(request)
    return reply, reply.latency_s


@dataclass
class Seat:
    index: int
    name: str
    model: str
    role: str
    word: str
    alive: bool = True
    eliminated_round: int | None = None
    eliminated_by: str | None = None
    fouls: list[str] = field(default_factory=list)


class Game:
    """The state of one game; `run()` plays it to the end and returns the record."""

    def __init__(self, spec: GameSpec, players: Mapping[str, Player]) -> None:
        self.spec = spec
        self.rules = spec.rules
        self.players = players
        self.rng = random.Random(seed_from(GAME, "game", spec.game_id))
        self.seats = [
            Seat(
                index=i,
                name=name,
                model=model,
                role="spy" if i == spec.spy_seat else "civilian",
                word=spec.spy_word if i == spec.spy_seat else spec.civilian_word,
            )
            for i, (name, model) in enumerate(zip(spec.seat_names, spec.seats))
        ]
        self.names = [s.name for s in self.seats]
        self.starter = spec.starter if spec.starter is not None else self.rng.randrange(len(self.seats))
        self.rules_text = RulesText(len(self.seats), self.rules.rounds, self.rules.min_players, self.rules.max_chars)
        self.events: list[dict[str, Any]] = []  # the full record, in order
        self.public: list[dict[str, Any]] = []  # what every player is told
        self.said: list[str] = []  # normalized descriptions so far, for the repeat rule
        self.civilian_votes: list[tuple[int, int | None]] = []
        self.rounds_played = 0
        self.reasoner = self.reasoning_seat()
        self.analysis_heard = spec.reasoning_analysis == "public"

    def reasoning_seat(self) -> Seat | None:
        """The reasoning variant's one reasoning player, as in the paper: the game's focal model
        when it plays a civilian (its first civilian seat); None in every other game."""
        if self.spec.variant != "reasoning" or self.spec.focal is None:
            return None
        return next((s for s in self.seats if s.model == self.spec.focal and s.role == "civilian"), None)

    # -- state ------------------------------------------------------------------------------
    @property
    def spy(self) -> Seat:
        return self.seats[self.spec.spy_seat]

    def alive(self) -> list[Seat]:
        return [s for s in self.seats if s.alive]

    def speaking_order(self) -> list[Seat]:
        """Seat order from the original starter, skipping those who are out."""
        n = len(self.seats)
        return [self.seats[(self.starter + k) % n] for k in range(n) if self.seats[(self.starter + k) % n].alive]

    def end_reason(self) -> str | None:
        if not self.spy.alive:
            return "spy_out"
        if len(self.alive()) < self.rules.min_players:
            return "too_few_players"
        return None

    def bot_state(self, seat: Seat, round_no: int, phase: str, candidates: list[str]) -> dict[str, Any]:
        """The structured view a bot gets: its own seat and word and the public record only."""
        return {
            "game": GAME,
            "phase": phase,
            "seat": seat.name,
            "word": seat.word,
            "round": round_no,
            "alive": [s.name for s in self.alive()],
            "candidates": candidates,
            "speeches": [
                {"round": e["round"], "seat": e["seat"], "text": e["text"]}
                for e in self.public
                if e["type"] == "speech"
            ],
        }

    def eliminate(self, seat: Seat, round_no: int, by: str) -> None:
        seat.alive = False
        seat.eliminated_round = round_no
        seat.eliminated_by = by
        self.events.append({"type": "elimination", "round": round_no, "seat": seat.name, "by": by})

    # -- phases -----------------------------------------------------------------------------
    async def speak(self, seat: Seat, round_no: int) -> list[str]:
        request = MoveRequest(
            messages=speech_messages(seat.name, seat.word, self.names, round_no, self.public, self.rules_text),
            key=f"r{round_no}/speech/{seat.name}",
            kind="speech",
            max_tokens=self.spec.replies.speech_max_tokens,
            state=self.bot_state(seat, round_no, "speech", []),
        )
        reply, latency = await timed_act(self.players[seat.model], request)
        answered = bool(normalize(reply.text))
        speech = reply.text.strip()
        if seat.role == "spy" and self.spec.variant in INJECTED_LINES:
            # the variant's line is part of the spy's speech: inside the character limit and
            # under the same foul checks as the description it follows
            speech = f"{speech} {INJECTED_LINES[self.spec.variant]}".strip()
        text, truncated = cut(speech, self.rules.max_chars)
        fouls = speech_fouls(text, seat.word, self.said, latency, self.rules.time_limit_s)
        if not answered and "no_answer" not in fouls:
            fouls.insert(0, "no_answer")  # the line alone is not an answer from the model
        if normalize(text) and "timeout" not in fouls:
            self.said.append(normalize(text))
        # a late answer counts as no answer: nobody hears it
        shown = NO_DESCRIPTION if ("no_answer" in fouls or "timeout" in fouls) else redact(text, seat.word)
        self.events.append(
            {
                "type": "speech",
                "round": round_no,
                "seat": seat.name,
                "text": text,
                "shown": shown,
                "truncated": truncated,
                "latency_s": round(latency, 4),
                "fouls": fouls,
            }
        )
        if reply.empty_at_token_limit:  # the token limit cut it before any text (a reasoning model's budget)
            self.events[-1]["empty_at_token_limit"] = True
        for kind in fouls:
            self.events.append({"type": "foul", "round": round_no, "seat": seat.name, "kind": kind})
        seat.fouls.extend(fouls)
        self.public.append({"type": "speech", "round": round_no, "seat": seat.name, "text": shown})
        return fouls

    def vote_request(self, seat: Seat, round_no: int, voters: list[Seat]) -> MoveRequest:
        """The seat's vote, built from the public record as it stands now."""
        candidates = [s.name for s in voters if s is not seat]
        reasoning = seat is self.reasoner
        return MoveRequest(
            messages=vote_messages(
                seat.name,
                seat.word,
                self.names,
                round_no,
                self.public,
                candidates,
                self.rules_text,
                reasoning,
                analysis_heard=self.analysis_heard,
            ),
            key=f"r{round_no}/vote/{seat.name}",
            kind="reasoned_vote" if reasoning else "vote",
            choices=(*candidates, "abstain"),
            max_tokens=self.spec.replies.reasoning_max_tokens if reasoning else self.spec.replies.vote_max_tokens,
            state=self.bot_state(seat, round_no, "vote", candidates),
        )

    def announce_analysis(self, seat: Seat, round_no: int, request: MoveRequest, reply: str) -> None:
        """The reasoning seat's analysis, said aloud: in the public record every later prompt reads."""
        text = spoken_analysis(reply, seat.word, list(request.choices[:-1]))
        if text:
            self.events.append({"type": "analysis", "round": round_no, "seat": seat.name, "text": text})
            self.public.append({"type": "analysis", "round": round_no, "seat": seat.name, "text": text})

    async def vote(self, round_no: int) -> None:
        voters = self.alive()
        # a public analysis is said before the others vote, so the reasoning seat votes first
        first = [s for s in voters if s is self.reasoner and self.analysis_heard]
        answered: dict[str, tuple[MoveRequest, Reply, float]] = {}
        for seat in first:
            request = self.vote_request(seat, round_no, voters)
            reply, latency = await timed_act(self.players[seat.model], request)
            answered[seat.name] = (request, reply, latency)
            self.announce_analysis(seat, round_no, request, reply.text)
        rest = [s for s in voters if s not in first]
        requests = [self.vote_request(seat, round_no, voters) for seat in rest]
        answers = await gather_moves(*(timed_act(self.players[s.model], r) for s, r in zip(rest, requests)))
        for seat, request, (reply, latency) in zip(rest, requests, answers):
            answered[seat.name] = (request, reply, latency)
        votes: dict[str, str | None] = {}
        for seat in voters:  # recorded in seat order, whoever spoke first
            request, reply, latency = answered[seat.name]
            ballot = read_ballot(
                reply.text, list(request.choices[:-1]), self.rules.vote_parse, reasoned=request.kind == "reasoned_vote"
            )
            target = ballot.target
            votes[seat.name] = target
            event: dict[str, Any] = {
                "type": "vote",
                "round": round_no,
                "voter": seat.name,
                "target": target,
                "ballot": ballot.kind,
                "reply": reply.text,
                "latency_s": round(latency, 4),
            }
            if seat is self.reasoner:
                event["analysis"] = reply.text
                event["analysis_heard"] = self.analysis_heard
            if reply.empty_at_token_limit:  # an abstention the token limit made, not the model
                event["empty_at_token_limit"] = True
            self.events.append(event)
            target_index = self.names.index(target) if target else None
            if seat.role == "civilian":
                self.civilian_votes.append((seat.index, target_index))
        counts = Counter(t for t in votes.values() if t)
        top = max(counts.values(), default=0)
        leaders = sorted((name for name, c in counts.items() if c == top), key=self.names.index)
        out = leaders[0] if len(leaders) == 1 else None
        tied = leaders if len(leaders) > 1 else []
        self.events.append(
            {
                "type": "vote_result",
                "round": round_no,
                "counts": {n: counts[n] for n in self.names if counts.get(n)},
                "eliminated": out,
                "tied": tied,
            }
        )
        self.public.append(
            {"type": "votes", "round": round_no, "votes": votes, "eliminated": out, "tied": tied, "top": top}
        )
        if out:
            self.eliminate(self.seats[self.names.index(out)], round_no, "vote")

    # -- the game ---------------------------------------------------------------------------
    async def run(self) -> WhoIsSpyGame:
        reason = "rounds"
        for round_no in range(1, self.rules.rounds + 1):
            self.rounds_played = round_no
            fouled = [seat for seat in self.speaking_order() if await self.speak(seat, round_no)]
            for seat in fouled:
                self.eliminate(seat, round_no, "foul")
                self.public.append(
                    {"type": "foul_out", "round": round_no, "seat": seat.name, "kinds": sorted(set(seat.fouls))}
                )
            ended = self.end_reason()
            if ended:
                reason = ended
                break
            await self.vote(round_no)
            ended = self.end_reason()
            if ended:
                reason = ended
                break
        winner = "civilians" if not self.spy.alive else "spy"
        self.events.append({"type": "end", "round": self.rounds_played, "winner": winner, "reason": reason})
        return self.record(winner, reason)

    def record(self, winner: str, reason: str) -> WhoIsSpyGame:
        roles = [s.role for s in self.seats]
        spy_out = self.spy.eliminated_round if not self.spy.alive else None
        base = base_scores(roles, [s.alive for s in self.seats], spy_out, self.rules.rounds)
        transfers = vote_transfers(roles, self.civilian_votes)
        # validated from the JSON object as it was always built: the keys set are the keys written
        return WhoIsSpyGame.model_validate(
            {
                "game_id": self.spec.game_id,
                "variant": self.spec.variant,
                "engine_version": ENGINE_VERSION,
                "prompts": prompt_fingerprint(),
                "words": {"civilian": self.spec.civilian_word, "spy": self.spec.spy_word},
                "players": [
                    {
                        "seat": s.name,
                        "model": s.model,
                        "role": s.role,
                        "word": s.word,
                        "score": base[s.index] + transfers[s.index],
                        "base_score": base[s.index],
                        "vote_transfer": transfers[s.index],
                        "eliminated_round": s.eliminated_round,
                        "eliminated_by": s.eliminated_by,
                        "fouls": s.fouls,
                    }
                    for s in self.seats
                ],
                "starter": self.seats[self.starter].name,
                "events": self.events,
                "winner": winner,
                "end_reason": reason,
                "rounds_played": self.rounds_played,
                "rules": self.rules.model_dump(mode="json"),
                "replies": self.spec.replies.model_dump(mode="json"),
                "focal": self.spec.focal,
                "focal_role": self.spec.focal_role,
                "reasoning_seat": self.reasoner.name if self.reasoner else None,
                "reasoning_analysis": self.spec.reasoning_analysis if self.spec.variant == "reasoning" else None,
                "replicate": self.spec.replicate,
            }
        )


def planned_moves(spec: GameSpec) -> int:
    """The most moves a game's structure allows, for the job's progress line: a description and a
    vote per seat in every round (a game ends sooner once the spy is out or too few seats remain)."""
    return 2 * len(spec.seats) * spec.rules.rounds


async def play(spec: GameSpec, players: Mapping[str, Player]) -> WhoIsSpyGame:
    """Play one game with `players` (roster name -> Player, seeded from the game: `player_seed`); its typed record."""
    expect_moves(planned_moves(spec))
    record = await Game(spec, players).run()
    log.info(
        "game %s: %s win (%s) after %d round(s)", spec.game_id, record.winner, record.end_reason, record.rounds_played
    )
    return record


def player_seed(spec: GameSpec) -> int:
    """The players' job seed of a game: every bot move and model sample is drawn from it."""
    return seed_from(GAME, spec.game_id)


async def play_record(spec: GameSpec, models: ModelsParams, gateway: Gateway) -> WhoIsSpyGame:
    """Play one game; its typed record (`write_record(games/<game_id>.json, record)` writes it)."""
    players = make_players(models, gateway, player_seed(spec), names=sorted(set(spec.seats)), game=GAME)
    return await play(spec, players)


def run_record(spec: GameSpec, models: ModelsParams, gateway: Gateway) -> WhoIsSpyGame:
    return asyncio.run(play_record(spec, models, gateway))


async def play_game(spec: GameSpec, models: ModelsParams, gateway: Gateway) -> dict[str, Any]:
    """`play_record` as the record's JSON object (the bytes `write_json_atomic` gives equal `write_record`'s)."""
    return (await play_record(spec, models, gateway)).to_json()


def run_game(spec: GameSpec, models: ModelsParams, gateway: Gateway) -> dict[str, Any]:
    return run_record(spec, models, gateway).to_json()

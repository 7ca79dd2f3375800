"""Running one round of an XGL program: registers, players, ensure loop, beacon/replay, rewards.

The interpreter walks the syntax trees `xgl.py` checked; it never calls Python's eval. Judge
measures are symbolic until a reward or a comparison needs numbers, then scored together through
the judge's batching API. Players are reached through `Seat` objects (the play layer builds the
prompts); a round always ends, either at the end of the program or with a recorded error.
"""

from __future__ import annotations

import ast
import math
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pipeline.xent import functions as fn
from pipeline.xent.values import Conditioned, Resolved, Term, XentValue, resolve
from pipeline.xent.xgl import (
    LIST_KINDS,
    OMNISCIENT,
    REGISTERS,
    Instruction,
    Program,
    is_public,
    player_arg,
)

ENSURE_LIMIT = 10  # failures of one ensure line that are re-asked; the next one ends the round in error
MAX_STEPS = 4096  # executed lines per round (replays and re-asks included)
MAX_REGISTER_CHARS = 50_000
MAX_LIST_ITEMS = 1000
ZERO_SUM = {"black": "white", "white": "black"}


class JudgeLike(Protocol):
    """What the runtime needs from a judge (pipeline.core.judge.scoring.Judge has all of it)."""

    async def ascore_many(self, pairs: Sequence[tuple[str, str]]) -> Sequence[Any]: ...
    async def ais_true(self, statement: str, *args: object) -> bool: ...
    def first_n_tokens(self, text: str, n: int) -> str: ...
    def last_n_tokens(self, text: str, n: int) -> str: ...


class XGLRuntimeError(RuntimeError):
    """A round that cannot go on (a type error, an ensure limit); recorded, never raised past the round."""

    def __init__(self, line: int, message: str) -> None:
        self.line = line
        super().__init__(f"line {line}: {message}")


@dataclass(frozen=True)
class ElicitRequest:
    """What a seat is asked for: one register's move, with what the role may see."""

    role: str
    register: str
    max_tokens: int
    line: int
    elicit_index: int
    visible: Mapping[str, str]  # label -> text the role may see now
    failed: tuple[str, ...] = ()  # ensure conditions the last move failed, for a re-ask
    attempt: int = 1  # 1 for the first ask of this elicit, more after ensure failures
    events: tuple[dict[str, Any], ...] = ()  # this round so far, as the role may see it


@dataclass(frozen=True)
class MoveOutcome:
    move: str
    reply: str = ""
    prompts: int = 1  # model requests this move took
    tagged: bool = True  # the reply had a <move> tag (else the whole reply was the move)
    tokens_in: int = 0  # the player's token usage for this move
    tokens_out: int = 0


class Seat(Protocol):
    async def ask(self, request: ElicitRequest) -> MoveOutcome: ...


@dataclass
class MoveRecord:
    elicit_index: int
    role: str
    register: str
    move: str
    reply: str
    attempts: int
    line: int
    tagged: bool = True
    tokens_in: int = 0  # summed over the ensure re-asks of this move
    tokens_out: int = 0


@dataclass
class RewardRecord:
    reward_index: int
    role: str
    line: int
    expression: str
    terms: list[Term]
    resolved: Resolved

    @property
    def total(self) -> float:
        return self.resolved.total


@dataclass
class RoundResult:
    moves: list[MoveRecord] = field(default_factory=list)
    rewards: list[RewardRecord] = field(default_factory=list)
    error: str | None = None
    error_line: int | None = None
    registers: dict[str, Any] = field(default_factory=dict)
    ensure_failures: int = 0

    def total_for(self, roles: Sequence[str]) -> float:
        return math.fsum(r.total for r in self.rewards if r.role in roles)


StoryProvider = Callable[[int, int], Awaitable[str]]


class _Round:
    def __init__(
        self,
        program: Program,
        seats: Mapping[str, Seat],
        judge: JudgeLike,
        stories: StoryProvider | None,
        rng: random.Random | None,
    ) -> None:
        self.program = program
        self.rng = rng or random.Random(0)  # sample() and shuffle(): the map's generator
        self.scopes: list[dict[str, Any]] = []  # list comprehension variables
        self.seats = seats
        self.judge = judge
        self.stories = stories
        self.story_count = 0
        self.registers: dict[str, Any] = {r: ([] if r[0] in LIST_KINDS else "") for r in REGISTERS}
        self.revealed: dict[str, dict[str, str]] = {}  # role -> label -> register name or "=literal"
        self.snapshots: dict[str, dict[str, str]] = {}
        self.result = RoundResult()
        self.line = 0

    def fail(self, message: str) -> XGLRuntimeError:
        return XGLRuntimeError(self.line, message)

    # -- visibility ---------------------------------------------------------------------------
    def visible(self, role: str) -> dict[str, str]:
        shown: dict[str, str] = {}
        for name in sorted(REGISTERS):
            value = self.registers[name]
            if not value:
                continue
            if role in OMNISCIENT or is_public(name) or name in self.revealed.get(role, {}):
                shown[name] = value if isinstance(value, str) else " | ".join(value)
        shown.update(self.snapshots.get(role, {}))
        return shown

    def events_for(self, role: str) -> tuple[dict[str, Any], ...]:
        events: list[dict[str, Any]] = []
        for move in self.result.moves:
            if role in OMNISCIENT or move.role == role:
                events.append({"type": "move", "role": move.role, "register": move.register, "move": move.move})
        for reward in self.result.rewards:
            if role in OMNISCIENT or reward.role == role:
                events.append(
                    {"type": "reward", "role": reward.role, "total_bits": reward.total, "expression": reward.expression}
                )
        return tuple(events)

    # -- evaluation ------------------------------------------------------------------------------
    async def value(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            for scope in reversed(self.scopes):
                if node.id in scope:
                    return scope[node.id]
            return self.registers[node.id]
        if isinstance(node, ast.List):
            items = [await self.value(e) for e in node.elts]
            return [self.text(i, "a list item") for i in items]
        if isinstance(node, ast.Subscript):
            return await self.subscript(node)
        if isinstance(node, ast.ListComp):
            return await self.comprehension(node)
        if isinstance(node, ast.UnaryOp):
            operand = await self.value(node.operand)
            if isinstance(node.op, ast.Not):
                return not self.boolean(operand)
            if isinstance(operand, XentValue) or _is_number(operand):
                return -operand
            raise self.fail(f"unary - needs a xent value or a number, got {_kind(operand)}")
        if isinstance(node, ast.BoolOp):
            is_and = isinstance(node.op, ast.And)
            for part in node.values:
                truth = self.boolean(await self.value(part) if not isinstance(part, ast.Constant) else part.value)
                if truth != is_and:
                    return truth
            return is_and
        if isinstance(node, ast.BinOp):
            return self.binop(node.op, await self.value(node.left), await self.value(node.right))
        if isinstance(node, ast.Compare):
            left = await self.comparable(await self.value(node.left))
            for op, right_node in zip(node.ops, node.comparators):
                right = await self.comparable(await self.value(right_node))
                if not self.compare(op, left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.Call):
            return await self.call(node)
        raise self.fail(f"{type(node).__name__} cannot be evaluated")  # the checker keeps this out

    async def subscript(self, node: ast.Subscript) -> Any:
        """s[i], s[a:b], l[i], l[a:b] with Python's meaning (negative indices count from the end)."""
        items = await self.value(node.value)
        if not isinstance(items, (str, list)):
            raise self.fail(f"only a string or a list can be indexed, got {_kind(items)}")
        if isinstance(node.slice, ast.Slice):
            low = (
                None if node.slice.lower is None else self.integer(await self.value(node.slice.lower), "a slice start")
            )
            high = None if node.slice.upper is None else self.integer(await self.value(node.slice.upper), "a slice end")
            return items[low:high]
        number = self.integer(await self.value(node.slice), "an index")
        if not -len(items) <= number < len(items):
            raise self.fail(
                f"index {number} is outside the {'list' if isinstance(items, list) else 'string'} "
                f"(it has {len(items)} items)"
            )
        return items[number]

    async def comprehension(self, node: ast.ListComp) -> list[str]:
        loop = node.generators[0]
        items = await self.value(loop.iter)
        if not isinstance(items, list):
            raise self.fail(f"a list comprehension loops over a list (e.g. s.split()), got {_kind(items)}")
        name = loop.target.id  # type: ignore[attr-defined]
        made: list[str] = []
        for item in items:
            self.scopes.append({name: item})
            try:
                if all([self.boolean(await self.value(c)) for c in loop.ifs]):
                    made.append(self.text(await self.value(node.elt), "an item of a list comprehension"))
            finally:
                self.scopes.pop()
        if len(made) > MAX_LIST_ITEMS:
            raise self.fail(f"a list holds at most {MAX_LIST_ITEMS} items")
        return made

    def binop(self, op: ast.operator, left: Any, right: Any) -> Any:
        if isinstance(op, ast.Mult):
            return self.scale(left, right)
        if isinstance(op, ast.BitOr):
            return Conditioned(self.text(left, "the left of |"), self.text(right, "the right of |"))
        if isinstance(op, (ast.FloorDiv, ast.Mod)):
            a, b = self.text(left, "a cut"), self.text(right, "a cut")
            return fn.cut_before(a, b) if isinstance(op, ast.FloorDiv) else fn.cut_after(a, b)
        if isinstance(op, ast.Add):
            if isinstance(left, str) and isinstance(right, str):
                return self.sized(left + right)
            if isinstance(left, list) and isinstance(right, list):
                if len(left) + len(right) > MAX_LIST_ITEMS:
                    raise self.fail(f"a list holds at most {MAX_LIST_ITEMS} items")
                return left + right
        if isinstance(left, XentValue) and isinstance(right, XentValue):
            return left + right if isinstance(op, ast.Add) else left - right
        if _is_number(left) and _is_number(right):
            return left + right if isinstance(op, ast.Add) else left - right
        sign = "+" if isinstance(op, ast.Add) else "-"
        raise self.fail(
            f"cannot compute {_kind(left)} {sign} {_kind(right)}: + joins two strings, two lists or "
            "two xent values; - subtracts xent values"
        )

    def scale(self, left: Any, right: Any) -> Any:
        """`*`: a xent value times a number (either order), or two numbers."""
        if isinstance(left, XentValue) and _is_number(right):
            return left.scaled(float(right))
        if _is_number(left) and isinstance(right, XentValue):
            return right.scaled(float(left))
        if _is_number(left) and _is_number(right):
            return left * right
        raise self.fail(f"cannot compute {_kind(left)} * {_kind(right)}: * scales a xent value by a number")

    async def comparable(self, value: Any) -> Any:
        if isinstance(value, XentValue):
            return (await resolve(value, self.judge.ascore_many)).total
        return value

    def compare(self, op: ast.cmpop, left: Any, right: Any) -> bool:
        if isinstance(op, (ast.In, ast.NotIn)):
            if isinstance(right, str):  # substring, as the reference's XString.__contains__
                found = self.text(left, "the left of `in` a string") in right
            elif isinstance(right, list):
                found = left in right
            else:
                raise self.fail(f"`in` needs a string or a list on its right, got {_kind(right)}")
            return found == isinstance(op, ast.In)
        if isinstance(op, (ast.Eq, ast.NotEq)):
            if type(left) is not type(right) and not (_is_number(left) and _is_number(right)):
                raise self.fail(f"cannot compare {_kind(left)} with {_kind(right)}")
            return (left == right) == isinstance(op, ast.Eq)
        if not (_is_number(left) and _is_number(right)):
            raise self.fail(f"< <= > >= compare numbers or xent values, got {_kind(left)} and {_kind(right)}")
        return {ast.Lt: left < right, ast.LtE: left <= right, ast.Gt: left > right, ast.GtE: left >= right}[type(op)]

    def boolean(self, value: Any) -> bool:
        if isinstance(value, bool):
            return value
        raise self.fail(f"expected a condition (true or false), got {_kind(value)}")

    def text(self, value: Any, where: str) -> str:
        if isinstance(value, str):
            return value
        raise self.fail(f"{where} must be a string, got {_kind(value)}")

    def words(self, value: Any, where: str) -> str | list[str]:
        if isinstance(value, (str, list)):
            return value
        raise self.fail(f"{where} must be a string or a list, got {_kind(value)}")

    def integer(self, value: Any, where: str) -> int:
        if type(value) is int:
            return value
        raise self.fail(f"{where} must be an integer, got {_kind(value)}")

    def sized(self, text: str) -> str:
        if len(text) > MAX_REGISTER_CHARS:
            raise self.fail(f"a string may hold at most {MAX_REGISTER_CHARS} characters")
        return text

    async def method(self, node: ast.Call) -> Any:
        """s.split([sep]) and sep.join(l), as the reference's XString methods."""
        name = node.func.attr  # type: ignore[attr-defined]
        owner = self.text(await self.value(node.func.value), f"the object of .{name}()")  # type: ignore[attr-defined]
        args = [await self.value(a) for a in node.args]
        if name == "split":
            if len(args) > 1:
                raise self.fail(f"split() takes at most one separator, got {len(args)} arguments")
            separator = self.text(args[0], "the separator of split()") if args else None
            if separator == "":
                raise self.fail("split() needs a non-empty separator (or none: split on whitespace)")
            parts = fn.split(owner, separator)
            if len(parts) > MAX_LIST_ITEMS:
                raise self.fail(f"a list holds at most {MAX_LIST_ITEMS} items")
            return parts
        if len(args) != 1 or not isinstance(args[0], list):
            raise self.fail("join() takes one list, e.g. ' '.join(l)")
        return self.sized(fn.join(owner, args[0]))

    async def call(self, node: ast.Call) -> Any:
        if isinstance(node.func, ast.Attribute):
            return await self.method(node)
        name = node.func.id  # type: ignore[attr-defined]
        if name == "story":
            return await self.story(node)
        args = [await self.value(a) for a in node.args]

        def arity(low: int, high: int | None = None) -> None:
            high = low if high is None else high
            if not low <= len(args) <= high:
                expected = str(low) if low == high else f"{low} to {high}"
                raise self.fail(f"{name}() takes {expected} argument(s), got {len(args)}")

        if name in ("xent", "xed", "nex", "dex"):
            arity(1, 2)
            extra = self.text(args[1], f"the second argument of {name}()") if len(args) == 2 else ""
            first = args[0]
            # the reference's second argument is a pre-prompt: it comes before the string's own
            # prefix, and xed/dex measure against it (xed(s | x, p) = xent(s | p) - xent(s | p + x))
            if isinstance(first, Conditioned):
                string, prefix = first.string, extra + first.prefix
            else:
                string, prefix = self.text(first, f"the argument of {name}()"), extra
            if name in ("xent", "nex"):
                term = Term(string, ((prefix, 1.0 if name == "xent" else -1.0),))
            else:
                sign = 1.0 if name == "xed" else -1.0
                term = Term(string, ((extra, sign), (prefix, -sign)))
            return XentValue((term,))
        if name in ("is_true", "is_false"):
            if not args:
                raise self.fail(f"{name}() needs a statement")
            statement = self.text(args[0], f"the statement of {name}()")
            rest = [a if isinstance(a, str) else str(a) for a in args[1:]]
            truth = await self.judge.ais_true(statement, *rest)
            return truth if name == "is_true" else not truth
        if name == "remove_common_words":
            arity(2)
            return fn.remove_common_words(self.text(args[0], "argument 1"), self.words(args[1], "argument 2"))
        if name == "only_uses_words":
            arity(2)
            return fn.only_uses_words(self.words(args[0], "argument 1"), self.text(args[1], "argument 2"))
        if name in ("word_set", "common_word_set"):
            arity(1 if name == "word_set" else 2)
            texts = [self.text(a, f"an argument of {name}()") for a in args]
            return fn.word_set(texts[0]) if name == "word_set" else fn.common_word_set(texts[0], texts[1])
        if name in ("sample", "shuffle"):
            arity(1)
            if not isinstance(args[0], list):
                raise self.fail(f"{name}() takes a list, got {_kind(args[0])}")
            return fn.sample(args[0], self.rng) if name == "sample" else fn.shuffle(args[0], self.rng)
        if name in ("punish_negative", "reward_positive"):
            arity(1, 2)
            if not isinstance(args[0], XentValue):
                raise self.fail(f"{name}() takes a xent value such as xed(s | x), got {_kind(args[0])}")
            total = await self.comparable(args[0])
            factor = args[1] if len(args) == 2 else fn.DEFAULT_SCALE
            if not _is_number(factor):
                raise self.fail(f"the scale of {name}() must be a number, got {_kind(factor)}")
            return fn.punish_negative(total, factor) if name == "punish_negative" else fn.reward_positive(total, factor)
        if name == "only_uses_chars":
            arity(2)
            return fn.only_uses_chars(self.text(args[0], "argument 1"), self.text(args[1], "argument 2"))
        if name == "num_words":
            arity(1)
            return fn.num_words(self.text(args[0], "the argument of num_words()"))
        if name in ("first_n_tokens", "last_n_tokens"):
            arity(2)
            text = self.text(args[0], f"argument 1 of {name}()")
            n = max(self.integer(args[1], f"argument 2 of {name}()"), 0)
            return self.judge.first_n_tokens(text, n) if name == "first_n_tokens" else self.judge.last_n_tokens(text, n)
        if name == "len":
            arity(1)
            if isinstance(args[0], (str, list)):
                return len(args[0])
            raise self.fail(f"len() needs a string or a list, got {_kind(args[0])}")
        raise self.fail(f"unknown function {name}")

    async def story(self, node: ast.Call) -> str:
        size = 50
        if node.args:
            size = self.integer(await self.value(node.args[0]), "the argument of story()")
            if not 1 <= size <= 500:
                raise self.fail("story(n) takes a number of tokens between 1 and 500")
        if self.stories is None:
            raise self.fail("story() needs the judge's story source; build the map first (its stories become literals)")
        index = self.story_count
        self.story_count += 1
        return await self.stories(index, size)

    # -- instructions ----------------------------------------------------------------------------
    async def run(self) -> RoundResult:
        code = self.program.instructions
        flags = {"flag_1": 0, "flag_2": 0}
        replays_left: dict[int, int] = {}
        ensure_failures: dict[int, int] = {}
        last_elicit: int | None = None
        retry: tuple[int, tuple[str, ...], int] | None = None  # (elicit pc, failed conditions, attempt)
        elicit_rows: dict[int, list[int]] = {}  # elicit pc -> indices of its rows in result.moves
        pc = steps = 0
        try:
            while pc < len(code):
                steps += 1
                if steps > MAX_STEPS:
                    raise XGLRuntimeError(code[pc].number, f"more than {MAX_STEPS} steps in one round")
                ins = code[pc]
                self.line = ins.number
                if ins.op == "assign":
                    values: dict[str, Any] = {}
                    for k in ins.call.keywords:
                        assert k.arg is not None  # the parser (xgl) allows name=value arguments only
                        values[k.arg] = await self.value(k.value)
                    for name, value in values.items():
                        self.store(name, value)
                elif ins.op == "elicit":
                    retried: tuple[str, ...] = ()
                    attempt = 1
                    if retry is not None and retry[0] == pc:
                        retried, attempt = retry[1], retry[2]
                    retry = None
                    elicit_rows[pc] = await self.elicit(
                        ins, retried, attempt, elicit_rows.get(pc) if attempt > 1 else None
                    )
                    last_elicit = pc
                elif ins.op == "reveal":
                    self.reveal(ins)
                elif ins.op == "reward":
                    await self.reward(ins)
                elif ins.op == "ensure":
                    failed = await self.ensure(ins)
                    if failed:
                        self.result.ensure_failures += 1
                        ensure_failures[pc] = ensure_failures.get(pc, 0) + 1
                        if ensure_failures[pc] > ENSURE_LIMIT:  # the reference re-asks 10 times, errors on the 11th
                            raise XGLRuntimeError(
                                ins.number,
                                f"ensure failed {ensure_failures[pc]} times (limit "
                                f"{ENSURE_LIMIT} retries): {'; '.join(failed)}",
                            )
                        if last_elicit is None:
                            raise XGLRuntimeError(
                                ins.number, f"ensure failed with no elicit before it: {'; '.join(failed)}"
                            )
                        rows = elicit_rows[last_elicit]
                        attempts = self.result.moves[rows[0]].attempts if rows else 1
                        retry = (last_elicit, tuple(failed), attempts + 1)
                        pc = last_elicit
                        continue
                    ensure_failures.pop(pc, None)
                elif ins.op in LOOP_OPS:
                    pc = loop_step(ins, pc, flags, replays_left)
                    continue
                pc += 1
        except XGLRuntimeError as exc:
            self.result.error = str(exc)
            self.result.error_line = exc.line
        self.result.registers = dict(self.registers)
        return self.result

    def store(self, name: str, value: Any) -> None:
        if name[0] in LIST_KINDS:
            if not isinstance(value, list):
                raise self.fail(f"{name} holds a list, got {_kind(value)}")
            if len(value) > MAX_LIST_ITEMS:
                raise self.fail(f"a list holds at most {MAX_LIST_ITEMS} items")
        elif not isinstance(value, str):
            raise self.fail(f"{name} holds a string, got {_kind(value)}")
        else:
            self.sized(value)
        self.registers[name] = value

    async def elicit(
        self, ins: Instruction, failed: tuple[str, ...], attempt: int, rows: list[int] | None
    ) -> list[int]:
        role, args = player_arg(ins)
        *registers, limit = args
        max_tokens = limit.value  # type: ignore[attr-defined]
        seat = self.seats.get(role)
        if seat is None:
            raise self.fail(f"nobody plays {role}")
        indices: list[int] = []
        for k, reg in enumerate(registers):
            name = reg.id  # type: ignore[attr-defined]
            elicit_index = rows[k] if rows else len(self.result.moves)
            request = ElicitRequest(
                role,
                name,
                max_tokens,
                ins.number,
                self.result.moves[elicit_index].elicit_index if rows else elicit_index,
                self.visible(role),
                failed,
                attempt,
                self.events_for(role),
            )
            outcome = await seat.ask(request)
            move = self.judge.first_n_tokens(outcome.move, max_tokens)
            self.registers[name] = move
            if rows:
                record = self.result.moves[elicit_index]
                record.move, record.reply, record.attempts = move, outcome.reply, record.attempts + outcome.prompts
                record.tagged = outcome.tagged
                record.tokens_in += outcome.tokens_in
                record.tokens_out += outcome.tokens_out
            else:
                self.result.moves.append(
                    MoveRecord(
                        request.elicit_index,
                        role,
                        name,
                        move,
                        outcome.reply,
                        outcome.prompts,
                        ins.number,
                        outcome.tagged,
                        outcome.tokens_in,
                        outcome.tokens_out,
                    )
                )
            indices.append(elicit_index)
        return indices

    def reveal(self, ins: Instruction) -> None:
        role, args = player_arg(ins)
        for arg in args:
            if isinstance(arg, ast.Name):
                self.revealed.setdefault(role, {})[arg.id] = arg.id
            else:  # an expression: what it is now, under its source text
                label = ast.get_source_segment(ins.text, arg) or ast.unparse(arg)
                self.snapshots.setdefault(role, {})[label] = self._snapshot(arg)

    def _snapshot(self, node: ast.AST) -> str:
        # reveal() of an expression only combines strings; evaluate it synchronously without the judge
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            value = self.registers[node.id]
            return value if isinstance(value, str) else " | ".join(value)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.FloorDiv, ast.Mod)):
            return self.binop(node.op, self._snapshot(node.left), self._snapshot(node.right))
        raise self.fail("reveal() shows registers or string expressions made of + // %")

    async def reward(self, ins: Instruction) -> None:
        role, args = player_arg(ins)
        value = await self.value(args[0])
        if not isinstance(value, XentValue):
            raise self.fail(f"reward() needs a xent value such as xed(s | x), got {_kind(value)}")
        if role == "env":  # env plays for constraints only: its rewards are zero
            return
        resolved = await resolve(value, self.judge.ascore_many)
        index = len({r.reward_index for r in self.result.rewards})
        expression = ast.get_source_segment(ins.text, args[0]) or ast.unparse(args[0])
        self.result.rewards.append(RewardRecord(index, role, ins.number, expression, list(value.terms), resolved))
        if role in ZERO_SUM:  # black and white: a reward to one is its negative to the other
            mirror = -value
            negated = Resolved(tuple(type(t)(t.term, t.token, 0.0 - t.bits) for t in resolved.tokens))
            self.result.rewards.append(
                RewardRecord(index, ZERO_SUM[role], ins.number, f"-({expression})", list(mirror.terms), negated)
            )

    async def ensure(self, ins: Instruction) -> list[str]:
        failed: list[str] = []
        for arg in ins.call.args:
            value = await self.value(arg)
            if isinstance(value, str):  # ensure("claim") means ensure(is_true("claim"))
                value = await self.judge.ais_true(value)
            if not self.boolean(value):
                failed.append(ast.get_source_segment(ins.text, arg) or ast.unparse(arg))
        return failed


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a condition"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, XentValue):
        return "a xent value"
    if isinstance(value, Conditioned):
        return "s | x (only allowed inside xent/xed/nex/dex)"
    if _is_number(value):
        return "a number"
    return type(value).__name__


def asks_per_round(program: Program) -> int:
    """The asks one round of `program` makes when every `ensure` passes: one per register of each
    `elicit` line reached, `beacon`/`replay` loops followed as `_Round.run` follows them (their
    control flow is fixed: a replay's count is a literal). For the job's progress line."""
    code = program.instructions
    flags = {"flag_1": 0, "flag_2": 0}
    replays_left: dict[int, int] = {}
    pc = steps = asks = 0
    while pc < len(code) and steps < MAX_STEPS:
        steps += 1
        ins = code[pc]
        if ins.op in LOOP_OPS:
            pc = loop_step(ins, pc, flags, replays_left)
            continue
        if ins.op == "elicit":
            asks += len(player_arg(ins)[1]) - 1  # the registers; the last argument is max_tokens
        pc += 1
    return asks


#: the instructions of XGL's loops: `beacon` marks where a loop starts, `replay` jumps back to it
LOOP_OPS = ("beacon", "replay")


def loop_step(ins: Any, pc: int, flags: dict[str, int], replays_left: dict[int, int]) -> int:
    """The instruction after the `beacon` or `replay` at `pc`: a beacon records its flag; a replay
    jumps back to its flag while it has repeats left (its count is a literal, xgl checks it)."""
    if ins.op == "beacon":
        flags[ins.call.args[0].id] = pc + 1
        return pc + 1
    times: int = ins.call.args[1].value
    left = replays_left.get(pc, times)
    if left > 0:
        replays_left[pc] = left - 1
        return flags[ins.call.args[0].id]
    replays_left.pop(pc, None)  # an outer loop runs this inner loop again in full
    return pc + 1


async def run_round(
    program: Program,
    seats: Mapping[str, Seat],
    judge: JudgeLike,
    stories: StoryProvider | None = None,
    rng: random.Random | None = None,
) -> RoundResult:
    """One pass through `program`; errors end the round and are recorded in the result.

    `rng` draws sample() and shuffle(); pass one generator per map (seeded from the map) so that
    successive rounds continue its stream, as the reference's per-map judge generator does.
    """
    return await _Round(program, seats, judge, stories, rng).run()

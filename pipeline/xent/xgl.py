"""XGL programs: parsing and static checks (docs/xent.md, "XGL functions and operators").

A program has at most 64 lines; each line is blank, a `#` comment, or one instruction call that
parses as a Python expression. Nothing here ever runs Python: each line's syntax tree is walked
and only the node types, names and literal sizes XGL needs are accepted; anything else is a
`ParseError` naming the line, the column and what was expected. The runtime (`runtime.py`)
evaluates the checked trees with its own interpreter.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

MAX_LINES = 64
MAX_LINE_CHARS = 8000  # a built map's line holds a few story literals
MAX_NODES_PER_LINE = 400
MAX_STRING_LITERAL = 4000
MAX_INT_LITERAL = 100_000
MAX_ELICIT_TOKENS = 1000
MAX_REPLAY = 1000

REGISTER_KINDS = "abclstxyp"
REGISTERS: frozenset[str] = frozenset(f"{k}{s}" for k in REGISTER_KINDS for s in ("", "1", "2", "3"))
STATIC_KINDS = "abc"  # instance data: set only in the setup lines (and by map building)
PUBLIC_KINDS = "abp"  # every player sees them
LIST_KINDS = "l"  # lists of strings; every other register holds a string
PLAYERS: tuple[str, ...] = ("black", "white", "alice", "bob", "carol", "env")
OMNISCIENT: frozenset[str] = frozenset({"black", "white", "env"})
FLAGS: tuple[str, ...] = ("flag_1", "flag_2")
INSTRUCTIONS: tuple[str, ...] = ("assign", "elicit", "reveal", "reward", "ensure", "beacon", "replay")
JUDGE_FUNCTIONS: frozenset[str] = frozenset({"xent", "xed", "nex", "dex"})
# story() is replaced by a literal when a map is built (see maps.py)
BUILD_FUNCTIONS: frozenset[str] = frozenset({"story"})
FUNCTIONS: frozenset[str] = (
    JUDGE_FUNCTIONS
    | BUILD_FUNCTIONS
    | frozenset(
        {
            "is_true",
            "is_false",
            "remove_common_words",
            "only_uses_words",
            "only_uses_chars",
            "num_words",
            "word_set",
            "common_word_set",
            "sample",
            "shuffle",
            "punish_negative",
            "reward_positive",
            "first_n_tokens",
            "last_n_tokens",
            "len",
        }
    )
)
METHODS: frozenset[str] = frozenset({"split", "join"})  # s.split(sep), sep.join(l)

_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.BitOr: "|", ast.FloorDiv: "//", ast.Mod: "%"}
_CMPOPS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq, ast.In, ast.NotIn)
EXPECTED_VALUE = (
    "a register (a b c l s t x y p, optionally with suffix 1-3), a string or number literal, "
    "+ - * | // %, a comparison (< <= > >= == != in, not in), and/or/not, a list literal, "
    "an index or slice (l[0], s[1:5]), s.split(sep), sep.join(l), a list comprehension "
    "[f(w) for w in l if ...], or a call to one of " + ", ".join(sorted(FUNCTIONS))
)


def register_kind(name: str) -> str:
    return name[0]


def is_static(name: str) -> bool:
    return register_kind(name) in STATIC_KINDS


def is_public(name: str) -> bool:
    return register_kind(name) in PUBLIC_KINDS


class ParseError(ValueError):
    """A program that is not valid XGL; the message names the line, the column and the fix."""

    def __init__(self, line: int, column: int, message: str, source: str = "") -> None:
        self.line = line
        self.column = column
        self.detail = message
        where = f"{source}:" if source else ""
        super().__init__(f"{where}line {line}, column {column}: {message}")


@dataclass(frozen=True)
class Instruction:
    """One executable line: the instruction's name and its checked call node."""

    number: int  # 1-based line number in the program text
    op: str
    call: ast.Call
    text: str

    @property
    def args(self) -> list[ast.expr]:
        return list(self.call.args)


@dataclass(frozen=True)
class Program:
    """A checked XGL program: its text, its executable lines and its leading description."""

    source: str
    instructions: tuple[Instruction, ...]
    description: str = ""
    meta: dict[str, str] = field(default_factory=dict)
    name: str = ""

    @property
    def elicited_roles(self) -> list[str]:
        roles: list[str] = []
        for ins in self.instructions:
            if ins.op == "elicit":
                role = player_arg(ins)[0]
                if role not in roles:
                    roles.append(role)
        return roles

    @property
    def has_story_calls(self) -> bool:
        return any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "story"
            for ins in self.instructions
            for n in ast.walk(ins.call)
        )


def player_arg(ins: Instruction) -> tuple[str, list[ast.expr]]:
    """(player, remaining args) of elicit/reveal/reward: the leading player name is optional."""
    args = ins.args
    if args and isinstance(args[0], ast.Name) and args[0].id in PLAYERS:
        return args[0].id, args[1:]
    return "black", args


_META = re.compile(r"^#\s*@(\w+)\s*:\s*(.*?)\s*$")


def parse_program(text: str, *, source: str = "", name: str = "") -> Program:
    """Check every line of `text`; raise ParseError on the first problem."""
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        raise ParseError(
            MAX_LINES + 1, 1, f"a program has at most {MAX_LINES} lines, this one has {len(lines)}", source
        )
    instructions: list[Instruction] = []
    description: list[str] = []
    meta: dict[str, str] = {}
    in_header = True
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            found = _META.match(line)
            if found:
                meta[found.group(1)] = found.group(2)
            elif in_header:
                description.append(line.lstrip("#").strip())
            continue
        in_header = False
        instructions.append(_parse_line(raw, number, source))
    program = Program(text, tuple(instructions), "\n".join(description).strip(), meta, name)
    _check_program(program, source)
    return program


def load_program(path: str | Path) -> Program:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ParseError(1, 1, f"cannot read the program: {exc}", str(path)) from None
    return parse_program(text, source=str(path), name=path.stem)


def _parse_line(raw: str, number: int, source: str) -> Instruction:
    line = raw.strip()
    offset = len(raw) - len(raw.lstrip())
    if len(line) > MAX_LINE_CHARS:
        raise ParseError(number, 1, f"a line has at most {MAX_LINE_CHARS} characters", source)
    try:
        tree = ast.parse(line, mode="eval")
    except SyntaxError as exc:
        column = (exc.offset or 1) + offset
        raise ParseError(
            number,
            column,
            f"not a valid instruction ({exc.msg}); expected one call such as assign(x=...) or elicit(x, 10)",
            source,
        ) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ParseError(number, 1, f"not a valid instruction ({type(exc).__name__})", source) from None
    nodes = sum(1 for _ in ast.walk(tree))
    if nodes > MAX_NODES_PER_LINE:
        raise ParseError(
            number, 1, f"the line is too complex ({nodes} syntax nodes, at most {MAX_NODES_PER_LINE})", source
        )
    call = tree.body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name) or call.func.id not in INSTRUCTIONS:
        raise ParseError(
            number,
            getattr(call, "col_offset", 0) + 1 + offset,
            f"expected an instruction call: one of {', '.join(INSTRUCTIONS)}",
            source,
        )
    checker = _LineChecker(number, offset, source)
    ins = Instruction(number, call.func.id, call, line)
    checker.instruction(ins)
    return ins


class _LineChecker:
    def __init__(self, number: int, offset: int, source: str) -> None:
        self.number = number
        self.offset = offset
        self.source = source
        self.bound: list[str] = []  # list comprehension variables in scope

    def fail(self, node: ast.AST, message: str) -> ParseError:
        return ParseError(self.number, getattr(node, "col_offset", 0) + 1 + self.offset, message, self.source)

    # -- instructions --------------------------------------------------------------------
    def instruction(self, ins: Instruction) -> None:
        call = ins.call
        for star in call.args:
            if isinstance(star, ast.Starred):
                raise self.fail(star, "*arguments are not allowed")
        if ins.op != "assign" and call.keywords:
            raise self.fail(call, f"{ins.op}() takes no keyword arguments")
        getattr(self, f"_{ins.op}")(ins)

    def _assign(self, ins: Instruction) -> None:
        if ins.call.args or not ins.call.keywords:
            raise self.fail(ins.call, "assign() takes keyword arguments only, e.g. assign(s=story(), x1=x)")
        for keyword in ins.call.keywords:
            if keyword.arg is None:
                raise self.fail(keyword.value, "**arguments are not allowed")
            if keyword.arg not in REGISTERS:
                raise self.fail(
                    keyword.value,
                    f"{keyword.arg!r} is not a register; expected one of a b c l s t x y p with an optional suffix 1-3",
                )
            self.value(keyword.value)

    def _elicit(self, ins: Instruction) -> None:
        _, args = player_arg(ins)
        if len(args) < 2:
            raise self.fail(
                ins.call,
                "elicit([player,] register, ..., max_tokens) needs at least one register and a max_tokens number",
            )
        *registers, limit = args
        for reg in registers:
            if not isinstance(reg, ast.Name) or reg.id not in REGISTERS:
                raise self.fail(reg, "expected a register to store the move in (e.g. x, t1)")
            if is_static(reg.id) or reg.id[0] in LIST_KINDS:
                raise self.fail(reg, f"{reg.id} cannot receive a move (static or list register)")
        if not (isinstance(limit, ast.Constant) and type(limit.value) is int and 1 <= limit.value <= MAX_ELICIT_TOKENS):
            raise self.fail(limit, f"expected max_tokens as the last argument: an integer 1-{MAX_ELICIT_TOKENS}")

    def _reveal(self, ins: Instruction) -> None:
        _, args = player_arg(ins)
        if not args:
            raise self.fail(ins.call, "reveal([player,] register, ...) needs at least one register")
        for arg in args:
            self.value(arg)

    def _reward(self, ins: Instruction) -> None:
        _, args = player_arg(ins)
        if len(args) != 1:
            raise self.fail(ins.call, "reward([player,] value) takes exactly one value, e.g. reward(xed(s | x))")
        self.value(args[0])

    def _ensure(self, ins: Instruction) -> None:
        if not ins.call.args:
            raise self.fail(ins.call, "ensure(condition, ...) needs at least one condition")
        for arg in ins.call.args:
            self.value(arg)

    def _beacon(self, ins: Instruction) -> None:
        args = ins.call.args
        if len(args) != 1 or not (isinstance(args[0], ast.Name) and args[0].id in FLAGS):
            raise self.fail(ins.call, "expected beacon(flag_1) or beacon(flag_2)")

    def _replay(self, ins: Instruction) -> None:
        args = ins.call.args
        if len(args) != 2 or not (isinstance(args[0], ast.Name) and args[0].id in FLAGS):
            raise self.fail(ins.call, "expected replay(flag_1 or flag_2, times)")
        times = args[1]
        if not (isinstance(times, ast.Constant) and type(times.value) is int and 0 <= times.value <= MAX_REPLAY):
            raise self.fail(times, f"expected the number of replays: an integer 0-{MAX_REPLAY}")

    # -- values ----------------------------------------------------------------------------
    def value(self, node: ast.AST) -> None:
        if isinstance(node, ast.Constant):
            literal = node.value
            if type(literal) is str:
                if len(literal) > MAX_STRING_LITERAL:
                    raise self.fail(node, f"string literals have at most {MAX_STRING_LITERAL} characters")
            elif type(literal) is int:
                if abs(literal) > MAX_INT_LITERAL:
                    raise self.fail(node, f"integer literals are at most {MAX_INT_LITERAL} in size")
            elif type(literal) is float:
                if not abs(literal) < 1e9:
                    raise self.fail(node, "number literals must be finite and below 1e9")
            else:
                raise self.fail(
                    node, f"a {type(literal).__name__} literal is not allowed; expected a string or a number"
                )
        elif isinstance(node, ast.Name):
            if node.id not in REGISTERS and node.id not in self.bound:
                what = "a player" if node.id in PLAYERS else "a flag" if node.id in FLAGS else "an unknown name"
                raise self.fail(node, f"{node.id!r} is {what} here; expected {EXPECTED_VALUE}")
        elif isinstance(node, ast.BinOp):
            if type(node.op) not in _BINOPS:
                raise self.fail(node, f"operator {type(node.op).__name__} is not allowed; expected + - * | // %")
            self.value(node.left)
            self.value(node.right)
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, (ast.USub, ast.Not)):
                raise self.fail(node, "only unary - and not are allowed")
            self.value(node.operand)
        elif isinstance(node, ast.BoolOp):
            for v in node.values:
                self.value(v)
        elif isinstance(node, ast.Compare):
            for op in node.ops:
                if not isinstance(op, _CMPOPS):
                    raise self.fail(node, "only the comparisons < <= > >= == != in, not in are allowed")
            self.value(node.left)
            for v in node.comparators:
                self.value(v)
        elif isinstance(node, ast.Call):
            self.call(node)
        elif isinstance(node, ast.List):
            for v in node.elts:
                self.value(v)
        elif isinstance(node, ast.Subscript):
            self.value(node.value)
            index = node.slice
            if isinstance(index, ast.Slice):
                if index.step is not None:
                    raise self.fail(node, "a slice takes a start and an end, no step (e.g. s[0:10])")
                for bound in (index.lower, index.upper):
                    if bound is not None:
                        self.value(bound)
            else:
                self.value(index)
        elif isinstance(node, ast.ListComp):
            self.comprehension(node)
        else:
            raise self.fail(node, f"{type(node).__name__} is not allowed; expected {EXPECTED_VALUE}")

    def call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Attribute):
            if node.func.attr not in METHODS:
                raise self.fail(node, f"only the methods {', '.join(sorted(METHODS))} can be called, e.g. s.split(' ')")
            self.value(node.func.value)
        elif not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            raise self.fail(node, f"calls only to functions XGL knows: {', '.join(sorted(FUNCTIONS))}")
        if node.keywords:
            raise self.fail(node, "XGL calls take no keyword arguments")
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise self.fail(arg, "*arguments are not allowed")
            self.value(arg)

    def comprehension(self, node: ast.ListComp) -> None:
        if len(node.generators) != 1:
            raise self.fail(node, "a list comprehension has exactly one `for` (e.g. [w for w in l if w != ''])")
        loop = node.generators[0]
        target = loop.target
        if loop.is_async or not isinstance(target, ast.Name):
            raise self.fail(node, "a list comprehension loops one plain name over a list: [w for w in l]")
        if target.id in PLAYERS or target.id in FLAGS or target.id in FUNCTIONS or target.id in INSTRUCTIONS:
            raise self.fail(target, f"{target.id!r} cannot be a loop variable (it names a player, flag or function)")
        self.value(loop.iter)
        self.bound.append(target.id)
        try:
            for condition in loop.ifs:
                self.value(condition)
            self.value(node.elt)
        finally:
            self.bound.pop()


def _check_program(program: Program, source: str) -> None:
    """Rules across lines: static registers only in the setup lines, flag order."""
    setup = True
    flag_lines: dict[str, int] = {}
    for ins in program.instructions:
        if ins.op != "assign":
            setup = False
        else:
            for keyword in ins.call.keywords:
                if keyword.arg and is_static(keyword.arg) and not setup:
                    raise ParseError(
                        ins.number,
                        keyword.value.col_offset + 1,
                        f"{keyword.arg} is a static register: assign it only in the setup lines "
                        "before the first other instruction",
                        source,
                    )
        if ins.op == "beacon":
            flag = ins.call.args[0].id  # type: ignore[attr-defined]
            if flag in flag_lines:
                raise ParseError(ins.number, 1, f"{flag} is placed twice (first on line {flag_lines[flag]})", source)
            flag_lines[flag] = ins.number
    if "flag_1" in flag_lines and "flag_2" in flag_lines and flag_lines["flag_1"] > flag_lines["flag_2"]:
        raise ParseError(flag_lines["flag_1"], 1, "flag_1 must not come after flag_2", source)


def materialize_stories(program: Program, stories: list[str]) -> str:
    """The program's text with its story() calls, in reading order, replaced by `stories`."""
    count = 0
    replaced: dict[int, str] = {}

    class Swap(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            nonlocal count
            self.generic_visit(node)
            if isinstance(node.func, ast.Name) and node.func.id == "story":
                text = stories[count]
                count += 1
                return ast.copy_location(ast.Constant(text), node)
            return node

    for ins in program.instructions:
        before = count
        tree = Swap().visit(ast.parse(ins.text, mode="eval"))
        if count != before:
            replaced[ins.number] = ast.unparse(tree)
    if count != len(stories):
        raise ValueError(f"the program has {count} story() calls but {len(stories)} stories were given")
    lines = program.source.splitlines()
    for number, text in replaced.items():
        indent = lines[number - 1][: len(lines[number - 1]) - len(lines[number - 1].lstrip())]
        lines[number - 1] = indent + text
    return "\n".join(lines) + "\n"


def story_calls(program: Program) -> list[int]:
    """The token count each story() call asks for (default 50), in reading order."""
    sizes: list[int] = []
    for ins in program.instructions:
        calls = [
            n
            for n in ast.walk(ins.call)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "story"
        ]
        # ast.walk is breadth-first; reading order is by position
        for node in sorted(calls, key=lambda n: (n.lineno, n.col_offset)):
            size = 50
            if node.args and isinstance(node.args[0], ast.Constant) and type(node.args[0].value) is int:
                size = node.args[0].value
            sizes.append(size)
    return sizes

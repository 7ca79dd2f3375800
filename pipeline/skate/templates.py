"""Question templates for the setter bot: short deterministic programs with built-in pitfalls.

Each family draws its constants from the bot's seeded generator and returns the program plus
"near-miss" programs: the same code with a typical misconception (an off-by-one stop, truncating
instead of flooring division, early-bound closures...). The outputs of the near misses are
plausible wrong answers. The templates are our own trusted code, so the bot runs them in-process
to know their outputs; the game itself still takes the correct answer from the sandbox only.
"""

from __future__ import annotations

import contextlib
import io
import random
import re
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from pipeline.skate.parsing import option_text

WORDS = ("banana", "mississippi", "pipeline", "parallel", "tournament", "kayak", "abracadabra", "sandbox")


@dataclass(frozen=True)
class Template:
    family: str
    description: str
    program: str
    near_misses: tuple[str, ...]


def _slicing(rng: random.Random) -> Template:
    start, stop = rng.randint(0, 4), rng.randint(9, 15)
    i, j, k = rng.randint(-6, -1), rng.randint(0, 3), rng.choice([-1, -2, -3])
    body = f"xs = list(range({start}, {stop}))\nprint(xs[{i}:{{j}}:{{k}}], xs[{{j}}:{i}])"
    program = body.format(j=j, k=k)
    misses = (body.format(j=j + 1, k=k), body.format(j=j, k=-k), body.format(j=j - 1, k=k))
    return Template("slicing", "negative indices and negative steps in list slices", program, misses)


def _floor_division(rng: random.Random) -> Template:
    a, b = -rng.randint(7, 40), rng.randint(3, 9)
    c = rng.randint(7, 40)
    program = f"a, b, c = {a}, {b}, {c}\nprint(a // b, a % b, c // -b, c % -b, divmod(a, -b))"
    misses = (
        f"a, b, c = {a}, {b}, {c}\nprint(int(a / b), a - b * int(a / b), int(c / -b), c - (-b) * int(c / -b), (int(a / -b), a - (-b) * int(a / -b)))",
        f"a, b, c = {-a}, {b}, {c}\nprint(-(a // b), a % b, -(c // b), c % b, divmod(a, b))",
    )
    return Template("floor_division", "floor division and modulo with negative operands", program, misses)


def _late_binding(rng: random.Random) -> Template:
    n, m = rng.randint(3, 5), rng.randint(2, 7)
    program = f"funcs = [lambda x: x * i for i in range({n})]\nprint([f({m}) for f in funcs])"
    misses = (
        f"funcs = [lambda x, i=i: x * i for i in range({n})]\nprint([f({m}) for f in funcs])",
        f"funcs = [lambda x, i=i: x * i for i in range(1, {n + 1})]\nprint([f({m}) for f in funcs])",
        f"print([{m} * {n}] * {n})",
    )
    return Template("late_binding", "closures in a comprehension bind the loop variable late", program, misses)


def _mutable_default(rng: random.Random) -> Template:
    items = rng.sample(range(1, 10), 3)
    body = (
        "def add(item, bucket=[]):\n    bucket.append(item)\n    return bucket\n\n"
        f"first = add({items[0]})\nsecond = add({items[1]})\nthird = add({items[2]}, [])\n"
        "print(first, second, third, first is second)"
    )
    misses = (
        body.replace(
            "bucket=[]):\n    bucket.append",
            "bucket=None):\n    bucket = [] if bucket is None else bucket\n    bucket.append",
        ),
        body.replace("first is second", "first == [" + str(items[0]) + "]"),
    )
    return Template("mutable_default", "a mutable default argument is shared between calls", body, misses)


def _string_methods(rng: random.Random) -> Template:
    word = rng.choice(WORDS)
    ch = rng.choice(sorted(set(word)))
    body = f"s = {word!r}\nprint(s.split({ch!r}), s.rfind({ch!r}), s[::-2], s.strip({ch!r}))"
    misses = (
        f"s = {word!r}\nprint(s.split({ch!r}), s.find({ch!r}), s[::2], s.replace({ch!r}, ''))",
        f"s = {word!r}\nprint([p for p in s.split({ch!r}) if p], s.rfind({ch!r}) + 1, s[::-2], s.lstrip({ch!r}))",
        f"s = {word!r}\nprint(s.split({ch!r}), len(s) - s.rfind({ch!r}), s[-2::-2], s.rstrip({ch!r}))",
    )
    return Template("string_methods", "str.split with edge separators, rfind, strides and strip", body, misses)


def _counting(rng: random.Random) -> Template:
    word = rng.choice(WORDS)
    k = rng.randint(2, 3)
    body = (
        "counts = {}\n"
        f"for ch in {word!r}:\n    counts[ch] = counts.get(ch, 0) + 1\n"
        f"print(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:{k}], len(counts))"
    )
    misses = (
        body.replace("(-kv[1], kv[0])", "kv[1]"),
        body.replace("(-kv[1], kv[0])", "(-kv[1], kv[0]), reverse=True"),
        body.replace("counts.get(ch, 0) + 1", "1"),
    )
    return Template("counting", "counting with dict.get and sorting by a composite key", body, misses)


def _bitwise(rng: random.Random) -> Template:
    a, b, c = rng.randint(5, 60), rng.randint(5, 60), rng.randint(1, 4)
    program = f"a, b = {a}, {b}\nprint(a & b, a | b, a ^ b, a << {c}, ~a, -a >> {c})"
    misses = (
        f"a, b = {a}, {b}\nprint(a & b, a | b, a | b, a * {c}, -a, -(a >> {c}))",
        f"a, b = {a}, {b}\nprint(a | b, a & b, a ^ b, a << {c}, ~a + 1, -a // {c})",
    )
    return Template("bitwise", "bitwise operators, complement and arithmetic right shift", program, misses)


def _exceptions(rng: random.Random) -> Template:
    limit = rng.randint(2, 6)
    values = sorted(rng.sample(range(0, 9), 3))
    body = (
        "def check(x):\n    try:\n"
        f"        if x > {limit}:\n            raise ValueError(x)\n        return 'ok'\n"
        "    except ValueError:\n        return 'error'\n    finally:\n        print('finally', x)\n\n"
        f"print([check(v) for v in {values}])"
    )
    misses = (
        body.replace("        print('finally', x)", "        pass").replace(
            f"print([check(v) for v in {values}])",
            f"print([check(v) for v in {values}])\nprint('finally', {values[-1]})",
        ),
        body.replace(f"x > {limit}", f"x >= {limit}"),
        body.replace("return 'error'", "return 'ok'"),
    )
    return Template("exceptions", "finally runs before the caller sees a return value", body, misses)


def _generators(rng: random.Random) -> Template:
    n = rng.randint(4, 8)
    body = f"squares = (x * x for x in range({n}))\nfirst = sum(squares)\nprint(first, sum(squares), list(squares))"
    misses = (
        body.replace("(x * x for", "[x * x for").replace(f"range({n}))", f"range({n})]"),
        body.replace(f"range({n})", f"range(1, {n + 1})"),
    )
    return Template("generators", "a generator is exhausted after one pass", body, misses)


def _sorting(rng: random.Random) -> Template:
    words = rng.sample(["fig", "kiwi", "plum", "pear", "apple", "grape", "melon", "lime", "date"], 6)
    body = f"words = {words}\nprint(sorted(words, key=len)[:4], max(words, key=len), min(words))"
    misses = (
        f"words = {words}\nprint(sorted(sorted(words), key=len)[:4], max(words, key=len), min(words, key=len))",
        f"words = {words}\nprint(sorted(words, key=len, reverse=True)[:4], max(words), min(words))",
    )
    return Template("sorting", "sorted is stable and max returns the first of equal keys", body, misses)


def _formatting(rng: random.Random) -> Template:
    value = round(rng.uniform(-99, 99), 4)
    width, prec = rng.randint(7, 10), rng.randint(1, 3)
    body = (
        f"v = {value}\nprint(f'[{{v:>{width}.{prec}f}}]', f'[{{v:<+{width - 2}.{prec - 1}f}}]', f'[{{round(v):^6}}]')"
    )
    misses = (
        f"v = {value}\nprint(f'[{{v:<{width}.{prec}f}}]', f'[{{v:>+{width - 2}.{prec - 1}f}}]', f'[{{int(v):^6}}]')",
        f"v = {value}\nprint(f'[{{v:>{width}.{prec + 1}f}}]', f'[{{v:<{width - 2}.{prec}f}}]', f'[{{round(v):<6}}]')",
    )
    return Template("formatting", "format specs: alignment, sign, width and precision", body, misses)


def _sets(rng: random.Random) -> Template:
    a, b, m = rng.randint(0, 5), rng.randint(12, 20), rng.randint(3, 6)
    body = f"left = {{x % {m} for x in range({a}, {b})}}\nright = set(range(0, {b}, {m}))\nprint(sorted(left - right), sorted(left ^ right)[:5], len(left | right))"
    misses = (
        body.replace("left - right", "right - left"),
        body.replace(f"range({a}, {b})", f"range({a}, {b + 1})"),
        body.replace("left ^ right", "left & right"),
    )
    return Template("sets", "set difference, symmetric difference and union sizes", body, misses)


FAMILIES: dict[str, Callable[[random.Random], Template]] = {
    f.__name__.lstrip("_"): f
    for f in (
        _slicing,
        _floor_division,
        _late_binding,
        _mutable_default,
        _string_methods,
        _counting,
        _bitwise,
        _exceptions,
        _generators,
        _sorting,
        _formatting,
        _sets,
    )
}


def run_trusted(program: str) -> str:
    """The output of one of our own template programs (never a player's program)."""
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer):
            exec(compile(program, "<template>", "exec"), {"__name__": "__main__"})
    except Exception:  # noqa: BLE001 - a near miss may raise; it then gives no distractor
        return ""
    return option_text(buffer.getvalue())


def _number_variants(text: str, rng: random.Random) -> list[str]:
    numbers = list(re.finditer(r"-?\d+", text))
    variants = []
    for match in rng.sample(numbers, len(numbers)):
        value = int(match.group())
        for other in (value + 1, value - 1, -value, value * 2, value + 2):
            if other != value:
                variants.append(text[: match.start()] + str(other) + text[match.end() :])
    return variants


def _shape_variants(text: str) -> list[str]:
    variants = []
    if "[" in text:
        variants.append(text.replace("[", "(").replace("]", ")"))
    if "'" in text:
        variants.append(text.replace("'", '"'))
    lines = text.split("\\n")
    if len(lines) > 1:
        variants.append("\\n".join(reversed(lines)))
        variants.append("\\n".join(lines[1:]))
        variants.append("\\n".join(lines[:-1]))
    return variants


def plausible_distractors(template: Template, answer: str, count: int, rng: random.Random) -> list[str]:
    """Near-miss outputs first, then small edits of the answer; distinct and never the answer."""
    candidates = [run_trusted(p) for p in template.near_misses]
    candidates += _shape_variants(answer) + _number_variants(answer, rng)
    seen, chosen = {answer, ""}, []
    for item in candidates:
        if item not in seen:
            seen.add(item)
            chosen.append(item)
        if len(chosen) == count:
            break
    filler = 1
    while len(chosen) < count:  # an answer without numbers or structure: still give `count`
        item = f"{answer} {filler}"
        filler += 1
        if item not in seen:
            seen.add(item)
            chosen.append(item)
    return chosen


def draw_template(rng: random.Random, avoid: AbstractSet[str] = frozenset()) -> Template:
    """A template from a family not in `avoid` (when one is left)."""
    names = sorted(FAMILIES)
    fresh = [n for n in names if n not in avoid]
    return FAMILIES[rng.choice(fresh or names)](rng)

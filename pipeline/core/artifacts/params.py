"""Loading users' YAML params with errors that name the file, the field, the value and the fix."""

from __future__ import annotations

import difflib
import typing
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

import annotated_types
import yaml
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.fields import FieldInfo

ModelT = TypeVar("ModelT", bound=BaseModel)


class StrictParams(BaseModel):
    """Base of every params model: unknown keys are errors (a typo must not pass silently)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ParamsError(ValueError):
    """A problem in a user's params file; the message is meant to be shown as is."""


class InputError(ParamsError):
    """A command's input path that does not exist or holds nothing to read (shown as is, like ParamsError)."""


def did_you_mean(value: object, choices: Iterable[str]) -> str:
    """`did you mean 'x'?` for the choice closest to `value` (difflib), or '' when none is close."""
    close = difflib.get_close_matches(str(value), sorted(set(choices)), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else ""


def roster_hint(name: str, known: Iterable[str], models_source: str = "params/models.yaml") -> str:
    """The rest of a message about `name`, which is no roster name: the closest one, the roster
    and the fix (benchmarks' params name players by their roster name in params/models.yaml)."""
    names = list(known)
    guess = did_you_mean(name, names)
    return (
        f"{guess + ' ' if guess else ''}(known: {', '.join(names)}); fix the name, or add an entry "
        f"named {name!r} to the roster in {models_source}"
    )


def roster_problems(
    named: Iterable[tuple[str, str]],
    known: Sequence[str],
    source: str,
    models_source: str = "params/models.yaml",
    outside: Mapping[str, str] | None = None,
) -> list[str]:
    """One message per (field, name) whose name is no roster entry, or one played from outside the
    pipeline (`outside`: name -> its bot, `human` or `agent`): file, field, name and the fix. `field`
    is how the params file spells the place (`players[2]`)."""
    outside = outside or {}
    return [
        outside_seat_problem(f"{source}: {field}", name, outside[name], source, models_source)
        if name in outside
        else f"{source}: {field}: {name!r} is not a roster name in {models_source}; "
        f"{roster_hint(name, known, models_source)}"
        for field, name in named
        if name in outside or name not in known
    ]


def outside_seat_problem(where: str, name: str, bot: str, source: str, models_source: str) -> str:
    """A scheduled game's params name a seat played from outside the pipeline (a person, `bot: human`,
    or a program, `bot: agent`): its game would wait for moves nobody sends, so the params check stops
    it first, with the command that plays such a seat (`source` is the benchmark's params file)."""
    return (
        f"{where}: {name!r} is played from outside the pipeline (`bot: {bot}` in {models_source}), so no "
        f"scheduled game can seat it; remove it here, and play it with `python -m pipeline seat "
        f"{Path(source).stem} --as {name}` (a person) or pipeline.environments.make (a program)"
    )


def indexed(field: str, names: Iterable[str]) -> Iterator[tuple[str, str]]:
    """(`field[i]`, name) for each name of a list field, as roster_problems takes them."""
    return ((f"{field}[{i}]", name) for i, name in enumerate(names))


def _parts(annotation: Any) -> Iterator[Any]:
    """`annotation` and what it wraps (list[X], X | None, dict[str, X], Literal[...]), depth first."""
    yield annotation
    for arg in typing.get_args(annotation):
        yield from _parts(arg)


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    for part in _parts(annotation):
        if isinstance(part, type) and issubclass(part, BaseModel):
            return part
    return None


def _resolve(model: type[BaseModel], loc: tuple[Any, ...]) -> tuple[type[BaseModel] | None, FieldInfo | None]:
    """Walk `loc` through the nested models: (the model reached at its end, or None where the walk
    left the models; the FieldInfo of the last field named on the way)."""
    current: Any = model
    info: FieldInfo | None = None
    skip_key = False  # the next part is a key of a dict field (e.g. a provider name)
    for part in loc:
        if isinstance(part, int):
            continue
        if skip_key:
            skip_key = False
            continue
        fields = getattr(current, "model_fields", None)
        if not fields or part not in fields:
            return None, info
        info = fields[part]
        skip_key = any(typing.get_origin(p) is dict for p in _parts(info.annotation))
        current = _nested_model(info.annotation)
    return current, info


def _field_help(model: type[BaseModel], loc: tuple[Any, ...]) -> str | None:
    """The description of the field `loc` names (or of its nearest named ancestor)."""
    info = _resolve(model, loc)[1]
    return info.description if info else None


def allowed_range(info: FieldInfo) -> str | None:
    """What a numeric field accepts, from its type and bounds: `an integer >= 1 and <= 1000`."""
    parts = list(_parts(info.annotation))
    if bool in parts or not any(p in (int, float) for p in parts):
        return None
    kind = "an integer" if int in parts and float not in parts else "a number"
    bounds: dict[str, Any] = {}
    for item in info.metadata:
        for cls, name in (
            (annotated_types.Ge, "ge"),
            (annotated_types.Gt, "gt"),
            (annotated_types.Le, "le"),
            (annotated_types.Lt, "lt"),
        ):
            if isinstance(item, cls):
                bounds[name] = getattr(item, name)
    signs = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}
    if set(bounds) == {"ge", "le"}:
        text = f"{kind} from {bounds['ge']} to {bounds['le']}"
    else:
        text = " and ".join([kind, *(f"{signs[k]} {v}" for k, v in bounds.items())]).replace(" and ", " ", 1)
    return f"{text}, or null" if type(None) in parts else text


def _literals(info: FieldInfo) -> list[str]:
    return [str(v) for p in _parts(info.annotation) if typing.get_origin(p) is Literal for v in typing.get_args(p)]


def _fix(model: type[BaseModel], loc: tuple[Any, ...], err: Any) -> str | None:
    """How to repair one pydantic error: the closest key or choice (difflib), or the allowed range."""
    field = format_location(loc)
    if err["type"] == "extra_forbidden" and loc:
        container = _resolve(model, loc[:-1])[0] if loc[:-1] else model
        if container is None:
            return None
        keys = list(container.model_fields)
        guess = did_you_mean(loc[-1], keys)
        where = format_location(loc[:-1]) if loc[:-1] else "this file"
        return f"{guess + ' ' if guess else 'remove it, or rename it: '}{where} takes {', '.join(keys)}"
    info = _resolve(model, loc)[1]
    if info is None:
        return None
    if err["type"] == "missing":
        return f"add {field}"
    choices = _literals(info)
    if choices and err["type"] == "literal_error":
        guess = did_you_mean(err.get("input"), choices)
        return f"{guess + ' ' if guess else ''}set {field} to one of {', '.join(choices)}"
    if not isinstance(loc[-1], int) or typing.get_origin(info.annotation) is not list:
        allowed = allowed_range(info)
        if allowed and err["type"] != "value_error":
            return f"set {field} to {allowed}"
    return None


def format_location(loc: tuple[Any, ...], data: Any = None) -> str:
    """`sampling.max_tokens`, `players[2]`; an entry of a named list (the roster) by its name,
    `roster['gpt-5'].sampling`, where `data` (the file's contents) has one."""
    text = ""
    node = data
    for part in loc:
        if isinstance(part, int):
            item = node[part] if isinstance(node, list) and 0 <= part < len(node) else None
            name = item.get("name") if isinstance(item, dict) else None
            text += f"[{name!r}]" if isinstance(name, str) and name else f"[{part}]"
            node = item
        else:
            text += ("." if text else "") + str(part)
            node = node.get(part) if isinstance(node, dict) else None
    return text or "(top level)"


def validate_params(model: type[ModelT], data: Any, source: str) -> ModelT:
    """Validate `data` against `model`; raise ParamsError listing every bad field, its value and the fix."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        lines = [f"{source}: invalid params ({exc.error_count()} problem(s))"]
        for err in exc.errors():
            loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
            message = err["msg"].removeprefix("Value error, ")
            line = f"  - {format_location(loc, data)}: {message}"
            if err["type"] not in ("value_error", "missing") and "input" in err:
                shown = repr(err["input"])
                line += f" (got {shown[:80]})"
            help_text = _field_help(model, loc) if err["type"] != "extra_forbidden" else None
            if help_text:
                line += f"\n    expected: {help_text}"
            fix = _fix(model, loc, err)
            if fix:
                line += f"\n    fix: {fix}"
            lines.append(line)
        raise ParamsError("\n".join(lines)) from None


# libyaml's loader where PyYAML was built with it: about 10x faster than the pure-Python one, and
# every Snakefile parse and job reads a dozen params files
_SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(path: str | Path) -> Any:
    path = Path(path)
    if not path.exists():
        raise ParamsError(f"{path}: file not found (create it, or pass the right --params path)")
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=_SAFE_LOADER) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        text = f"{path}: not valid YAML{where}: {getattr(exc, 'problem', exc)}"
        # the parser notices an unclosed `[` or `{` where the next item starts, often lines later:
        # say where the construct it was reading opened
        opened, context = getattr(exc, "context_mark", None), getattr(exc, "context", None)
        if opened is not None and context and (mark is None or opened.line != mark.line):
            text += (
                f" ({context} that opened at line {opened.line + 1}, column {opened.column + 1}: a bracket not closed?)"
            )
        raise ParamsError(text) from None


def load_params(model: type[ModelT], path: str | Path) -> ModelT:
    return validate_params(model, load_yaml(path), str(path))

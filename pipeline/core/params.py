"""Loading users' YAML params with errors that name the file, the field and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

ModelT = TypeVar("ModelT", bound=BaseModel)


class StrictParams(BaseModel):
    """Base of every params model: unknown keys are errors (a typo must not pass silently)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ParamsError(ValueError):
    """A problem in a user's params file; the message is meant to be shown as is."""


def _field_help(model: type[BaseModel], loc: tuple[Any, ...]) -> str | None:
    """Walk the pydantic model along `loc` and return the description of the field it names."""
    current: Any = model
    description = None
    skip_key = False  # the next part is a key of a dict field (e.g. a provider name)
    for part in loc:
        if isinstance(part, int):
            continue
        if skip_key:
            skip_key = False
            continue
        fields = getattr(current, "model_fields", None)
        if not fields or part not in fields:
            return description
        info = fields[part]
        description = info.description
        annotation = info.annotation
        skip_key = getattr(annotation, "__origin__", None) is dict
        # unwrap list[X] / X | None / dict[str, X] to reach nested models
        for arg in (annotation, *getattr(annotation, "__args__", ())):
            for inner in (arg, *getattr(arg, "__args__", ())):
                if isinstance(inner, type) and issubclass(inner, BaseModel):
                    current = inner
                    break
            else:
                continue
            break
    return description


def format_location(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + str(part)
    return text or "(top level)"


def validate_params(model: type[ModelT], data: Any, source: str) -> ModelT:
    """Validate `data` against `model`; raise ParamsError listing every bad field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        lines = [f"{source}: invalid params ({exc.error_count()} problem(s))"]
        for err in exc.errors():
            loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
            message = err["msg"].removeprefix("Value error, ")
            line = f"  - {format_location(loc)}: {message}"
            if err["type"] not in ("value_error",) and "input" in err:
                shown = repr(err["input"])
                line += f" (got {shown[:80]})"
            help_text = _field_help(model, loc)
            if help_text:
                line += f"\n    expected: {help_text}"
            lines.append(line)
        raise ParamsError("\n".join(lines)) from None


def load_yaml(path: str | Path) -> Any:
    path = Path(path)
    if not path.exists():
        raise ParamsError(f"{path}: file not found (create it, or pass the right --params path)")
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ParamsError(f"{path}: not valid YAML{where}: {getattr(exc, 'problem', exc)}") from None


def load_params(model: type[ModelT], path: str | Path) -> ModelT:
    return validate_params(model, load_yaml(path), str(path))

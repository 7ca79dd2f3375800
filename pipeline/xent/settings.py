"""What an imported map set decides about a run, and where a run differs from it.

A reference map set (pipeline/xent/mapset.py) carries how its published scores were made: the
judge that scored them (`judge_model`: Qwen/Qwen3-14B-Base for benchmark 0.2), the rounds per map
(20) and the field (the players whose best score on each map normalises everyone's). The
reference also judged in float32 with its own tokenization and no clipping.

- `apply_map_set` (pipeline.xent.config; called by `load_xent` and `build_schedule`): the map set's judge and rounds
  where params/xent.yaml leaves `judge` and `rounds` out.
- `map_set_differences`: every setting of the run that is not the map set's (a judge, rounds,
  dtype or scoring the params set otherwise; players that are not its field). The run says so when
  it is planned, scheduled and played, and metrics.json records the differing fields per model as
  `map_set_differs`, so a published table shows that its scores are not the reference's.

The field is never applied: our players are roster names, and a reference id (gpt-5,
claude-opus-4-1-20250805) names a model only when a roster entry plays it. A player is in the
field when its roster entry's model, without its provider prefix, is one of the field's ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline.core.models import ModelsParams
from pipeline.xent.config import XentParams
from pipeline.xent.mapset import read_manifest

#: how the reference scored every map set: weights in float32 (its library's default), its own
#: tokenization, no clipping
REFERENCE_JUDGE = {"judge_dtype": "float32", "judge_scoring": "reference", "judge_clip_logprobs": False}


@dataclass(frozen=True)
class Difference:
    field: str  # the params field that differs: judge, judge_dtype, judge_scoring, ..., rounds, players
    map_set: str  # the map set's setting, in words
    run: str  # this run's

    def __str__(self) -> str:
        return f"{self.field}: the map set's {self.map_set}, this run's {self.run}"


def same_judge(judge: str, reference: str) -> bool:
    """Whether `judge` (a params value) is the model `reference` names: the hub id itself, or a
    model directory named after it (data/models/Qwen3-14B-Base for Qwen/Qwen3-14B-Base)."""
    bare = judge.removeprefix("local/").rstrip("/")
    return bare == reference or Path(bare).name == reference.rsplit("/", 1)[-1]


def player_model_id(models: ModelsParams, name: str) -> str | None:
    """The id a reference field would use for a roster player: its model without the provider prefix."""
    try:
        entry = models.entry(name)
    except KeyError:
        return None
    return None if entry.model is None else entry.model.rsplit("/", 1)[-1]


def field_difference(players: list[str], models: ModelsParams, field: list[str]) -> Difference | None:
    ids = {name: player_model_id(models, name) for name in players}
    missing = sorted(set(field) - {i for i in ids.values() if i is not None})
    extra = [f"{name} ({ids[name] or 'a bot'})" for name in players if ids[name] not in field]
    if not missing and not extra:
        return None
    parts = ([f"without {', '.join(missing)}"] if missing else []) + ([f"with {', '.join(extra)}"] if extra else [])
    return Difference(
        "players", f"field of {len(field)} ({', '.join(field)})", f"{len(players)} player(s), " + "; ".join(parts)
    )


def map_set_differences(params: XentParams, models: ModelsParams | None = None) -> list[Difference]:
    """Every setting of the run that is not the map set's, by field name; none without a map set.
    The field is compared only when `models` is given and the map set names one."""
    manifest = read_manifest(params.map_set) if params.map_set else None
    if manifest is None:
        return []
    found: list[Difference] = []
    if not same_judge(params.judge, manifest["judge_model"]):
        found.append(Difference("judge", manifest["judge_model"], params.judge))
    for name, value in REFERENCE_JUDGE.items():
        if getattr(params, name) != value:
            found.append(Difference(name, f"{value} (the reference's)", str(getattr(params, name))))
    if params.rounds != int(manifest["rounds"]):
        found.append(Difference("rounds", str(manifest["rounds"]), str(params.rounds)))
    field = manifest.get("field")
    if models is not None and field is not None:
        differs = field_difference(params.players, models, list(field))
        if differs is not None:
            found.append(differs)
    return sorted(found, key=lambda d: d.field)


def differences_note(params: XentParams, differences: list[Difference], source: str = "params/xent.yaml") -> str:
    """One plain warning naming each difference, or "" when the run is the map set's."""
    if not differences:
        return ""
    manifest = read_manifest(params.map_set) if params.map_set else None
    benchmark = (manifest or {}).get("benchmark_id", "?")
    lines = "\n".join(f"  - {d}" for d in differences)
    fix = (
        "leave `judge` and `rounds` out to take the map set's; "
        if {"judge", "rounds"} & {d.field for d in differences}
        else ""
    )
    return (
        f"xent: WARNING: {source} differs from its map set {params.map_set} ({benchmark}), so its scores are not "
        f"comparable with the reference's published ones:\n{lines}\n  ({fix}docs/xent.md, 'Reference map sets')"
    )

"""Map sets imported from the reference's built benchmark (an "expanded" config JSON).

`python -m pipeline xent maps import FILE.json --out DIR` writes, for a benchmark file of the
reference implementation (xentlabs/xent):

    DIR/mapset.json            what was imported: benchmark id, judge, seed, rounds, field, every map
    DIR/games/<game>.xgl       each game's code (story() unbuilt), headed by our presentation text
    DIR/<game>/<map_seed>.xgl  each map: the reference's built program with its story literals

Each map file's header carries `# @game:`, `# @seed:` (the reference's map seed, e.g.
gameCondense_map0), `# @rng_seed:` (the reference's full seed `<seed>_<map_seed>`, which draws
sample() and shuffle()), `# @benchmark:`, `# @judge:` and `# @rounds:`. The presentation functions
of the file (Python) are never run or copied: our own text explains each game (presentations.py).
The field is the reference's player ids (`players[].id`): the models its published scores were
normalised over. `params/xent.yaml: map_set: DIR` plays such a set; its judge and rounds apply
where the params leave them out, and a run that differs from them says so (pipeline.xent.settings).
A map set imported before our text for one of its games changed is refused, with the command that
imports it again.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.core.artifacts import ParamsError, content_id, write_json_atomic, write_text_atomic
from pipeline.xent.games import Game, game_from_program
from pipeline.xent.presentations import presentation
from pipeline.xent.xgl import ParseError, load_program, parse_program

MAPSET_VERSION = 1
MANIFEST = "mapset.json"
CONFIG_TYPES = ("expanded_xega_config", "expanded_xent_config")


@dataclass(frozen=True)
class ImportedMap:
    game: str  # our game name (a slug of the reference's name)
    reference_game: str
    map_seed: str
    map_id: str
    path: str  # relative to the map set directory


@dataclass(frozen=True)
class MapSet:
    root: Path
    manifest: dict[str, Any]
    games: dict[str, Game]
    maps: dict[str, tuple[ImportedMap, ...]]

    @property
    def rounds(self) -> int:
        return int(self.manifest["rounds"])

    @property
    def judge_model(self) -> str:
        return str(self.manifest["judge_model"])

    @property
    def field(self) -> tuple[str, ...] | None:
        """The reference's player ids, or None when the file named none."""
        field = self.manifest.get("field")
        return None if field is None else tuple(field)


def game_slug(name: str) -> str:
    """A file- and rule-safe game name: "Two-Ways" -> two_ways."""
    slug = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    if not slug:
        raise ValueError(f"game name {name!r} has no letters or digits")
    return slug


def _field(data: Any, key: str, kind: type, where: str, source: str) -> Any:
    if not isinstance(data, dict) or key not in data:
        raise ParamsError(
            f"{source}: {where}{key}: missing; expected the reference's expanded benchmark format "
            "(config_type, metadata, games, maps)"
        )
    value = data[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ParamsError(f"{source}: {where}{key}: expected {kind.__name__}, got {type(value).__name__}")
    return value


def read_reference_benchmark(path: str | Path) -> dict[str, Any]:
    """The parts of a reference benchmark file we use, checked; errors name the file and the field."""
    source = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ParamsError(f"{source}: cannot read a benchmark JSON file: {exc}") from None
    kind = _field(data, "config_type", str, "", source)
    if kind not in CONFIG_TYPES:
        raise ParamsError(
            f"{source}: config_type: {kind!r} is not a built benchmark; expected one of "
            f"{', '.join(CONFIG_TYPES)} (expand the benchmark with the reference tool first)"
        )
    meta = _field(data, "metadata", dict, "", source)
    out = {
        "benchmark_id": _field(meta, "benchmark_id", str, "metadata.", source),
        "judge_model": _field(meta, "judge_model", str, "metadata.", source),
        "seed": _field(meta, "seed", str, "metadata.", source),
        "rounds": _field(meta, "num_rounds_per_game", int, "metadata.", source),
        "games": [],
        "maps": [],
        "field": None,
    }
    if "players" in data:  # the field: who the published scores were normalised over
        players = _field(data, "players", list, "", source)
        out["field"] = sorted({_field(one, "id", str, f"players[{k}].", source) for k, one in enumerate(players)})
    for k, game in enumerate(_field(data, "games", list, "", source)):
        out["games"].append(
            {
                "name": _field(game, "name", str, f"games[{k}].", source),
                "code": _field(game, "code", str, f"games[{k}].", source),
            }
        )
    for k, one in enumerate(_field(data, "maps", list, "", source)):
        out["maps"].append(
            {
                "name": _field(one, "name", str, f"maps[{k}].", source),
                "code": _field(one, "code", str, f"maps[{k}].", source),
                "map_seed": _field(one, "map_seed", str, f"maps[{k}].", source),
            }
        )
    if not out["maps"]:
        raise ParamsError(f"{source}: maps: the file has no maps")
    return out


def _header(lines: dict[str, Any]) -> str:
    return "".join(f"# @{key}: {value}\n" for key, value in lines.items())


def _description(text: str) -> str:
    return "".join(f"# {line}\n" for line in _wrap(text))


def _wrap(text: str, width: int = 96) -> list[str]:
    lines, current = [], ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}".strip()
    return lines + ([current] if current else [])


def game_text(name: str, code: str) -> str:
    """An imported game's program: our explanation, its reference name, its code."""
    return _description(presentation(name, code)) + _header({"reference_game": name}) + code.rstrip("\n") + "\n"


def import_benchmark(path: str | Path, out: str | Path) -> list[Path]:
    """Write every map of a reference benchmark file as a playable program (see the module doc)."""
    bench = read_reference_benchmark(path)
    root = Path(out)
    source_sha = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    codes = {g["name"]: g["code"] for g in bench["games"]}
    written: list[Path] = []
    entries: list[dict[str, Any]] = []
    slugs: dict[str, str] = {}
    for k, one in enumerate(bench["maps"]):
        name, slug = one["name"], game_slug(one["name"])
        if slugs.setdefault(slug, name) != name:
            raise ParamsError(f"{path}: maps[{k}].name: {name!r} and {slugs[slug]!r} both become game {slug!r}")
        header = {
            "game": slug,
            "reference_game": name,
            "seed": one["map_seed"],
            "rng_seed": f"{bench['seed']}_{one['map_seed']}",
            "benchmark": bench["benchmark_id"],
            "judge": bench["judge_model"],
            "rounds": bench["rounds"],
        }
        text = _header(header) + one["code"].rstrip("\n") + "\n"
        try:
            parse_program(text, source=f"{path}: maps[{k}] ({name} {one['map_seed']})")
        except ParseError as exc:
            raise ParamsError(f"{exc}; this map uses XGL this runtime does not run") from None
        map_id = content_id({"v": MAPSET_VERSION, "map": text})
        relative = f"{slug}/{one['map_seed']}.xgl"
        target = root / relative
        write_text_atomic(target, text)
        written.append(target)
        entries.append(
            {"game": slug, "reference_game": name, "map_seed": one["map_seed"], "map_id": map_id, "path": relative}
        )
    for slug, name in sorted(slugs.items()):
        code = codes.get(name)
        if code is None:  # the file lists no game entry: show the first map's code with its literals
            code = next(m["code"] for m in bench["maps"] if m["name"] == name)
        text = game_text(name, code)
        parse_program(text, source=f"{path}: games ({name})")
        target = root / "games" / f"{slug}.xgl"
        write_text_atomic(target, text)
        written.append(target)
    manifest = {
        "version": MAPSET_VERSION,
        "source_file": Path(path).name,
        "source_sha256": source_sha,
        "benchmark_id": bench["benchmark_id"],
        "judge_model": bench["judge_model"],
        "seed": bench["seed"],
        "rounds": bench["rounds"],
        "field": bench["field"],
        "maps": sorted(entries, key=lambda e: (e["game"], e["map_seed"])),
    }
    write_json_atomic(root / MANIFEST, manifest)
    written.append(root / MANIFEST)
    return written


def load_map_set(directory: str | Path, source: str = "params/xent.yaml") -> MapSet:
    """An imported map set; a missing or broken directory is a ParamsError naming `map_set`."""
    root = Path(directory)
    manifest_path = root / MANIFEST
    if not manifest_path.exists():
        raise ParamsError(
            f"{source}: map_set: {root} has no {MANIFEST}; create it with "
            f"`python -m pipeline xent maps import FILE.json --out {root}`"
        )
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    games: dict[str, Game] = {}
    maps: dict[str, list[ImportedMap]] = {}
    for entry in manifest["maps"]:
        slug = entry["game"]
        if slug not in games:
            game_path = root / "games" / f"{slug}.xgl"
            _check_presentation(game_path, entry["reference_game"], manifest, source)
            try:
                games[slug] = game_from_program(load_program(game_path), str(game_path))
            except ParseError as exc:
                raise ParamsError(f"{source}: map_set: {exc}") from None
        maps.setdefault(slug, []).append(
            ImportedMap(slug, entry["reference_game"], entry["map_seed"], entry["map_id"], entry["path"])
        )
    return MapSet(root, manifest, games, {k: tuple(v) for k, v in maps.items()})


def read_manifest(directory: str | Path) -> dict[str, Any] | None:
    """A map set's manifest, or None when the directory has none (yet)."""
    path = Path(directory) / MANIFEST
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def _check_presentation(game_path: Path, name: str, manifest: dict[str, Any], source: str) -> None:
    """Refuse a game file whose explanation is not the one we give its code today (an older import)."""
    text = game_path.read_text(encoding="utf-8") if game_path.exists() else ""
    marker = _header({"reference_game": name})
    if marker not in text:
        raise ParamsError(
            f"{source}: map_set: {game_path} is missing or has no `# @reference_game: {name}` line; "
            "import the map set again"
        )
    if text != game_text(name, text.split(marker, 1)[1]):
        raise ParamsError(
            f"{source}: map_set: {game_path} explains {name} with an older text than pipeline/xent/presentations.py "
            f"gives it now (an import made before the text changed); import the map set again: "
            f"`python -m pipeline xent maps import "
            f"{manifest.get('source_file', 'FILE.json')} --out {game_path.parent.parent}`"
        )

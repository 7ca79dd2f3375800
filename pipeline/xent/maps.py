"""Maps: a game plus a map seed, its story() calls replaced by texts the judge samples once.

A built map is an XGL program (`results/xent/maps/<game>/<map_id>.xgl`) that runs unchanged with
`python -m pipeline xent play`; its header carries `# @game:` and `# @seed:` lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.core.artifacts import content_id, write_text_atomic
from pipeline.xent.games import Game, load_game
from pipeline.xent.xgl import materialize_stories, parse_program, story_calls

MAP_VERSION = 1


@dataclass(frozen=True)
class MapSpec:
    game: str
    seed: int | str  # ours: an integer; an imported map keeps the reference's map seed
    map_id: str
    imported: str | None = None  # the map's program in an imported map set (copied, not built)

    def path(self, root: str | Path) -> Path:
        return Path(root) / self.game / f"{self.map_id}.xgl"


def map_id_for(game: Game, seed: int, judge_name: str) -> str:
    return content_id({"v": MAP_VERSION, "game": game.name, "source": game.version, "seed": seed, "judge": judge_name})


def story_key(game: Game, seed: int, index: int) -> str:
    """The judge's story seed for the index-th story() call of a map: cached per game and map seed."""
    return f"xent/{game.name}/{seed}/{index}"


def build_map_text(game: Game, seed: int, judge: Any) -> str:
    """The map's program text: header lines, then the game with its stories as literals."""
    sizes = story_calls(game.program)
    stories: list[str] = [""] * len(sizes)
    for size in sorted(set(sizes)):
        indices = [i for i, s in enumerate(sizes) if s == size]
        for i, text in zip(indices, judge.stories([story_key(game, seed, i) for i in indices], size)):
            stories[i] = text
    body = materialize_stories(game.program, stories)
    header = f"# @game: {game.name}\n# @seed: {seed}\n"
    text = header + body
    parse_program(text, source=f"map of {game.name}")  # a built map must be a valid program
    return text


def build_maps(game_name: str, specs: list[MapSpec], judge: Any, root: str | Path) -> list[Path]:
    """Write each map's program: built from the game (stories sampled), or an imported map copied."""
    written = []
    game = None
    for spec in specs:
        path = spec.path(root)
        if spec.imported:
            write_text_atomic(path, Path(spec.imported).read_text(encoding="utf-8"))
        else:
            game = game or load_game(game_name)
            assert isinstance(spec.seed, int)
            write_text_atomic(path, build_map_text(game, spec.seed, judge))
        written.append(path)
    return written

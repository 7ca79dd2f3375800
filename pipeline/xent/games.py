"""The game library (`pipeline/xent/games/*.xgl`) and who plays which role of a game.

A game's leading `#` comment block is its player-facing description. `# @opponent: white` lines
name roles that the configured opponent plays (e.g. one side of a zero-sum game); the player under
test plays every other elicited role, and its score is the sum of the rewards to those roles.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline.core.artifacts import content_id
from pipeline.xent.xgl import PLAYERS, ParseError, Program, load_program, parse_program

GAMES_DIR = Path(__file__).parent / "games"


@dataclass(frozen=True)
class Game:
    name: str
    program: Program
    path: str
    shown_code: str = ""  # what prompts show; a built map shows its game's code, not the story literals

    @property
    def source(self) -> str:
        return self.program.source

    @property
    def code(self) -> str:
        return self.shown_code or self.program.source

    @property
    def version(self) -> str:
        """Content id of the game's text: part of every map and play job id."""
        return content_id(self.program.source)

    @property
    def description(self) -> str:
        return self.program.description

    @property
    def opponent_roles(self) -> tuple[str, ...]:
        return tuple(r.strip() for r in self.program.meta.get("opponent", "").split(",") if r.strip())

    @property
    def seats(self) -> tuple[str, ...]:
        """Roles someone must play: every elicited role."""
        return tuple(self.program.elicited_roles)

    @property
    def self_roles(self) -> tuple[str, ...]:
        """Roles the player under test plays (and is scored on)."""
        return tuple(r for r in self.seats if r not in self.opponent_roles)


def game_from_program(program: Program, path: str = "") -> Game:
    game = Game(program.name or Path(path).stem or "program", program, path)
    for role in game.opponent_roles:
        if role not in PLAYERS:
            raise ParseError(1, 1, f"@opponent names {role!r}, not a player ({', '.join(PLAYERS)})", path)
    if not game.self_roles:
        raise ParseError(1, 1, "the player under test plays no elicited role (check @opponent)", path)
    if {"black", "white"} <= set(game.self_roles):
        raise ParseError(
            1,
            1,
            "black and white are both elicited: name one of them in `# @opponent: ...` "
            "(a zero-sum pair played by one player always totals zero)",
            path,
        )
    return game


def library_names() -> list[str]:
    return sorted(p.stem for p in GAMES_DIR.glob("*.xgl"))


def load_game(name_or_path: str) -> Game:
    """A library game by name (`condense`) or any .xgl file by path."""
    path = Path(name_or_path)
    if not path.suffix:
        path = GAMES_DIR / f"{name_or_path}.xgl"
        if not path.exists():
            raise ParseError(1, 1, f"no game {name_or_path!r} in the library; known: {', '.join(library_names())}")
    return game_from_program(load_program(path), str(path))


def load_game_text(text: str, name: str) -> Game:
    return game_from_program(parse_program(text, source=name, name=name), name)

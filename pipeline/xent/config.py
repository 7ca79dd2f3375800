"""`params/xent.yaml`: which games, maps and rounds, who plays, which judges score, the rating."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from pipeline.core.artifacts import ParamsError, did_you_mean, indexed, load_params, roster_problems
from pipeline.core.artifacts.params import StrictParams as Strict
from pipeline.core.models import ModelsParams
from pipeline.core.rating import with_defaults
from pipeline.core.rating.settings import AdaptiveSettings


class ReplyParams(Strict):
    protocol: Literal["reference", "short"] = Field(
        "reference",
        description="how a model is asked for its move: reference (the reference's): it may think "
        "first and ends its reply with the move in <move></move> tags, the last closed tag counts, no stop "
        "sequence; short (ours, the earlier prompt): the move only inside tags, the reply stops at </move>",
    )
    max_tokens: int | None = Field(
        None,
        ge=4,
        le=4096,
        description="the game's token cap on a model's whole reply; null (the reference's): no "
        "game cap, each model's roster entry decides its reply budget (params/models.yaml)",
    )
    detail_rounds: int | None = Field(
        None,
        ge=0,
        le=100,
        description="earlier rounds a `per_ask` prompt shows with their per-token breakdown "
        "(all rounds show their moves and totals): null (the published leaderboard's) every earlier round with "
        "every token; an integer N (ours, shorter prompts) the last N rounds, at most 60 tokens each",
    )
    conversation: Literal["per_ask", "per_map"] = Field(
        "per_ask",
        description="per_ask (the reference's published leaderboard, benchmark 0.2): a fresh prompt at "
        "every ask with the whole history of the map; per_map (the reference's later chat mode, no published "
        "numbers): one conversation per map across rounds, each ask adds what is new",
    )


if TYPE_CHECKING:  # to mypy the base is what with_defaults builds it from: TrueSkillSettings
    from pipeline.core.rating.settings import TrueSkillSettings

    _RatingBase = TrueSkillSettings
else:
    _RatingBase = with_defaults("XentTrueSkill", draw_probability=0.1, passes=8, bootstrap_resamples=50)


class RatingSettings(_RatingBase):
    """trueskill's own defaults; equal map scores are ties, so the draw probability must be positive."""

    draw_probability: float = Field(
        0.1, gt=0.0, lt=1.0, description="TrueSkill draw probability in (0, 1): equal map scores are ties"
    )


class AdaptiveParams(AdaptiveSettings):
    """`schedule.adaptive`: rounds of tables chosen from the results so far among `players`
    (docs/adaptive.md, "Xent"). Off by default: every player plays every map, as the reference. When
    on, a table is `table_size` players dealt one map, the first in the map order that none of them
    has played; each seat plays that one map (a play job of one map), and the table's ranking by map
    score is one rating event."""

    table_size: int = Field(
        2,
        ge=2,
        le=1000,
        description="players per table, at most len(players): 2 (the default) compares pairs, the freest "
        "choice of who is compared; len(players) deals every map to the whole field (the fixed schedule's "
        "plays, map by map, with the adaptive stop)",
    )


class ScheduleParams(Strict):
    adaptive: AdaptiveParams = Field(
        default_factory=AdaptiveParams,
        description="the adaptive schedule: enabled (false: every player plays every map), table_size, "
        "tables_per_round, z, max_games, max_rounds, max_cost_usd, seed; its pool is `players`",
    )


class XentParams(Strict):
    players: list[str] = Field(min_length=1, description="roster names (params/models.yaml) that play every map")
    opponent: str = Field(
        "heuristic-bot",
        description="the roster name that plays a game's @opponent roles (e.g. white in a zero-sum game)",
    )
    games: list[str] = Field(
        default_factory=list,
        description="game names from pipeline/xent/games (e.g. condense) or paths to .xgl files",
    )
    map_set: str | None = Field(
        None,
        description="a directory written by `python -m pipeline xent maps import FILE.json --out DIR`: its maps "
        "(the reference's built benchmark) are played as they are, beside the maps built for `games`",
    )
    maps_per_game: int = Field(2, ge=1, le=10000, description="maps (map seeds) per game")
    seed: int = Field(0, ge=0, description="base of the map seeds: map k of a game has seed `seed + k`")
    rounds: int = Field(
        3,
        ge=1,
        le=1000,
        description="rounds each player plays on each map (the paper plays 20); left out with a "
        "`map_set`: the map set's rounds",
    )
    judge: str = Field(
        "gemma-3-270m",
        description="the judge that scores moves during play: a registered name, a model directory "
        "or a Hugging Face model id in the local cache; left out with a `map_set`: the map set's judge",
    )
    judge_dtype: Literal["float32", "bfloat16", "auto"] = Field(
        "float32",
        description="the judge's weight dtype: float32 (the reference's), bfloat16 (ours: faster, half "
        "the memory on a GPU), auto (bfloat16 on a GPU, float32 on CPU); part of the judge's fingerprint and of "
        "every score cache key",
    )
    judge_scoring: Literal["reference", "include_first_token", "bos_once"] = Field(
        "reference",
        description="which tokens the judge scores: reference (the reference implementation's tokenization, each side "
        "with the tokenizer's own BOS, the string's first token not scored), include_first_token (the reference's "
        "option: every token of the string side), bos_once (one BOS, the first text token not scored)",
    )
    judge_clip_logprobs: bool = Field(
        False, description="cap each token's xent at log2(vocabulary size) bits (the reference's clip_logprobs)"
    )
    rescore_judges: list[str] = Field(
        default_factory=list, description="more judges that re-score every recorded move (the play judge always does)"
    )
    replies: ReplyParams = Field(
        default_factory=ReplyParams, description="reply protocol, token cap and history detail"
    )
    rating: RatingSettings = Field(default_factory=RatingSettings, description="TrueSkill settings")
    schedule: ScheduleParams = Field(
        default_factory=ScheduleParams, description="the adaptive schedule (`schedule.adaptive`), off by default"
    )

    @model_validator(mode="after")
    def _something_to_play(self) -> XentParams:
        if not self.games and not self.map_set:
            raise ValueError("give at least one game under `games` or an imported `map_set` directory")
        return self

    def adaptive_problems(self, source: str = "params/xent.yaml") -> list[str]:
        """What stops the adaptive schedule from seating a table (nothing when it is off)."""
        adaptive = self.schedule.adaptive
        players = len(set(self.players))
        if not adaptive.enabled or adaptive.table_size <= players:
            return []
        return [
            f"{source}: schedule.adaptive.table_size is {adaptive.table_size} but players has {players} distinct "
            f"player(s): a table seats distinct players; set schedule.adaptive.table_size to at most {players}, "
            "list more players, or set schedule.adaptive.enabled: false"
        ]

    def check_roster(
        self,
        models: ModelsParams,
        source: str = "params/xent.yaml",
        models_source: str = "params/models.yaml",
        *,
        outside_ok: bool = False,
    ) -> None:
        """Every name must resolve: players and opponent in the roster, judges registered (or a model
        directory: a path, which may still be downloading, is not looked at here), games in the
        library or .xgl files that parse. Stops with every problem at once, each with its fix. A seat
        played from outside the pipeline (`bot: human` or `agent`) is refused: a scheduled game would
        wait for it; `outside_ok` allows it (a game drawn for such a seat,
        pipeline.core.run.contract.seat_game)."""
        from pipeline.xent.games import library_names, load_game
        from pipeline.xent.xgl import ParseError

        known = [e.name for e in models.roster]
        problems = roster_problems(
            [*indexed("players", self.players), ("opponent", self.opponent)],
            known,
            source,
            models_source,
            None if outside_ok else models.outside(),
        )
        problems += self.adaptive_problems(source)
        judges = judge_names()
        for field, names in (("judge", [self.judge]), ("rescore_judges", self.rescore_judges)):
            for name in names:
                bare = name.removeprefix("local/")
                if "/" in bare or bare.startswith((".", "~")) or bare in judges or Path(bare).is_dir():
                    continue
                guess = did_you_mean(bare, judges)
                problems.append(
                    f"{source}: {field}: {name!r} is neither a registered judge nor a model directory; "
                    f"{guess + ' ' if guess else ''}use one of {', '.join(judges)} or the path of a "
                    "Hugging Face model directory"
                )
        library = library_names()
        for i, ref in enumerate(self.games):
            if not Path(ref).suffix and ref not in library:
                guess = did_you_mean(ref, library)
                problems.append(
                    f"{source}: games[{i}]: {ref!r} is not a library game; "
                    f"{guess + ' ' if guess else ''}use one of {', '.join(library)} or the path of a .xgl file"
                )
            elif Path(ref).suffix and not Path(ref).is_file():
                problems.append(
                    f"{source}: games[{i}]: {ref} does not exist; give the path of a .xgl file "
                    f"(relative to the project root) or a library game: {', '.join(library)}"
                )
            else:
                try:
                    load_game(ref)
                except ParseError as exc:
                    problems.append(f"{source}: games[{i}]: {exc}")
        if problems:
            raise ParamsError("\n".join(problems))


def judge_names() -> list[str]:
    """The judges `judge` may name besides a model directory: the registered ones and `word` (the
    model-free test judge of `python -m pipeline xent play-program --judge word`)."""
    from pipeline.core.judge import known_judges

    return sorted({*known_judges(), "word"})


def load_xent(path: str | Path = "params/xent.yaml") -> XentParams:
    """The params, with an imported map set's judge and rounds where the file leaves them out."""
    return apply_map_set(load_params(XentParams, path))


def apply_map_set(params: XentParams) -> XentParams:
    """`params` with the map set's judge and rounds where the params file leaves them out."""
    from pipeline.xent.mapset import read_manifest  # the map-set reader parses XGL: load it when used

    manifest = read_manifest(params.map_set) if params.map_set else None
    if manifest is None:  # no map set, or not imported yet (scheduling says so)
        return params
    update: dict[str, Any] = {}
    if "judge" not in params.model_fields_set:
        update["judge"] = str(manifest["judge_model"])
    if "rounds" not in params.model_fields_set:
        update["rounds"] = int(manifest["rounds"])
    return params.model_copy(update=update) if update else params

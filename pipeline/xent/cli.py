"""`python -m pipeline xent ...`: play any XGL program, and the stage commands the rules call."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

DEFAULT_PARAMS = "params/xent.yaml"
DEFAULT_MODELS = "params/models.yaml"


def load_any_judge(name: str, scoring: str = "reference", clip_logprobs: bool = False):  # -> Judge | WordJudge
    """A judge by registered name or model directory; `word` is the model-free test judge.

    `scoring` and `clip_logprobs` are the core Judge's options (the reference's defaults).
    """
    if name == "word":
        from pipeline.xent.testing import WordJudge

        return WordJudge()
    from pipeline.core.judge import load_judge

    return load_judge(name, scoring=scoring, clip_logprobs=clip_logprobs)


def _player_entry(spec: str, models):  # -> (RosterEntry, ModelsParams)
    from pipeline.core.params import ParamsError
    from pipeline.core.roster import ModelsParams, RosterEntry

    if spec.startswith("bot:"):
        bot = spec.removeprefix("bot:")
        entry = RosterEntry(name=f"{bot}-bot-cli", bot=bot)
        if any(e.name == entry.name for e in models.roster):
            return entry, models
        return entry, ModelsParams(roster=[*models.roster, entry], providers=models.providers, gateway=models.gateway)
    try:
        return models.entry(spec), models
    except KeyError as exc:
        raise ParamsError(f"--player {spec!r}: {exc.args[0]}; or use bot:random / bot:heuristic") from None


def _cmd_play(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from pipeline.core.io import seed_from
    from pipeline.core.llm import Gateway
    from pipeline.core.players import make_player
    from pipeline.core.roster import load_models
    from pipeline.xent.games import GAMES_DIR, game_from_program, load_game
    from pipeline.xent.play import PlaySettings, judge_stories, play_map, seat_players
    from pipeline.xent.xgl import ParseError, load_program

    try:
        program = load_program(args.program)
        game = game_from_program(program, args.program)
    except ParseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    library = program.meta.get("game")
    imported = Path(args.program).resolve().parent.parent / "games" / f"{library}.xgl"
    if library and program.meta.get("reference_game") and imported.exists():
        game = load_game(str(imported))  # a map of an imported set: its game's code and our presentation
    elif library and (GAMES_DIR / f"{library}.xgl").exists():  # a built map: show the game's own code
        game = replace(game, shown_code=load_game(library).source)
    models = load_models(args.models)
    entry, models = _player_entry(args.player, models)
    opponent_entry = None
    if game.opponent_roles:
        opponent_entry, models = _player_entry(args.opponent, models)
    judge = load_any_judge(args.judge)
    gateway = Gateway(models, job=f"xent-cli/{game.name}")
    seed = seed_from("xent-cli", game.version, args.seed)
    player = make_player(entry, gateway, seed, game="xent")
    opponent = make_player(opponent_entry, gateway, seed, game="xent") if opponent_entry else None
    stories = judge_stories(judge, f"xent-cli/{game.name}/{args.seed}") if program.has_story_calls else None
    settings = PlaySettings(reply_max_tokens=args.max_tokens)
    record = asyncio.run(play_map(game, program, Path(args.program).stem, seat_players(game, player, opponent),
                                  judge, args.rounds, settings, stories))
    errors = [r for r in record["rounds"] if r["error"]]
    totals = [r["total_bits"] for r in record["rounds"] if r["total_bits"] is not None]
    summary = {
        "program": args.program, "game": game.name, "player": entry.name, "judge": judge.fingerprint.as_dict(),
        "self_roles": list(game.self_roles), "map_score": max(totals) if totals else None,
        "rounds": [
            {"round": r["round"], "total_bits": r["total_bits"], "error": r["error"],
             "moves": [{k: m[k] for k in ("role", "register", "move", "attempts")} for m in r["moves"]],
             "rewards": [{k: w[k] for k in ("reward_index", "role", "expression", "total_bits")} for w in r["rewards"]]}
            for r in record["rounds"]
        ],
    }
    if args.json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
    else:
        for r in summary["rounds"]:
            total = f"{r['total_bits']:+.3f} bits" if r["total_bits"] is not None else f"error: {r['error']}"
            print(f"round {r['round']}: {total}  " + "  ".join(f"{m['register']}={m['move']!r}" for m in r["moves"]))
        if summary["map_score"] is not None:
            print(f"map score (best round): {summary['map_score']:+.3f} bits")
    if errors:
        print(f"error: {len(errors)} round(s) did not run to the end: {errors[0]['error']}", file=sys.stderr)
        return 1
    return 0


def _cmd_build(args: argparse.Namespace) -> int:
    from pipeline.xent.stages import build_stage

    written = build_stage(args.params, args.models, args.game, args.out, args.judge_cache)
    print(f"built {len(written)} map(s) of {args.game} under {args.out}", file=sys.stderr)
    return 0


def _cmd_play_job(args: argparse.Namespace) -> int:
    from pipeline.xent.stages import play_stage

    path = play_stage(args.params, args.models, args.game, args.job_id, args.maps, args.out)
    print(f"wrote {path}", file=sys.stderr)
    return 0


def _cmd_rescore(args: argparse.Namespace) -> int:
    from pipeline.xent.stages import rescore_stage

    summary = rescore_stage(args.params, args.models, args.plays, args.out)
    print(json.dumps(summary), file=sys.stderr)
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from pipeline.xent.report import write_report

    summary = write_report(args.params, args.out)
    print(json.dumps(summary), file=sys.stderr)
    return 0


def _cmd_maps_import(args: argparse.Namespace) -> int:
    from pipeline.xent.mapset import import_benchmark, load_map_set

    import_benchmark(args.file, args.out)
    mapset = load_map_set(args.out, source=args.out)
    for game, maps in sorted(mapset.maps.items()):
        print(f"{game:<16} {len(maps)} map(s): {', '.join(m.map_seed for m in maps)}")
    print(f"imported {sum(len(m) for m in mapset.maps.values())} map(s) of {mapset.manifest['benchmark_id']} "
          f"(judge {mapset.manifest['judge_model']}, {mapset.rounds} rounds) into {args.out}; "
          f"play them with `map_set: {args.out}` in params/xent.yaml", file=sys.stderr)
    return 0


def _cmd_games(args: argparse.Namespace) -> int:
    from pipeline.xent.games import library_names, load_game

    for name in library_names():
        game = load_game(name)
        first = game.description.split(".")[0]
        print(f"{name:<16} roles {','.join(game.self_roles)}"
              f"{' vs ' + ','.join(game.opponent_roles) if game.opponent_roles else ''}  {first}")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    room = commands.add_parser("xent", help="Xent benchmark: cross-entropy games in XGL")
    sub = room.add_subparsers(dest="xent_command", metavar="SUBCOMMAND", required=True)

    def common(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--params", default=DEFAULT_PARAMS, help="the benchmark's params file")
        parser.add_argument("--models", default=DEFAULT_MODELS, help="the roster")

    play = sub.add_parser("play", help="play any XGL program (a game or a built map) and print per-round rewards")
    play.add_argument("program", metavar="PROGRAM.xgl")
    play.add_argument("--player", required=True, help="a roster name from params/models.yaml, or bot:random / bot:heuristic")
    play.add_argument("--opponent", default="bot:heuristic", help="who plays the game's @opponent roles")
    play.add_argument("--rounds", type=int, default=3)
    play.add_argument("--judge", default="gemma-3-270m", help="judge name or model directory (`word`: a model-free test judge)")
    play.add_argument("--models", default=DEFAULT_MODELS)
    play.add_argument("--seed", type=int, default=0, help="story seed for programs that still call story()")
    play.add_argument("--max-tokens", type=int, default=24, help="token cap of a model's reply")
    play.add_argument("--json", action="store_true", help="print the rounds as JSON")
    play.set_defaults(func=_cmd_play)

    maps = sub.add_parser("maps", help="map sets: import the reference's built benchmark")
    maps_sub = maps.add_subparsers(dest="maps_command", metavar="ACTION", required=True)
    imports = maps_sub.add_parser("import", help="write every map of a reference benchmark JSON as a playable program")
    imports.add_argument("file", metavar="FILE.json", help="the reference's built (expanded) benchmark file")
    imports.add_argument("--out", required=True, help="the map set directory to write (then `map_set: DIR` in params)")
    imports.set_defaults(func=_cmd_maps_import)

    games = sub.add_parser("games", help="list the game library")
    games.set_defaults(func=_cmd_games)

    build = sub.add_parser("build", help="build the maps of one game (stories become literals)")
    common(build)
    build.add_argument("--game", required=True)
    build.add_argument("--out", default="results/xent/maps")
    build.add_argument("--judge-cache", default=".cache/judge", help="on-disk story/score cache of the judge")
    build.set_defaults(func=_cmd_build)

    job = sub.add_parser("play-job", help="play one scheduled job (one game, one player, all maps)")
    common(job)
    job.add_argument("--game", required=True)
    job.add_argument("--job-id", required=True)
    job.add_argument("--maps", default="results/xent/maps")
    job.add_argument("--out", default="results/xent/play")
    job.set_defaults(func=_cmd_play_job)

    rescore = sub.add_parser("rescore", help="re-score every recorded move with the configured judges; write the tables")
    common(rescore)
    rescore.add_argument("--plays", default="results/xent/play")
    rescore.add_argument("--out", default="results/xent")
    rescore.set_defaults(func=_cmd_rescore)

    report = sub.add_parser("report", help="scores, ratings, metrics.json and plots from the rescored tables")
    common(report)
    report.add_argument("--out", default="results/xent")
    report.set_defaults(func=_cmd_report)

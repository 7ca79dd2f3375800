"""The bodies of `python -m pipeline xent schedule | play | rate | report`, which benchmark.py declares
(core/run/verbs.py builds their command lines), and Xent's own `rescore`, `play-program`, `maps`,
`games` and `build`."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from pipeline.core.run.verbs import BenchmarkCommands, VerbCall
from pipeline.xent.judges import load_any_judge


def _player_entry(spec: str, models: Any) -> Any:  # -> (RosterEntry, ModelsParams)
    from pipeline.core.artifacts import ParamsError
    from pipeline.core.models import ModelsParams, RosterEntry

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


def _cmd_play_program(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from pipeline.core.artifacts import seed_from
    from pipeline.core.models import Gateway, load_models, make_player
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
    judge = load_any_judge(args.judge, dtype=args.judge_dtype)
    gateway = Gateway(models, job=f"xent-cli/{game.name}")
    seed = seed_from("xent-cli", game.version, args.seed)
    player = make_player(entry, gateway, seed, game="xent")
    opponent = make_player(opponent_entry, gateway, seed, game="xent") if opponent_entry else None
    stories = judge_stories(judge, f"xent-cli/{game.name}/{args.seed}") if program.has_story_calls else None
    settings = PlaySettings(reply_max_tokens=args.max_tokens, protocol=args.protocol, conversation=args.conversation)
    record = asyncio.run(
        play_map(
            game,
            program,
            Path(args.program).stem,
            seat_players(game, player, opponent),
            judge,
            args.rounds,
            settings,
            stories,
        )
    )
    errors = [r for r in record["rounds"] if r["error"]]
    totals = [r["total_bits"] for r in record["rounds"] if r["total_bits"] is not None]
    summary = {
        "program": args.program,
        "game": game.name,
        "player": entry.name,
        "judge": judge.fingerprint.as_dict(),
        "self_roles": list(game.self_roles),
        "map_score": max(totals) if totals else None,
        "rounds": [
            {
                "round": r["round"],
                "total_bits": r["total_bits"],
                "error": r["error"],
                "moves": [{k: m[k] for k in ("role", "register", "move", "attempts")} for m in r["moves"]],
                "rewards": [
                    {k: w[k] for k in ("reward_index", "role", "expression", "total_bits")} for w in r["rewards"]
                ],
            }
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


def schedule(args: VerbCall) -> int:
    from pipeline.xent.config import load_xent
    from pipeline.xent.settings import differences_note
    from pipeline.xent.stages import load_schedule

    schedule = load_schedule(args.params, args.models)
    note = differences_note(load_xent(args.params), list(schedule.differences), args.params)
    if note:
        print(note, file=sys.stderr)
    jobs: list[dict[str, Any]] = [
        {
            "job_id": j.job_id,
            "game": j.game,
            "player": j.player,
            "opponent": j.opponent,
            "rounds": j.rounds,
            "maps": [m.map_id for m in j.maps],
        }
        for j in schedule.jobs
    ]
    if args.json:
        print(json.dumps(jobs, indent=2))
        return 0
    for job in jobs:
        against = f" vs {job['opponent']}" if job["opponent"] else ""
        print(
            f"{job['job_id']}  {job['game']:<16} {job['player']}{against}  {len(job['maps'])} map(s) x {job['rounds']} round(s)"
        )
    print(f"{len(jobs)} play job(s) over {len(schedule.maps)} game(s)", file=sys.stderr)
    return 0


def play(args: VerbCall) -> int:
    """One scheduled play job, or a shard of them on one event loop (pipeline.core.run.shards)."""
    from pipeline.xent.stages import play_shard, play_stage

    if len(args.jobs) == 1 and args.marker is None:
        path = play_stage(args.params, args.models, None, args.jobs[0], args.args.maps, args.out)
        print(f"wrote {path}", file=sys.stderr)
        return 0
    return play_shard(
        args.params,
        args.models,
        args.jobs,
        args.args.maps,
        args.out,
        args.marker,
    )


def _cmd_rescore(args: argparse.Namespace) -> int:
    from pipeline.xent.stages import rescore_stage

    summary = rescore_stage(args.params, args.models, args.plays, args.out)
    print(json.dumps(summary), file=sys.stderr)
    return 0


def play_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--maps", default="results/xent/maps", help="the built maps' folder")


def rate(args: VerbCall) -> int:
    from pipeline.xent.report import write_rate

    summary = write_rate(args.params, args.out, args.models)
    print(json.dumps(summary), file=sys.stderr)
    return 0


def report(args: VerbCall) -> int:
    from pipeline.xent.report import write_report

    written = write_report(args.out)
    print(f"wrote {len(written)} plot file(s) under {Path(args.out) / 'plots'}", file=sys.stderr)
    return 0


def _cmd_maps_import(args: argparse.Namespace) -> int:
    from pipeline.xent.mapset import import_benchmark, load_map_set

    import_benchmark(args.file, args.out)
    mapset = load_map_set(args.out, source=args.out)
    for game, maps in sorted(mapset.maps.items()):
        print(f"{game:<16} {len(maps)} map(s): {', '.join(m.map_seed for m in maps)}")
    print(
        f"imported {sum(len(m) for m in mapset.maps.values())} map(s) of {mapset.manifest['benchmark_id']} "
        f"(judge {mapset.manifest['judge_model']}, {mapset.rounds} rounds) into {args.out}; "
        f"play them with `map_set: {args.out}` in params/xent.yaml",
        file=sys.stderr,
    )
    return 0


def _cmd_games(args: argparse.Namespace) -> int:
    from pipeline.xent.games import library_names, load_game

    for name in library_names():
        game = load_game(name)
        first = game.description.split(".")[0]
        print(
            f"{name:<16} roles {','.join(game.self_roles)}"
            f"{' vs ' + ','.join(game.opponent_roles) if game.opponent_roles else ''}  {first}"
        )
    return 0


def extra_commands(bench: BenchmarkCommands) -> None:
    rescore = bench.extra(
        "rescore", "re-score every recorded move with the configured judges; write the tables", _cmd_rescore
    )
    rescore.add_argument("--plays", default="results/xent/play", help="the play records' folder")

    program = bench.extra(
        "play-program",
        "play any XGL program (a game or a built map) and print per-round rewards; no schedule, nothing written",
        _cmd_play_program,
        inputs=False,
        writes=False,
    )
    program.add_argument("program", metavar="PROGRAM.xgl")
    program.add_argument(
        "--player", required=True, help="a roster name from params/models.yaml, or bot:random / bot:heuristic"
    )
    program.add_argument("--opponent", default="bot:heuristic", help="who plays the game's @opponent roles")
    program.add_argument("--rounds", type=int, default=3)
    program.add_argument(
        "--judge", default="gemma-3-270m", help="judge name or model directory (`word`: a model-free test judge)"
    )
    program.add_argument("--models", default="params/models.yaml")
    program.add_argument("--seed", type=int, default=0, help="story seed for programs that still call story()")
    program.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        help="the game's token cap on a model's reply (default: none, the model's roster entry decides)",
    )
    program.add_argument(
        "--protocol",
        choices=("reference", "short"),
        default="reference",
        help="reply protocol: reference (think, then the last <move> tag) or short (the move only)",
    )
    program.add_argument(
        "--conversation",
        choices=("per_ask", "per_map"),
        default="per_ask",
        help="per_ask (the published leaderboard's): a fresh prompt with the whole history at every "
        "ask; per_map: one conversation per map",
    )
    program.add_argument(
        "--judge-dtype",
        choices=("float32", "bfloat16", "auto"),
        default="float32",
        help="the judge's weight dtype: float32 (the reference's), bfloat16, auto (bfloat16 on a GPU)",
    )
    program.add_argument("--json", action="store_true", help="print the rounds as JSON")

    maps = bench.extra(
        "maps", "map sets: import the reference's built benchmark", lambda _args: 2, inputs=False, writes=False
    )
    maps_sub = maps.add_subparsers(dest="maps_command", metavar="SUBCOMMAND", required=True)
    imports = maps_sub.add_parser("import", help="write every map of a reference benchmark JSON as a playable program")
    imports.add_argument("file", metavar="FILE.json", help="the reference's built (expanded) benchmark file")
    imports.add_argument("--out", required=True, help="the map set directory to write (then `map_set: DIR` in params)")
    imports.set_defaults(func=_cmd_maps_import)

    bench.extra("games", "list the game library", _cmd_games, inputs=False, writes=False)

    build = bench.extra(
        "build",
        "build the maps of one game (stories become literals)",
        _cmd_build,
        out="results/xent/maps",
        out_help="the maps' folder",
    )
    build.add_argument("--game", required=True)
    build.add_argument("--judge-cache", default=".cache/judge", help="on-disk story/score cache of the judge")

"""The stage bodies the rules call: build maps, play one job, rescore everything."""

from __future__ import annotations

import asyncio
import math
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from pipeline.core.artifacts import (
    CallsSchema,
    ParamsError,
    read_record,
    read_table,
    seed_from,
    write_json_atomic,
    write_record,
    write_table,
)
from pipeline.core.artifacts.schemas import Schema, empty_table
from pipeline.core.artifacts.tables import declared_columns
from pipeline.xent.config import load_xent
from pipeline.xent.records import RewardRecord, XentPlay
from pipeline.xent.schedule import PlayJob, Schedule, build_schedule
from pipeline.xent.schemas import MovesSchema, RescoreSchema, RewardsSchema, RoundStatusSchema, TokenXentsSchema
from pipeline.xent.values import Term, XentValue, combine
from pipeline.xent.xgl import Program, load_program

if TYPE_CHECKING:
    from pipeline.core.models import ModelsParams
    from pipeline.xent.config import XentParams

#: the largest difference between a play-time reward total and its rescored total (same judge)
RESCORE_TOLERANCE_BITS = 1e-3


def load_schedule(params_path: str, models_path: str) -> Schedule:
    from pipeline.core.models import load_models

    return build_schedule(load_xent(params_path), load_models(models_path), source=params_path)


def build_stage(params_path: str, models_path: str, game: str, out: str, judge_cache: str | None) -> list[Path]:
    from pipeline.xent.judges import params_judge
    from pipeline.xent.maps import build_maps

    params = load_xent(params_path)
    schedule = load_schedule(params_path, models_path)
    if all(spec.imported for spec in schedule.maps[game]):  # an imported map set: copied, no judge needed
        return build_maps(schedule.refs[game], list(schedule.maps[game]), None, out)
    judge = params_judge(params)
    if judge_cache and hasattr(judge, "cache"):
        judge.cache.directory = Path(judge_cache)  # stories sampled once per game and seed, kept on disk
    return build_maps(schedule.refs[game], list(schedule.maps[game]), judge, out)


def play_stage(
    params_path: str, models_path: str, game_name: str | None, job_id: str, maps_root: str, out: str
) -> Path:
    """One play job in a process of its own."""
    params, models, schedule = _play_setup(params_path, models_path)
    job = schedule.job(game_name, job_id)
    return asyncio.run(play_job(params, models, schedule, job, maps_root, out))


def _play_setup(params_path: str, models_path: str) -> tuple[XentParams, ModelsParams, Schedule]:
    """What a play process loads once: params, roster and schedule; how they differ from the map set
    goes in its log too (these scores are not the map set's)."""
    from pipeline.core.models import load_models
    from pipeline.xent.settings import differences_note

    params = load_xent(params_path)
    models = load_models(models_path)
    schedule = build_schedule(params, models, source=params_path)
    note = differences_note(params, list(schedule.differences), params_path)
    if note:
        print(note, file=sys.stderr)
    return params, models, schedule


async def play_job(
    params: XentParams, models: ModelsParams, schedule: Schedule, job: PlayJob, maps_root: str, out: str
) -> Path:
    """Play one job's maps on the running loop and write its record (last) and calls table. Jobs
    played concurrently on one loop (a shard) share the judge's batches and the local model's."""
    from pipeline.core.artifacts.progress import expect_moves
    from pipeline.core.models import Gateway, make_players
    from pipeline.xent.judges import params_judge
    from pipeline.xent.play import PlaySettings, play_record

    game = schedule.games[job.game]
    judge = params_judge(params)
    gateway = Gateway(models, job=f"xent/{job.game}/{job.job_id}")
    names = [job.player] + ([job.opponent] if job.opponent and job.opponent != job.player else [])
    players = make_players(models, gateway, seed_from("xent", job.job_id), names=names, game="xent")
    maps = [(m.map_id, load_program(m.path(maps_root))) for m in job.maps]
    expect_moves(planned_moves(job, [program for _, program in maps]))  # the job's progress line
    settings = PlaySettings.of(params)
    opponent = players[job.opponent] if job.opponent else None
    seeds = {m.map_id: m.seed for m in job.maps}
    record = await play_record(
        game, job.job_id, maps, players[job.player], opponent, judge, job.rounds, settings, seeds
    )
    path = job.path(out)
    gateway.write_calls(path.with_suffix(".calls.parquet"))
    write_record(path, record)
    return path


def planned_moves(job: PlayJob, programs: Sequence[Program]) -> int:
    """The asks of a play job when every `ensure` passes (its maps' programs, every round), for
    the job's progress line."""
    from pipeline.xent.runtime import asks_per_round

    return job.rounds * sum(asks_per_round(program) for program in programs)


def play_done(job: PlayJob, out: str | Path) -> bool:
    """Whether a play job's outputs are complete: its record (written last) beside its calls table,
    as the shards' own rule reads a game's (`pipeline.core.run.game_done`)."""
    from pipeline.core.run import game_done

    return game_done(job.path(out).parent, job.job_id)


def play_shard(
    params_path: str, models_path: str, job_ids: Sequence[str], maps_root: str, out: str, marker: str | None
) -> int:
    """Several play jobs concurrently on one event loop (pipeline.core.run.shards): the judge and the
    embedded model load once, and the jobs' requests share their batches. Finished jobs are skipped."""
    from pipeline.core.run import ShardGame, run_shard, say

    params, models, schedule = _play_setup(params_path, models_path)
    jobs = [schedule.job(None, job_id) for job_id in job_ids]
    by_id = {job.job_id: job for job in jobs}

    async def play(job: PlayJob) -> None:
        path = await play_job(params, models, schedule, job, maps_root, out)
        say(f"wrote {path}")

    return run_shard(
        [ShardGame(job.job_id, job) for job in jobs],
        play,
        lambda job_id: play_done(by_id[job_id], out),
        at_once=models.parallel.games_per_job,
        marker=marker,
        say=say,
        unit="play job",
        moves=lambda job: planned_moves(job, [load_program(m.path(maps_root)) for m in job.maps]),
    )


def _records(schedule: Schedule, plays: str) -> list[XentPlay]:
    records: list[XentPlay] = []
    missing = []
    for job in schedule.jobs:
        path = job.path(plays)
        if not path.exists():
            missing.append(str(path))
            continue
        records.append(read_record(path, XentPlay))
    if missing:
        raise FileNotFoundError(f"{len(missing)} play job(s) have not run, e.g. {missing[0]}; run `snakemake xent_all`")
    return records


def _self_rewards(records: list[XentPlay]) -> Iterator[tuple[dict[str, Any], RewardRecord, XentPlay]]:
    """(table keys, reward, its record) of every reward of a player's own roles."""
    for record in records:
        roles = set(record.self_roles)
        for map_record in record.maps:
            for rnd in map_record.rounds:
                for reward in rnd.rewards:
                    if reward.role in roles:
                        keys = {
                            "game": record.game,
                            "map_id": map_record.map_id,
                            "model": record.player,
                            "round": rnd.round,
                            "reward_index": reward.reward_index,
                            "player_role": reward.role,
                        }
                        yield keys, reward, record


def rescore_stage(params_path: str, models_path: str, plays: str, out: str) -> dict[str, Any]:
    """Tables of moves, rewards and per-token xents; every reward re-scored by every judge in large batches."""
    from pipeline.xent.judges import params_judge

    params = load_xent(params_path)
    schedule = load_schedule(params_path, models_path)
    if params.schedule.adaptive.enabled and not schedule.jobs:
        raise ParamsError(
            f"{params_path}: schedule.adaptive is on and no round has been chosen yet; run `python -m pipeline run "
            "xent_all` (or `dvc repro xent`): it chooses the rounds and plays them"
        )
    records = _records(schedule, plays)
    out_dir = Path(out)

    moves = []
    for record in records:
        roles = set(record.self_roles)
        for map_record in record.maps:
            for rnd in map_record.rounds:
                for move in rnd.moves:
                    if move.role in roles:
                        moves.append(
                            {
                                "game": record.game,
                                "map_id": map_record.map_id,
                                "model": record.player,
                                "round": rnd.round,
                                "elicit_index": move.elicit_index,
                                "player_role": move.role,
                                "register": move.xgl_register,
                                "move": move.move,
                                "reply": move.reply,
                                "attempts": move.attempts,
                                "tagged": True if move.tagged is None else move.tagged,
                                "tokens_in": move.tokens_in or 0,
                                "tokens_out": move.tokens_out or 0,
                            }
                        )
    key_cols = ["game", "map_id", "model", "round"]
    status = [
        {
            "game": record.game,
            "map_id": m.map_id,
            "model": record.player,
            "round": rnd.round,
            "error": rnd.error,
            "ensure_failures": rnd.ensure_failures,
        }
        for record in records
        for m in record.maps
        for rnd in m.rounds
    ]
    write_table(
        out_dir / "round_status.parquet", _frame(status, RoundStatusSchema), RoundStatusSchema, sort_by=key_cols
    )
    write_table(out_dir / "moves.parquet", _frame(moves, MovesSchema), MovesSchema, sort_by=key_cols + ["elicit_index"])

    rewards = list(_self_rewards(records))
    values = [
        XentValue(tuple(Term(t.string, tuple((p, float(c)) for p, c in t.parts)) for t in reward.terms))
        for _, reward, _ in rewards
    ]
    pairs = sorted({pair for value in values for pair in value.pairs()})
    judges = [params.judge] + [j for j in params.rescore_judges if j != params.judge]
    rescored_rows: list[dict[str, Any]] = []
    token_rows: list[dict[str, Any]] = []
    mismatches: list[str] = []
    checked = 0
    for judge_name in judges:
        judge = params_judge(params, judge_name)
        print(
            f"xent rescore: {len(pairs)} (string, prefix) pairs from {len(rewards)} rewards with {judge_name}",
            file=sys.stderr,
        )
        scored = dict(zip(pairs, judge.score_many(pairs))) if pairs else {}
        fingerprint = judge.fingerprint.as_dict()
        for (keys, reward, record), value in zip(rewards, values):
            resolved = combine(value, [scored[p] for p in value.pairs()])
            rescored_rows.append(
                {**keys, "judge": judge_name, "total_bits": resolved.total, "play_total_bits": reward.total_bits}
            )
            if judge_name != params.judge:
                continue
            for index, token in enumerate(resolved.tokens):
                token_rows.append(
                    {
                        **{k: keys[k] for k in key_cols + ["reward_index"]},
                        "token_index": index,
                        "token": token.token,
                        "bits": token.bits,
                    }
                )
            if record.judge == fingerprint:
                checked += 1
                if not math.isclose(resolved.total, reward.total_bits, abs_tol=RESCORE_TOLERANCE_BITS):
                    mismatches.append(f"{keys}: play {reward.total_bits:.6f} vs rescored {resolved.total:.6f} bits")
    if mismatches:
        raise RuntimeError(
            f"{len(mismatches)} reward(s) rescored by {params.judge} differ from play time by more "
            f"than {RESCORE_TOLERANCE_BITS} bits (nondeterministic judge?), e.g.\n" + "\n".join(mismatches[:5])
        )
    write_table(
        out_dir / "rescore.parquet",
        _frame(rescored_rows, RescoreSchema),
        RescoreSchema,
        sort_by=key_cols + ["reward_index", "player_role", "judge"],
    )
    reward_rows = [
        {**keys, "total_bits": row["total_bits"]}
        for (keys, _, _), row in zip(rewards, [r for r in rescored_rows if r["judge"] == params.judge])
    ]
    write_table(
        out_dir / "rewards.parquet",
        _frame(reward_rows, RewardsSchema),
        RewardsSchema,
        sort_by=key_cols + ["reward_index", "player_role"],
    )
    write_table(
        out_dir / "token_xents.parquet",
        _frame(token_rows, TokenXentsSchema),
        TokenXentsSchema,
        sort_by=key_cols + ["reward_index", "token_index"],
    )

    calls = [read_table(job.path(plays).with_suffix(".calls.parquet"), CallsSchema) for job in schedule.jobs]
    all_calls = pl.concat(calls) if calls else pl.DataFrame()
    if calls:
        write_table(
            out_dir / "calls.parquet", all_calls, CallsSchema, sort_by=["job", "roster_name", "request_id", "attempt"]
        )
    summary = {
        "rewards": len(rewards),
        "pairs": len(pairs),
        "judges": judges,
        "checked_against_play": checked,
        "tolerance_bits": RESCORE_TOLERANCE_BITS,
    }
    write_json_atomic(out_dir / "rescore_check.json", summary)
    return summary


def _frame(rows: list[dict[str, Any]], schema: Schema) -> pl.DataFrame:
    if not rows:
        return empty_table(schema)
    return pl.DataFrame(rows).select(list(declared_columns(schema)))

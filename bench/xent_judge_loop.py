"""Xent on the reference's maps: bots x 20 rounds through the runtime and the judge, time per scored token.

    python bench/xent_judge_loop.py                 # the sample maps, gemma-3-270m, CPU float32

Workload: the two maps of tests/data/xent/benchmark-sample.json (the reference's file format),
imported with `pipeline.xent.mapset`, played for 20 rounds each by the heuristic and the random
bot through `play_map` (runtime, ensure re-asks, the judge scoring every reward). Then every
(string, prefix) pair the rewards needed is scored again from an empty cache in two ways, in the
same run:

- ours: `Judge.score_many` over all pairs (deduplicated, length-sorted padded batches, the
  vocabulary projection only at the scored positions);
- baseline, the reference's judge loop: one forward pass per scored text (each side tokenized
  with its own BOS, as the reference's `Judge.xent` does), the full logits at every position,
  then the cross-entropy of the scored tokens.

Both score exactly the same tokens with the default "reference" scoring; the largest difference
between their totals, and between our batched scores and our one-pair-at-a-time scores (another
batch composition, the stand-in for another machine), is the measured spread that docs/xent.md
uses for the metrics' precision. The CPU is shared, so the two ways are interleaved in slices.
Writes bench/results/xent_judge_loop.json.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, write_result

from pipeline.core.judge.cache import ScoreCache
from pipeline.core.judge.scoring import Judge, load_judge
from pipeline.core.models.gateway import Gateway
from pipeline.core.models.players import make_players
from pipeline.core.models.roster import ModelsParams
from pipeline.xent.mapset import import_benchmark, load_map_set
from pipeline.xent.play import PlaySettings, play_map
from pipeline.xent.values import Term, XentValue
from pipeline.xent.xgl import load_program

SAMPLE = Path(__file__).resolve().parent.parent / "tests" / "data" / "xent" / "benchmark-sample.json"
Pair = tuple[str, str]


def reference_loop_bits(judge: Judge, string: str, prefix: str) -> list[float]:
    """The reference's Judge.xent: tokenizer(prefix) + tokenizer(string), one forward, full logits."""
    import torch

    prefix_ids = judge.tokenizer(prefix)["input_ids"]
    string_ids = judge.tokenizer(string)["input_ids"]
    if not string:
        return []
    ids = torch.tensor([prefix_ids + string_ids], device=judge.device)
    with torch.inference_mode():
        logits = judge.model(input_ids=ids).logits[0].float()
    targets = ids[0, len(prefix_ids) + 1 :]
    nats = torch.nn.functional.cross_entropy(logits[len(prefix_ids) : -1], targets, reduction="none")
    return [v / math.log(2) for v in nats.tolist()]


def play_sample(judge: Judge, rounds: int, workdir: Path) -> tuple[list[dict], float]:
    import_benchmark(SAMPLE, workdir / "sample")
    mapset = load_map_set(workdir / "sample")
    models = ModelsParams.model_validate(
        {
            "roster": [{"name": "heuristic-bot", "bot": "heuristic"}, {"name": "random-bot", "bot": "random"}],
            "gateway": {"cache_dir": str(workdir / "cache")},
        }
    )
    gateway = Gateway(models, job="bench-xent", cache_dir=workdir / "cache")
    bots = make_players(models, gateway, 11, game="xent")
    records = []
    start = time.perf_counter()

    async def everything() -> list[dict]:
        jobs = []
        for name, maps in sorted(mapset.maps.items()):
            game = mapset.games[name]
            for one in maps:
                program = load_program(mapset.root / one.path)
                for bot in bots.values():
                    jobs.append(
                        play_map(
                            game, program, f"{one.map_id}-{bot.name}", {"black": bot}, judge, rounds, PlaySettings()
                        )
                    )
        return list(await asyncio.gather(*jobs))

    records = asyncio.run(everything())
    return records, time.perf_counter() - start


def reward_pairs(records: list[dict]) -> list[Pair]:
    pairs: set[Pair] = set()
    for record in records:
        for rnd in record["rounds"]:
            for reward in rnd["rewards"]:
                pairs.update(XentValue(tuple(Term.from_dict(t) for t in reward["terms"])).pairs())
    return sorted(pairs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--judge", default="gemma-3-270m")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--slices", type=int, default=4, help="interleaved slices of the pairs")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when torch sees a GPU)")
    parser.add_argument("--dtype", default="float32", help="the judge's weights: float32 (Xent's default) or bfloat16")
    parser.add_argument("--name", default="xent_judge_loop")
    args = parser.parse_args()

    judge = load_judge(args.judge, device=args.device, dtype=args.dtype)
    with tempfile.TemporaryDirectory() as tmp:
        records, play_s = play_sample(judge, args.rounds, Path(tmp))
    rounds = sum(len(r["rounds"]) for r in records)
    errored = sum(1 for r in records for rnd in r["rounds"] if rnd["error"])
    pairs = reward_pairs(records)
    scored_tokens = sum(max(len(judge.tokenizer(s)["input_ids"]) - 1, 0) for s, _ in pairs)
    print(
        f"played {rounds} rounds ({errored} errored) in {play_s:.1f} s; {len(pairs)} pairs, "
        f"{scored_tokens} scored tokens",
        file=sys.stderr,
    )

    # warm both paths first: on a GPU the first calls pay for the context and kernel selection
    judge.score_many(pairs[:2])
    reference_loop_bits(judge, *pairs[0])
    ours_s = base_s = 0.0
    ours: dict[Pair, float] = {}
    base: dict[Pair, float] = {}
    size = math.ceil(len(pairs) / args.slices)
    for k in range(args.slices):
        part = pairs[k * size : (k + 1) * size]
        for way in ("ours", "base") if k % 2 == 0 else ("base", "ours"):
            judge.cache = ScoreCache(None)
            start = time.perf_counter()
            if way == "ours":
                for pair, score in zip(part, judge.score_many(part)):
                    ours[pair] = score.total
                ours_s += time.perf_counter() - start
            else:
                for string, prefix in part:
                    base[(string, prefix)] = math.fsum(reference_loop_bits(judge, string, prefix))
                base_s += time.perf_counter() - start
    judge.cache = ScoreCache(None)
    single = {pair: judge.score_many([pair])[0].total for pair in pairs[: min(len(pairs), 40)]}
    vs_reference = max(abs(ours[p] - base[p]) for p in pairs)
    vs_single = max(abs(ours[p] - single[p]) for p in single)
    per_token = ours_s / scored_tokens
    baseline_per_token = base_s / scored_tokens
    write_result(
        args.name,
        metric="judge time per scored token over every reward of the sample maps x 20 rounds x 2 bots "
        "(runtime + judge, reference scoring)",
        value=round(per_token * 1000, 3),
        unit="ms per scored token",
        target="faster than the reference's judge loop, same totals within 1e-3 bits",
        baseline={
            "description": "the reference's judge loop: one full-logits forward per scored text, same run, "
            "interleaved slices",
            "value": round(baseline_per_token * 1000, 3),
            "unit": "ms per scored token",
        },
        meets_target=bool(per_token < baseline_per_token and vs_reference < 1e-3),
        speedup=round(baseline_per_token / per_token, 2),
        judge=judge.fingerprint.as_dict(),
        rounds_played=rounds,
        rounds_errored=errored,
        play_wall_s=round(play_s, 1),
        pairs=len(pairs),
        scored_tokens=scored_tokens,
        ours_s=round(ours_s, 2),
        baseline_s=round(base_s, 2),
        max_abs_diff_vs_reference_loop_bits=vs_reference,
        max_abs_diff_batched_vs_single_bits=vs_single,
        load_avg=load_average(),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

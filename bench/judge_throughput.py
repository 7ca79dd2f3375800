"""Judge throughput: batched scoring vs one full-logits forward pass per pair.

    python bench/judge_throughput.py                  # 256 pairs, gemma-3-270m, CPU float32
    python bench/judge_throughput.py --device cuda    # GPU: bf16 weights, plus the largest batch

Workload: 256 (prefix, story) pairs built from the judge's story openings, prefixes of 8-12
tokens and stories of 45-55 tokens (seeded). Both sides score exactly the same tokens (all but
the first token of each story), both include tokenization, the score cache is always empty.

- batched: `Judge.score_many` (length-sorted padded batches of up to `max_batch_tokens`, the
  vocabulary projection only at scored positions, chunked, float32 log-softmax).
- baseline: for each pair, one forward pass over BOS + prefix + story with the full logits at
  every position, then the cross-entropy of the story's tokens (how the public Xent
  implementation scores), under inference mode (the public code also records autograd; the
  baseline here does not, which only makes it faster).

The CPU here is shared with other jobs and its load drifts by minutes, so the ratio is measured
in interleaved rounds: each round scores a slice of the pairs batched and then one by one (the
order alternating between rounds), and the speedup is total baseline time over total batched
time. One `score_many` over all 256 pairs at once is timed too. Writes
bench/results/<name>.json.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, write_result

from pipeline.core.artifacts.io import seed_from
from pipeline.core.judge.cache import ScoreCache
from pipeline.core.judge.prompts import STORY_OPENINGS
from pipeline.core.judge.scoring import Judge, load_judge

TARGET_SPEEDUP_CPU = 8.0
Pair = tuple[str, str]


def make_pairs(judge: Judge, count: int, seed: int) -> list[Pair]:
    """(story, prefix) pairs of real text: prefixes ~10 tokens, stories ~50 tokens."""
    rng = random.Random(seed_from("bench-judge-throughput", seed))
    words = " ".join(STORY_OPENINGS).split()

    def passage(tokens: int) -> str:
        start = rng.randrange(len(words) - 120)
        return judge.first_n_tokens(" ".join(words[start : start + 120]), tokens)

    return [(passage(rng.randint(45, 55)), passage(rng.randint(8, 12))) for _ in range(count)]


def baseline_bits(judge: Judge, story: str, prefix: str) -> list[float]:
    """One forward pass per pair with full-vocabulary logits at every position."""
    import torch

    prefix_ids = [judge.tokenizer.bos_token_id] + judge.encode(prefix)
    story_ids = judge.encode(story)
    ids = torch.tensor([prefix_ids + story_ids], device=judge.device)
    with torch.inference_mode():
        logits = judge.model(input_ids=ids).logits[0]
        nats = torch.nn.functional.cross_entropy(
            logits[len(prefix_ids) : -1].float(), ids[0, len(prefix_ids) + 1 :], reduction="none"
        )
    return (nats / math.log(2)).cpu().tolist()


def timed_batched(judge: Judge, pairs: list[Pair]) -> tuple[float, list[list[float]]]:
    judge.cache = ScoreCache()  # measure the model, not the cache
    _sync(judge)
    started = time.perf_counter()
    scores = judge.score_many(pairs)
    _sync(judge)
    return time.perf_counter() - started, [list(s.bits) for s in scores]


def timed_baseline(judge: Judge, pairs: list[Pair]) -> tuple[float, list[list[float]]]:
    _sync(judge)
    started = time.perf_counter()
    bits = [baseline_bits(judge, story, prefix) for story, prefix in pairs]
    _sync(judge)
    return time.perf_counter() - started, bits


def _sync(judge: Judge) -> None:
    if judge.device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def largest_gpu_batch(judge: Judge, pairs: list[Pair], cap_tokens: int) -> dict[str, float | int | str]:
    """Double the token budget (copies of the pairs in one batch) until CUDA runs out of memory.

    `cap_tokens` bounds the search: a large card holds batches whose tokenization alone takes
    minutes on the host before the GPU sees it."""
    import torch

    best: dict[str, float | int | str] = {}
    saved = judge.max_batch_tokens
    budget = saved
    stopped_by = f"cap of {cap_tokens} tokens (no out-of-memory below it)"
    try:
        while budget <= cap_tokens:
            rows = max(1, budget // 64)
            copies = pairs * (rows // len(pairs) + 1)
            work = [(f"{story} #{i}", prefix) for i, (story, prefix) in enumerate(copies)][:rows]
            judge.max_batch_tokens = budget
            try:
                seconds, bits = timed_batched(judge, work)
            except torch.cuda.OutOfMemoryError:
                torch.cuda.empty_cache()
                stopped_by = f"out of memory at {budget} tokens"
                break
            scored = sum(len(b) for b in bits)
            best = {"rows": rows, "batch_tokens": budget, "scored_tokens_per_s": round(scored / seconds, 1)}
            print(f"gpu batch {budget} tokens ({rows} rows): {scored / seconds:.0f} scored tokens/s", file=sys.stderr)
            budget *= 2
    finally:
        judge.max_batch_tokens = saved
    return {**best, "stopped_by": stopped_by}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=4, help="interleaved batched/baseline rounds")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--dtype", default=None, help="default: float32 on cpu, bfloat16 on cuda")
    parser.add_argument("--judge", default=None, help="judge name or model directory (default: gemma-3-270m)")
    parser.add_argument("--batch-tokens", type=int, default=None, help="the judge's max_batch_tokens")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--gpu-cap-tokens",
        type=int,
        default=1 << 21,
        help="largest batch (tokens) tried when searching the GPU's limit",
    )
    parser.add_argument("--name", default="judge_throughput")
    args = parser.parse_args()

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("error: --device cuda but torch sees no GPU", file=sys.stderr)
        return 2
    load_before = load_average()
    # the baseline below builds BOS + prefix + story: the bos_once scoring (the batching is the same in every mode)
    judge = load_judge(args.judge, device=args.device, dtype=args.dtype, scoring="bos_once")
    if args.batch_tokens:
        judge.max_batch_tokens = args.batch_tokens
    pairs = make_pairs(judge, args.pairs, args.seed)
    scored_tokens = sum(len(judge.encode(story)) - 1 for story, _ in pairs)
    print(f"{judge!r}: {len(pairs)} pairs, {scored_tokens} scored tokens; warming up", file=sys.stderr)
    timed_batched(judge, pairs[:4])
    timed_baseline(judge, pairs[:1])

    all_at_once_s, _ = timed_batched(judge, pairs)
    print(f"all {len(pairs)} pairs in one score_many: {all_at_once_s:.1f} s", file=sys.stderr)

    size = math.ceil(len(pairs) / args.rounds)
    batched_s = baseline_s = 0.0
    round_ratios: list[float] = []
    max_diff = 0.0
    for number, start in enumerate(range(0, len(pairs), size)):
        part = pairs[start : start + size]
        if number % 2 == 0:
            b_s, batched = timed_batched(judge, part)
            r_s, reference = timed_baseline(judge, part)
        else:
            r_s, reference = timed_baseline(judge, part)
            b_s, batched = timed_batched(judge, part)
        batched_s += b_s
        baseline_s += r_s
        round_ratios.append(r_s / b_s)
        max_diff = max([max_diff] + [abs(a - b) for x, y in zip(reference, batched) for a, b in zip(x, y)])
        print(
            f"round {number + 1}: {len(part)} pairs, batched {b_s:.1f} s, baseline {r_s:.1f} s "
            f"({r_s / b_s:.2f}x), load {load_average()}",
            file=sys.stderr,
        )

    load_after = load_average()

    per_pair = {"batched": batched_s / len(pairs), "baseline": baseline_s / len(pairs)}
    speedup = baseline_s / batched_s
    tokens_per_pair = scored_tokens / len(pairs)
    on_gpu = args.device.startswith("cuda")
    notes = [
        f"load average (1/5/15 min) before {load_before}, after {load_after}; "
        f"{torch.get_num_threads()} torch threads on {os.cpu_count()} cores",
    ]
    if load_before and load_before[0] > (os.cpu_count() or 1):
        notes.append(
            "the machine was shared and busy (load above the core count): absolute times "
            "are inflated and drift; the ratio comes from interleaved rounds (round_speedups)"
        )
    if not on_gpu:
        notes.append(
            "CPU only: the GPU figures (bf16 tokens/s, largest batch that fits) come from "
            "`python bench/judge_throughput.py --device cuda` on a GPU machine; not run here"
        )
    path = write_result(
        args.name,
        metric="speedup of batched scoring over one full-logits forward pass per pair",
        value=round(speedup, 2),
        unit="x",
        target=TARGET_SPEEDUP_CPU if not on_gpu else None,
        baseline={
            "what": "one forward pass per pair with full-vocabulary logits, then cross-entropy "
            "(inference mode), interleaved with the batched runs",
            "s_per_pair": round(per_pair["baseline"], 4),
            "scored_tokens_per_s": round(tokens_per_pair / per_pair["baseline"], 1),
        },
        device=args.device,
        met=(speedup >= TARGET_SPEEDUP_CPU) if not on_gpu else None,
        workload={
            "pairs": len(pairs),
            "prefix_tokens": "8-12",
            "story_tokens": "45-55",
            "scored_tokens": scored_tokens,
            "rounds": len(round_ratios),
        },
        judge=judge.fingerprint.as_dict(),
        max_batch_tokens=judge.max_batch_tokens,
        batched_s_per_pair=round(per_pair["batched"], 4),
        batched_scored_tokens_per_s=round(tokens_per_pair / per_pair["batched"], 1),
        all_at_once_s=round(all_at_once_s, 2),
        round_speedups=[round(r, 2) for r in round_ratios],
        median_round_speedup=round(statistics.median(round_ratios), 2),
        max_abs_diff_bits_vs_baseline=max_diff,
        gpu=largest_gpu_batch(judge, pairs, args.gpu_cap_tokens) if on_gpu else "not run (no GPU on this machine)",
        notes=notes,
    )
    print(f"speedup {speedup:.2f}x -> {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Aggregate decoding speed of the embedded chat model at 1 and 8 concurrent requests.

    python bench/embedded_batch.py              # 2 rounds, CPU float32, local/smollm2-135m
    python bench/embedded_batch.py --rounds 3 --threads 2

Eight chat requests (eight short instructions that ask for a story or a list, so most replies run
to the cap), sampled at the demo's settings (temperature 0.7, top_p 0.95, a seed each), at most
`MAX_TOKENS` tokens each, through litellm exactly as the games send them
(`litellm.acompletion(model="local/smollm2-135m", ...)`, with top-2 log-probabilities):

- batch 1: the eight one after another (what `providers.local.max_concurrency: 1` gives);
- batch 8: the eight at once (asyncio.gather): the batcher decodes them together;
- before batching (reference): the decoding loop this repository had before batching, one request
  at a time (one token per forward pass, matrix-vector products, a full sort for top_p).

Aggregate tokens/s = completion tokens of the eight / wall time of the eight, prompts included.
Every round runs the three in turn (who goes first alternates), so load drift spreads over all;
each mode's rate is its fastest round (the machine is shared: other work only slows a run).
Batch 8 must give every reply, usage count and log-probability exactly as batch 1 did. Batch 1
and batch 8 each start with no kept prompt chunks: the eight prompts share the chat format's
system line and examples (about 85 tokens), which the first request computes and the others take
(pipeline/core/models/local_batch.py); the loop before batching computes every prompt whole.

A second, demo-like workload follows (one round): eight Elimination-sized prompts (the real
system prompt and a round-2 view, about 600 tokens) with 12-token replies, where prompt
processing, which batching does not share, dominates. Writes bench/results/<name>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, write_result

from pipeline.core.models.local import SMOLLM2, LocalModel, local_model, register_local_provider
from pipeline.core.models.local_batch import ROWS

MAX_TOKENS = 32
SAMPLED = {"temperature": 0.7, "top_p": 0.95}
TARGET_SPEEDUP = 4.0
INSTRUCTIONS = (
    "Tell me a story about a cat.",
    "Describe your favourite city in a few sentences.",
    "Write a short poem about the sea.",
    "List five fruits and say one thing about each.",
    "Explain how a bicycle works.",
    "Tell me about a day at the beach.",
    "Write a letter to a friend about your holiday.",
    "Describe a forest in the morning.",
)
Messages = list[dict[str, str]]


def story_requests() -> list[tuple[Messages, dict[str, Any]]]:
    return [
        ([{"role": "user", "content": text}], {**SAMPLED, "seed": index, "max_tokens": MAX_TOKENS})
        for index, text in enumerate(INSTRUCTIONS)
    ]


def elimination_requests() -> list[tuple[Messages, dict[str, Any]]]:
    """Eight seats' statements in round 2 of an Elimination game: the demo's prompt sizes."""
    from pipeline.elimination.config import WordLimits
    from pipeline.elimination.prompts import PublicLine, SeatView, messages_for, statement_task, system_prompt

    seats = tuple(f"P{i}" for i in range(1, 9))
    public = tuple(
        PublicLine(
            1,
            "statement",
            seat,
            f"I am {seat}. I play fair, I keep my word and I will vote "
            f"against whoever breaks an alliance first. Work with me and we both reach the "
            f"final.",
        )
        for seat in seats
    )
    requests = []
    for index, seat in enumerate(seats):
        view = SeatView(seat, 2, seats, (), public, ())
        messages = messages_for(system_prompt(seat, len(seats), WordLimits()), view, statement_task(80))
        requests.append((messages, {**SAMPLED, "seed": index, "max_tokens": 12}))
    return requests


async def _ask(messages: Messages, options: dict[str, Any]) -> dict[str, Any]:
    import litellm

    response = await litellm.acompletion(
        model=f"local/{SMOLLM2}", messages=messages, num_retries=0, logprobs=True, top_logprobs=2, **options
    )
    choice = response.choices[0]
    logprobs = choice.logprobs["content"] if isinstance(choice.logprobs, dict) else choice.logprobs.content
    return {
        "text": choice.message.content,
        "finish_reason": choice.finish_reason,
        "prompt_tokens": response.usage.prompt_tokens,
        "completion_tokens": response.usage.completion_tokens,
        "logprobs": [
            (item["token"], item["logprob"], [(t["token"], t["logprob"]) for t in item["top_logprobs"]])
            if isinstance(item, dict)
            else (item.token, item.logprob, [(t.token, t.logprob) for t in item.top_logprobs])
            for item in logprobs
        ],
    }


def run_batched(requests: list[tuple[Messages, dict[str, Any]]], together: bool) -> tuple[list[dict[str, Any]], float]:
    """The replies and the wall time of `requests`, one after another or all at once."""

    async def go() -> list[dict[str, Any]]:
        if together:
            return list(await asyncio.gather(*(_ask(m, o) for m, o in requests)))
        return [await _ask(m, o) for m, o in requests]

    started = time.perf_counter()
    replies = asyncio.run(go())
    return replies, time.perf_counter() - started


def legacy_generate(engine: LocalModel, messages: Messages, options: dict[str, Any]) -> tuple[str, int]:
    """The decoding loop before batching: one token per forward pass over the request's own
    DynamicCache (matrix-vector products), top_p by a full sort. Kept here as the reference."""
    import torch

    ids = engine.encode(engine.chat_prompt(messages))
    generator = torch.Generator(device="cpu")
    generator.manual_seed(int(options.get("seed") or 0) % (2**63))
    produced: list[int] = []
    sampled = 0
    with torch.inference_mode():
        out = engine.model(input_ids=torch.tensor([ids]), use_cache=True, logits_to_keep=1)
        cache_arg = "cache" if "cache" in out else "past_key_values"
        for _ in range(options["max_tokens"]):
            sampled += 1
            logits = out.logits[0, -1].float()
            torch.log_softmax(logits, dim=-1)  # what the loop computed for log-probabilities
            probs = torch.softmax(logits / options["temperature"], dim=-1)
            sorted_probs, order = torch.sort(probs, descending=True)
            keep = torch.cumsum(sorted_probs, dim=-1) - sorted_probs < options["top_p"]
            probs = torch.zeros_like(probs).scatter(0, order[keep], sorted_probs[keep])
            token = int(torch.multinomial(probs, 1, generator=generator))
            if token in engine.end_ids:
                break
            produced.append(token)
            out = engine.model(input_ids=torch.tensor([[token]]), use_cache=True, **{cache_arg: out[cache_arg]})
    return engine.tokenizer.decode(produced, skip_special_tokens=True), sampled


def run_legacy(engine: LocalModel, requests: list[tuple[Messages, dict[str, Any]]]) -> tuple[list[str], int, float]:
    """The loop before batching over `requests`, on the batcher's thread: torch work on a second
    thread would slow every later run of the batcher (see `Batcher.call`)."""
    started = time.perf_counter()
    replies = engine.batcher.call(lambda: [legacy_generate(engine, m, o) for m, o in requests]).result()
    return [text for text, _ in replies], sum(n for _, n in replies), time.perf_counter() - started


def tokens(replies: list[dict[str, Any]]) -> int:
    return sum(r["completion_tokens"] for r in replies)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="embedded_batch")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    parser.add_argument("--no-demo-like", action="store_true", help="skip the Elimination-sized workload")
    args = parser.parse_args()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    load_before = load_average()
    register_local_provider()
    engine = local_model(SMOLLM2)
    requests = story_requests()
    run_batched(requests[:2], together=True)  # warm-up: first calls through litellm are slow

    rounds: list[dict[str, Any]] = []
    mismatches = 0
    for index in range(args.rounds):
        measured: dict[str, Any] = {}
        order = ("batch_1", "batch_8", "before") if index % 2 == 0 else ("before", "batch_8", "batch_1")
        for mode in order:
            if mode == "before":
                _, made, wall = run_legacy(engine, requests)
                measured[mode] = {"tokens": made, "wall_s": round(wall, 2), "tokens_per_s": round(made / wall, 2)}
                continue
            engine.batcher.forget_prompts()  # each mode computes the shared prompt chunks once itself
            steps, rows = engine.batcher.steps, engine.batcher.row_steps
            replies, wall = run_batched(requests, together=mode == "batch_8")
            measured[mode] = {
                "tokens": tokens(replies),
                "wall_s": round(wall, 2),
                "tokens_per_s": round(tokens(replies) / wall, 2),
                "rows_per_step": round((engine.batcher.row_steps - rows) / max(1, engine.batcher.steps - steps), 2),
                "replies": replies,
            }
        alone, together = measured["batch_1"].pop("replies"), measured["batch_8"].pop("replies")
        mismatches += sum(a != b for a, b in zip(alone, together))
        measured["speedup"] = round(measured["batch_8"]["tokens_per_s"] / measured["batch_1"]["tokens_per_s"], 2)
        measured["speedup_vs_before"] = round(
            measured["batch_8"]["tokens_per_s"] / measured["before"]["tokens_per_s"], 2
        )
        rounds.append(measured)
        print(f"round {index + 1}: {measured}", file=sys.stderr)

    demo_like: dict[str, Any] | None = None
    if not args.no_demo_like:
        heavy = elimination_requests()
        _, made, legacy_wall = run_legacy(engine, heavy)
        engine.batcher.forget_prompts()
        alone, alone_wall = run_batched(heavy, together=False)
        engine.batcher.forget_prompts()
        together, together_wall = run_batched(heavy, together=True)
        mismatches += sum(a != b for a, b in zip(alone, together))
        demo_like = {
            "workload": "8 Elimination round-2 statements (real system prompt and view), 12 tokens at most, "
            "sampled at the demo's settings",
            "prompt_tokens": [r["prompt_tokens"] for r in alone],
            "batch_1": {
                "tokens": tokens(alone),
                "wall_s": round(alone_wall, 2),
                "tokens_per_s": round(tokens(alone) / alone_wall, 2),
            },
            "batch_8": {
                "tokens": tokens(together),
                "wall_s": round(together_wall, 2),
                "tokens_per_s": round(tokens(together) / together_wall, 2),
            },
            "before": {"tokens": made, "wall_s": round(legacy_wall, 2), "tokens_per_s": round(made / legacy_wall, 2)},
        }
        demo_like["speedup"] = round(demo_like["batch_8"]["tokens_per_s"] / demo_like["batch_1"]["tokens_per_s"], 2)
        print(f"demo-like: {demo_like}", file=sys.stderr)

    def best(mode: str) -> float:
        # the fastest round: other work on a shared machine only ever slows a run down
        return max(r[mode]["tokens_per_s"] for r in rounds)

    speedup = round(best("batch_8") / best("batch_1"), 2)
    write_result(
        args.name,
        metric=f"aggregate tokens/s at {ROWS} concurrent requests over batch 1 (local/{SMOLLM2}, "
        f"{len(requests)} sampled chat requests of at most {MAX_TOKENS} tokens, prompts included)",
        value=speedup,
        unit="x",
        target={
            "speedup": f">= {TARGET_SPEEDUP}x",
            "replies": "every batched reply, usage count and log-probability identical to the same request alone",
        },
        baseline={
            "batch_1_tokens_per_s": best("batch_1"),
            "before_batching_tokens_per_s": best("before"),
            "what": "batch 1: the same eight requests one after another, same run; before batching: the "
            "decoding loop before this change (one token per forward pass), same run; each the "
            "fastest of the rounds",
        },
        device="cpu",
        met=speedup >= TARGET_SPEEDUP and mismatches == 0,
        replies_identical=mismatches == 0,
        mismatched_replies=mismatches,
        batch_8_tokens_per_s=best("batch_8"),
        speedup_vs_before_batching=round(best("batch_8") / best("before"), 2),
        median_round_speedup=round(statistics.median(r["speedup"] for r in rounds), 2),
        rounds=rounds,
        demo_like=demo_like,
        workload={
            "instructions": list(INSTRUCTIONS),
            "max_tokens": MAX_TOKENS,
            "sampling": SAMPLED,
            "seeds": list(range(len(INSTRUCTIONS))),
            "rows_per_step": ROWS,
            "order": "batch 1, batch 8 and the loop before batching take turns each round",
        },
        notes=[
            f"load average (1/5/15 min) before {load_before}, after {load_average()}; "
            f"{torch.get_num_threads()} torch threads; the machine is shared, so rates drift with its load"
        ],
    )


if __name__ == "__main__":
    main()

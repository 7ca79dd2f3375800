"""Does the embedded chat model answer a plain instruction with words? Four prompt setups compared.

    python bench/embedded_instruct.py            # greedy and seeded sampling, CPU float32

Ten plain instructions with a checkable answer ("Name a colour.", "Reply with the number 7 and
nothing else.", ...), each sent as one user message to:

- baseline: the base gemma-3-270m with Gemma's turn format (what `local/gemma-3-270m` sends,
  and what the demo roster's `gemma-270m` entry used to play with);
- the base gemma-3-270m with a plain `User:` / `Assistant:` transcript and three solved examples
  (the best base-model format found; `pipeline.core.models.local.TRANSCRIPT`);
- SmolLM2-135M-Instruct with its own chat template (ChatML, its default system line);
- SmolLM2-135M-Instruct with ChatML and the same three solved examples as turns
  (`pipeline.core.models.local.SMOLLM2_CHAT`: what `local/smollm2-135m` sends).

The examples (`pipeline.core.models.local.BRIEF_EXAMPLES`) are none of the ten instructions, but three of
the ten share a kind with one (name a thing, say a word, a number only).

Every setup answers every instruction greedily and once sampled at the demo's settings
(temperature 0.7, top_p 0.95, a fixed seed), at most 24 tokens; the setups take turns per
instruction so the machine's load drift spreads over all of them. A reply "is words" when it
has a word of letters or digits and mostly such characters (not dashes or stray symbols); it
"answers" when it is words, ends by itself before the token cap and does not repeat the
instruction; it "follows" when the instruction's own check passes (the exact word asked for, a
colour for "Name a colour.", at most a few words). Latency is the wall time of one reply, prompt
included. Decoding speed is measured apart: 32 tokens generated from a short prompt with the end
tokens ignored, three rounds per model taking turns, the median rate. Writes
bench/results/<name>.json.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, write_result

from pipeline.core.models.local import (
    GEMMA_TURNS,
    SMOLLM2_CHAT,
    SMOLLM2_SYSTEM,
    TRANSCRIPT,
    LocalModel,
    PromptFormat,
    chatml,
    gemma_weights_dir,
    smollm2_weights_dir,
)

MAX_TOKENS = 24
SAMPLED = {"temperature": 0.7, "top_p": 0.95, "seed": 7}
TARGET_FOLLOWS = 0.7  # share of instructions followed, greedy; and every reply an answer in words

COLOURS = {
    "red",
    "blue",
    "green",
    "yellow",
    "orange",
    "purple",
    "pink",
    "black",
    "white",
    "brown",
    "grey",
    "gray",
    "violet",
    "indigo",
    "cyan",
    "magenta",
    "gold",
    "silver",
    "turquoise",
    "beige",
}
ANIMALS = {
    "cat",
    "dog",
    "horse",
    "cow",
    "pig",
    "sheep",
    "goat",
    "lion",
    "tiger",
    "elephant",
    "bear",
    "wolf",
    "fox",
    "rabbit",
    "mouse",
    "rat",
    "deer",
    "monkey",
    "giraffe",
    "zebra",
    "bird",
    "eagle",
    "owl",
    "fish",
    "shark",
    "whale",
    "dolphin",
    "snake",
    "frog",
    "duck",
    "chicken",
    "panda",
    "kangaroo",
    "koala",
    "cheetah",
    "leopard",
    "camel",
    "donkey",
    "squirrel",
    "hamster",
    "penguin",
    "parrot",
    "turtle",
    "crocodile",
    "alligator",
    "hippopotamus",
    "rhinoceros",
    "otter",
    "bee",
}
DAYS = {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}


def words(text: str) -> list[str]:
    """Lower-case words of a reply, punctuation, quotes and markdown dropped."""
    return re.findall(r"[a-z0-9]+", text.lower())


def exactly(*accepted: str) -> Callable[[str], bool]:
    return lambda reply: " ".join(words(reply)) in accepted


def one_of(vocabulary: set[str], max_words: int) -> Callable[[str], bool]:
    return lambda reply: 0 < len(words(reply)) <= max_words and bool(vocabulary & set(words(reply)))


INSTRUCTIONS: list[tuple[str, Callable[[str], bool]]] = [
    ("Name a colour.", one_of(COLOURS, 8)),
    ("Answer with one word: what is the capital of France?", exactly("paris")),
    ("Reply with the number 7 and nothing else.", exactly("7", "seven")),
    ("Reply with the single word: blue", exactly("blue")),
    ("What is 2 + 3? Answer with a number only.", exactly("5", "five")),
    ("Name an animal.", one_of(ANIMALS, 8)),
    ("Is the sky blue on a clear day? Answer yes or no.", exactly("yes")),
    ("Write the word 'hello' in capital letters.", lambda r: "HELLO" in r and len(words(r)) <= 3),
    ("Name a day of the week.", one_of(DAYS, 6)),
    ("Translate 'thank you' into French.", lambda r: "merci" in words(r) and len(words(r)) <= 6),
]


def is_words(reply: str) -> bool:
    """A reply in words: some letters or digits, and they make most of what is not space."""
    visible = [c for c in reply if not c.isspace()]
    return bool(words(reply)) and sum(c.isalnum() for c in visible) >= 0.5 * len(visible)


def answers(reply: str, finish_reason: str, instruction: str) -> bool:
    """An answer: words that end by themselves and do not repeat the instruction."""
    return is_words(reply) and finish_reason == "stop" and words(instruction) != words(reply)[: len(words(instruction))]


@dataclass
class Setup:
    key: str
    what: str
    model: str
    prompt_format: PromptFormat


SETUPS = [
    Setup(
        "gemma_turns", "gemma-3-270m (base), Gemma's turn format: the current local/gemma-3-270m", "gemma", GEMMA_TURNS
    ),
    Setup(
        "gemma_transcript",
        "gemma-3-270m (base), User:/Assistant: transcript with 3 solved examples",
        "gemma",
        TRANSCRIPT,
    ),
    Setup(
        "smollm2_template",
        "SmolLM2-135M-Instruct, its own chat template (ChatML, default system line)",
        "smollm2",
        PromptFormat(
            "chatml", lambda m: chatml(m, default_system=SMOLLM2_SYSTEM), bos=False, end_tokens=("<|im_end|>",)
        ),
    ),
    Setup(
        "smollm2_chat",
        "SmolLM2-135M-Instruct, ChatML with 3 solved example turns: local/smollm2-135m",
        "smollm2",
        SMOLLM2_CHAT,
    ),
]
SETUPS_BY_KEY = {s.key: s for s in SETUPS}
BASELINE, CHOSEN = "gemma_turns", "smollm2_chat"
DECODE_TOKENS, DECODE_ROUNDS = 32, 3


def load(model: str, prompt_format: PromptFormat) -> tuple[LocalModel, float]:
    started = time.perf_counter()
    path = gemma_weights_dir() if model == "gemma" else smollm2_weights_dir()
    return LocalModel(model, path, prompt_format=prompt_format), time.perf_counter() - started


def decode_rates(engines: dict[str, LocalModel]) -> dict[str, float]:
    """Median tokens/s of plain decoding per model: DECODE_TOKENS tokens, end tokens ignored."""
    rates: dict[str, list[float]] = {name: [] for name in engines}
    for _ in range(DECODE_ROUNDS):
        for name, engine in engines.items():
            probe = engine.reformatted(engine.format)
            probe.end_ids = set()  # never stop early: every round decodes the same number of tokens
            started = time.perf_counter()
            made = probe.generate("Once upon a time", max_tokens=DECODE_TOKENS).completion_tokens
            rates[name].append(made / (time.perf_counter() - started))
    return {name: round(statistics.median(found), 2) for name, found in rates.items()}


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    seconds = sum(r["latency_s"] for r in rows)
    tokens = sum(r["tokens"] for r in rows)
    return {
        "follows": round(sum(r["follows"] for r in rows) / len(rows), 2),
        "answers": round(sum(r["answers"] for r in rows) / len(rows), 2),
        "words": round(sum(r["words"] for r in rows) / len(rows), 2),
        "median_latency_s": round(statistics.median(r["latency_s"] for r in rows), 2),
        "reply_tokens_per_s": round(tokens / seconds, 2),  # prompt time included
        "mean_reply_tokens": round(tokens / len(rows), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="embedded_instruct")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    args = parser.parse_args()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    load_before = load_average()
    engines: dict[str, LocalModel] = {}
    load_s: dict[str, float] = {}
    for setup in SETUPS:  # one load per model; the setups of a model share its weights
        shared = next((e for e in engines.values() if e.name == setup.model), None)
        if shared is None:
            engine, load_s[setup.model] = load(setup.model, setup.prompt_format)
        else:
            engine = shared.reformatted(setup.prompt_format)
        engines[setup.key] = engine

    rows: dict[str, dict[str, list[dict[str, Any]]]] = {s.key: {"greedy": [], "sampled": []} for s in SETUPS}
    for index, (instruction, check) in enumerate(INSTRUCTIONS):
        order = SETUPS if index % 2 == 0 else SETUPS[::-1]  # alternate who goes first
        for setup in order:
            for mode, options in (("greedy", {"temperature": 0.0}), ("sampled", SAMPLED)):
                started = time.perf_counter()
                reply = engines[setup.key].chat(
                    [{"role": "user", "content": instruction}], max_tokens=MAX_TOKENS, **options
                )
                elapsed = time.perf_counter() - started
                rows[setup.key][mode].append(
                    {
                        "instruction": instruction,
                        "reply": reply.text,
                        "tokens": reply.completion_tokens,
                        "latency_s": round(elapsed, 3),
                        "words": is_words(reply.text),
                        "follows": check(reply.text),
                        "answers": answers(reply.text, reply.finish_reason, instruction),
                    }
                )
                print(
                    f"{setup.key:18} {mode:7} {elapsed:6.2f}s {reply.completion_tokens:3d} "
                    f"{instruction[:40]!r:44} -> {reply.text[:60]!r}",
                    file=sys.stderr,
                )

    decoding = decode_rates({s.model: engines[s.key] for s in SETUPS})
    setups = {
        s.key: {
            "what": s.what,
            "prompt_format": s.prompt_format.name,
            "load_s": round(load_s[s.model], 2),
            "greedy": summary(rows[s.key]["greedy"]),
            "sampled": summary(rows[s.key]["sampled"]),
            "decode_tokens_per_s": decoding[s.model],
            "replies": {
                mode: [{k: r[k] for k in ("instruction", "reply", "follows", "answers")} for r in found]
                for mode, found in rows[s.key].items()
            },
        }
        for s in SETUPS
    }
    chosen = {**setups[CHOSEN]["greedy"], "decode_tokens_per_s": decoding[SETUPS_BY_KEY[CHOSEN].model]}
    baseline = {**setups[BASELINE]["greedy"], "decode_tokens_per_s": decoding[SETUPS_BY_KEY[BASELINE].model]}
    write_result(
        args.name,
        metric="share of plain instructions the embedded chat model follows with words (greedy, 10 instructions)",
        value=chosen["follows"],
        unit="fraction",
        target={"follows": TARGET_FOLLOWS, "answers": 1.0},
        baseline={"what": setups[BASELINE]["what"], **baseline},
        device="cpu",
        met=chosen["follows"] >= TARGET_FOLLOWS and chosen["answers"] == 1.0,
        chosen={"setup": CHOSEN, **chosen},
        setups=setups,
        workload={
            "instructions": len(INSTRUCTIONS),
            "max_tokens": MAX_TOKENS,
            "sampled": SAMPLED,
            "order": "setups take turns per instruction, alternating who goes first",
        },
        notes=[
            f"load average (1/5/15 min) before {load_before}, after {load_average()}; "
            f"{torch.get_num_threads()} torch threads; the machine is shared, so latencies drift with its load",
            "load_s: reading the de-quantized weights from the user cache (converted before)",
        ],
    )


if __name__ == "__main__":
    main()

"""The embedded chat model through litellm: it answers with words; seeded sampling, greedy, stops,
usage, log-probabilities; concurrent requests decoded together, each reply the one it gets alone;
and the prompt formats of every registered local model."""

from __future__ import annotations

import asyncio
import re
import threading
from typing import TYPE_CHECKING

import litellm
import pytest

from pipeline.core.models.local import (
    GEMMA,
    GEMMA_TURNS,
    SMOLLM2,
    SMOLLM2_CHAT,
    SMOLLM2_SYSTEM,
    TRANSCRIPT,
    LocalModel,
    chatml,
    gemma_turns,
    local_model,
    local_models,
    register_local_provider,
    transcript,
)
from pipeline.core.models.local_batch import Generation, nucleus

if TYPE_CHECKING:
    import torch

# (torch is imported where it is used: every xdist worker collects this module, and most run none of it)
pytestmark = pytest.mark.slow
MODEL = f"local/{SMOLLM2}"
ASK = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Name a colour."}]
COLOURS = {"red", "blue", "green", "yellow", "orange", "purple", "pink", "black", "white", "brown", "grey", "gray"}
CONVERSATION = [
    {"role": "system", "content": "Rules."},
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello"},
    {"role": "user", "content": "Move?"},
]


@pytest.fixture(scope="module")
def engine() -> LocalModel:
    register_local_provider()
    return local_model(SMOLLM2)


def forward(engine: LocalModel, ids: list[int]) -> torch.Tensor:
    """Every position's logits from one plain forward pass."""
    import torch

    with torch.inference_mode():
        return engine.model(input_ids=torch.tensor([ids])).logits[0].float()


def ask(messages: list[dict[str, str]] = ASK, **kwargs) -> litellm.ModelResponse:
    return litellm.completion(model=MODEL, messages=messages, num_retries=0, **kwargs)


def test_a_plain_question_gets_an_answer_in_words(engine: LocalModel) -> None:
    # the issue: the base model answered "Name a colour." with 24 lines of dashes
    plain = ask([{"role": "user", "content": "Name a colour."}], temperature=0.0, max_tokens=16)
    reply = plain.choices[0].message.content
    words = re.findall(r"[a-z]+", reply.lower())
    assert COLOURS & set(words) and len(words) <= 6, reply
    assert plain.choices[0].finish_reason == "stop"  # it ends its turn by itself
    # the roster check's instruction, followed to the letter at the demo's sampling settings too
    check = [{"role": "user", "content": "Reply with the single word: blue"}]
    for options in ({"temperature": 0.0}, {"temperature": 0.7, "top_p": 0.95, "seed": 3}):
        assert ask(check, max_tokens=8, **options).choices[0].message.content.strip(" .").lower() == "blue"


def test_same_seed_same_text_other_seed_other_text(engine: LocalModel) -> None:
    story = [{"role": "user", "content": "Tell me a story about a cat."}]
    first = ask(story, temperature=1.0, max_tokens=12, seed=11)
    second = ask(story, temperature=1.0, max_tokens=12, seed=11)
    others = {ask(story, temperature=1.0, max_tokens=12, seed=s).choices[0].message.content for s in (12, 13, 14)}
    assert first.choices[0].message.content == second.choices[0].message.content
    assert len(others | {first.choices[0].message.content}) > 1


def test_greedy_is_deterministic_and_max_tokens_is_respected(engine: LocalModel) -> None:
    a = ask(temperature=0.0, max_tokens=2)
    b = ask(temperature=0.0, max_tokens=2, seed=99)  # the seed does not matter when greedy
    assert a.choices[0].message.content == b.choices[0].message.content
    assert a.usage.completion_tokens <= 2
    assert a.usage.prompt_tokens == len(engine.encode(engine.chat_prompt(ASK)))


def test_stop_string_cuts_the_reply(engine: LocalModel) -> None:
    free = ask(temperature=0.0, max_tokens=8).choices[0].message.content
    assert len(free) > 2
    stop_at = free.strip()[1]  # a character the greedy reply certainly contains
    cut = ask(temperature=0.0, max_tokens=8, stop=[stop_at])
    text = cut.choices[0].message.content
    assert stop_at not in text and free.startswith(text)
    assert cut.choices[0].finish_reason == "stop"


def test_top_logprobs_agree_with_a_direct_forward_pass(engine: LocalModel) -> None:
    import torch

    response = ask(temperature=0.0, max_tokens=4, logprobs=True, top_logprobs=5)
    content = (
        response.choices[0].logprobs["content"]
        if isinstance(response.choices[0].logprobs, dict)
        else response.choices[0].logprobs.content
    )
    assert len(content) >= 2
    prompt_ids = engine.encode(engine.chat_prompt(ASK))
    generated = engine.tokenizer(response.choices[0].message.content, add_special_tokens=False)["input_ids"]
    # our own forward pass over prompt + reply: every position's top 5 must match what was reported
    # on the model's thread, as every use of its weights (a second thread slows them: Batcher.call)
    logits = engine.batcher.call(lambda: forward(engine, prompt_ids + generated)).result()
    log_probs = torch.log_softmax(logits, dim=-1)
    for step in range(2):
        expected_values, expected_ids = torch.topk(log_probs[len(prompt_ids) - 1 + step], 5)
        item = content[step]
        top = item["top_logprobs"] if isinstance(item, dict) else item.top_logprobs
        got = [
            (t["token"] if isinstance(t, dict) else t.token, t["logprob"] if isinstance(t, dict) else t.logprob)
            for t in top
        ]
        assert [tok for tok, _ in got] == [engine.tokenizer.decode([int(i)]) for i in expected_ids]
        for (_, value), ref in zip(got, expected_values.tolist()):
            assert value == pytest.approx(ref, abs=1e-3)
    first = engine.next_token_logprobs(engine.chat_prompt(ASK), 5)[0][1]
    assert first == pytest.approx(float(log_probs[len(prompt_ids) - 1].max()), abs=1e-4)


def test_concurrent_calls_share_one_model_and_match_sequential(engine: LocalModel) -> None:
    seeds = [1, 2, 3]
    sequential = [ask(temperature=0.8, max_tokens=4, seed=s).choices[0].message.content for s in seeds]

    async def together() -> list[str]:
        replies = await asyncio.gather(
            *(
                litellm.acompletion(model=MODEL, messages=ASK, temperature=0.8, max_tokens=4, seed=s, num_retries=0)
                for s in seeds
            )
        )
        return [r.choices[0].message.content for r in replies]

    assert asyncio.run(together()) == sequential
    assert local_model() is engine  # one load per process; the chat model is the default


def test_chatml_is_smollm2s_own_chat_template(engine: LocalModel) -> None:
    no_system = CONVERSATION[1:]
    shipped = engine.tokenizer.apply_chat_template(no_system, tokenize=False, add_generation_prompt=True)
    assert chatml(no_system, default_system=SMOLLM2_SYSTEM) == shipped
    assert engine.encode("<|im_start|>user\nHi")[0] == engine.tokenizer.convert_tokens_to_ids("<|im_start|>")
    assert engine.end_ids == {engine.tokenizer.convert_tokens_to_ids("<|im_end|>")}


def test_the_registry_serves_the_chat_model_and_the_base_judge_model() -> None:
    registered = local_models()
    assert registered[SMOLLM2].prompt_format is SMOLLM2_CHAT
    assert registered[GEMMA].prompt_format is GEMMA_TURNS  # what anyone naming local/gemma-3-270m gets


def test_prompt_formats() -> None:
    assert gemma_turns(CONVERSATION) == (
        "<start_of_turn>user\nRules.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello<end_of_turn>\n"
        "<start_of_turn>user\nMove?<end_of_turn>\n<start_of_turn>model\n"
    )
    assert chatml(CONVERSATION, default_system="unused", examples=[("Q?", "A.")]) == (
        "<|im_start|>system\nRules.<|im_end|>\n"
        "<|im_start|>user\nQ?<|im_end|>\n<|im_start|>assistant\nA.<|im_end|>\n"
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello<|im_end|>\n"
        "<|im_start|>user\nMove?<|im_end|>\n<|im_start|>assistant\n"
    )
    text = transcript(CONVERSATION, examples=[("Q?", "A.")])
    assert text.endswith(
        "\n\nRules.\n\nUser: Q?\nAssistant: A.\n\nUser: Hi\nAssistant: Hello\n\nUser: Move?\nAssistant:"
    )
    assert TRANSCRIPT.stop and SMOLLM2_CHAT.render(CONVERSATION[1:2]).count("<|im_start|>user") == 4  # 3 examples


# -- concurrent requests, decoded together ------------------------------------------------------
STORY = [{"role": "user", "content": "Tell me a story about a cat."}]
VOTE = [{"role": "user", "content": "Vote for one player: Alice, Bob or Carol. Reply with the name only."}]
SAMPLED = {"temperature": 0.7, "top_p": 0.95}  # the demo's settings


def alone_and_together(
    engine: LocalModel,
    requests: list[tuple[list[dict[str, str]], dict]],
) -> tuple[list[Generation], list[Generation | BaseException], float]:
    """Each request's reply alone (one after another), then all submitted at once; and the mean
    number of requests per decoding step of the second run."""
    alone = [engine.chat(messages, **options) for messages, options in requests]
    steps, rows = engine.batcher.steps, engine.batcher.row_steps
    futures = [engine.submit_chat(messages, **options) for messages, options in requests]
    together = [f.exception() or f.result() for f in futures]
    return alone, together, (engine.batcher.row_steps - rows) / max(1, engine.batcher.steps - steps)


def test_replies_decoded_together_are_the_replies_alone(engine: LocalModel) -> None:
    # greedy and sampled, prompts of different lengths, some with log-probabilities: every reply,
    # usage count and log-probability bit for bit as alone, whatever shared its steps
    requests = [
        (ASK, {"temperature": 0.0, "max_tokens": 10}),
        (STORY, {**SAMPLED, "max_tokens": 12, "seed": 1}),
        (STORY, {**SAMPLED, "max_tokens": 12, "seed": 2}),
        (VOTE, {**SAMPLED, "max_tokens": 6, "seed": 3, "top_logprobs": 3}),
        (CONVERSATION, {"temperature": 1.0, "max_tokens": 9, "seed": 4}),
        (STORY, {"temperature": 0.0, "max_tokens": 12, "top_logprobs": 2}),
        (ASK, {**SAMPLED, "max_tokens": 8, "seed": 5}),
        (VOTE, {"temperature": 0.0, "max_tokens": 6}),
        (STORY, {**SAMPLED, "max_tokens": 10, "seed": 6}),  # a ninth waits for a free row
    ]
    alone, together, per_step = alone_and_together(engine, requests)
    assert together == alone
    assert per_step > 2  # they did share steps
    assert alone[1].text != alone[2].text  # and the seeds still differ


def test_stops_limits_and_usage_stay_per_request(engine: LocalModel) -> None:
    free = engine.chat(STORY, temperature=0.0, max_tokens=12).text
    stop_at = free.strip().split()[2]  # a word of the greedy story
    requests = [
        (STORY, {"temperature": 0.0, "max_tokens": 12}),  # runs to its cap
        (STORY, {"temperature": 0.0, "max_tokens": 12, "stop": [stop_at]}),  # cut by a stop string
        (ASK, {"temperature": 0.0, "max_tokens": 16}),  # ends its turn by itself
        (STORY, {"temperature": 0.0, "max_tokens": 1}),
        (STORY, {"temperature": 0.0, "max_tokens": 0}),
    ]
    alone, together, _ = alone_and_together(engine, requests)
    assert together == alone
    capped, cut, ended, one, none = together
    assert (capped.text, capped.finish_reason, capped.completion_tokens) == (free, "length", 12)
    assert cut.finish_reason == "stop" and stop_at not in cut.text and free.startswith(cut.text)
    assert ended.finish_reason == "stop" and ended.completion_tokens <= 16  # the end-of-turn token counts
    assert (one.finish_reason, one.completion_tokens) == ("length", 1)
    assert (none.text, none.finish_reason, none.completion_tokens) == ("", "length", 0)
    prompt_tokens = len(engine.encode(engine.chat_prompt(STORY)))
    assert {g.prompt_tokens for g in (capped, cut, one, none)} == {prompt_tokens}


class _StopThatFails:
    """A stop "string" that raises on its third look: a request failing in the middle of a batch."""

    def __init__(self) -> None:
        self.looks = 0

    def __bool__(self) -> bool:
        self.looks += 1
        if self.looks >= 3:
            raise RuntimeError("this request's own failure")
        return False


def test_a_failing_request_leaves_the_others_decoding(engine: LocalModel) -> None:
    good = [(STORY, {**SAMPLED, "max_tokens": 8, "seed": s}) for s in (7, 8)]
    alone = [engine.chat(m, **o) for m, o in good]
    futures = [
        engine.submit_chat(STORY, **good[0][1]),
        engine.submit_chat(STORY, temperature=1e-45, max_tokens=8),  # inf logits: fails at its first token
        engine.submit_chat(STORY, temperature=0.0, max_tokens=8, stop=[_StopThatFails()]),  # fails at its third
        engine.submit_chat(STORY, **good[1][1]),
    ]
    assert [futures[0].result(), futures[3].result()] == alone
    with pytest.raises(RuntimeError, match="probability tensor"):
        futures[1].result()
    with pytest.raises(RuntimeError, match="own failure"):
        futures[2].result()
    assert engine.chat(STORY, **good[0][1]) == alone[0]  # and the worker goes on


def test_every_use_of_the_weights_runs_on_the_batchers_thread(engine: LocalModel) -> None:
    # one thread per process runs torch work on the model (a second one slows both: Batcher.call)
    assert engine.batcher.call(lambda: threading.current_thread().name).result() == "local-model-batcher"
    with pytest.raises(ZeroDivisionError):
        engine.batcher.call(lambda: 1 / 0).result()
    assert engine.chat(ASK, temperature=0.0, max_tokens=2).completion_tokens <= 2  # and it goes on


def test_kept_prompt_chunks_change_no_reply(engine: LocalModel) -> None:
    # a long system prompt shared by several requests: its 64-token chunks are computed once and
    # taken by the later prompts, with the same replies and log-probabilities as computed afresh
    rules = [
        {"role": "system", "content": " ".join(f"Rule {i}: every player speaks once per round." for i in range(20))}
    ]
    asks = [rules + [{"role": "user", "content": q}] for q in ("Your move?", "Who do you vote for?")]
    options = {**SAMPLED, "max_tokens": 6, "seed": 9, "top_logprobs": 3}
    engine.batcher.forget_prompts()
    cold = engine.chat(asks[0], **options)
    reused = engine.batcher.chunks_reused
    warm = [engine.chat(messages, **options) for messages in (asks[1], asks[0])]
    assert engine.batcher.chunks_reused - reused >= 2 * 3  # each took the shared chunks
    engine.batcher.forget_prompts()
    assert warm[1] == cold == engine.chat(asks[0], **options)
    assert warm[0] == engine.chat(asks[1], **options)


def test_the_nucleus_is_the_full_sorts_nucleus() -> None:
    # the top-p cut looks at the top 64, then 1024 tokens before sorting the vocabulary: the same
    # tokens and probabilities as a full sort, for small and large nuclei
    import torch

    generator = torch.Generator().manual_seed(0)
    for spread in (0.5, 2.0, 8.0):
        for top_p in (0.5, 0.95, 0.999):
            probs = torch.softmax(torch.randn(49152, generator=generator) * spread, dim=-1)
            values, order = torch.sort(probs, descending=True)
            keep = torch.cumsum(values, dim=-1) - values < top_p
            expected = torch.zeros_like(probs).scatter(0, order[keep], values[keep])
            values, tokens = nucleus(probs, top_p)
            assert torch.equal(torch.zeros_like(probs).scatter(0, tokens, values), expected)


def test_the_row_attention_keeps_gemmas_sliding_window() -> None:
    # the reply crosses gemma's 512-token window: the batched decoding (its own per-row attention)
    # agrees with one plain forward pass over prompt + reply. Attending past the window moves the
    # top-20 log-probabilities of the steps beyond it by 0.17-0.24; agreeing, by at most 7e-5
    import torch

    gemma = local_model(GEMMA)
    prompt = " ".join(f"Line {i}: the fox jumps over dog number {i}." for i in range(34)) + "\nSummary:"
    reply = gemma.generate(prompt, max_tokens=24, temperature=0.0, top_logprobs=20)
    ids = gemma.encode(prompt)
    window: int = gemma.model.config.sliding_window
    drawn = gemma.tokenizer(reply.text, add_special_tokens=False)["input_ids"]
    assert reply.logprobs is not None and len(drawn) == len(reply.logprobs) == 24
    assert len(ids) < window < len(ids) + 20
    full = torch.log_softmax(gemma.batcher.call(lambda: forward(gemma, ids + drawn)).result(), dim=-1)
    for step, (token, _, alternatives) in enumerate(reply.logprobs):
        assert gemma.tokenizer.decode([drawn[step]]) == token  # the reply's own tokens
        expected = torch.topk(full[len(ids) - 1 + step], 20).values.tolist()
        assert [value for _, value in alternatives] == pytest.approx(expected, abs=1e-3)


def test_prepare_builds_every_local_models_weights_before_any_job(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path
) -> None:
    import pipeline.core.models.local as local
    from pipeline.cli import main

    located: list[str] = []

    def locator(name: str):
        def locate() -> str:
            located.append(name)
            return str(tmp_path / name)

        return locate

    monkeypatch.setattr(local, "_REGISTRY", {n: local.LocalSpec(locator(n)) for n in ("tiny-b", "tiny-a")})
    assert main(["prepare"]) == 0
    assert located == ["tiny-a", "tiny-b"]  # each converted once, in name order
    said = capsys.readouterr().out.splitlines()
    assert [line.split(" (")[0] for line in said] == [
        "prepared the package's compiled modules",
        "prepared the weights of local/tiny-a",
        "prepared the weights of local/tiny-b",
        "prepared the rating kernel",
        "prepared the Vega bundle",
    ]

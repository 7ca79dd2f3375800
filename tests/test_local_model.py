"""The embedded chat model through litellm: it answers with words; seeded sampling, greedy, stops,
usage, log-probabilities; and the prompt formats of every registered local model."""

from __future__ import annotations

import asyncio
import re

import litellm
import pytest
import torch

from pipeline.core.local import (
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
    response = ask(temperature=0.0, max_tokens=4, logprobs=True, top_logprobs=5)
    content = response.choices[0].logprobs["content"] if isinstance(response.choices[0].logprobs, dict) \
        else response.choices[0].logprobs.content
    assert len(content) >= 2
    prompt_ids = engine.encode(engine.chat_prompt(ASK))
    generated = engine.tokenizer(response.choices[0].message.content, add_special_tokens=False)["input_ids"]
    # our own forward pass over prompt + reply: every position's top 5 must match what was reported
    with torch.inference_mode():
        logits = engine.model(input_ids=torch.tensor([prompt_ids + generated])).logits[0].float()
    log_probs = torch.log_softmax(logits, dim=-1)
    for step in range(2):
        expected_values, expected_ids = torch.topk(log_probs[len(prompt_ids) - 1 + step], 5)
        item = content[step]
        top = item["top_logprobs"] if isinstance(item, dict) else item.top_logprobs
        got = [(t["token"] if isinstance(t, dict) else t.token, t["logprob"] if isinstance(t, dict) else t.logprob) for t in top]
        assert [tok for tok, _ in got] == [engine.tokenizer.decode([int(i)]) for i in expected_ids]
        for (_, value), ref in zip(got, expected_values.tolist()):
            assert value == pytest.approx(ref, abs=1e-3)
    first = engine.next_token_logprobs(engine.chat_prompt(ASK), 5)[0][1]
    assert first == pytest.approx(float(log_probs[len(prompt_ids) - 1].max()), abs=1e-4)


def test_concurrent_calls_share_one_model_and_match_sequential(engine: LocalModel) -> None:
    seeds = [1, 2, 3]
    sequential = [ask(temperature=0.8, max_tokens=4, seed=s).choices[0].message.content for s in seeds]

    async def together() -> list[str]:
        replies = await asyncio.gather(*(
            litellm.acompletion(model=MODEL, messages=ASK, temperature=0.8, max_tokens=4, seed=s, num_retries=0)
            for s in seeds
        ))
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
    assert text.endswith("\n\nRules.\n\nUser: Q?\nAssistant: A.\n\nUser: Hi\nAssistant: Hello\n\nUser: Move?\nAssistant:")
    assert TRANSCRIPT.stop and SMOLLM2_CHAT.render(CONVERSATION[1:2]).count("<|im_start|>user") == 4  # 3 examples

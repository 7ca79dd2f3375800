"""The cross-entropy judge: scored tokens, hand-checkable values, batching, edge cases, CLI.

Tiny random-weights models (a GPT-2 and a Gemma 3 with final-logit softcapping) and a byte-level
tokenizer are built here; the real gemma-3-270m judge appears in the two `slow` tests only.
"""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

from pipeline.cli import main
from pipeline.core.judge.cache import ScoreCache
from pipeline.core.judge.scoring import Judge, JudgeError, XentScore, load_judge, register_judge

if TYPE_CHECKING:
    import torch
    from transformers import GPT2LMHeadModel, PreTrainedTokenizerFast

# torch and transformers are imported where they are used: importing them takes several CPU-seconds,
# which every xdist worker would pay at collection, also the workers that never run these tests

CONTEXT = 32  # positions of the tiny GPT-2s: long texts overflow quickly
P_X, P_Y = 0.5, 0.25  # the fixed-distribution judge: "x" with 1/2, "y" with 1/4, the rest share 1/4


def byte_tokenizer() -> PreTrainedTokenizerFast:
    """Every byte is a token, plus one merge ("a" "b" -> "ab") so that joint and separate
    tokenization of prefix + string differ."""
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<bos>": 1, "<eos>": 2}
    for char in sorted(pre_tokenizers.ByteLevel.alphabet()):
        vocab[char] = len(vocab)
    vocab["ab"] = len(vocab)
    core = Tokenizer(models.BPE(vocab=vocab, merges=[("a", "b")]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=core, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>")


def save(model: torch.nn.Module, tokenizer: PreTrainedTokenizerFast, path: Path) -> Path:
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def gpt2(tokenizer: PreTrainedTokenizerFast, seed: int) -> GPT2LMHeadModel:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=CONTEXT,
        n_embd=16,
        n_layer=2,
        n_head=2,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    )
    return GPT2LMHeadModel(config).eval()


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    return byte_tokenizer()


@pytest.fixture(scope="module")
def fixed_dir(tmp_path_factory: pytest.TempPathFactory, tokenizer: PreTrainedTokenizerFast) -> Path:
    """A random GPT-2 whose final layer norm outputs a constant: every position predicts the same
    distribution q (x: 1/2, y: 1/4, every other token (1/4)/(V-2)), whatever the context."""
    import torch

    model = gpt2(tokenizer, seed=1)
    vocab = len(tokenizer)
    x, y = tokenizer.convert_tokens_to_ids(["x", "y"])
    log_q = torch.full((vocab,), math.log(0.25 / (vocab - 2)))
    log_q[x], log_q[y] = math.log(P_X), math.log(P_Y)
    with torch.no_grad():
        model.transformer.ln_f.weight.zero_()
        model.transformer.ln_f.bias.zero_()
        model.transformer.ln_f.bias[0] = 1.0  # hidden = e0, so logits = column 0 of the (tied) embedding
        model.transformer.wte.weight[:, 0] = log_q
    return save(model, tokenizer, tmp_path_factory.mktemp("fixed-gpt2"))


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory: pytest.TempPathFactory, tokenizer: PreTrainedTokenizerFast) -> Path:
    return save(gpt2(tokenizer, seed=2), tokenizer, tmp_path_factory.mktemp("random-gpt2"))


@pytest.fixture(scope="module")
def gemma_dir(tmp_path_factory: pytest.TempPathFactory, tokenizer: PreTrainedTokenizerFast) -> Path:
    """A tiny random Gemma 3: sliding-window layers, final-logit softcapping that actually bites."""
    import torch
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(3)
    config = Gemma3TextConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        max_position_embeddings=64,
        sliding_window=6,
        layer_types=["sliding_attention", "full_attention"],
        final_logit_softcapping=3.0,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    )
    model = Gemma3ForCausalLM(config).eval()
    with torch.no_grad():
        model.model.embed_tokens.weight.normal_(0.0, 1.0)  # logits of several units: the cap matters
    return save(model, tokenizer, tmp_path_factory.mktemp("tiny-gemma"))


@pytest.fixture(scope="module")
def fixed(fixed_dir: Path) -> Judge:
    return Judge(fixed_dir, scoring="bos_once")  # the definition these tests pin; test_judge_scoring.py has the others


@pytest.fixture(scope="module")
def small(gpt2_dir: Path) -> Judge:
    return Judge(gpt2_dir, scoring="bos_once")  # the definition these tests pin; test_judge_scoring.py has the others


@pytest.fixture(scope="module")
def gemma_tiny(gemma_dir: Path) -> Judge:
    return Judge(gemma_dir, scoring="bos_once")  # the definition these tests pin; test_judge_scoring.py has the others


def reference_bits(judge: Judge, string: str, prefix: str, bos: bool = True) -> list[float]:
    """Straight from the definition: one full forward pass over BOS + ids(prefix) + ids(string).

    `bos=False`: no BOS, which is the default "reference" scoring for this tokenizer (it adds none).
    """
    import torch

    prefix_ids = [judge.tokenizer.bos_token_id] * bos + judge.encode(prefix)
    string_ids = judge.encode(string)
    ids = torch.tensor([prefix_ids + string_ids])
    with torch.inference_mode():
        log_probs = torch.log_softmax(judge.model(input_ids=ids).logits[0].float(), dim=-1)
    start = len(prefix_ids)
    return [-float(log_probs[start + j - 1, string_ids[j]]) / math.log(2) for j in range(1, len(string_ids))]


def reference_mode_bits(judge: Judge, string: str, prefix: str) -> list[float]:
    """The reference's Judge.xent by hand: tokenizer(prefix) + tokenizer(string), one forward."""
    import torch

    prefix_ids = judge.tokenizer(prefix)["input_ids"]
    ids = prefix_ids + judge.tokenizer(string)["input_ids"]
    with torch.inference_mode():
        log_probs = torch.log_softmax(judge.model(input_ids=torch.tensor([ids])).logits[0].float(), dim=-1)
    return [-float(log_probs[j - 1, ids[j]]) / math.log(2) for j in range(len(prefix_ids) + 1, len(ids))]


MIXED = [  # (string, prefix): 0 to 19 string tokens, non-ASCII, merges, a repeat; all fit CONTEXT
    ("", ""),
    ("q", "a"),
    ("hello there", ""),
    ("hello there", "greeting: "),
    ("xyxyxyxy", "y"),
    ("ab ab abc", "cab"),
    ("  spaced  out ", "é"),
    ("naïve café 字", "words: "),
    ("the quick brown fox", "once upon"),
    ("zz", "a longer prefix, mixed in"),
    ("hello there", "greeting: "),
]


# -- values --------------------------------------------------------------------------------------
def test_fixed_distribution_judge_gives_hand_checkable_bits(fixed: Judge) -> None:
    other = 2 + math.log2(len(fixed.tokenizer) - 2)  # -log2((1/4) / (V - 2))
    score = fixed.xent("yxyq")
    assert score.tokens == ("x", "y", "q")  # the first token "y" is not scored
    assert score.bits == pytest.approx((1.0, 2.0, other), abs=1e-4)
    assert score.total == pytest.approx(3.0 + other, abs=1e-4)
    given = fixed.xent("yxyq", "anything at all")  # this judge ignores context: same numbers
    assert given.tokens == score.tokens and given.bits == pytest.approx(score.bits, abs=1e-4)
    assert fixed.xed("yxyq", "anything at all").bits == pytest.approx((0.0, 0.0, 0.0), abs=1e-4)
    assert fixed.nex("xx").bits == pytest.approx((-1.0,), abs=1e-4)
    assert fixed.dex("yy", "x").total == pytest.approx(0.0, abs=1e-4)
    # "Answer: false" has one token more than "Answer: true" and no token is cheaper than 1 bit
    assert fixed.is_true("anything", "at all") is True and fixed.is_false("anything") is False


@pytest.mark.parametrize("judge_name", ["small", "gemma_tiny"])
def test_scores_match_the_definition_and_skip_the_first_token(judge_name: str, request: pytest.FixtureRequest) -> None:
    judge: Judge = request.getfixturevalue(judge_name)
    assert judge.head_mode == "hidden"  # body + float32 projection (+ softcap) reproduce the logits
    for string, prefix in MIXED:
        score = judge.xent(string, prefix)
        string_ids = judge.encode(string)
        assert len(score.bits) == max(len(string_ids) - 1, 0)
        assert list(score.bits) == pytest.approx(reference_bits(judge, string, prefix), abs=1e-4)
        assert score.tokens == judge.xent(string).tokens  # with or without a prefix: same tokens
        if string:
            texts = judge.token_texts(string)
            assert "".join(texts) == string and "".join(score.tokens) == string[len(texts[0]) :]


def test_xed_of_the_empty_prefix_is_zero_and_xed_subtracts_per_token(small: Judge) -> None:
    for string, _ in MIXED:
        assert all(b == 0.0 for b in small.xed(string, "").bits)
    alone, given = small.xent("ab ab abc"), small.xent("ab ab abc", "cab")
    xed = small.xed("ab ab abc", "cab")
    assert xed.tokens == alone.tokens
    assert xed.bits == pytest.approx([a - g for a, g in zip(alone.bits, given.bits)], abs=1e-9)
    assert small.dex("ab ab abc", "cab").bits == pytest.approx([-b for b in xed.bits], abs=1e-9)
    with pytest.raises(ValueError, match="same string"):
        alone - small.xent("other")


def test_prefix_and_string_are_tokenized_separately(small: Judge) -> None:
    # joined, "a" + "bab" would tokenize as "ab" "ab"; separately the string keeps its "b" "ab"
    assert small.encode("abab") == small.encode("ab") * 2
    score = small.xent("bab", "a")
    assert score.tokens == ("ab",)
    assert list(score.bits) == pytest.approx(reference_bits(small, "bab", "a"), abs=1e-4)


@pytest.mark.parametrize("judge_name", ["small", "gemma_tiny"])
def test_batched_equals_one_at_a_time_on_mixed_lengths(judge_name: str, request: pytest.FixtureRequest) -> None:
    judge: Judge = request.getfixturevalue(judge_name)
    judge.cache = ScoreCache()
    saved_budget = judge.max_batch_tokens
    judge.max_batch_tokens = 60  # several padded batches of unequal rows
    try:
        passes = judge.forward_passes
        together = judge.score_many(MIXED)
        batches = judge.forward_passes - passes
        assert 1 < batches < len(MIXED)
        judge.cache = ScoreCache()
        for pair, batched in zip(MIXED, together):
            judge.cache = ScoreCache()
            alone = judge.xent(*pair)
            assert alone.tokens == batched.tokens
            assert list(alone.bits) == pytest.approx(list(batched.bits), abs=1e-3)
    finally:
        judge.max_batch_tokens = saved_budget


# -- edge cases ----------------------------------------------------------------------------------
def test_empty_whitespace_and_non_ascii_strings(small: Judge) -> None:
    empty = small.xent("", "some prefix")
    assert empty.tokens == () and empty.bits == () and empty.total == 0.0
    assert small.xent("z").total == 0.0  # one token: nothing scored
    spaces = small.xent("   ")
    assert spaces.tokens == (" ", " ") and all(b > 0 and math.isfinite(b) for b in spaces.bits)
    text = "é字"  # 2 + 3 byte tokens: a character's later bytes show as ""
    score = small.xent(text)
    assert score.tokens == ("", "字", "", "") and len(score.bits) == 4
    assert all(math.isfinite(b) for b in score.bits)


def test_text_longer_than_the_context(small: Judge) -> None:
    assert small.max_context == CONTEXT
    too_long = "y" * CONTEXT  # with the BOS token it needs CONTEXT + 1 positions
    with pytest.raises(JudgeError, match="does not fit the judge's context of 32 tokens"):
        small.xent(too_long)
    # a long prefix loses its oldest tokens (BOS kept); the cut is recorded in the score
    string, prefix = "hello there", "p" * 40
    score = small.xent(string, prefix)
    kept = CONTEXT - 1 - len(small.encode(string))
    assert score.prefix_tokens_dropped == len(prefix) - kept
    assert score.bits == pytest.approx(small.xent(string, "p" * kept).bits, abs=1e-4)
    assert score.to_dict()["prefix_tokens_dropped"] == score.prefix_tokens_dropped
    # in a batch, only the bad request fails
    outcomes = small.score_outcomes([("ok text", ""), (too_long, ""), ("more", "x")])
    assert isinstance(outcomes[1], JudgeError)
    assert isinstance(outcomes[0], XentScore) and isinstance(outcomes[2], XentScore)


# -- cache, async, stories, token cuts ----------------------------------------------------------
def test_disk_cache_is_keyed_by_fingerprint_and_survives_a_new_judge(gpt2_dir: Path, tmp_path: Path) -> None:
    first = Judge(gpt2_dir, cache_dir=tmp_path / "scores")
    score = first.xent("hello there", "greeting: ")
    assert list((tmp_path / "scores").rglob("*.json"))
    second = Judge(gpt2_dir, cache_dir=tmp_path / "scores")
    again = second.xent("hello there", "greeting: ")
    assert second.forward_passes == 0 and again.bits == score.bits
    other_model = Judge(gpt2_dir, model_id="renamed", cache_dir=tmp_path / "scores")
    other_model.xent("hello there", "greeting: ")
    assert other_model.forward_passes == 1  # another fingerprint, another key
    fp = score.judge.as_dict()
    assert set(fp) == {"model_id", "weights_sha256", "dtype", "device", "scoring"} and fp["scoring"] == "reference"
    clipped = Judge(gpt2_dir, cache_dir=tmp_path / "scores", clip_logprobs=True)
    clipped.xent("hello there", "greeting: ")
    assert clipped.forward_passes == 1  # the scoring options are part of the key
    assert fp["dtype"] == "float32" and fp["device"] == "cpu" and len(fp["weights_sha256"]) == 64


def test_the_weights_dtype_is_in_the_fingerprint_and_the_cache_key(gpt2_dir: Path, tmp_path: Path) -> None:
    import torch

    full = Judge(gpt2_dir, dtype="float32", cache_dir=tmp_path / "scores")
    half = Judge(gpt2_dir, dtype="bfloat16", cache_dir=tmp_path / "scores")
    assert (full.fingerprint.dtype, half.fingerprint.dtype) == ("float32", "bfloat16")
    assert next(half.model.parameters()).dtype == torch.bfloat16
    assert full._key("hello there", "greeting: ") != half._key("hello there", "greeting: ")
    kept = full.xent("hello there", "greeting: ")
    half.xent("hello there", "greeting: ")
    assert half.forward_passes == 1  # a float32 score is never reused for bfloat16
    assert half.xent("hello there", "greeting: ").judge.dtype == "bfloat16" and kept.judge.dtype == "float32"
    auto = Judge(gpt2_dir, dtype="auto", cache_dir=tmp_path / "scores")  # on CPU: float32, the same numbers
    assert auto.fingerprint == full.fingerprint and auto.xent("hello there", "greeting: ").bits == kept.bits
    assert auto.forward_passes == 0
    with pytest.raises(JudgeError, match="unknown dtype 'float8'; expected one of float32, bfloat16, auto"):
        Judge(gpt2_dir, dtype="float8")


def test_load_judge_keys_by_the_resolved_dtype_and_names_the_fix_for_an_unknown_model(gpt2_dir: Path) -> None:
    register_judge("tiny-dtype-test", lambda: gpt2_dir)
    assert load_judge("tiny-dtype-test", dtype="auto") is load_judge("tiny-dtype-test", dtype="float32")
    assert load_judge("tiny-dtype-test", dtype="bfloat16").fingerprint.dtype == "bfloat16"
    with pytest.raises(JudgeError, match=r"huggingface-cli download nobody-xyz/no-such-judge"):
        load_judge("nobody-xyz/no-such-judge")  # a hub id not in the local cache: never downloaded here


def test_concurrent_requests_are_batched_together(gemma_dir: Path) -> None:
    judge = Judge(gemma_dir)
    pairs = [(f"story number {i} " * (1 + i % 3), f"prefix {i}") for i in range(24)]

    async def play() -> tuple[list[XentScore], bool, XentScore]:
        scores = await asyncio.gather(*(judge.axent(s, p) for s, p in pairs))
        verdict = await judge.ais_true("The text is short.", "hi")
        xed = await judge.axed(*pairs[0])
        return list(scores), verdict, xed

    scores, verdict, xed = asyncio.run(play())
    batcher_runs = judge.forward_passes
    assert batcher_runs <= 3  # 24 games' requests ran in a few batches, not 24 passes
    reference = Judge(gemma_dir)
    for (string, prefix), score in zip(pairs, scores):
        assert list(score.bits) == pytest.approx(list(reference.xent(string, prefix).bits), abs=1e-3)
    assert verdict == reference.is_true("The text is short.", "hi")
    assert xed.bits == pytest.approx(reference.xed(*pairs[0]).bits, abs=1e-3)


def test_stories_are_seeded_plain_text_of_bounded_length(small: Judge) -> None:
    first = small.story(7, n_tokens=12)
    assert first == small.story(7, n_tokens=12)
    small.cache = ScoreCache()  # recomputed, not remembered: still the same text
    assert small.story(7, n_tokens=12) == first
    batch = small.stories([7, 8, 9], n_tokens=12)
    assert batch[0] == first and len(set(batch)) == 3
    for text in batch:
        assert 0 < small.count_tokens(text) <= 12
        assert "<bos>" not in text and "<eos>" not in text and "<pad>" not in text


def test_first_and_last_n_tokens_use_the_judge_tokenizer(small: Judge) -> None:
    assert small.first_n_tokens("abcab", 2) == "abc"  # tokens: "ab" "c" "ab"
    assert small.last_n_tokens("abcab", 2) == "cab"
    assert small.first_n_tokens("short", 10) == "short" and small.last_n_tokens("xy", 0) == ""


# -- command line --------------------------------------------------------------------------------
def test_cli_prints_scored_tokens_and_the_judge(gpt2_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    register_judge("tiny-gpt2-for-cli", lambda: gpt2_dir)
    assert (
        main(
            [
                "judge",
                "score",
                "--text",
                "hello there",
                "--prefix",
                "greeting: ",
                "--judge",
                "tiny-gpt2-for-cli",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    judge = load_judge("tiny-gpt2-for-cli")
    assert out["tokens"] == list("ello there")  # all but the first token of TEXT
    assert out["xent_bits"] == pytest.approx(reference_bits(judge, "hello there", "greeting: ", bos=False), abs=1e-4)
    assert out["total_bits"] == pytest.approx(sum(out["xent_bits"]))
    assert out["judge"]["model_id"] == "tiny-gpt2-for-cli" and out["judge"]["device"] == "cpu"
    assert main(["judge", "score", "--text", "y" * 40, "--judge", str(gpt2_dir)]) == 2
    assert "does not fit" in capsys.readouterr().err
    assert main(["judge", "score", "--text", "x", "--judge", "no-such-judge"]) == 2
    assert "unknown judge 'no-such-judge'" in capsys.readouterr().err


# -- the real judge ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def gemma() -> Judge:
    return load_judge()


@pytest.mark.slow
def test_gemma_judge_batched_matches_single_and_full_logits(gemma: Judge) -> None:
    assert gemma.head_mode == "hidden"
    pairs = [
        ("The cat sat on the mat and looked at the rain.", ""),
        ("The cat sat on the mat and looked at the rain.", "A story about a lazy cat:"),
        ("Prices rose 3% in März, said the bank.", "Economic news."),
    ]
    together = gemma.score_many(pairs)
    for (string, prefix), batched in zip(pairs, together):
        gemma.cache = ScoreCache()
        assert list(gemma.xent(string, prefix).bits) == pytest.approx(list(batched.bits), abs=1e-3)
    # the reference's scoring: each side with gemma's BOS, only the string's BOS unscored
    assert list(together[1].bits) == pytest.approx(reference_mode_bits(gemma, *pairs[1]), abs=1e-3)
    assert together[0].tokens[0] == "The" and "".join(together[0].tokens) == pairs[0][0]
    assert all(b == 0.0 for b in gemma.xed(pairs[0][0], "").bits)
    assert gemma.xed(*pairs[1]).total > 0  # the prefix helps
    fp = together[0].judge
    assert fp.model_id == "gemma-3-270m" and fp.dtype == "float32"
    assert fp.weights_sha256 == (gemma.path / "READY").read_text().strip()


@pytest.mark.slow
def test_gemma_cli_and_story(gemma: Judge, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge", "score", "--text", "Once upon a time", "--prefix", "Fairy tale:", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tokens"] == ["Once", " upon", " a", " time"] and len(out["xent_bits"]) == 4
    assert out["judge"]["model_id"] == "gemma-3-270m"
    story = gemma.story("map-1", n_tokens=10)
    assert story == gemma.stories(["map-1"], n_tokens=10)[0] and 0 < gemma.count_tokens(story) <= 10

"""The judge's scoring options: the reference's tokenization (default), include_first_token, bos_once, clipping.

A tiny random GPT-2 with a byte tokenizer that, like Gemma's, puts a BOS token before every text
it tokenizes; each mode's numbers are checked against one plain forward pass built by hand from
the reference implementation's description.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from tokenizers import processors

from pipeline.core.judge.scoring import Judge, JudgeError
from tests.core.judge.test_judge import byte_tokenizer, gpt2, save

PAIRS = [("hello there", ""), ("hello there", "greeting: "), ("ab ab", "cab"), ("q", "a"), ("naïve 字", "x")]


@pytest.fixture(scope="module")
def bos_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tokenizer = byte_tokenizer()
    tokenizer._tokenizer.post_processor = processors.TemplateProcessing(
        single="<bos> $A", special_tokens=[("<bos>", 1)]
    )
    assert tokenizer("hi")["input_ids"][0] == 1
    return save(gpt2(tokenizer, seed=5), tokenizer, tmp_path_factory.mktemp("bos-gpt2"))


def by_hand(judge: Judge, ids: list[int], first: int) -> list[float]:
    """-log2 p(ids[j] | ids[:j]) for j >= first, from the model's own logits."""
    import torch  # where it is used: see test_judge.py

    with torch.inference_mode():
        logits = judge.model(input_ids=torch.tensor([ids])).logits[0].float()
    log_probs = torch.log_softmax(logits, dim=-1)
    return [-float(log_probs[j - 1, ids[j]]) / math.log(2) for j in range(first, len(ids))]


def test_reference_scoring_tokenizes_each_side_with_its_bos_and_skips_only_the_strings_bos(bos_dir: Path) -> None:
    judge = Judge(bos_dir)
    assert judge.scoring == "reference" and judge.fingerprint.scoring == "reference"
    for string, prefix in PAIRS:
        prefix_ids = judge.tokenizer(prefix)["input_ids"]  # [BOS] + prefix, [BOS] for ""
        string_ids = judge.tokenizer(string)["input_ids"]  # [BOS] + string
        score = judge.xent(string, prefix)
        assert list(score.bits) == pytest.approx(by_hand(judge, prefix_ids + string_ids, len(prefix_ids) + 1), abs=1e-4)
        assert "".join(score.tokens) == string  # every text token is scored, the first one included
        assert score.tokens == judge.xent(string).tokens


def test_include_first_token_scores_the_strings_bos_too(bos_dir: Path) -> None:
    judge = Judge(bos_dir, scoring="include_first_token")
    for string, prefix in PAIRS:
        ids = [1] + judge.tokenizer(prefix)["input_ids"] + judge.tokenizer(string)["input_ids"]
        first = 1 + len(judge.tokenizer(prefix)["input_ids"])
        score = judge.xent(string, prefix)
        assert list(score.bits) == pytest.approx(by_hand(judge, ids, first), abs=1e-4)
        assert score.tokens[0] == "" and "".join(score.tokens) == string  # the BOS shows as ""


def test_bos_once_is_the_projects_earlier_rule(bos_dir: Path) -> None:
    judge = Judge(bos_dir, scoring="bos_once")
    for string, prefix in PAIRS:
        ids = [1] + judge.encode(prefix) + judge.encode(string)
        score = judge.xent(string, prefix)
        assert list(score.bits) == pytest.approx(by_hand(judge, ids, 2 + len(judge.encode(prefix))), abs=1e-4)
        assert len(score.bits) == len(judge.encode(string)) - 1


def test_the_modes_differ_where_the_first_token_carries_the_bits(bos_dir: Path) -> None:
    string, prefix = "hello there", "greeting: "
    reference = Judge(bos_dir).xed(string, prefix)
    earlier = Judge(bos_dir, scoring="bos_once").xed(string, prefix)
    assert len(reference.bits) == len(earlier.bits) + 1
    assert reference.total != pytest.approx(earlier.total, abs=1e-3)


def test_clip_logprobs_caps_each_token_at_log2_of_the_vocabulary(bos_dir: Path) -> None:
    plain = Judge(bos_dir)
    clipped = Judge(bos_dir, clip_logprobs=True)
    cap = math.log2(len(plain.tokenizer))
    # a random model puts some tokens above the cap: make one sure by asking for an unlikely byte run
    text = "".join(chr(0x4E00 + k) for k in range(6))
    raw, capped = plain.xent(text, "x"), clipped.xent(text, "x")
    assert max(raw.bits) > cap
    assert max(capped.bits) == pytest.approx(cap, abs=1e-6)
    assert list(capped.bits) == pytest.approx([min(b, cap) for b in raw.bits], abs=1e-5)
    assert clipped.fingerprint.scoring == "reference+clip"


def test_unknown_scoring_is_an_error_that_names_the_choices(bos_dir: Path) -> None:
    with pytest.raises(JudgeError, match="reference, include_first_token, bos_once"):
        Judge(bos_dir, scoring="whatever")

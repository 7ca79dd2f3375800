"""The judge a Xent run scores with: by registered name, model directory or hub id, or the
model-free `word` judge of the tests; with the params' scoring, clipping and dtype."""

from __future__ import annotations

from typing import Any

__all__ = ["load_any_judge", "params_judge"]


def load_any_judge(
    name: str, scoring: str = "reference", clip_logprobs: bool = False, dtype: str = "float32"
) -> Any:  # Judge | WordJudge
    """A judge by registered name, model directory or cached hub id; `word` is the model-free test judge.

    `scoring`, `clip_logprobs` and `dtype` are the core Judge's options (the reference's defaults).
    """
    if name == "word":
        from pipeline.xent.testing import WordJudge

        return WordJudge()
    from pipeline.core.judge import load_judge

    return load_judge(name, scoring=scoring, clip_logprobs=clip_logprobs, dtype=dtype)


def params_judge(params: Any, name: str | None = None) -> Any:  # params: XentParams; -> Judge | WordJudge
    """The params' judge (or `name`, a rescore judge) with the params' scoring, clipping and dtype."""
    return load_any_judge(name or params.judge, params.judge_scoring, params.judge_clip_logprobs, params.judge_dtype)

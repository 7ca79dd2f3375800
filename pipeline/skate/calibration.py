"""Calibrating the uniqueness threshold on a labelled pair set.

The paper chose its cosine threshold by eye on its own embedding model; ours (all-MiniLM-L6-v2
over description + program) needs its own. A pair set labels question pairs `same` (the same
Python behaviour with surface changes: a repeat) or `different`. Every pair's cosine similarity
is computed exactly as the game computes it, and each candidate threshold t is scored as a
detector of repeats (similarity >= t flags a pair): precision, recall, F1 and F0.5 of the `same`
label. The chosen threshold maximises F0.5, which weighs precision twice as much as recall: in a
game a new question is compared with every earlier question of its setter and rejected on the
closest one, so false alarms add up over a long game, while a missed repeat only costs some
diversity. Ties go to the higher threshold.

The shipped pair set (pipeline/skate/data/similarity_pairs.yaml) was written for this project.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import yaml

from pipeline.core.artifacts import ParamsError

DEFAULT_PAIRS = Path(__file__).parent / "data" / "similarity_pairs.yaml"
LABELS = ("same", "different")
#: candidate thresholds: 0.30, 0.31, ..., 0.99
THRESHOLDS: tuple[float, ...] = tuple(round(0.3 + i / 100, 2) for i in range(70))
#: F-beta of the choice: beta < 1 weighs precision above recall
BETA = 0.5


@dataclass(frozen=True)
class LabelledPair:
    a: str
    b: str
    same: bool
    text_a: str
    text_b: str


def load_pairs(path: str | Path = DEFAULT_PAIRS) -> list[LabelledPair]:
    """Questions by id and pairs [id_a, id_b, same|different]; errors name the file and the entry."""
    from pipeline.skate.uniqueness import question_text

    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    questions: dict[str, Any] = data.get("questions") or {}
    pairs = data.get("pairs") or []
    if not pairs:
        raise ParamsError(f"{path}: pairs: no labelled pairs; list entries [question_a, question_b, same|different]")
    loaded = []
    for i, entry in enumerate(pairs):
        if not (isinstance(entry, list) and len(entry) == 3 and entry[2] in LABELS):
            raise ParamsError(f"{path}: pairs[{i}]: {entry!r}; write [question_a, question_b, same|different]")
        a, b, label = entry
        for name in (a, b):
            question = questions.get(name)
            if not isinstance(question, dict) or not question.get("program"):
                raise ParamsError(f"{path}: pairs[{i}]: question {name!r} is not under `questions` with a program")
        texts = [question_text(questions[n].get("description", ""), questions[n]["program"]) for n in (a, b)]
        loaded.append(LabelledPair(a, b, label == "same", texts[0], texts[1]))
    return loaded


def pair_similarities(pairs: list[LabelledPair]) -> pl.DataFrame:
    """question_a, question_b, label, cosine (as the game computes it)."""
    from pipeline.skate.uniqueness import embed

    texts = sorted({t for p in pairs for t in (p.text_a, p.text_b)})
    vectors = dict(zip(texts, embed(texts)))
    rows = [
        {
            "question_a": p.a,
            "question_b": p.b,
            "label": "same" if p.same else "different",
            "cosine": round(float(np.dot(vectors[p.text_a], vectors[p.text_b])), 6),
        }
        for p in pairs
    ]
    return pl.DataFrame(
        rows,
        schema={"question_a": pl.String, "question_b": pl.String, "label": pl.String, "cosine": pl.Float64},
        orient="row",
    )


def sweep(similarities: pl.DataFrame, thresholds: tuple[float, ...] = THRESHOLDS) -> pl.DataFrame:
    """Per threshold: pairs flagged as repeats, precision, recall and F1 of the `same` label."""
    same = similarities["label"].to_numpy() == "same"
    cosine = similarities["cosine"].to_numpy()
    rows = []
    for t in thresholds:
        flagged = cosine >= t
        tp = int((flagged & same).sum())
        fp = int((flagged & ~same).sum())
        fn = int((~flagged & same).sum())
        precision = tp / (tp + fp) if tp + fp else 1.0
        recall = tp / (tp + fn) if tp + fn else 1.0
        rows.append(
            {
                "threshold": t,
                "flagged": int(flagged.sum()),
                "true_positives": tp,
                "false_positives": fp,
                "false_negatives": fn,
                "precision": round(precision, 6),
                "recall": round(recall, 6),
                "f1": round(_f_beta(precision, recall, 1.0), 6),
                "f_half": round(_f_beta(precision, recall, BETA), 6),
            }
        )
    return pl.DataFrame(rows, orient="row")


def _f_beta(precision: float, recall: float, beta: float) -> float:
    weight = beta * beta
    denominator = weight * precision + recall
    return (1 + weight) * precision * recall / denominator if denominator else 0.0


def choose_threshold(table: pl.DataFrame) -> dict[str, float]:
    best = table.sort(["f_half", "threshold"], descending=[True, True]).row(0, named=True)
    return {k: best[k] for k in ("threshold", "precision", "recall", "f1", "f_half")}


def record_in_params(params_path: str | Path, chosen: dict[str, float], pairs_name: str) -> None:
    """Rewrite the `similarity_threshold:` line of params/skate.yaml (comments elsewhere kept)."""
    path = Path(params_path)
    text = path.read_text(encoding="utf-8")
    line = (
        f"similarity_threshold: {chosen['threshold']:.2f}  # calibrated on {pairs_name}: precision "
        f"{chosen['precision']:.2f}, recall {chosen['recall']:.2f} (python -m pipeline skate calibrate)"
    )
    updated, count = re.subn(r"(?m)^similarity_threshold:.*$", line, text)
    if count != 1:
        raise ParamsError(f"{path}: similarity_threshold: expected one top-level line to update, found {count}")
    path.write_text(updated, encoding="utf-8")


def calibration_chart(similarities: pl.DataFrame, table: pl.DataFrame, chosen: float) -> Any:
    import altair as alt

    long = table.unpivot(
        index="threshold", on=["precision", "recall", "f_half"], variable_name="measure", value_name="value"
    )
    rule = alt.Chart(alt.Data(values=[{"threshold": chosen}])).mark_rule(strokeDash=[4, 3]).encode(x="threshold:Q")
    curves = (
        alt.Chart(alt.Data(values=long.to_dicts()))
        .mark_line()
        .encode(
            x=alt.X("threshold:Q", title="cosine threshold", scale=alt.Scale(domain=[THRESHOLDS[0], 1])),
            y=alt.Y("value:Q", title="detecting repeats", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("measure:N", title=None),
        )
        .properties(width=320, height=240, title="Precision and recall per threshold")
    )
    spread = (
        alt.Chart(alt.Data(values=similarities.to_dicts()))
        .mark_tick(thickness=2)
        .encode(
            x=alt.X("cosine:Q", title="cosine similarity of the pair", scale=alt.Scale(domain=[0, 1])),
            y=alt.Y("label:N", title=None),
            color=alt.Color("label:N", legend=None),
            tooltip=["question_a:N", "question_b:N", alt.Tooltip("cosine:Q", format=".3f")],
        )
        .properties(width=320, height=120, title="Labelled pairs")
    )
    return (
        alt.hconcat(curves + rule, spread + rule)
        .resolve_scale(color="independent")
        .properties(title=f"Uniqueness threshold calibration (chosen {chosen:.2f})")
    )


def write_calibration(pairs_path: str | Path, out: str | Path) -> dict[str, Any]:
    """Tables, chart and the chosen threshold under `out` (pairs.parquet, thresholds.parquet,
    chosen.json, threshold_calibration.{html,png,svg})."""
    from pipeline.core.artifacts import save_chart, write_json_atomic, write_table
    from pipeline.skate.schemas import SimilarityPairsSchema, ThresholdSweepSchema

    out = Path(out)
    pairs = load_pairs(pairs_path)
    similarities = pair_similarities(pairs)
    table = sweep(similarities)
    chosen = choose_threshold(table)
    write_table(out / "pairs.parquet", similarities, SimilarityPairsSchema, sort_by=["question_a", "question_b"])
    write_table(out / "thresholds.parquet", table, ThresholdSweepSchema, sort_by=["threshold"])
    summary = {**chosen, "pairs": len(pairs), "same": sum(p.same for p in pairs), "pair_set": Path(pairs_path).name}
    write_json_atomic(out / "chosen.json", summary)
    save_chart(calibration_chart(similarities, table, chosen["threshold"]), out / "threshold_calibration")
    return summary

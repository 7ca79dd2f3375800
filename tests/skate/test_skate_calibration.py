"""SKATE's uniqueness threshold calibration: per-threshold precision and recall on the shipped
labelled pair set, the chosen threshold recorded in params, and bad pair files named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli import main
from pipeline.core.artifacts.params import ParamsError
from pipeline.core.artifacts.schemas import read_table
from pipeline.skate.calibration import load_pairs
from pipeline.skate.config import load_skate
from pipeline.skate.schemas import SimilarityPairsSchema, ThresholdSweepSchema

REPO = Path(__file__).resolve().parents[2]


def test_calibrate_reports_each_threshold_and_records_the_choice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    params = tmp_path / "skate.yaml"
    shutil.copy(REPO / "params/skate.yaml", params)
    out = tmp_path / "calibration"
    # the command in this process (`python -m pipeline` is main()): a new interpreter would import
    # torch and transformers and load the embedding model again, about 11 CPU-s
    code = main(["skate", "calibrate", "--out", str(out), "--params", str(params), "--write-params"])
    assert code == 0, capsys.readouterr().err[-2000:]
    pairs = read_table(out / "pairs.parquet", SimilarityPairsSchema)
    sweep = read_table(out / "thresholds.parquet", ThresholdSweepSchema)
    chosen = json.loads((out / "chosen.json").read_text())
    assert pairs.height == chosen["pairs"] >= 60 and chosen["same"] >= 20
    # each row's precision and recall follow from the pairs' similarities
    row = sweep.filter(pl.col("threshold") == chosen["threshold"]).row(0, named=True)
    flagged = pairs.filter(pl.col("cosine") >= chosen["threshold"])
    true_positives = flagged.filter(pl.col("label") == "same").height
    assert row["precision"] == pytest.approx(true_positives / flagged.height, abs=1e-6)
    assert row["recall"] == pytest.approx(true_positives / chosen["same"], abs=1e-6)
    assert chosen["f_half"] == sweep["f_half"].max()
    # the repeats in the set are separable: the chosen threshold beats chance by far
    assert chosen["precision"] >= 0.8 and chosen["recall"] >= 0.6
    assert load_skate(params).similarity_threshold == chosen["threshold"]
    assert "calibrated on similarity_pairs.yaml" in params.read_text()
    assert (out / "threshold_calibration.png").stat().st_size > 1000


def test_a_bad_pair_file_names_the_entry_and_the_fix(tmp_path: Path) -> None:
    bad = tmp_path / "pairs.yaml"
    bad.write_text("questions:\n  a: {description: x, program: 'print(1)'}\npairs:\n  - [a, ghost, same]\n")
    with pytest.raises(ParamsError, match=r"pairs.yaml: pairs\[0\]: question 'ghost'"):
        load_pairs(bad)
    bad.write_text("questions: {}\npairs:\n  - [a, b, maybe]\n")
    with pytest.raises(ParamsError, match=r"pairs\[0\].*same\|different"):
        load_pairs(bad)

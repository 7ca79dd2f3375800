"""`params/leaderboard.yaml`: the leaderboard version, which benchmarks it combines, site settings."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from pipeline.core.artifacts import StrictParams, did_you_mean, load_params
from pipeline.core.run import benchmark
from pipeline.core.run.registry import names as benchmark_names

VERSION_PATTERN = re.compile(r"^\d+\.\d+$")


class SiteParams(StrictParams):
    games_per_page: int = Field(100, ge=1, le=5000, description="games listed per page of a benchmark's game list")
    max_games: int = Field(0, ge=0, description="replay pages per benchmark (0: every game); the list links only these")


class CombinedParams(StrictParams):
    method: Literal["joint", "joint_hierarchical", "mean_percentile"] = Field(
        "joint",
        description="joint: one Bradley-Terry fit over every benchmark's games, each benchmark weighted equally "
        "(docs/ratings.md); joint_hierarchical: the same with a general skill plus a per-benchmark deviation "
        "shrunk toward zero; mean_percentile: the mean of each benchmark's percentile rank (the earlier board)",
    )
    deviation_sd: float = Field(
        0.5, gt=0, description="joint_hierarchical: prior sd of a model's per-benchmark deviation, in log-odds"
    )
    resamples: int = Field(
        200, ge=0, le=10000, description="bootstrap resamples of the joint fit (games within benchmarks)"
    )
    prior_sd: float = Field(2.0, gt=0, description="sd of the joint fit's Gaussian prior on a rating, in log-odds")
    seed: int = Field(0, description="seeds the joint fit's bootstrap")


class CompareParams(StrictParams):
    top_questions: int = Field(10, ge=1, description="SKATE questions shown where p(correct) differs most")
    top_maps: int = Field(10, ge=1, description="xent maps shown with the largest score gaps")


class LeaderboardParams(StrictParams):
    version: str = Field(description='the leaderboard version "MAJOR.MINOR" as a quoted string, e.g. "1.0"')
    benchmarks: list[str] = Field(
        default_factory=benchmark_names,
        description="benchmarks combined, among the registered ones (all by default); a missing one is skipped",
    )
    headline: dict[str, list[str]] = Field(
        default_factory=dict,
        description="per benchmark, metric keys of its metrics.json copied as <benchmark>_<key>; "
        "replaces the benchmark's own headline (its benchmark.py)",
    )
    interval_z: float = Field(
        1.96,
        gt=0,
        description="width in sigmas of a rating interval when a benchmark gives no bootstrap interval",
    )
    combined: CombinedParams = Field(default_factory=CombinedParams, description="the combined rating")
    anchor: str | None = Field(
        None,
        description="a model whose combined score is fixed at 1000 in every version, so published versions share "
        "a scale (release notes report changes on it); null: the mean of the full-coverage models is 1000",
    )
    site: SiteParams = Field(default_factory=SiteParams, description="the static site")
    compare: CompareParams = Field(default_factory=CompareParams, description="`python -m pipeline compare`")

    @field_validator("version", mode="before")
    @classmethod
    def _version(cls, value: object) -> str:
        text = str(value) if isinstance(value, (str, int, float)) else ""
        if not VERSION_PATTERN.match(text):
            raise ValueError(f'version must look like "MAJOR.MINOR" (quoted), e.g. "1.0"; got {value!r}')
        return text

    @field_validator("benchmarks")
    @classmethod
    def _known(cls, value: list[str]) -> list[str]:
        _known_benchmarks(value)
        if len(set(value)) != len(value):
            raise ValueError("a benchmark is listed twice")
        return value

    @field_validator("headline")
    @classmethod
    def _known_headline(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        _known_benchmarks(list(value))
        return value


def _known_benchmarks(names: list[str]) -> None:
    """Stop on a name that is no registered benchmark, with the closest one (a typo must not drop a benchmark)."""
    known = benchmark_names()
    unknown = [name for name in names if name not in known]
    if unknown:
        guesses = "; ".join(f"{name!r}: {did_you_mean(name, known)}" for name in unknown if did_you_mean(name, known))
        raise ValueError(f"unknown benchmark(s) {unknown}{'; ' + guesses if guesses else ''}; registered: {known}")


def headline_keys(params: LeaderboardParams, name: str) -> list[str]:
    """The metrics shown for a benchmark: the params' list, else the benchmark's declared headline."""
    if name in params.headline:
        return params.headline[name]
    return list(benchmark(name).headline)


def load_leaderboard_params(path: str | Path = "params/leaderboard.yaml") -> LeaderboardParams:
    return load_params(LeaderboardParams, path)

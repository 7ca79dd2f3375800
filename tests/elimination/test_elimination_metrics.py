"""The social metrics as the original benchmark computes them (under its names) beside ours (under
their own), checked on real logs of its public corpus against counts made by hand and against a
second, independent count straight from the raw records."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest

from pipeline.elimination.metrics import HEARD_BY_ALL, model_stats
from pipeline.elimination.plots import PLOT_NAMES, charts
from pipeline.elimination.reader import read_corpus
from pipeline.elimination.schemas import ModelStatsSchema
from tests.conftest import REPO

# two real logs (copied from shared/samples/elimination-corpus), inspected by hand:
# - GAME_REVOTE: gpt-5-medium (P4) re-votes against its round-3 partner P1 and votes against its
#   round-5 partner P7, who votes against it too; tie-break statements and final pleas
# - GAME_TWICE: llama (P5) votes against its round-6 partner P6, then again in the re-vote
METRIC_LOGS = REPO / "tests" / "data" / "elimination-metrics"
GAME_REVOTE = METRIC_LOGS / "game_1754806601657396_20250810_021643.jsonl"
GAME_TWICE = METRIC_LOGS / "game_1740726796118405_20250228_053225.jsonl"
# the 60 real logs the figures are checked on (absent outside this workspace)
SHARED_CORPUS = REPO.parent / "shared" / "samples" / "elimination-corpus"


def records(path: Path) -> list[dict]:
    # split("\n"), not splitlines(): some messages hold U+2028
    return [json.loads(line) for line in path.read_text().split("\n") if line.strip()]


def stats_of(*paths: Path) -> dict[str, dict]:
    stats = ModelStatsSchema.validate(model_stats(read_corpus(list(paths)).tables))
    return {row["model"]: row for row in stats.iter_rows(named=True)}


def test_buddy_betrayals_are_the_votes_against_that_rounds_partner_hand_counted() -> None:
    stats = stats_of(GAME_REVOTE)
    gpt5 = stats["gpt-5-medium"]
    # paired in rounds 1-5 (P7, P7, P1, P7, P7); the round-3 re-vote names P1, the round-5 vote P7
    assert (gpt5["buddy_chats"], gpt5["buddy_betrayals"], gpt5["buddy_betrayed"]) == (5, 2, 1)
    assert gpt5["buddy_betrayal_rate"] == pytest.approx(2 / 5) and gpt5["buddy_betrayed_rate"] == pytest.approx(1 / 5)
    # P7: its round-3 vote was invalid and its re-vote named P1, not its partner P2; voted against by
    # P2 (round 3) and by P4 (round 5)
    oss = stats["gpt-oss-120b"]
    assert (oss["buddy_chats"], oss["buddy_betrayals"], oss["buddy_betrayed"]) == (5, 1, 2)
    # P2 sits out round 4 unpaired (five seats): three chats, not four
    assert (stats["gpt-5-mini-medium"]["buddy_chats"], stats["gpt-5-mini-medium"]["buddy_betrayals"]) == (3, 1)
    assert stats["mistral"]["buddy_betrayed"] == 1 and stats["o3"]["buddy_betrayals"] == 0


def test_a_vote_and_a_re_vote_against_the_partner_count_twice_in_the_original_once_in_ours() -> None:
    llama = stats_of(GAME_TWICE)["llama"]
    # times it voted out its partner (over every rated game: this February game's recorded result
    # disagrees with its ranks, so the chart's reading leaves it out, below)
    assert (llama["buddy_chats_all_rated"], llama["buddy_betrayals_all_rated"]) == (6, 2)
    assert (llama["private_chats"], llama["betrayals"]) == (6, 1)  # chats that ended in such a vote
    assert llama["betrayal_rate"] == pytest.approx(1 / 6)
    assert llama["buddy_betrayal_rate_all_rated"] == pytest.approx(2 / 6)
    assert stats_of(GAME_TWICE)["mistral-small-2501"]["buddy_betrayed_all_rated"] == 2


def test_the_chart_counts_chats_only_in_games_whose_result_agrees_with_their_ranks() -> None:
    """An old-format game whose `final_results` names another winner than its records' ranks
    (winner and finalist swapped, as 11 of the 22 sample games before April) adds no chat to the
    chart's counts; a game whose result agrees counts the same both ways."""
    games = read_corpus([GAME_TWICE, GAME_REVOTE]).tables["games"]
    agrees = dict(zip(games["game_id"].to_list(), games["matches_final_results"].to_list()))
    assert agrees == {"1740726796118405": False, "1754806601657396": True}
    llama = stats_of(GAME_TWICE)["llama"]
    assert (llama["buddy_chats"], llama["buddy_betrayals"], llama["buddy_betrayal_rate"]) == (0, 0, None)
    both = stats_of(GAME_TWICE, GAME_REVOTE)
    gpt5 = both["gpt-5-medium"]
    assert (gpt5["buddy_chats"], gpt5["buddy_betrayals"]) == (gpt5["buddy_chats_all_rated"], 2) == (5, 2)


def test_words_per_message_counts_only_what_every_seat_hears() -> None:
    llama = stats_of(GAME_TWICE)["llama"]
    # six public statements and a final plea: 72 + 69 + 75 + 80 + 85 + 75 + 75 words
    assert (llama["public_messages"], llama["words_per_message"]) == (7, pytest.approx(531 / 7))
    assert (llama["messages"], llama["avg_words"]) == (25, pytest.approx(1359 / 25))  # ours: private ones too
    gpt5 = stats_of(GAME_REVOTE)["gpt-5-medium"]
    assert (gpt5["public_messages"], gpt5["words_per_message"]) == (5, pytest.approx((78 + 73 + 74 + 69 + 69) / 5))

    tables = read_corpus([GAME_REVOTE, GAME_TWICE]).tables
    kinds = set(tables["messages"]["kind"])
    assert {"tiebreak", "plea", "private"} <= kinds  # the logs hold every kind the rule must sort
    before = model_stats(tables)
    # private messages twice as long change our average, never the original's
    longer = tables["messages"].with_columns(
        pl.when(pl.col("kind") == "private").then(pl.col(name) * 2).otherwise(pl.col(name)).alias(name)
        for name in ("words", "words_recorded")
    )
    after = model_stats({**tables, "messages": longer})
    assert after["words_per_message"].to_list() == before["words_per_message"].to_list()
    assert after["public_messages"].to_list() == before["public_messages"].to_list()
    assert all(a > b for a, b in zip(after["avg_words"], before["avg_words"], strict=True))


def test_first_place_and_earliest_out_are_shares_of_appearances() -> None:
    stats = stats_of(GAME_REVOTE, GAME_TWICE)
    assert stats["o4-mini-high"]["wins"] == 1 and stats["o4-mini-high"]["first_place_rate"] == 1.0
    assert stats["nova-pro"]["first_out"] == 1 and stats["nova-pro"]["earliest_out_rate"] == 1.0
    for row in stats.values():
        assert row["first_place_rate"] == pytest.approx(row["wins"] / row["seats"])
        assert row["earliest_out_rate"] == pytest.approx(row["first_out"] / row["seats"])
    assert sum(row["wins"] for row in stats.values()) == 2


def renamed_copy(source: Path, target: Path, new_id: str, drop_final_results: bool) -> Path:
    """The same game under another id; without final_results it is read but not rated."""
    old_id = str(records(source)[0]["game_id"])
    lines = [line for line in source.read_text().split("\n") if line.strip()]
    if drop_final_results:
        lines = [line for line in lines if json.loads(line)["type"] != "final_results"]
    target.write_text("\n".join(line.replace(old_id, new_id) for line in lines) + "\n")
    return target


def test_the_original_metrics_count_the_rated_games_ours_every_log(tmp_path: Path) -> None:
    unrated = renamed_copy(GAME_REVOTE, tmp_path / "game_1000000000000001.jsonl", "1000000000000001", True)
    corpus = read_corpus([GAME_REVOTE, unrated])
    assert len(corpus.games) == 2 and len(corpus.finished) == 1
    gpt5 = {row["model"]: row for row in model_stats(corpus.tables).iter_rows(named=True)}["gpt-5-medium"]
    assert (gpt5["buddy_chats"], gpt5["buddy_betrayals"], gpt5["public_messages"]) == (5, 2, 5)
    assert (gpt5["private_chats"], gpt5["betrayals"], gpt5["messages"]) == (10, 4, 40)
    assert gpt5["seats"] == 1


def test_model_stats_do_not_depend_on_the_order_of_the_rows() -> None:
    tables = read_corpus([GAME_REVOTE, GAME_TWICE]).tables
    shuffled = {name: frame.sample(fraction=1.0, shuffle=True, seed=7) for name, frame in tables.items()}
    assert model_stats(shuffled).equals(model_stats(tables))


def test_the_charts_show_the_original_definitions_and_ours_under_their_own_names() -> None:
    tables = read_corpus([GAME_REVOTE, GAME_TWICE]).tables
    stats = model_stats(tables)
    board = stats.select("model", mu=pl.lit(1.0), sigma=pl.lit(0.5))
    distribution = pl.DataFrame({"model": ["o3"], "rank": [1], "count": [1], "share": [1.0]})
    built = charts(board, distribution, stats)
    assert tuple(built) == PLOT_NAMES
    shown = {
        name: set(chart.data.columns) - {"model"}
        for name, chart in built.items()
        if name not in ("trueskill", "rank_distribution")
    }
    assert shown["betrayal_betrayer"] == {"buddy_betrayal_rate", "buddy_betrayals", "buddy_chats"}
    assert shown["betrayal_victim"] == {"buddy_betrayed_rate", "buddy_betrayed", "buddy_chats"}
    assert shown["first_place"] == {"first_place_rate", "wins", "seats"}
    assert shown["earliest_out"] == {"earliest_out_rate", "first_out", "seats"}
    assert shown["average_words"] == {"words_per_message", "public_messages"}
    assert shown["betrayal_betrayer_per_chat"] == {"betrayal_rate", "betrayals", "private_chats"}
    assert shown["first_place_raw_count"] == {"wins"} and shown["average_words_all_messages"] == {
        "avg_words",
        "messages",
    }


def raw_counts(paths: list[Path]) -> dict[str, dict[str, float]]:
    """The original's definitions counted straight from the records of finished logs, without the
    reader: chats from `preference_result`, one per paired seat and round; the `vote` records (first
    votes and re-votes alike) naming that round's partner; words of the `conversation` records."""
    count: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for path in paths:
        log = records(path)
        if not any(r["type"] == "final_results" for r in log):
            continue
        model_of: dict[str, str] = {}
        for r in log:
            for key in ("player_id", "speaker_id", "voter_id"):
                pid = r.get(key)
                if isinstance(pid, str) and pid.startswith("Player"):
                    model_of["P" + pid.split("_")[0].removeprefix("Player")] = pid.split("_", 2)[2]
        partner: dict[tuple[int, str], str] = {}
        for r in log:
            if r["type"] == "preference_result":
                for a, b in r["matched_pairs"]:
                    partner[(r["round"], a)], partner[(r["round"], b)] = b, a
                    count[model_of[a]]["chats"] += 1
                    count[model_of[b]]["chats"] += 1
            elif r["type"] == "vote" and r["target_id"].startswith("Player"):
                voter = "P" + r["voter_id"].split("_")[0].removeprefix("Player")
                target = "P" + r["target_id"].split("_")[0].removeprefix("Player")
                if partner.get((r["round"], voter)) == target:
                    count[model_of[voter]]["betrayals"] += 1
                    count[model_of[target]]["betrayed"] += 1
            elif r["type"] == "conversation":
                model = r["player_id"].split("_", 2)[2]
                count[model]["heard"] += 1
                count[model]["heard_words"] += len(r["message"].split())
    return count


@pytest.mark.skipif(not SHARED_CORPUS.is_dir(), reason="the 60-log sample corpus is not in this workspace")
def test_on_the_sixty_sample_logs_the_counts_agree_with_the_raw_records_and_the_hand_counts() -> None:
    paths = sorted(SHARED_CORPUS.glob("*.jsonl"))
    assert len(paths) == 60
    stats = stats_of(*paths)
    raw = raw_counts(paths)
    for model, row in stats.items():
        expected = raw[model]
        assert (row["buddy_chats_all_rated"], row["buddy_betrayals_all_rated"], row["buddy_betrayed_all_rated"]) == (
            expected["chats"],
            expected["betrayals"],
            expected["betrayed"],
        ), model
        assert row["public_messages"] == expected["heard"], model
        assert row["words_per_message"] == pytest.approx(expected["heard_words"] / expected["heard"]), model
    # the models of the figures: the original's definitions, then ours
    figures = {
        name: (
            row["buddy_betrayals_all_rated"],
            row["buddy_chats_all_rated"],
            row["public_messages"],
            round(row["words_per_message"], 2),
            row["betrayals"],
            row["private_chats"],
            row["messages"],
            round(row["avg_words"], 2),
        )
        for name, row in stats.items()
        if name in ("gpt-5-medium", "glm-4-5", "claude-opus-4-1-20250805-0K", "llama")
    }
    assert figures == {
        "gpt-5-medium": (3, 54, 67, 71.93, 3, 54, 229, 53.07),
        "glm-4-5": (3, 16, 19, 60.21, 3, 16, 67, 38.3),
        "claude-opus-4-1-20250805-0K": (2, 28, 35, 79.09, 2, 28, 119, 57.59),
        "llama": (11, 48, 56, 75.84, 10, 48, 200, 54.23),
    }
    assert sum(row["buddy_betrayals_all_rated"] for row in stats.values()) == 93
    # the chart's game set leaves out the 11 games whose recorded result disagrees with their ranks
    assert sum(row["buddy_chats_all_rated"] for row in stats.values()) == 1772
    assert (
        sum(row["buddy_chats"] for row in stats.values()),
        sum(row["buddy_betrayals"] for row in stats.values()),
    ) == (1444, 71)
    assert (stats["gpt-5-medium"]["buddy_chats"], stats["glm-4-5"]["buddy_chats"]) == (54, 16)  # new games: all kept
    assert sum(row["betrayals"] for row in stats.values()) == 92
    gpt5 = stats["gpt-5-medium"]
    assert (gpt5["wins"], gpt5["seats"], gpt5["first_out"]) == (2, 13, 2)
    assert gpt5["first_place_rate"] == pytest.approx(2 / 13) == gpt5["earliest_out_rate"]
    assert set(HEARD_BY_ALL) == {"public", "tiebreak", "plea"}

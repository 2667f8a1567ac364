# The front door. `make demo` and `make test` install whatever is missing first.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
# pytest-xdist workers for `make test` and `make test-fast` (TEST_WORKERS=0: one process, in order)
TEST_WORKERS ?= 2
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: install docker image agents-image grader-image render-image demo test test-fast lint imports format airflow-ui airflow-screenshots screenshots \
	build-worker clean player browser notebook sql docs terminal-tools cluster cluster-stop cluster-status
.DEFAULT_GOAL := install
PLAYER := plugins/argusic/vendor/asciinema-player/VERSION

# One virtualenv for everything (Airflow, dbt, GX, the argusic package). Compiled bytecode: where
# PYTHONDONTWRITEBYTECODE is set, Python never writes it, and every process (each Airflow task, each
# CLI call, each test) compiled Airflow, dbt and GX from source again (docs/airflow.md).
$(VENV)/.installed: requirements.txt constraints.txt pyproject.toml
	python3 -m venv $(VENV)
	$(BIN)/pip install -q uv
	$(BIN)/uv pip install -q -p $(PY) --compile-bytecode -r requirements.txt -c constraints.txt
	$(BIN)/uv pip install -q -p $(PY) --no-deps -e .
	touch $@

install: $(VENV)/.installed $(PLAYER)

# asciinema-player from npm (pinned, integrity checked) for `argusic report`'s self-contained page:
# vendored into the package, ignored by git.
$(PLAYER): scripts/vendor_player.sh
	bash scripts/vendor_player.sh

player: $(PLAYER)

# Debian's headless Chromium and its driver: the attempt page's browser test and the UI screenshots.
browser:
	bash scripts/setup_chromium.sh

# Docker engine (Debian's docker.io, dockerd started when none answers) and the runner image.
docker:
	bash scripts/setup_docker.sh

image: docker
	bash scripts/build_runner_image.sh

# The runner image plus Node.js 22 and the pinned agent CLIs (Claude Code, Codex), all from npm.
agents-image: image
	command -v npm >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null)
	bash scripts/build_agents_image.sh

# The repair grader image (issue 13): the runner's layout plus Debian's python3-pytest, built the same way.
grader-image: docker
	bash scripts/build_grader_image.sh

# The rendering image (issue 14, Layer 1 hints): the runner's layout plus Debian's chromium, built the same way.
render-image: docker
	bash scripts/build_render_image.sh

demo: install image grader-image render-image
	$(BIN)/argusic demo

# The import contract (pyproject.toml [tool.importlinter]): no import loop anywhere in the package, the
# layers of DESIGN.md in their order (every package placed), Airflow and typer only where they belong;
# then every import left inside a function must say why (scripts/check_deferred_imports.py)
imports: install
	$(BIN)/lint-imports
	$(PY) scripts/check_deferred_imports.py

lint: install imports
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

test: install image agents-image grader-image render-image browser terminal-tools lint
	bash scripts/check-ttl-methodology.sh
	bash scripts/check-cost-methodology.sh
	bash scripts/check-repair-methodology.sh
	# two workers (pytest-xdist), a test file each at a time: most slow tests wait on Docker, Airflow or a
	# browser, and one after another they came to over 80 of CI's 90 minutes; the 30 slowest are printed
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=30

test-fast: install
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder -m "not slow"

# Execute the analyst notebook (after `make demo` or a build) into warehouse/notebooks/ (git-ignored):
# the committed copy has no outputs (they would name a cycle's private projects, issue 32).
notebook: install
	$(PY) scripts/run_notebook.py notebooks/board_and_verdicts.ipynb

airflow-ui: install
	bash scripts/airflow_ui.sh

# The Celery cluster on this machine's loopback (Postgres, Redis, moto S3, Airflow's services, two
# attempt workers, the warehouse worker): state in .cluster/ (ARGUSIC_CLUSTER_DIR); docs/airflow.md.
cluster: install
	bash scripts/cluster.sh start

cluster-stop:
	bash scripts/cluster.sh stop

cluster-status:
	bash scripts/cluster.sh status

# Analysts: the analyst copy (warehouse/analyst/, published by every successful build) in an SQL shell
# (Harlequin, read-only; `argusic sql "SELECT …"` for one statement), and dbt's docs on 127.0.0.1.
sql: install
	$(BIN)/argusic sql

docs: install
	$(BIN)/argusic docs

# tmux drives the interactive SQL shell in its test, as a person at a terminal would (Debian's).
terminal-tools:
	command -v tmux >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux >/dev/null)

# Start the UI on a free port in a temp folder, run the demo and the documented trigger, and take
# screenshots of what ops see (grid, attempts, a log, the trigger form, health) into $(SHOTS).
SHOTS ?= screenshots
# Documentation, not a test: `make test` keeps one smoke test of the UI (tests/orchestration/test_airflow_ui.py).
airflow-screenshots: install image browser
	$(PY) scripts/airflow_screenshots.py --out $(SHOTS)
screenshots: airflow-screenshots

# One warm process for builds and publications (dbt and GX imported once); export the same
# ARGUSIC_BUILD_WORKER to `argusic build` and Airflow so that they use it.
build-worker: install
	$(BIN)/argusic build-worker --socket "$${ARGUSIC_BUILD_WORKER:-.run/build.sock}"

clean:
	rm -rf runs warehouse dbt_project/target dbt_project/logs

# The production description (docker-compose.yml, docs/deployment.md) checked by Debian's
# docker-compose (installed when missing): the file and .env.example must resolve and validate.
.PHONY: compose-tool compose-check
compose-tool:
	bash scripts/setup_compose.sh

compose-check: compose-tool
	docker-compose -f docker-compose.yml --env-file .env.example config -q

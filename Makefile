# switchyard: `make run` runs the main job, `make test` runs every check (what CI runs).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Reinstall only when the dependency lists change.
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml package-lock.json 2>/dev/null | sha1sum | cut -c1-12)

.PHONY: setup test lint typecheck unit unit-fast run bench schema clean chromium

$(STAMP):
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@if [ -f package-lock.json ]; then npm ci --silent --no-audit --no-fund; fi
	@rm -f $(VENV)/.installed-* && touch $@

# The dashboard's web app (web/): its own node_modules, built into web/dist, which the server
# serves at /ui/. Rebuilt when its lock file or a source changes.
WEB_SOURCES := $(shell find web/src -type f 2>/dev/null) web/index.html web/vite.config.ts web/tsconfig.json
web/node_modules/.package-lock.json: web/package-lock.json
	cd web && npm ci --silent --no-audit --no-fund
	@touch $@

web/dist/index.html: web/node_modules/.package-lock.json $(WEB_SOURCES)
	cd web && npm run --silent build

# The browser tests drive Debian's chromium (Playwright's own downloads are not reachable).
chromium:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get install -y chromium || (apt-get update && apt-get install -y chromium); \
	  else echo "The browser tests need /usr/bin/chromium: sudo apt-get install -y chromium"; fi; \
	fi

setup: $(STAMP) web/dist/index.html chromium

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: setup
	$(BIN)/mypy

# pytest-xdist: one worker per CPU (`make test TEST_WORKERS=0` runs in one process). A module's
# tests stay together in one worker, tests/infra's all in one (tests/conftest.py); each worker has
# its own databases, servers and browser. README.md, Tests, has the timings.
TEST_WORKERS ?= auto
XDIST := -n $(TEST_WORKERS)

unit: setup
	$(BIN)/pytest $(XDIST)

# The edit loop: every test but those marked slow (over 5 s each).
unit-fast: setup
	$(BIN)/pytest $(XDIST) -m "not slow" -q

test: lint typecheck unit

# The main job: validate and compile the examples, then run customer-support end to end on the
# local engine (embedded PostgreSQL unless DATABASE_URL is set). Without ANTHROPIC_API_KEY the
# model answers come from a script, and the command says so.
run: setup
	$(BIN)/switchyard validate workflows/*.yaml
	$(BIN)/switchyard compile --check workflows/*.yaml
	@if [ -z "$$ANTHROPIC_API_KEY" ]; then \
	  echo "No ANTHROPIC_API_KEY set: agent and tool steps answer from workflows/scripts/customer-support.yaml."; \
	  script="--llm-script workflows/scripts/customer-support.yaml"; \
	fi; \
	$(BIN)/switchyard run workflows/customer-support.yaml --input @workflows/inputs/customer-support.json $$script --approve approve

bench: setup
	$(BIN)/python benchmarks/validate.py

schema: setup
	$(BIN)/switchyard schema > schema/workflow.schema.json

clean:
	rm -rf $(VENV) node_modules web/node_modules web/dist .pytest_cache .mypy_cache .ruff_cache

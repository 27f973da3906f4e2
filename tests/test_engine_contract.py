"""The engine contract, on every (engine, manager) pair of the launch registry that can run here.

A launch is granted its plan, runs a batch of fits in the cluster's worker processes (not in this
process), lets a raising fit's exception through with its type and message, and leaves nothing running.
Each manager adds its own checks: ssh a hostile ``remote_dir``, fits over SSH, an abort and a batch on
new workers, no session left (ray: on the session's two namespaced hosts, each node on its host's address, per
host as planned, nothing left there); yarn one application of the executors' containers (and Dask's AM), none left;
standalone the clusters, still up. On ``local`` a launch has one slot, where joblib would run a one-job
``Parallel`` call in the calling process whatever the backend.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import psutil
import pytest
from sklearn.utils._param_validation import InvalidParameterError

from sweeper.engines import DESCRIPTORS
from sweeper.launch.base import Granted, LaunchContext, Session
from sweeper.launch.dask.session import DaskSession
from sweeper.launch.hosts.hadoop_conf import read_hadoop_conf
from sweeper.launch.hosts.node_managers import containers_left
from sweeper.launch.hosts.yarn_client import YarnClient
from sweeper.launch.options import (
    LocalOptions,
    ManagerOptions,
    SshCluster,
    SshOptions,
    StandaloneOptions,
    YarnOptions,
)
from sweeper.launch.registry import LAUNCHERS, starter
from sweeper.launch.spark.class_archive import ClassArchive, class_archive
from sweeper.launch.spark.session import SparkAppSession, driver_process
from sweeper.names import BASELINE_ENGINE, on_spark
from sweeper.planning.plan import Launch
from sweeper.workload.data import Data
from sweeper.workload.fit import FitResult
from sweeper.workload.tasks import FitTask
from tests.conftest import CLUSTER_OF_MANAGER, CLUSTER_OF_PAIR
from tests.support import launches
from tests.support.batches import replicas
from tests.support.leftovers import assert_no_launch_processes
from tests.support.netns_hosts import NetnsHosts, wait_until_empty
from tests.support.ray_cluster import RayCluster, assert_no_ray_processes, ray_cluster
from tests.support.sshd import assert_nothing_left, cluster_for, hostile
from tests.support.standalone_clusters import DASK_WORKERS
from tests.support.yarn_cluster import container_processes, live_applications, rest

pytestmark = pytest.mark.integration

MLLIB = "spark-mllib"
# spark-mllib runs its fits on the spark engine's launch of the same manager (sweeper.launch.spark.mllib.start):
# the spark pairs cover those launches; the local pair covers MLlib's own batches and errors
PAIRS = [(engine, manager) for engine, manager in LAUNCHERS if engine != MLLIB or manager == "local"]
BAD_SOLVER = "no-such-solver"
JOBLIB_ENGINES = tuple(engine.name for engine in DESCRIPTORS if engine.joblib)  # through launch/joblib_batch.py
LISTENER_WAIT_MS = 60_000
RAY_DEFAULT_GCS_PORT = 6379  # a head's port unless it is given one: a second head on the host could not start


class OnManager:
    """A launch on one manager for the contract, and the manager's own checks. ``cluster``: its shared cluster."""

    distinct_pids = True  # the fits' pids are of one PID namespace: two fits on two executors have two pids

    def __init__(self, cluster: Any, tmp_path: Path) -> None:
        self.cluster = cluster
        self.tmp_path = tmp_path

    def launch(self, engine: str) -> Launch:
        raise NotImplementedError

    def options(self) -> ManagerOptions:
        return LocalOptions()

    def context(self) -> LaunchContext:
        return launches.context(self.tmp_path / "run", self.options(), start_timeout_s=120)

    def while_running(self, engine: str, session: Session, pids: set[int], again: Callable[[], set[int]]) -> None:
        """Checks while the launch runs, after its first batch (``again`` runs another, returns its fits' pids)."""

    def after(self) -> None:
        """Checks once the launch has ended."""


class OnLocal(OnManager):
    def launch(self, engine: str) -> Launch:
        if engine == BASELINE_ENGINE:  # sweeper.planning.plan.baseline_launch: one process, no memory of its own
            return launches.launch(engine, executors=1, executor_memory_mib=0, memory_overhead_mib=0)
        return launches.launch(engine, executors=1, executor_memory_mib=1024)


class OnSsh(OnManager):
    """One host, the shared sshd; the launch's directory under a path made to break out of shell quotes."""

    def __init__(self, cluster: Any, tmp_path: Path) -> None:
        super().__init__(cluster, tmp_path)
        # past grid validation (which refuses it), a remote_dir made to break out of quotes only names a directory
        self.remote_dir, self.marker = hostile(tmp_path)

    def launch(self, engine: str) -> Launch:
        return launches.launch(engine, "ssh")

    def options(self) -> ManagerOptions:
        return cluster_for(self.cluster, remote_dir=self.remote_dir)

    def while_running(self, engine: str, session: Session, pids: set[int], again: Callable[[], set[int]]) -> None:
        # the fits ran in worker processes started over SSH, not by this process
        over_ssh = {self.cluster.process.pid} | {p.pid for p in self.cluster.sessions()}
        assert not pids & ({p.pid for p in psutil.Process().children(recursive=True)} - over_ssh)
        launch_dirs = list((self.tmp_path / "a'; touch ").rglob(f"sweeper-{engine}-*"))
        assert launch_dirs, "the launch's directory is elsewhere"
        # a batch past its time limit is aborted: the next one runs on new workers
        session.abort()
        assert not pids & again()

    def after(self) -> None:
        assert not self.marker.exists()
        assert_nothing_left(self.cluster)


class OnYarn(OnManager):
    """The shared MiniYARNCluster: 2 executors (Dask: workers) planned as one node's, wherever YARN puts them."""

    def launch(self, engine: str) -> Launch:
        return launches.launch(engine, "yarn")

    def options(self) -> ManagerOptions:
        return YarnOptions(conf_dir=self.cluster.conf_dir)

    def while_running(self, engine: str, session: Session, pids: set[int], again: Callable[[], set[int]]) -> None:
        running = rest(self.cluster, "/apps?states=RUNNING")["apps"]["app"]
        assert len(running) == 1
        # 2 containers of 512 + 384 MiB (YARN rounds up to multiples of 128 MiB), and Dask's ApplicationMaster's
        # (Spark's runs in the driver: sweeper/launch/spark/driver_am.py)
        containers = 2 if on_spark(engine) else 3
        assert running[0]["runningContainers"] == containers
        self.app_ids = [running[0]["id"]]
        self.yarn = YarnClient(read_hadoop_conf(self.cluster.conf_dir, {}))
        held = containers_left(self.yarn, self.app_ids)  # as each NodeManager's own REST API lists them
        assert sum(len(ids) for ids in held.values()) == containers, held

    def after(self) -> None:
        # the launch ended only once every NodeManager released the containers: nothing to wait for here
        assert containers_left(self.yarn, self.app_ids) == {}
        assert not container_processes()
        assert not live_applications(self.cluster)


class OnRayStandalone(OnManager):
    """A Ray cluster of this test run (2 worker nodes of 1 CPU and 1 GiB), at its address (cluster.ray_address)."""

    def launch(self, engine: str) -> Launch:
        return launches.launch(engine, "standalone", executor_memory_mib=1024)

    def options(self) -> ManagerOptions:
        return StandaloneOptions(ray_address=self.cluster.address)

    def after(self) -> None:
        assert self.cluster.alive()  # the cluster is the user's: still there


class OnRaySsh(OnManager):
    """The session's two namespaced SSH hosts: 3 worker nodes, 1 on the first host (beside the head), 2 on the other.

    Each host has its own PID namespace: a fit's pid is its host's, so fits on two hosts may share a number."""

    distinct_pids = False

    def launch(self, engine: str) -> Launch:
        return launches.launch(engine, "ssh", executors=3, nodes=2)

    def options(self) -> ManagerOptions:
        hosts = self.cluster
        return SshCluster(hosts=tuple(hosts.addresses), options=SshOptions.from_grid(hosts.ssh_options()))

    def while_running(self, engine: str, session: Session, pids: set[int], again: Callable[[], set[int]]) -> None:
        hosts: NetnsHosts = self.cluster
        raylets = [commands_with(hosts, namespace, "/raylet") for namespace in hosts.namespaces]
        # the head's raylet and one worker node on the first host, two worker nodes on the other, each node named
        # by its host's address (Ray's gRPC servers listen on every interface: Ray 2.60 binds them to 0.0.0.0)
        assert [len(found) for found in raylets] == [2, 2], raylets
        for found, address in zip(raylets, hosts.addresses, strict=True):
            assert all(f"--node_ip_address={address} " in f"{command} " for command in found), found
        assert len(commands_with(hosts, hosts.namespaces[0], "/gcs_server")) == 1  # the head on the first host
        ports = {int(local.rsplit(":", 1)[1]) for local, _ in hosts.listening(hosts.namespaces[0])}
        assert RAY_DEFAULT_GCS_PORT not in ports, ports
        assert not commands_with(hosts, hosts.namespaces[1], "/gcs_server")
        # the fits ran in the hosts' processes (their pids in the hosts' PID namespaces), not here
        on_hosts = {local for namespace in hosts.namespaces for local in namespaced_pids(hosts, namespace)}
        assert pids <= on_hosts, (pids, on_hosts)
        session.abort()  # a batch past its time limit is aborted: the next one runs on new actors
        assert not pids & again()

    def after(self) -> None:
        hosts: NetnsHosts = self.cluster
        assert not wait_until_empty(hosts)  # nothing of the launch on any host
        left = [path for index in range(len(hosts.names)) for path in (hosts.root_of(index) / "tmp").glob("sweeper-*")]
        assert not left, left


def commands_with(hosts: NetnsHosts, namespace: str, marker: str) -> list[str]:
    """The command lines holding ``marker`` of the processes in ``namespace``."""
    found = []
    for pid in hosts.pids(namespace):
        with contextlib.suppress(psutil.Error):
            command = " ".join(psutil.Process(pid).cmdline())
            if marker in command:
                found.append(command)
    return found


def namespaced_pids(hosts: NetnsHosts, namespace: str) -> set[int]:
    """The pids the processes in ``namespace`` have in their own PID namespace (/proc/PID/status, NSpid's last)."""
    found = set()
    for pid in hosts.pids(namespace):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("NSpid:"):
                    found.add(int(line.split()[-1]))
    return found


class OnStandalone(OnManager):
    """The shared Spark master (one worker of 2 cores) and Dask scheduler (2 workers of 1 thread and 1 GiB)."""

    def launch(self, engine: str) -> Launch:
        return launches.launch(engine, "standalone", executor_memory_mib=1024)

    def options(self) -> ManagerOptions:
        return StandaloneOptions(self.cluster.spark_master, self.cluster.dask_scheduler)

    def after(self) -> None:
        # the application's executors are gone; the clusters are the user's: still there
        assert_gone(self.cluster.spark_executors)
        assert self.cluster.dask_workers() == DASK_WORKERS


MANAGERS: dict[str, type[OnManager]] = {
    "local": OnLocal,
    "ssh": OnSsh,
    "yarn": OnYarn,
    "standalone": OnStandalone,
}
ON_ENGINE_AND_MANAGER: dict[tuple[str, str], tuple[type[OnManager], str]] = {
    ("ray", "standalone"): (OnRayStandalone, "ray_standalone"),  # an existing Ray cluster, not Spark's or Dask's
    ("ray", "ssh"): (OnRaySsh, CLUSTER_OF_PAIR[("ray", "ssh")]),  # hosts with addresses and PIDs of their own
}


@pytest.fixture(scope="session")
def ray_standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayCluster]:
    """The existing Ray cluster of the standalone pair: 2 worker nodes of 1 CPU and 1 GiB."""
    with ray_cluster(tmp_path_factory.mktemp("ray-standalone"), workers=2, cores=1, memory_mib=1024) as cluster:
        yield cluster


def assert_gone(find: Callable[[], list[str]], wait_s: float = 20.0) -> None:
    deadline = time.monotonic() + wait_s
    while (left := find()) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert not left, "left running:\n" + "\n".join(left)


def raising(engine: str, task: FitTask) -> tuple[FitTask, type[Exception], str]:
    """A fit that raises its library's own error where it runs, that error's type and its whole message.

    A solver the grid would refuse, set behind its back: scikit-learn's parameter validation (the set of
    solvers it lists is in hash order, which differs per process), or MLlib's parameter mapping.
    """
    if engine == MLLIB:
        failing = replace(task, params=(*task.params, ("mllib_solver", BAD_SOLVER)))
        return failing, ValueError, re.escape(f"mllib_solver must be one of l-bfgs, gd, got '{BAD_SOLVER}'")
    failing = replace(task, params=(*task.params, ("solver", BAD_SOLVER)))
    message = rf"The 'solver' parameter of MLPClassifier must be a str among \{{.*\}}\. Got '{BAD_SOLVER}' instead\."
    return failing, InvalidParameterError, message


def assert_ran_on_the_cluster(engine: str, session: Any, results: list[FitResult], distinct_pids: bool) -> None:
    """The fits ran in the launch's worker processes; MLlib's, driven from here, in the executors' tasks."""
    pids = {r.pid for r in results}
    if engine == MLLIB:
        assert pids == {os.getpid()}  # the driver: each fit is a series of Spark jobs
        tasks = completed_tasks(session.spark)
        assert len(tasks) == session.granted.executors and all(tasks), tasks
        return
    assert os.getpid() not in pids
    if session.granted.executors > 1 and distinct_pids:  # a fit on each executor (Dask: worker)
        assert len(pids) == len(results)


def completed_tasks(spark: Any) -> list[int]:
    """How many tasks each executor of the application has completed (Spark's status store, once the listener
    bus, a Spark-private API, has delivered every event so far: the store is written after the job returned)."""
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(LISTENER_WAIT_MS)
    iterator = spark.sparkContext._jsc.sc().statusStore().executorList(True).iterator()
    found = []
    while iterator.hasNext():
        executor = iterator.next()
        if executor.id() != "driver":
            found.append(int(executor.completedTasks()))
    return found


def assert_a_task_a_slot(engine: str, session: Any, digits: Data) -> None:
    """Alike fits go as one joblib task a slot, each slot's share in one worker process; a search's (parameter
    combinations of unequal cost) one fit a task. On Spark every task is a job of one task: the executors count them.
    """
    if engine not in JOBLIB_ENGINES:
        return
    slots = session.granted.executors * session.granted.cores_per_executor
    alike = replicas(digits, fits=2 * slots)
    search = [replace(task, params=(*task.params, ("alpha", 10.0**-k))) for k, task in enumerate(alike)]
    spark = session.spark if isinstance(session, SparkAppSession) else None
    before = sum(completed_tasks(spark)) if spark else 0
    pids = [r.pid for r in session.run_batch(alike, digits)]
    assert all(pids[i] == pids[i + 1] for i in range(0, len(pids), 2)), pids  # a slot's 2 fits in one process
    if spark:
        grouped = sum(completed_tasks(spark))
        session.run_batch(search, digits)
        assert (grouped - before, sum(completed_tasks(spark)) - grouped) == (slots, 2 * slots)


def assert_workers_import_installed_pyspark(engine: str, session: Any) -> None:
    """Every executor's Python workers import the installed pyspark, not the zip of its sources Spark puts first on
    their path (sweeper/launch/spark/python_daemon.py); MLlib's fits run in the JVM."""
    if not isinstance(session, SparkAppSession) or engine == MLLIB:
        return

    def pyspark_of_worker(_: Any) -> Iterator[str]:  # nested: cloudpickle ships it by value, not by this module
        import pyspark

        yield pyspark.__file__

    tasks = 2 * session.granted.executors * session.granted.cores_per_executor
    found = set(session.spark.sparkContext.parallelize(range(tasks), tasks).mapPartitions(pyspark_of_worker).collect())
    assert found and not any(".zip" in path for path in found), found


def assert_no_sql_session(engine: str, session: Any) -> None:
    """A launch of the ``spark`` engine makes no Spark SQL session (joblibspark would, for its context only: ~3 s of a
    start); spark-mllib makes one for its DataFrames."""
    if not isinstance(session, SparkAppSession):
        return
    from pyspark.sql import SparkSession

    jvm_sessions = SparkSession._get_j_spark_session_class(session.spark.sparkContext._jvm)
    made = (SparkSession._instantiatedSession is not None, bool(jvm_sessions.getDefaultSession().isDefined()))
    assert made == ((True, True) if engine == MLLIB else (False, False)), made


def assert_dask_profiler(manager: str, session: Any) -> None:
    """The Dask workers a launch starts run without Dask's statistical profiler (sweeper/launch/dask/base.py); a
    standalone cluster's workers are the user's, with their own configuration (Dask's default: on)."""
    if not isinstance(session, DaskSession):
        return

    def profiling(dask_worker: Any) -> bool:
        return "profile" in dask_worker.periodic_callbacks

    states = set(session.client.run(profiling).values())
    assert states == {manager == "standalone"}, states


def assert_driver_classes(session: SparkAppSession, classes: ClassArchive | None, archived: bool) -> None:
    """The driver maps Spark's class archive when there was one at the launch's start, else it writes one at exit."""
    driver = driver_process(session.spark)
    assert classes is not None and driver is not None
    maps = Path(f"/proc/{driver.pid}/maps").read_text()
    if archived:
        assert str(classes.path) in maps
    else:
        assert f"-XX:ArchiveClassesAtExit={classes.pending}" in " ".join(driver.cmdline())


@pytest.mark.parametrize(
    ("engine", "manager"),
    [pytest.param(*pair, marks=[pytest.mark.yarn] if pair[1] == "yarn" else []) for pair in PAIRS],
)
def test_a_launch_is_granted_its_plan_runs_fits_on_the_cluster_keeps_a_fits_error_and_leaves_nothing(
    engine: str,
    manager: str,
    digits: Data,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    on_type, fixture = ON_ENGINE_AND_MANAGER.get(
        (engine, manager), (MANAGERS[manager], CLUSTER_OF_MANAGER.get(manager))
    )
    on = on_type(request.getfixturevalue(fixture) if fixture else None, tmp_path)
    launch = on.launch(engine)
    tasks = replicas(digits)
    failing, error_type, message = raising(engine, tasks[0])
    classes = class_archive()
    archived = classes is not None and classes.path.exists()
    with starter(engine, manager)(launch, on.context()) as session:
        assert session.granted == Granted(launch.executors, launch.cores_per_executor, launch.executor_memory_mib)
        if isinstance(session, SparkAppSession):
            assert_driver_classes(session, classes, archived)
        results = session.run_batch(tasks, digits)
        assert len(results) == len(tasks) and all(0 < r.accuracy <= 1 for r in results)
        assert_ran_on_the_cluster(engine, session, results, on.distinct_pids)

        def again() -> set[int]:
            return {r.pid for r in session.run_batch(tasks, digits)}

        on.while_running(engine, session, {r.pid for r in results}, again)
        assert_a_task_a_slot(engine, session, digits)
        assert_workers_import_installed_pyspark(engine, session)
        assert_no_sql_session(engine, session)
        assert_dask_profiler(manager, session)
        with pytest.raises(error_type) as raised:
            session.run_batch([tasks[1], failing], digits)
        assert raised.type is error_type and re.fullmatch(message, str(raised.value)), repr(raised.value)
    assert_no_launch_processes()
    if engine == "ray":
        assert_no_ray_processes()
    on.after()

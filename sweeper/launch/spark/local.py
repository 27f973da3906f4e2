"""Engine ``spark``: matched Spark executors (real executor JVMs), joblibspark's ``spark`` backend.

Manager ``local``: ``local-cluster[N,C,M]`` runs a standalone master and N workers inside the
driver JVM, and each worker starts one real executor JVM of C cores and M MiB. (``local[N]``
would ignore every executor setting, so it is not a matched launch.) Everything binds to
127.0.0.1; Python workers run the sweeper's own interpreter.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from sweeper.errors import error_text
from sweeper.launch.base import Granted, LaunchContext, LaunchError, check_granted
from sweeper.launch.hosts.processes import kill_tree, new_children
from sweeper.launch.joblib_batch import run_on_backend
from sweeper.planning.plan import Launch
from sweeper.workload.data import Data
from sweeper.workload.data_parallel import SparkShards, fit_result
from sweeper.workload.environment import variables_set
from sweeper.workload.fit import FitResult, FitTask

EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
# Properties the sweeper sets and a grid's spark_conf extends instead of replacing (see with_spark_conf).
JAVA_OPTIONS = ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions", "spark.yarn.am.extraJavaOptions")
LIST_PROPERTIES = ("spark.yarn.dist.archives",)
PINNED_PREFIXES = ("spark.executorEnv.", "spark.yarn.appMasterEnv.")
QUIET_LOG4J = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
# the shell's logger at the root's level: no "Setting default log level" banner
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
"""


@dataclass(frozen=True)
class BroadcastData:
    """Training data as a Spark broadcast: each executor fetches it once, its Python workers read it locally."""

    broadcast: Any

    def resolve(self) -> Data:
        value: Data = self.broadcast.value
        return value


class SparkLaunch:
    """A started local-cluster Spark application."""

    def __init__(self, spark: Any, granted: Granted, n_jobs: int) -> None:
        self.spark = spark
        self.granted = granted
        self.n_jobs = n_jobs
        self.versions: dict[str, str] = {}
        self._shipped: tuple[Data, BroadcastData] | None = None
        self._shards: SparkShards | None = None

    def run_batch(self, tasks: list[FitTask], data: Data) -> list[FitResult]:
        """Fits through joblibspark's backend; the data is a broadcast, shipped once per executor."""
        if tasks and tasks[0].mode == "data-parallel":
            return [self._data_parallel(task, data) for task in tasks]
        if self._shipped is None or self._shipped[0] is not data:
            if self._shipped is not None:
                self._shipped[1].broadcast.unpersist()
            self._shipped = (data, BroadcastData(self.spark.sparkContext.broadcast(data)))
        # joblib runs a batch with n_jobs=1 in the calling process (the driver): ask for 2, Spark queues the second.
        return run_on_backend("spark", max(self.n_jobs, 2), tasks, self._shipped[1])

    def _data_parallel(self, task: FitTask, data: Data) -> FitResult:
        """One model across the executors; the shards are a cached RDD, shipped once per launch."""
        if self._shards is None or self._shards.data is not data or self._shards.rdd.getNumPartitions() != task.shards:
            if self._shards is not None:
                self._shards.close()
            self._shards = SparkShards.ship(self.spark, data, task.shards, task.seed)
        shards = self._shards
        return fit_result(task, data, lambda params: shards.train(params, task.epochs, task.local_epochs, task.seed))

    def abort(self) -> None:
        for process in executor_processes(self.spark):
            kill_tree(process.pid)
        self.spark.sparkContext.cancelAllJobs()


def driver_process(spark: Any) -> psutil.Process | None:
    """The driver JVM (py4j gateway) this Python process started."""
    proc = getattr(spark.sparkContext._gateway, "proc", None)
    return psutil.Process(proc.pid) if proc is not None else None


def executor_processes(spark: Any) -> list[psutil.Process]:
    """The executor JVMs of this application (children of the driver JVM in local-cluster mode)."""
    driver = driver_process(spark)
    if driver is None:
        return []
    found = []
    for process in driver.children(recursive=True):
        try:
            if EXECUTOR_CLASS in " ".join(process.cmdline()):
                found.append(process)
        except psutil.NoSuchProcess:
            continue
    return found


def _heap_mib(cmdline: list[str]) -> int:
    for argument in cmdline:
        match = re.fullmatch(r"-Xmx(\d+)([mMgG])", argument)
        if match:
            return int(match.group(1)) * (1024 if match.group(2) in "gG" else 1)
    return 0


def granted_executors(spark: Any, expected: int, timeout_s: float) -> Granted:
    """Wait until the executors registered, then read their cores (status store) and heap (-Xmx)."""
    summaries = wait_registered(spark, expected, timeout_s)
    if len(summaries) < expected:
        raise LaunchError(f"spark: {len(summaries)} of {expected} executors registered within {timeout_s:.0f} s")
    return uniform_shape(summaries, {_heap_mib(p.cmdline()) for p in executor_processes(spark)})


def wait_registered(spark: Any, expected: int, timeout_s: float) -> list[tuple[int, int]]:
    """(cores, memory) of the registered executors, once ``expected`` of them are, or when the time is up."""
    deadline = time.monotonic() + timeout_s
    while True:
        summaries = [(cores, memory) for cores, memory in _executor_summaries(spark) if memory > 0]
        if len(summaries) >= expected or time.monotonic() > deadline:
            return summaries
        time.sleep(0.1)


def uniform_shape(summaries: list[tuple[int, int]], heaps_mib: set[int]) -> Granted:
    """The executors' common shape; executors that differ fail the launch."""
    cores = {c for c, _ in summaries}
    if len(cores) > 1 or len(heaps_mib) > 1:
        raise LaunchError(f"spark executors differ in shape: cores {sorted(cores)}, heap MiB {sorted(heaps_mib)}")
    return Granted(
        executors=len(summaries),
        cores_per_executor=cores.pop(),
        executor_memory_mib=heaps_mib.pop() if heaps_mib else 0,
    )


def _executor_summaries(spark: Any) -> list[tuple[int, int]]:
    iterator = spark.sparkContext._jsc.sc().statusStore().executorList(True).iterator()
    summaries = []
    while iterator.hasNext():
        executor = iterator.next()
        if executor.id() != "driver":
            summaries.append((int(executor.totalCores()), int(executor.maxMemory())))
    return summaries


def check_java() -> None:
    """Fail the launch naming the problem when there is no Java for Spark (``JAVA_HOME`` first, then ``PATH``)."""
    home = os.environ.get("JAVA_HOME")
    if home:
        if not os.access(Path(home) / "bin" / "java", os.X_OK):
            raise LaunchError(f"spark needs Java 17+: JAVA_HOME={home} has no bin/java (fix JAVA_HOME or unset it)")
    elif shutil.which("java") is None:
        raise LaunchError("spark needs Java 17+: no java on PATH and JAVA_HOME is not set")


def session_conf(launch: Launch, context: LaunchContext, log4j: Path) -> dict[str, str]:
    """The Spark configuration of a local launch."""
    java_options = f"-Dlog4j2.configurationFile=file:{log4j}"
    memory_mib = launch.executor_memory_mib
    conf = {
        "spark.master": f"local-cluster[{launch.executors},{launch.cores_per_executor},{memory_mib}]",
        "spark.app.name": f"sweeper-launch-{launch.index}",
        "spark.executor.cores": str(launch.cores_per_executor),
        "spark.executor.memory": f"{memory_mib}m",
        "spark.executor.memoryOverhead": f"{launch.memory_overhead_mib}m",
        "spark.task.cpus": str(context.threads_per_fit),
        "spark.task.maxFailures": "1",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.extraJavaOptions": java_options,
        "spark.executor.extraJavaOptions": java_options,
        "spark.pyspark.python": sys.executable,
    }
    conf.update({f"spark.executorEnv.{name}": value for name, value in context.environment.items()})
    return conf


def with_spark_conf(conf: Mapping[str, str], spark_conf: Mapping[str, str]) -> dict[str, str]:
    """The sweeper's Spark configuration ``conf`` with the grid's ``spark_conf`` on top, for every manager.

    Where the sweeper sets a property a user may extend, the two are merged, so that no grid
    undoes what the sweeper relies on:

    - Java options (:data:`JAVA_OPTIONS`): the grid's, then the sweeper's (a JVM takes the last
      of a repeated ``-D``, so the sweeper's markers and log settings hold);
    - lists (:data:`LIST_PROPERTIES`): the sweeper's entries, then the grid's;
    - environments (:data:`PINNED_PREFIXES`): the sweeper's variables win (the fit environment,
      the same on every engine; the grid sets it with ``environment``), the grid's others are added.

    Any other property the grid sets replaces the sweeper's value.

    >>> with_spark_conf({"spark.executor.extraJavaOptions": "-Dmark=1", "spark.executorEnv.OMP_NUM_THREADS": "1"},
    ...                 {"spark.executor.extraJavaOptions": "-Dmine=2", "spark.executorEnv.OMP_NUM_THREADS": "8"})
    {'spark.executor.extraJavaOptions': '-Dmine=2 -Dmark=1', 'spark.executorEnv.OMP_NUM_THREADS': '1'}
    """
    merged = dict(conf)
    for key, value in spark_conf.items():
        ours = conf.get(key)
        if ours is None or not ours.strip():
            merged[key] = value
        elif key in JAVA_OPTIONS:
            merged[key] = f"{value} {ours}" if value.strip() else ours
        elif key in LIST_PROPERTIES:
            merged[key] = f"{ours},{value}" if value.strip() else ours
        elif not key.startswith(PINNED_PREFIXES):
            merged[key] = value
    return merged


def new_session(conf: dict[str, str], context: LaunchContext) -> Any:
    """A SparkSession with this configuration plus the grid's ``spark_conf``, its logs quiet."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for key, value in with_spark_conf(conf, context.spark_conf).items():
        builder = builder.config(key, value)
    spark = get_or_create(builder)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def get_or_create(builder: Any) -> Any:
    """``builder.getOrCreate()``; a failure becomes a :class:`LaunchError` with Java's message.

    A ``Py4JJavaError`` asks the driver JVM for its message when printed, and the JVM is gone
    once the launch is torn down, so the message is taken now.
    """
    try:
        return builder.getOrCreate()
    except Exception as error:
        raise LaunchError(f"spark: {java_message(error)}") from None


def java_message(error: BaseException) -> str:
    """The Java exception behind a py4j error (``java.net.BindException: ...``), else the error's own text."""
    java = getattr(error, "java_exception", None)
    if java is not None:
        with contextlib.suppress(Exception):  # the JVM may be gone
            return str(java.toString())
    return error_text(error)


def stop_spark() -> None:
    """Stop the active SparkContext and its driver JVM, and forget both, so the next launch starts clean."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    active = SparkContext._active_spark_context
    if active is not None:
        active.stop()
    gateway = SparkContext._gateway
    if gateway is not None:
        proc = getattr(gateway, "proc", None)
        with contextlib.suppress(Exception):  # the JVM may already be gone; we only want it gone
            gateway.shutdown()
        if proc is not None:
            try:
                proc.stdin.close()  # the gateway JVM exits when its stdin closes
                proc.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                kill_tree(proc.pid)
    SparkContext._gateway = None
    SparkContext._jvm = None
    SparkContext._active_spark_context = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None


@contextmanager
def start(launch: Launch, context: LaunchContext) -> Iterator[SparkLaunch]:
    """Start a matched local-cluster Spark application; nothing of it is left when the block ends."""

    from sweeper.launch.spark import joblib_backend

    check_java()
    planned = Granted(launch.executors, launch.cores_per_executor, launch.executor_memory_mib)
    scratch = context.run_dir / f"spark-{launch.index}"
    scratch.mkdir(parents=True, exist_ok=True)
    log4j = scratch / "log4j2.properties"
    log4j.write_text(QUIET_LOG4J)
    environment = {
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_WORKER_DIR": str(scratch / "work"),
        "SPARK_LOCAL_DIRS": str(scratch / "local"),
        "SPARK_CONF_DIR": str(scratch),  # holds log4j2.properties: quiet driver and executors
    }
    with variables_set(environment), new_children() as children:
        try:
            spark = new_session(session_conf(launch, context, log4j), context)
            granted = granted_executors(spark, launch.executors, context.start_timeout_s)
            check_granted(planned, granted, "spark")
            joblib_backend.register()
            yield SparkLaunch(spark, granted, n_jobs=launch.total_cores // context.threads_per_fit)
        finally:
            stop_spark()
            children.reap()

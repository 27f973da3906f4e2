"""A started Spark application on any manager: batches through joblibspark, its executors, its grant, its end."""

from __future__ import annotations

import contextlib
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import psutil

from sweeper.errors import error_text
from sweeper.launch.base import Granted, LaunchContext, LaunchError
from sweeper.launch.hosts.processes import kill_tree
from sweeper.launch.joblib_batch import run_on_backend
from sweeper.launch.spark.conf import with_spark_conf
from sweeper.launch.spark.shards import SparkShards
from sweeper.workload.data import Data
from sweeper.workload.fit import FitResult, fit_result
from sweeper.workload.tasks import FitTask, one_model

EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


@dataclass(frozen=True)
class BroadcastData:
    """Training data as a Spark broadcast: each executor fetches it once, its Python workers read it locally."""

    broadcast: Any

    def resolve(self) -> Data:
        value: Data = self.broadcast.value
        return value


class SparkAppSession:
    """A started Spark application (any manager): batches through joblibspark."""

    staging_s: float | None = 0.0

    def __init__(self, spark: Any, granted: Granted, n_jobs: int) -> None:
        self.spark = spark
        self.granted = granted
        self.n_jobs = n_jobs
        self._shipped: tuple[Data, BroadcastData] | None = None
        self._shards: SparkShards | None = None

    def run_batch(self, tasks: list[FitTask], data: Data) -> list[FitResult]:
        """Fits through joblibspark's backend; the data is a broadcast, shipped once per executor."""
        if one_model(tasks):
            return [self._data_parallel(task, data) for task in tasks]
        if self._shipped is None or self._shipped[0] is not data:
            if self._shipped is not None:
                self._shipped[1].broadcast.unpersist()
            self._shipped = (data, BroadcastData(self.spark.sparkContext.broadcast(data)))
        # joblib runs a batch with n_jobs=1 in the calling process (the driver): a one-slot launch asks for 2
        # (its alike fits are one dispatch anyway; a search's next fit waits in Spark's queue).
        return run_on_backend("spark", self.n_jobs, tasks, self._shipped[1], n_jobs=max(self.n_jobs, 2))

    def _data_parallel(self, task: FitTask, data: Data) -> FitResult:
        """One model across the executors; the shards are a cached RDD, shipped once per launch."""
        if self._shards is None or self._shards.data is not data or self._shards.rdd.getNumPartitions() != task.shards:
            if self._shards is not None:
                self._shards.close()
            self._shards = SparkShards.ship(self.spark, data, task.shards, task.seed)
        shards = self._shards
        return fit_result(task, data, lambda params: shards.train(params, task.epochs, task.local_epochs, task.seed))

    def jvm_peak_heap_gib(self) -> float | None:
        return _peak_heap_gib(self.spark)

    def abort(self, restart: bool = True) -> None:
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


def heap_mib(cmdline: list[str]) -> int:
    """A JVM's ``-Xmx`` in MiB (0 without one).

    >>> heap_mib(["java", "-Xmx2g", "-cp", "x"]), heap_mib(["java", "-Xmx1536m"]), heap_mib(["java"])
    (2048, 1536, 0)
    """
    for argument in cmdline:
        match = re.fullmatch(r"-Xmx(\d+)([mMgG])", argument)
        if match:
            return int(match.group(1)) * (1024 if match.group(2) in "gG" else 1)
    return 0


def granted_executors(
    spark: Any, expected: int, timeout_s: float, gave_up: Callable[[], bool] | None = None
) -> Granted:
    """Wait until the executors registered (:func:`wait_registered`), then read their cores (status store) and
    heap (-Xmx)."""
    summaries = wait_registered(spark, expected, timeout_s, gave_up)
    if len(summaries) < expected:
        raise LaunchError(f"spark: {len(summaries)} of {expected} executors registered within {timeout_s:.0f} s")
    return uniform_shape(summaries, {heap_mib(p.cmdline()) for p in executor_processes(spark)})


class ApplicationStopped(LaunchError):
    """The application stopped while its executors were starting: its cluster manager ended it."""

    def __init__(self, registered: int, expected: int) -> None:
        super().__init__(
            f"spark: the application stopped with {registered} of {expected} executors registered "
            "(its cluster manager ended it: the launch's log says why)"
        )
        self.registered = registered


def wait_registered(
    spark: Any, expected: int, timeout_s: float, gave_up: Callable[[], bool] | None = None
) -> list[tuple[int, int]]:
    """(cores, memory) of the registered executors, once ``expected`` of them are, or when the time is up.

    Raises :class:`ApplicationStopped` as soon as the application stopped (YARN ends one whose executors keep failing
    to start: waiting out the start limit would only hide why), or ``gave_up`` says its manager gave up on it."""
    deadline = time.monotonic() + timeout_s
    summaries: list[tuple[int, int]] = []
    while True:
        if spark.sparkContext._jsc.sc().isStopped() or (gave_up is not None and gave_up()):
            raise ApplicationStopped(len(summaries), expected)
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


def _peak_heap_gib(spark: Any) -> float | None:
    """The largest peak ``JVMHeapMemory`` of the application's executors, from Spark's executor metrics.

    The metrics reach the driver with the executors' heartbeats (every ``spark.executor.heartbeatInterval``),
    so a launch younger than one heartbeat has none yet: None. Reading them never fails a measurement.
    """
    peaks = []
    try:
        iterator = spark.sparkContext._jsc.sc().statusStore().executorList(True).iterator()
        while iterator.hasNext():
            executor = iterator.next()
            metrics = executor.peakMemoryMetrics()
            if executor.id() != "driver" and metrics.isDefined():
                peaks.append(int(metrics.get().getMetricValue("JVMHeapMemory")))
    except Exception:  # a figure, not a result: never fail the row for it
        return None
    return max(peaks) / 1024**3 if peaks and max(peaks) > 0 else None


def active_executors(spark: Any) -> Iterator[Any]:
    """The active executors in Spark's status store (``ExecutorSummary``), the driver left out."""
    iterator = spark.sparkContext._jsc.sc().statusStore().executorList(True).iterator()
    while iterator.hasNext():
        executor = iterator.next()
        if executor.id() != "driver":
            yield executor


def _executor_summaries(spark: Any) -> list[tuple[int, int]]:
    return [(int(executor.totalCores()), int(executor.maxMemory())) for executor in active_executors(spark)]


class ContextSession:
    """What a launch uses of a SparkSession: its ``sparkContext`` and ``conf``, without Spark SQL's session.

    Making the SQL session took 3.5-3.7 CPU-s of the driver JVM and ~3 s of every start (a local 2-executor context,
    its executors up and idle); only spark-mllib, which trains on DataFrames, makes one (:meth:`sql`).
    """

    def __init__(self, context: Any) -> None:
        self.sparkContext = context
        self.conf = context.getConf()  # ``get(key, default)``, as a session's runtime configuration answers
        self._sql: Any = None

    def sql(self) -> Any:
        """Spark SQL's session on this context (made on the first call)."""
        if self._sql is None:
            from pyspark.sql import SparkSession

            self._sql = SparkSession.builder.getOrCreate()
        return self._sql


def new_session(conf: dict[str, str], context: LaunchContext) -> ContextSession:
    """The application with this configuration plus the grid's ``spark_conf``, its logs quiet."""
    from pyspark import SparkConf

    return context_session(SparkConf().setAll(list(with_spark_conf(conf, context.spark_conf).items())))


def context_session(conf: Any) -> ContextSession:
    """``SparkContext.getOrCreate(conf)``, its logs quiet; a failure becomes a :class:`LaunchError` with Java's message.

    A ``Py4JJavaError`` asks the driver JVM for its message when printed, and the JVM is gone
    once the launch is torn down, so the message is taken now.
    """
    from pyspark import SparkContext

    try:
        context = SparkContext.getOrCreate(conf)
    except Exception as error:
        raise LaunchError(f"spark: {_java_message(error)}") from None
    context.setLogLevel("ERROR")
    return ContextSession(context)


def start_driver_jvm(conf: dict[str, str], context: LaunchContext) -> None:
    """Start the driver's JVM (Spark's gateway) with the session's configuration, before the session is made.

    :func:`new_session` then makes its context in that JVM: a launch starts the JVM while it does other work (YARN:
    staging). A failure becomes a :class:`LaunchError` with Java's message.
    """
    from pyspark import SparkConf, SparkContext

    spark_conf = SparkConf(loadDefaults=False).setAll(list(with_spark_conf(conf, context.spark_conf).items()))
    try:
        SparkContext._ensure_initialized(conf=spark_conf)
    except Exception as error:
        raise LaunchError(f"spark: {_java_message(error)}") from None


def _java_message(error: BaseException) -> str:
    """The Java exception behind a py4j error (``java.net.BindException: ...``), else the error's own text."""
    java = getattr(error, "java_exception", None)
    if java is not None:
        with contextlib.suppress(Exception):  # the JVM may be gone
            return str(java.toString())
    return error_text(error)


def stop_spark(exit_wait_s: float) -> int | None:
    """Stop the active SparkContext and its driver JVM, and forget both, so the next launch starts clean.

    The JVM is given ``exit_wait_s`` to exit before it is killed; its exit code, None when there was none to stop."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    active = SparkContext._active_spark_context
    if active is not None:
        active.stop()
    gateway = SparkContext._gateway
    exit_code = None
    if gateway is not None:
        proc = getattr(gateway, "proc", None)
        with contextlib.suppress(Exception):  # the JVM may already be gone; we only want it gone
            gateway.shutdown()
        if proc is not None:
            try:
                proc.stdin.close()  # the gateway JVM exits when its stdin closes
                exit_code = proc.wait(exit_wait_s)
            except (OSError, subprocess.TimeoutExpired):
                kill_tree(proc.pid)
    SparkContext._gateway = None
    SparkContext._jvm = None
    SparkContext._active_spark_context = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None
    return exit_code

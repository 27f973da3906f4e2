"""Spark's configuration for every manager: the sweeper's properties, the grid's on top, quiet logs, local Java."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from sweeper.launch.base import LaunchContext, LaunchError
from sweeper.launch.spark import python_daemon
from sweeper.names import ONE_MODEL_ENGINES
from sweeper.planning.plan import Launch

# Properties the sweeper sets and a grid's spark_conf extends instead of replacing (see with_spark_conf).
JAVA_OPTIONS = ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions", "spark.yarn.am.extraJavaOptions")
# a grid's files join the sweeper's (its log settings, the executors' class archive): replacing them would lose both
LIST_PROPERTIES = ("spark.yarn.dist.archives", "spark.yarn.dist.files")
PINNED_PREFIXES = ("spark.executorEnv.", "spark.yarn.appMasterEnv.")
# The launch's JVMs (the driver's, YARN's ApplicationMaster's, the executors' of the spark engine) only move tasks
# and results between the driver and the Python workers that run the fits: without the optimizing compiler, which
# competes with the fits for the cores while they start, a 2-executor local launch started in 15-33 s instead of
# 31-65 s (3 starts each, alternated, on 2 busy cores; `make bench` records the quiet start). spark-mllib's
# executors train in the JVM and keep it. A default: a grid's own -XX option wins.
QUICK_START_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"
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


def require_local_java() -> None:
    """Fail the launch naming the problem when there is no Java for Spark (``JAVA_HOME`` first, then ``PATH``)."""
    home = os.environ.get("JAVA_HOME")
    if home:
        if not os.access(Path(home) / "bin" / "java", os.X_OK):
            raise LaunchError(f"spark needs Java 17+: JAVA_HOME={home} has no bin/java (fix JAVA_HOME or unset it)")
    elif shutil.which("java") is None:
        raise LaunchError("spark needs Java 17+: no java on PATH and JAVA_HOME is not set")


def application_conf(
    launch: Launch, context: LaunchContext, *, master: str, driver_host: str, python: str
) -> dict[str, str]:
    """What a Spark application of the sweeper asks for on every manager.

    The planned executors (cores, heap, overhead, at most executors x cores cores), one task per
    fit's threads, no task retries (a failed fit is a recorded failure), no UI, the executors'
    Python and its daemon (:mod:`sweeper.launch.spark.python_daemon`), heartbeats often enough to report executor
    metrics, and the fit environment in every executor.
    """
    conf = {
        "spark.master": master,
        "spark.app.name": f"sweeper-launch-{launch.index}",
        "spark.executor.cores": str(launch.cores_per_executor),
        "spark.executor.memory": f"{launch.executor_memory_mib}m",
        "spark.executor.memoryOverhead": f"{launch.memory_overhead_mib}m",
        "spark.cores.max": str(launch.total_cores),
        "spark.task.cpus": str(context.threads_per_fit),
        "spark.task.maxFailures": "1",
        "spark.driver.host": driver_host,
        "spark.driver.bindAddress": driver_host,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.pyspark.python": python,
        "spark.pyspark.driver.python": sys.executable,
        # the workers import the installed pyspark (compiled), not Spark's zips of its sources
        "spark.python.daemon.module": python_daemon.__name__,
        # executor metrics (the peak heap of every row) reach the driver with heartbeats: every 2 s, not 10 s
        "spark.executor.heartbeatInterval": "2s",
    }
    conf.update({f"spark.executorEnv.{name}": value for name, value in context.environment.items()})
    return conf


def local_conf(launch: Launch, context: LaunchContext, log4j: Path) -> dict[str, str]:
    """A launch on this machine (``local-cluster[N,C,M]``; YARN moves it onto its containers): quiet JVMs."""
    memory_mib = launch.executor_memory_mib
    master = f"local-cluster[{launch.executors},{launch.cores_per_executor},{memory_mib}]"
    conf = application_conf(launch, context, master=master, driver_host="127.0.0.1", python=sys.executable)
    quiet = f"-Dlog4j2.configurationFile=file:{log4j}"
    conf.update(
        {
            "spark.driver.extraJavaOptions": f"{QUICK_START_JAVA_OPTIONS} {quiet}",
            "spark.executor.extraJavaOptions": executor_java_options(launch.engine, quiet),
        }
    )
    return conf


def executor_java_options(engine: str, options: str) -> str:
    """An executor's Java ``options`` after the quick-start default, except where it trains in the JVM (spark-mllib).

    >>> executor_java_options("spark", "-Dx=1"), executor_java_options("spark-mllib", "-Dx=1")
    ('-XX:TieredStopAtLevel=1 -Dx=1', '-Dx=1')
    """
    return options if engine in ONE_MODEL_ENGINES else f"{QUICK_START_JAVA_OPTIONS} {options}".strip()


def with_spark_conf(conf: Mapping[str, str], spark_conf: Mapping[str, str]) -> dict[str, str]:
    """The sweeper's Spark configuration ``conf`` with the grid's ``spark_conf`` on top, for every manager.

    Where the sweeper sets a property a user may extend, the two are merged, so that no grid
    undoes what the sweeper relies on:

    - Java options (:data:`JAVA_OPTIONS`): the sweeper's leading ``-XX:`` defaults, the grid's, then the
      sweeper's others (a JVM takes the last of a repeated option: the grid's ``-XX:`` options win, the
      sweeper's markers and log settings hold);
    - lists (:data:`LIST_PROPERTIES`): the sweeper's entries, then the grid's;
    - environments (:data:`PINNED_PREFIXES`): the sweeper's variables win (the fit environment,
      the same on every engine; the grid sets it with ``environment``), the grid's others are added.

    Any other property the grid sets replaces the sweeper's value.

    >>> ours = {"spark.executor.extraJavaOptions": "-XX:X=1 -Dmark=1", "spark.executorEnv.OMP_NUM_THREADS": "1"}
    >>> with_spark_conf(ours, {"spark.executor.extraJavaOptions": "-XX:X=2", "spark.executorEnv.OMP_NUM_THREADS": "8"})
    {'spark.executor.extraJavaOptions': '-XX:X=1 -XX:X=2 -Dmark=1', 'spark.executorEnv.OMP_NUM_THREADS': '1'}
    """
    merged = dict(conf)
    for key, value in spark_conf.items():
        ours = conf.get(key)
        if ours is None or not ours.strip():
            merged[key] = value
        elif key in JAVA_OPTIONS:
            merged[key] = _java_options(value, ours)
        elif key in LIST_PROPERTIES:
            merged[key] = f"{ours},{value}" if value.strip() else ours
        elif not key.startswith(PINNED_PREFIXES):
            merged[key] = value
    return merged


def _java_options(grid: str, ours: str) -> str:
    """The sweeper's leading ``-XX:`` options (defaults), the grid's options, the sweeper's others (held)."""
    if not grid.strip():
        return ours
    tokens = ours.split(" ")
    defaults = 0
    while defaults < len(tokens) and tokens[defaults].startswith("-XX:"):
        defaults += 1
    return " ".join([*tokens[:defaults], grid, *tokens[defaults:]])

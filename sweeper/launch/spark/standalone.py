"""Engine ``spark`` on ``manager: standalone``: an application on a Spark master that is already running.

The application asks for ``spark.executor.cores``, ``spark.executor.memory`` and ``spark.cores.max``
= executors x cores; the master then starts the planned executors or fewer. Executors and cores
are checked from the registered executors (a shortfall fails the launch); a standalone master
starts an executor with exactly ``spark.executor.memory`` or not at all, so the memory is the asked one.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlparse

from sweeper.launch.base import Granted, LaunchContext, LaunchError, check_granted
from sweeper.launch.dask.standalone import existing_address
from sweeper.launch.hosts.ssh import address_towards
from sweeper.launch.spark.local import QUIET_LOG4J, SparkLaunch, new_session, stop_spark, wait_registered
from sweeper.planning.plan import Launch
from sweeper.workload.environment import variables_set


def wait_for_executors(spark: Any, launch: Launch, timeout_s: float) -> Granted:
    """The executors the master granted, once the planned number registered (or the time is up)."""
    summaries = wait_registered(spark, launch.executors, timeout_s)
    cores = {c for c, _ in summaries}
    if len(summaries) < launch.executors or len(cores) > 1:
        raise LaunchError(
            f"spark master granted {len(summaries)} executors with cores {sorted(cores)} within {timeout_s:.0f} s; "
            f"planned {launch.executors} x {launch.cores_per_executor} cores x {launch.executor_memory_mib} MiB"
        )
    return Granted(len(summaries), cores.pop(), launch.executor_memory_mib)


@contextmanager
def start(launch: Launch, context: LaunchContext) -> Iterator[SparkLaunch]:
    """Run an application on the existing master; it is stopped when the block ends, the cluster stays."""

    from sweeper.launch.spark import joblib_backend

    master = existing_address(context, "spark_master")
    host = urlparse(master).hostname or "127.0.0.1"
    scratch = context.run_dir / f"spark-{launch.index}"
    scratch.mkdir(parents=True, exist_ok=True)
    (scratch / "log4j2.properties").write_text(QUIET_LOG4J)
    loopback = host in ("127.0.0.1", "localhost")
    conf = {
        "spark.master": master,
        "spark.app.name": f"sweeper-launch-{launch.index}",
        "spark.executor.cores": str(launch.cores_per_executor),
        "spark.executor.memory": f"{launch.executor_memory_mib}m",
        "spark.cores.max": str(launch.total_cores),
        "spark.task.cpus": str(context.threads_per_fit),
        "spark.task.maxFailures": "1",
        "spark.driver.host": "127.0.0.1" if loopback else address_towards(host),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        **{f"spark.executorEnv.{name}": value for name, value in context.environment.items()},
    }
    environment = {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    environment["SPARK_CONF_DIR"] = str(scratch)
    with variables_set(environment):
        try:
            spark = new_session(conf, context)
            granted = wait_for_executors(spark, launch, context.start_timeout_s)
            planned = Granted(launch.executors, launch.cores_per_executor, launch.executor_memory_mib)
            check_granted(planned, granted, "spark")
            joblib_backend.register()
            yield SparkLaunch(spark, granted, n_jobs=launch.total_cores // context.threads_per_fit)
        finally:
            stop_spark()

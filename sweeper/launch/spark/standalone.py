"""Engine ``spark`` on ``manager: standalone``: an application on a Spark master that is already running.

The application asks for ``spark.executor.cores``, ``spark.executor.memory`` and ``spark.cores.max``
= executors x cores; the master then starts the planned executors or fewer. Executors and cores
are checked from the registered executors (a shortfall fails the launch); a standalone master
starts an executor with exactly ``spark.executor.memory`` or not at all, so the memory is the asked one.
"""

from __future__ import annotations

import sys
from typing import Any
from urllib.parse import urlparse

from sweeper.launch.base import Granted, LaunchError
from sweeper.launch.hosts.ssh import address_towards
from sweeper.launch.options import StandaloneOptions
from sweeper.launch.spark.base import SparkBackend
from sweeper.launch.spark.conf import QUICK_START_JAVA_OPTIONS, application_conf, executor_java_options
from sweeper.launch.spark.session import wait_registered
from sweeper.planning.plan import Launch


def _wait_for_executors(spark: Any, launch: Launch, timeout_s: float) -> Granted:
    """The executors the master granted, once the planned number registered (or the time is up)."""
    summaries = wait_registered(spark, launch.executors, timeout_s)
    cores = {c for c, _ in summaries}
    if len(summaries) < launch.executors or len(cores) > 1:
        raise LaunchError(
            f"spark master granted {len(summaries)} executors with cores {sorted(cores)} within {timeout_s:.0f} s; "
            f"planned {launch.executors} x {launch.cores_per_executor} cores x {launch.executor_memory_mib} MiB"
        )
    return Granted(len(summaries), cores.pop(), launch.executor_memory_mib)


class StandaloneSpark(SparkBackend):
    """An application on the grid's master; the master and its workers stay."""

    def check(self) -> None:
        super().check()
        options = self.context.options
        if not isinstance(options, StandaloneOptions) or not options.spark_master:
            raise LaunchError("manager standalone needs cluster.spark_master in the grid")
        self.master = options.spark_master

    def variables(self) -> dict[str, str]:
        return {
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "SPARK_CONF_DIR": str(self.scratch),
        }

    def conf(self) -> dict[str, str]:
        host = urlparse(self.master).hostname or "127.0.0.1"
        driver = "127.0.0.1" if host in ("127.0.0.1", "localhost") else address_towards(host)
        launch, python = self.launch, sys.executable
        conf = application_conf(launch, self.context, master=self.master, driver_host=driver, python=python)
        conf["spark.driver.extraJavaOptions"] = QUICK_START_JAVA_OPTIONS
        executors = executor_java_options(launch.engine, "")
        if executors:
            conf["spark.executor.extraJavaOptions"] = executors
        return conf

    def granted(self) -> Granted:
        return _wait_for_executors(self.spark, self.launch, self.context.start_timeout_s)

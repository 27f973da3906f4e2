"""What every manager's Spark launch does alike: quiet logs, the driver's variables, the session, its end."""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path
from typing import Any

from sweeper.launch.base import Granted
from sweeper.launch.lifecycle import ManagerBackend, Teardown
from sweeper.launch.spark.conf import QUIET_LOG4J, require_local_java
from sweeper.launch.spark.session import SparkAppSession, new_session, stop_spark
from sweeper.workload.environment import variables_set


class SparkBackend(ManagerBackend):
    """A Spark application whose driver runs here; a manager says where its executors come from."""

    engine = "spark"
    spark: Any
    driver_exit_code: int | None = None

    def driver_exit_s(self) -> float:
        """How long the driver JVM is given to exit at the launch's end before it is killed."""
        return 10.0

    @property
    def log4j(self) -> Path:
        """Quiet log settings for the driver and the executors (``SPARK_CONF_DIR`` is the scratch directory)."""
        return self.scratch / "log4j2.properties"

    def check(self) -> None:
        require_local_java()  # the driver JVM runs here on every manager

    @abstractmethod
    def variables(self) -> dict[str, str]:
        """The environment the driver JVM starts with (``SPARK_CONF_DIR``, ``PYSPARK_PYTHON``, ...)."""

    @abstractmethod
    def conf(self) -> dict[str, str]:
        """The sweeper's Spark configuration of the launch (the grid's ``spark_conf`` goes on top)."""

    def start_cluster(self, teardown: Teardown) -> None:
        """Start what the application runs on, before the driver (ssh: the master and workers)."""

    def connect(self) -> Any:
        """The application's SparkSession."""
        return new_session(self.conf(), self.context)

    def start(self, teardown: Teardown) -> None:
        self.log4j.write_text(QUIET_LOG4J)
        self.start_cluster(teardown)
        teardown.enter(variables_set(self.variables()))
        teardown.add(self._stop)  # before the variables are restored, even when the session did not start
        self.spark = self.connect()

    def _stop(self) -> None:
        self.driver_exit_code = stop_spark(self.driver_exit_s())

    def session(self, granted: Granted, n_jobs: int) -> SparkAppSession:
        from sweeper.launch.spark import joblib_backend

        joblib_backend.register()
        return SparkAppSession(self.spark, granted, n_jobs)

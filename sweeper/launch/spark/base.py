"""What every manager's Spark launch does alike: quiet logs, the driver's variables, the session, its end."""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path
from typing import Any, ClassVar

from sweeper.launch.base import Granted
from sweeper.launch.lifecycle import ManagerBackend, Teardown
from sweeper.launch.spark.class_archive import ClassArchive, class_archive
from sweeper.launch.spark.conf import QUIET_LOG4J, require_local_java
from sweeper.launch.spark.session import SparkAppSession, new_session, stop_spark
from sweeper.workload.environment import variables_set

# Writing the class archive at the driver's exit took 9 s on 2 busy cores: the first launch waits for it.
ARCHIVING_EXIT_S = 120.0
DRIVER_EXIT_S = 10.0


class SparkBackend(ManagerBackend):
    """A Spark application whose driver runs here; a manager says where its executors come from.

    The driver's JVM maps Spark's classes from an archive (:mod:`sweeper.launch.spark.class_archive`), or writes it
    at its exit when there is none yet; so do the executors' JVMs where they run here too (``local``).
    """

    engine = "spark"
    executors_here: ClassVar[bool] = False
    spark: Any
    driver_exit_code: int | None = None
    classes: ClassArchive | None = None
    writing_classes = False

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
        """The application (its SparkContext, without Spark SQL's session)."""
        return new_session(self.driver_conf(), self.context)

    def driver_conf(self) -> dict[str, str]:
        """:meth:`conf`, the executors mapping the class archive where they run here."""
        conf = self.conf()
        if self.classes is not None and self.executors_here:
            _, executors = self.classes.java_options(self.writing_classes)
            key = "spark.executor.extraJavaOptions"
            conf[key] = f"{conf.get(key, '')} {executors}".strip()
        return conf

    def start(self, teardown: Teardown) -> None:
        self.log4j.write_text(QUIET_LOG4J)
        self.classes = archive = class_archive()
        self.start_cluster(teardown)
        variables = self.variables()
        if archive is not None:
            self.writing_classes = not archive.path.exists()
            teardown.add(lambda: archive.keep(self.driver_exit_code))  # after the driver exited
            variables["SPARK_CONF_DIR"] = str(archive.conf_dir)  # empty, as CDS needs: no spark-defaults.conf
            # the driver JVM's own options (ssh starts it before the session's configuration): the log settings
            # SPARK_CONF_DIR held, then the archive's
            quiet = variables.get("SPARK_SUBMIT_OPTS") or f"-Dlog4j2.configurationFile=file:{self.log4j}"
            variables["SPARK_SUBMIT_OPTS"] = f"{quiet} {archive.java_options(self.writing_classes)[0]}"
        teardown.enter(variables_set(variables))
        teardown.add(self._stop)  # before the variables are restored, even when the session did not start
        self.spark = self.connect()

    def _stop(self) -> None:
        self.driver_exit_code = stop_spark(ARCHIVING_EXIT_S if self.writing_classes else DRIVER_EXIT_S)

    def session(self, granted: Granted, n_jobs: int) -> SparkAppSession:
        from sweeper.launch.spark import joblib_backend

        joblib_backend.register()
        return SparkAppSession(self.spark, granted, n_jobs)

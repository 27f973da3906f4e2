"""Engine ``spark``: matched Spark executors (real executor JVMs), joblibspark's ``spark`` backend.

Manager ``local``: ``local-cluster[N,C,M]`` runs a standalone master and N workers inside the
driver JVM, and each worker starts one real executor JVM of C cores and M MiB. (``local[N]``
would ignore every executor setting, so it is not a matched launch.) Everything binds to
127.0.0.1; Python workers run the sweeper's own interpreter. The JVMs map Spark's classes from an
archive the first launch writes (:mod:`sweeper.launch.spark.class_archive`).
"""

from __future__ import annotations

import sys

from sweeper.launch.base import Granted
from sweeper.launch.lifecycle import Teardown
from sweeper.launch.spark.base import SparkBackend
from sweeper.launch.spark.class_archive import ClassArchive, class_archive
from sweeper.launch.spark.conf import local_conf
from sweeper.launch.spark.session import granted_executors

# Writing the class archive at the driver's exit took 9 s on 2 busy cores: the first launch waits for it.
ARCHIVING_EXIT_S = 120.0


class LocalSpark(SparkBackend):
    """``local-cluster[N,C,M]`` on 127.0.0.1: the executor JVMs are children of the driver JVM."""

    classes: ClassArchive | None = None
    writing_classes = False

    def start(self, teardown: Teardown) -> None:
        self.classes = archive = class_archive()
        if archive is not None:
            self.writing_classes = not archive.path.exists()
            teardown.add(lambda: archive.keep(self.driver_exit_code))  # after the driver exited
        super().start(teardown)

    def driver_exit_s(self) -> float:
        return ARCHIVING_EXIT_S if self.writing_classes else super().driver_exit_s()

    def variables(self) -> dict[str, str]:
        conf_dir = self.classes.conf_dir if self.classes is not None else self.scratch
        return {
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "SPARK_WORKER_DIR": str(self.scratch / "work"),
            "SPARK_LOCAL_DIRS": str(self.scratch / "local"),
            "SPARK_CONF_DIR": str(conf_dir),  # no spark-defaults.conf: the launch's conf alone
        }

    def conf(self) -> dict[str, str]:
        conf = local_conf(self.launch, self.context, self.log4j)
        if self.classes is not None:
            driver, executors = self.classes.java_options(self.writing_classes)
            for key, options in (
                ("spark.driver.extraJavaOptions", driver),
                ("spark.executor.extraJavaOptions", executors),
            ):
                conf[key] = f"{conf[key]} {options}".strip()
        return conf

    def granted(self) -> Granted:
        return granted_executors(self.spark, self.launch.executors, self.context.start_timeout_s)

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
from sweeper.launch.spark.base import SparkBackend
from sweeper.launch.spark.conf import local_conf
from sweeper.launch.spark.session import granted_executors


class LocalSpark(SparkBackend):
    """``local-cluster[N,C,M]`` on 127.0.0.1: the executor JVMs are children of the driver JVM."""

    executors_here = True

    def variables(self) -> dict[str, str]:
        return {
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "SPARK_WORKER_DIR": str(self.scratch / "work"),
            "SPARK_LOCAL_DIRS": str(self.scratch / "local"),
            "SPARK_CONF_DIR": str(self.scratch),
        }

    def conf(self) -> dict[str, str]:
        return local_conf(self.launch, self.context, self.log4j)

    def granted(self) -> Granted:
        return granted_executors(self.spark, self.launch.executors, self.context.start_timeout_s)

"""Engine ``spark``: matched Spark executors (real executor JVMs), joblibspark's ``spark`` backend.

Manager ``local``: ``local-cluster[N,C,M]`` runs a standalone master and N workers inside the
driver JVM, and each worker starts one real executor JVM of C cores and M MiB. (``local[N]``
would ignore every executor setting, so it is not a matched launch.) Everything binds to
127.0.0.1; Python workers run the sweeper's own interpreter. The JVMs map Spark's classes from an
archive the first launch writes (:mod:`sweeper.launch.spark.class_archive`). Executors that keep failing to start
fail the launch with their own error, and the executors' directories go with the launch
(:mod:`sweeper.launch.spark.executor_work`).
"""

from __future__ import annotations

import sys

from sweeper.launch.base import Granted, LaunchError
from sweeper.launch.lifecycle import Teardown
from sweeper.launch.spark.base import SparkBackend
from sweeper.launch.spark.conf import local_conf
from sweeper.launch.spark.executor_work import ExecutorStarts, failing_message
from sweeper.launch.spark.session import ApplicationStopped, granted_executors


class LocalSpark(SparkBackend):
    """``local-cluster[N,C,M]`` on 127.0.0.1: the executor JVMs are children of the driver JVM."""

    executors_here = True
    starts: ExecutorStarts | None = None

    def start(self, teardown: Teardown) -> None:
        teardown.add(self._remove_executor_directories)  # after the driver and its executors stopped
        super().start(teardown)
        self.starts = ExecutorStarts.of(self.spark)
        self.starts.remove_left_over()

    def _remove_executor_directories(self) -> None:
        if self.starts is not None:
            self.starts.remove()

    def variables(self) -> dict[str, str]:
        return {
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "SPARK_LOCAL_DIRS": str(self.scratch / "local"),
            "SPARK_CONF_DIR": str(self.scratch),
        }

    def conf(self) -> dict[str, str]:
        return local_conf(self.launch, self.context, self.log4j)

    def granted(self) -> Granted:
        starts, planned = self.starts, self.launch.executors
        assert starts is not None  # made by start()
        try:
            return granted_executors(self.spark, planned, self.context.start_timeout_s, starts.gave_up(planned))
        except ApplicationStopped as stopped:
            started, error = len(starts.started()), starts.last_error()
            raise LaunchError(failing_message(started, stopped.registered, planned, error)) from None

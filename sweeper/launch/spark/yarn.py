"""Engine ``spark``, manager ``yarn``: matched executors as YARN containers, client mode.

The cluster is the one ``cluster.hadoop_conf_dir`` (else ``HADOOP_CONF_DIR`` or ``YARN_CONF_DIR``)
describes. The driver runs here;
the ApplicationMaster and the executors run in YARN containers of ``executor memory + overhead``
MiB and ``cores`` vcores. Their Python workers run either this interpreter (every NodeManager must
have the same virtualenv at the same path, true of the test MiniYARNCluster) or, with
``cluster.python_archive``, the packed environment YARN localizes and unpacks into each container
as ``./environment`` (``spark.yarn.dist.archives``, what ``spark-submit --archives`` sets on YARN).
The driver always runs here, in this interpreter (client mode).

Spark's own jars: taken in place from this machine's pyspark (``spark.yarn.jars`` with ``local:``,
nothing uploaded) when the nodes have them at that path: without an archive (the same venv on every
node) or on a one-machine cluster (``fs.defaultFS`` is ``file:``). With an archive on a cluster
with a shared file system, ``spark.yarn.jars`` is left unset and Spark uploads its jars for each
application, as ``spark-submit`` does (the archive leaves pyspark's jars out).
"""

from __future__ import annotations

import sys
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import psutil

from sweeper.errors import error_text
from sweeper.launch.base import Granted, LaunchContext, LaunchError, Session
from sweeper.launch.hosts.processes import kill_tree
from sweeper.launch.hosts.yarn import (
    ARCHIVE_LINK,
    container_python,
    default_fs,
    python_archive,
    yarn_conf_dir,
    yarn_options,
)
from sweeper.launch.lifecycle import Teardown, launched
from sweeper.launch.spark.base import SparkBackend
from sweeper.launch.spark.conf import local_conf
from sweeper.launch.spark.session import SparkAppSession, heap_mib, uniform_shape, wait_registered
from sweeper.planning.plan import Launch

AM_MEMORY_MIB = 512
YARN_EXECUTOR_CLASS = "org.apache.spark.executor.YarnCoarseGrainedExecutorBackend"


def yarn_executor_processes(app_id: str) -> list[psutil.Process]:
    """This application's executor JVMs running on this machine (all of them on a MiniYARNCluster)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            cmdline = process.info["cmdline"] or []
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if YARN_EXECUTOR_CLASS in cmdline and app_id in cmdline:
            found.append(process)
    return found


def granted_yarn_executors(spark: Any, expected: int, timeout_s: float) -> Granted:
    """Wait for the executors, then read cores (status store) and heap (-Xmx of their JVMs)."""
    app_id = spark.sparkContext.applicationId
    summaries = wait_registered(spark, expected, timeout_s)
    if len(summaries) < expected:
        raise LaunchError(
            f"spark on yarn: {len(summaries)} of {expected} executors registered within {timeout_s:.0f} s "
            f"(application {app_id}: is the cluster big enough for the executors and the AM?)"
        )
    heaps = {heap_mib(p.cmdline()) for p in yarn_executor_processes(app_id)}
    if not heaps:
        raise LaunchError(f"spark on yarn: no executor JVM of {app_id} on this machine to read its heap from")
    return uniform_shape(summaries, heaps)


class SparkYarnSession(SparkAppSession):
    """A started Spark application on YARN."""

    def __init__(self, spark: Any, granted: Granted, n_jobs: int) -> None:
        super().__init__(spark, granted, n_jobs)
        self.app_id: str = spark.sparkContext.applicationId

    def abort(self) -> None:
        self.spark.sparkContext.cancelAllJobs()
        for process in yarn_executor_processes(self.app_id):
            kill_tree(process.pid)


def wait_executors_gone(app_id: str, timeout_s: float = 30.0) -> None:
    """After the application stopped, YARN kills its containers: wait until they are gone here."""
    deadline = time.monotonic() + timeout_s
    while yarn_executor_processes(app_id) and time.monotonic() < deadline:
        time.sleep(0.2)


class YarnSpark(SparkBackend):
    """Executors in YARN containers, client mode: the driver runs here."""

    app_id: str | None = None

    def check(self) -> None:
        super().check()
        self.options = yarn_options(self.context)
        self.conf_dir = yarn_conf_dir(self.options)
        self.archive = python_archive(self.options)

    def variables(self) -> dict[str, str]:
        return {
            "HADOOP_CONF_DIR": str(self.conf_dir),
            "YARN_CONF_DIR": str(self.conf_dir),
            "SPARK_LOCAL_IP": "127.0.0.1",
            # the driver sends PYSPARK_PYTHON with every task: the Python the executors start workers with
            "PYSPARK_PYTHON": container_python(self.archive),
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "SPARK_LOCAL_DIRS": str(self.scratch / "local"),
            "SPARK_CONF_DIR": str(self.scratch),
        }

    def conf(self) -> dict[str, str]:
        """The local launch's Spark configuration, moved onto YARN."""
        import pyspark

        conf = local_conf(self.launch, self.context, self.log4j)
        python = container_python(self.archive)
        conf.update(
            {
                "spark.master": "yarn",
                "spark.submit.deployMode": "client",
                "spark.executor.instances": str(self.launch.executors),
                "spark.dynamicAllocation.enabled": "false",
                "spark.yarn.am.memory": f"{AM_MEMORY_MIB}m",
                "spark.yarn.am.cores": "1",
                "spark.yarn.maxAppAttempts": "1",
                "spark.yarn.am.extraJavaOptions": conf["spark.executor.extraJavaOptions"],
                "spark.executorEnv.PYSPARK_PYTHON": python,
                "spark.yarn.appMasterEnv.PYSPARK_PYTHON": python,
            }
        )
        one_machine = default_fs(self.conf_dir).startswith("file:")
        if one_machine:  # the NodeManagers read this machine's files: stage into the run's scratch
            conf["spark.yarn.stagingDir"] = (self.scratch / "staging").as_uri()
        if self.archive is None or one_machine:
            conf["spark.yarn.jars"] = f"local:{Path(pyspark.__file__).parent / 'jars'}/*"
        if self.archive is not None:
            conf["spark.yarn.dist.archives"] = f"{self.archive}#{ARCHIVE_LINK}"
        if self.options.queue:
            conf["spark.yarn.queue"] = self.options.queue
        return conf

    def start_cluster(self, teardown: Teardown) -> None:
        def wait_gone() -> None:  # runs after stop_spark: YARN then kills the containers
            if self.app_id is not None:
                wait_executors_gone(self.app_id)

        teardown.add(wait_gone)

    def connect(self) -> Any:
        try:
            spark = super().connect()
        except Exception as error:  # py4j wraps YARN's refusal (too big, unknown queue): say it plainly
            raise LaunchError(
                f"spark on yarn did not start: {error_text(error).strip().partition(chr(10))[0]}"
            ) from error
        self.app_id = spark.sparkContext.applicationId
        return spark

    def granted(self) -> Granted:
        return granted_yarn_executors(self.spark, self.launch.executors, self.context.start_timeout_s)

    def session(self, granted: Granted, n_jobs: int) -> SparkYarnSession:
        super().session(granted, n_jobs)
        return SparkYarnSession(self.spark, granted, n_jobs)


def start(launch: Launch, context: LaunchContext) -> AbstractContextManager[Session]:
    """Start a matched Spark application on YARN; its containers are released when the block ends."""
    return launched(YarnSpark, launch, context)

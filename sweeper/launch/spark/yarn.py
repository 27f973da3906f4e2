"""Engine ``spark``, manager ``yarn``: matched executors as YARN containers, client mode.

The cluster is the one ``HADOOP_CONF_DIR`` (or ``YARN_CONF_DIR``) describes. The driver runs here;
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

import os
import re
import sys
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

from sweeper.launch.base import Granted, LaunchContext, LaunchError, check_granted
from sweeper.launch.hosts.processes import kill_tree
from sweeper.launch.spark.local import (
    QUIET_LOG4J,
    SparkLaunch,
    _heap_mib,
    new_session,
    session_conf,
    stop_spark,
    uniform_shape,
    wait_registered,
)
from sweeper.planning.plan import Launch
from sweeper.workload.environment import variables_set

AM_MEMORY_MIB = 512
ARCHIVE_LINK = "environment"  # where YARN unpacks cluster.python_archive in every container
YARN_EXECUTOR_CLASS = "org.apache.spark.executor.YarnCoarseGrainedExecutorBackend"


def yarn_conf_dir() -> Path:
    """The client configuration of the YARN cluster (yarn-site.xml, core-site.xml)."""
    for name in ("YARN_CONF_DIR", "HADOOP_CONF_DIR"):
        value = os.environ.get(name)
        if value and (Path(value) / "yarn-site.xml").is_file():
            return Path(value)
    raise LaunchError("manager yarn needs HADOOP_CONF_DIR or YARN_CONF_DIR pointing at a directory with yarn-site.xml")


def python_archive() -> Path | None:
    """``cluster.python_archive`` (the runner passes it as ``SWEEPER_YARN_PYTHON_ARCHIVE``), if set."""
    value = os.environ.get("SWEEPER_YARN_PYTHON_ARCHIVE")
    if not value:
        return None
    archive = Path(value)
    if not archive.is_file():
        raise LaunchError(f"cluster.python_archive {archive} is gone (make it again with: sweeper pack-env {archive})")
    return archive


def container_python(archive: Path | None) -> str:
    """The Python that runs fits in a container: the unpacked archive's, else this one's same path."""
    return f"./{ARCHIVE_LINK}/bin/python" if archive is not None else sys.executable


def default_fs(conf_dir: Path) -> str:
    """``fs.defaultFS`` of the cluster's core-site.xml (``file:///`` when unset)."""
    core = conf_dir / "core-site.xml"
    if core.is_file():
        for prop in ElementTree.parse(core).getroot().iter("property"):
            if prop.findtext("name") == "fs.defaultFS":
                return prop.findtext("value") or "file:///"
    return "file:///"


def yarn_session_conf(launch: Launch, context: LaunchContext, log4j: Path) -> dict[str, str]:
    """The local launch's Spark configuration, moved onto YARN."""
    import pyspark

    conf = session_conf(launch, context, log4j)
    archive = python_archive()
    python = container_python(archive)
    conf.update(
        {
            "spark.master": "yarn",
            "spark.submit.deployMode": "client",
            "spark.executor.instances": str(launch.executors),
            "spark.dynamicAllocation.enabled": "false",
            "spark.yarn.am.memory": f"{AM_MEMORY_MIB}m",
            "spark.yarn.am.cores": "1",
            "spark.yarn.maxAppAttempts": "1",
            "spark.yarn.am.extraJavaOptions": conf["spark.executor.extraJavaOptions"],
            "spark.executorEnv.PYSPARK_PYTHON": python,
            "spark.yarn.appMasterEnv.PYSPARK_PYTHON": python,
        }
    )
    one_machine = default_fs(yarn_conf_dir()).startswith("file:")
    if one_machine:  # the NodeManagers read this machine's files: stage into the run's scratch
        conf["spark.yarn.stagingDir"] = (context.run_dir / f"spark-{launch.index}" / "staging").as_uri()
    if archive is None or one_machine:
        conf["spark.yarn.jars"] = f"local:{Path(pyspark.__file__).parent / 'jars'}/*"
    if archive is not None:
        conf["spark.yarn.dist.archives"] = f"{archive}#{ARCHIVE_LINK}"
    queue = os.environ.get("SWEEPER_YARN_QUEUE")
    if queue:
        conf["spark.yarn.queue"] = queue
    return conf


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
    heaps = {_heap_mib(p.cmdline()) for p in yarn_executor_processes(app_id)}
    if not heaps:
        raise LaunchError(f"spark on yarn: no executor JVM of {app_id} on this machine to read its heap from")
    return uniform_shape(summaries, heaps)


class SparkYarnLaunch(SparkLaunch):
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


@contextmanager
def start(launch: Launch, context: LaunchContext) -> Iterator[SparkYarnLaunch]:
    """Start a matched Spark application on YARN; its containers are released when the block ends."""

    from sweeper.launch.spark import joblib_backend

    conf_dir = yarn_conf_dir()
    planned = Granted(launch.executors, launch.cores_per_executor, launch.executor_memory_mib)
    scratch = context.run_dir / f"spark-{launch.index}"
    scratch.mkdir(parents=True, exist_ok=True)
    log4j = scratch / "log4j2.properties"
    log4j.write_text(QUIET_LOG4J)
    environment = {
        "HADOOP_CONF_DIR": str(conf_dir),
        "YARN_CONF_DIR": str(conf_dir),
        "SPARK_LOCAL_IP": "127.0.0.1",
        # the driver sends PYSPARK_PYTHON with every task: the Python the executors start workers with
        "PYSPARK_PYTHON": container_python(python_archive()),
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_DIRS": str(scratch / "local"),
        "SPARK_CONF_DIR": str(scratch),
    }
    app_id = None
    with variables_set(environment):
        try:
            try:
                spark = new_session(yarn_session_conf(launch, context, log4j), context)
            except Exception as error:  # py4j wraps YARN's refusal (too big, unknown queue): say it plainly
                raise LaunchError(f"spark on yarn did not start: {_first_cause(error)}") from error
            app_id = spark.sparkContext.applicationId
            granted = granted_yarn_executors(spark, launch.executors, context.start_timeout_s)
            check_granted(planned, granted, "spark")
            joblib_backend.register()
            yield SparkYarnLaunch(spark, granted, n_jobs=launch.total_cores // context.threads_per_fit)
        finally:
            stop_spark()
            if app_id is not None:
                wait_executors_gone(app_id)


def _first_cause(error: Exception) -> str:
    """The Java exception line of a Py4JJavaError (e.g. IllegalArgumentException: Required executor memory ...)."""
    text = str(error)
    match = re.search(r"^: ([\w.$]+(?:Exception|Error): .*)$", text, re.MULTILINE)
    return match.group(1) if match else text.strip().splitlines()[0]

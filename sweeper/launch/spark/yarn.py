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
with a shared file system (the archive leaves pyspark's jars out), they are uploaded to that file system
once, as one archive, by the first launch that needs them, and every later application reuses it
(``spark.yarn.archive``, sweeper/launch/spark/yarn_jars.py) instead of uploading ~460 MB each time; so is the archive
(``spark.yarn.dist.archives`` then names its staged copy) and pyspark's zips of its Python code
(``PYSPARK_ARCHIVES_PATH``), and, where this machine has the nodes' Java, an archive of Spark's classes the
executors map (sweeper/launch/spark/executor_classes.py), in the same call (one JVM,
sweeper/launch/hosts/staging.py). All are
world-readable there, so Spark makes them public YARN resources: each NodeManager downloads and unpacks
them once, for every later application. The time spent staging is the session's ``staging_s``, recorded
apart from ``cluster_start_s``.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from sweeper.errors import error_text
from sweeper.launch.base import Granted, LaunchError
from sweeper.launch.hosts.container_logs import save_tagged_logs
from sweeper.launch.hosts.containers import AM_MEMORY_MIB
from sweeper.launch.hosts.node_managers import wait_containers_released
from sweeper.launch.hosts.processes import kill_tree
from sweeper.launch.hosts.rm_rest import rest
from sweeper.launch.hosts.staging import BackgroundStaging, Upload, archive_upload
from sweeper.launch.hosts.yarn import (
    ARCHIVE_LINK,
    YarnSite,
    application_tags,
    check_placement,
    container_python,
    queue_held_message,
)
from sweeper.launch.hosts.yarn_client import ENDED_STATES, YarnClient
from sweeper.launch.lifecycle import Teardown
from sweeper.launch.logs import containers_log
from sweeper.launch.spark import executor_classes
from sweeper.launch.spark.base import SparkBackend
from sweeper.launch.spark.conf import QUICK_START_JAVA_OPTIONS, executor_java_options, local_conf
from sweeper.launch.spark.driver_am import (
    UNMANAGED_AM,
    DriverApplicationMaster,
    runs_in_driver,
    sweeper_runs_in_driver,
)
from sweeper.launch.spark.session import (
    ApplicationStopped,
    SparkAppSession,
    active_executors,
    new_session,
    start_driver_jvm,
    uniform_shape,
    wait_registered,
)
from sweeper.launch.spark.yarn_jars import jars_upload, pyspark_jars, python_libs_uploads

YARN_EXECUTOR_CLASS = "org.apache.spark.executor.YarnCoarseGrainedExecutorBackend"


def _yarn_executor_processes(app_id: str) -> list[psutil.Process]:
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


def _granted_yarn_executors(spark: Any, yarn: YarnClient, expected: int, timeout_s: float) -> tuple[Granted, list[str]]:
    """Wait for the executors; each one's cores, heap and NodeManager (:func:`registered_executors`)."""
    app_id = spark.sparkContext.applicationId
    in_driver = runs_in_driver(spark)
    try:
        summaries = wait_registered(
            spark, expected, timeout_s, DriverApplicationMaster(spark).gave_up if in_driver else None
        )
    except ApplicationStopped as stopped:
        why = (
            "its ApplicationMaster, run by the driver, gave up: its executors kept failing to start"
            if in_driver and not spark.sparkContext._jsc.sc().isStopped()
            else yarn.ended_why(app_id)
        )
        raise LaunchError(ended_message(app_id, stopped.registered, expected, why)) from stopped
    if len(summaries) < expected:
        raise LaunchError(
            f"spark on yarn: {len(summaries)} of {expected} executors registered within {timeout_s:.0f} s "
            f"({_pending_why(yarn, app_id, in_driver)})"
        )
    executors = registered_executors(spark)
    unplaced = [executor for executor in executors if executor.node_manager is None]
    if unplaced:
        raise LaunchError(f"spark on yarn: executors of {app_id} registered without their NodeManager: {unplaced}")
    granted = uniform_shape([(e.cores, e.heap_mib) for e in executors], {e.heap_mib for e in executors})
    return granted, [str(executor.node_manager) for executor in executors]


def ended_message(app_id: str, registered: int, expected: int, why: str) -> str:
    """A launch whose application ended before its executors registered: YARN's reason (or the driver's AM's)."""
    return (
        f"spark on yarn: application {app_id} ended with {registered} of {expected} executors registered"
        f" ({why}; the containers' log says why each executor failed)"
    )


@dataclass(frozen=True)
class RegisteredExecutor:
    """An executor as it registered with the driver."""

    cores: int
    heap_mib: int  # the -Xmx its ApplicationMaster launched it with: its resource profile's executor memory
    node_manager: str | None  # NM_HOST:NM_PORT of its container, from the container's environment


def registered_executors(spark: Any) -> list[RegisteredExecutor]:
    """The application's registered executors, from Spark's status store: no task runs for it.

    A YARN executor registers with its container's attributes (``NM_HOST`` and ``NM_PORT``, read by the executor
    from the environment its NodeManager gave it); its heap is the memory of the resource profile its ApplicationMaster
    launched it with (``-Xmx``, exactly)."""
    profiles = spark.sparkContext._jsc.sc().resourceProfileManager()
    found = []
    for executor in active_executors(spark):
        memory = profiles.resourceProfileFromId(executor.resourceProfileId()).executorResources().get("memory")
        attributes = executor.attributes()
        host, port = attributes.get("NM_HOST"), attributes.get("NM_PORT")
        found.append(
            RegisteredExecutor(
                cores=int(executor.totalCores()),
                heap_mib=int(memory.get().amount()) if memory.isDefined() else 0,
                node_manager=f"{host.get()}:{port.get()}" if host.isDefined() and port.isDefined() else None,
            )
        )
    return found


class SparkYarnSession(SparkAppSession):
    """A started Spark application on YARN."""

    def __init__(
        self, spark: Any, granted: Granted, n_jobs: int, yarn: YarnClient, tag: str, logs: Path | None = None
    ) -> None:
        super().__init__(spark, granted, n_jobs)
        self.app_id: str = spark.sparkContext.applicationId
        self.yarn = yarn
        self.tag = tag
        self.logs = logs  # where the containers' logs go when a batch fails

    def save_logs(self) -> Path | None:
        """The AM's and executors' logs, from their NodeManagers, beside the launch's log."""
        return save_tagged_logs(self.yarn, self.tag, self.logs)

    def abort(self, restart: bool = True) -> None:
        """Kill the application through YARN: its NodeManagers kill the executors, wherever they run."""
        self.spark.sparkContext.cancelAllJobs()
        try:
            self.yarn.kill_tagged(self.tag)
        except LaunchError as error:
            logging.getLogger(__name__).warning("could not kill YARN application %s: %s", self.tag, error)
        for process in _yarn_executor_processes(self.app_id):  # on a one-machine cluster, at once
            kill_tree(process.pid)


def _wait_released(yarn: YarnClient, tag: str, app_id: str | None, timeout_s: float = 60.0) -> None:
    """After the application stopped: YARN ends it (killed if it still runs) and every NodeManager
    released its containers (:mod:`sweeper.launch.hosts.node_managers`)."""
    deadline = time.monotonic() + timeout_s
    try:
        live = yarn.applications(tag)
        for application in live:
            yarn.kill(application.app_id)
        while live and time.monotonic() < deadline:
            time.sleep(0.5)
            live = yarn.applications(tag)
    except LaunchError as error:  # the next launch's check or sweeper check finds it again by its tag
        logging.getLogger(__name__).warning("could not end YARN application %s: %s", tag, error)
    if app_id is not None:
        wait_containers_released(yarn, [app_id], max(deadline - time.monotonic(), 1.0))


def _pending_why(yarn: YarnClient, app_id: str, am_in_driver: bool) -> str:
    """Why executors are still missing at the start limit, as far as the ResourceManager says: the application's
    executor containers running and the room the cluster has left."""
    try:
        app = rest(yarn.conf, f"/apps/{app_id}")["app"]
        free = rest(yarn.conf, "/metrics")["clusterMetrics"]
    except (LaunchError, KeyError, TypeError):
        return f"application {app_id}: is the cluster big enough for the executors and the AM?"
    running = max(int(app.get("runningContainers") or 0) - (0 if am_in_driver else 1), 0)
    return (
        f"application {app_id} in queue {app.get('queue')}: {running} executor containers running; the cluster has "
        f"{free.get('availableMB')} MiB and {free.get('availableVirtualCores')} vcores free: other applications "
        f"hold the room, or the cluster or the queue is too small for the executors"
    )


class QueueWatchdog:
    """Kills the tagged application if it is still waiting in its queue when the start limit is up."""

    def __init__(self, yarn: YarnClient, tag: str, timeout_s: float) -> None:
        self.yarn = yarn
        self.tag = tag
        self.timeout_s = timeout_s
        self.held_s: float | None = None  # set when the application was killed for waiting
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name=f"queue-watchdog-{tag}", daemon=True)

    def start(self) -> None:
        self._started = time.monotonic()
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()

    def _watch(self) -> None:
        if self._stopped.wait(self.timeout_s):
            return
        try:
            waiting = [app for app in self.yarn.applications(self.tag) if app.state != "RUNNING"]
            if waiting and not self._stopped.is_set():
                self.held_s = time.monotonic() - self._started
                for app in waiting:
                    self.yarn.kill(app.app_id)
        except LaunchError as error:  # the launch's own start limit still applies
            logging.getLogger(__name__).warning("could not check the queue of %s: %s", self.tag, error)


class YarnSpark(SparkBackend):
    """Executors in YARN containers, client mode: the driver runs here."""

    app_id: str | None = None
    staged_jars: str | None = None  # spark.yarn.archive on the cluster's file system (an archive, no file: FS)
    staged_archive: str | None = None  # the packed environment there
    staged_python_libs: tuple[str, ...] = ()  # pyspark.zip and py4j's there: the driver's PYSPARK_ARCHIVES_PATH
    staged_executor_classes: str | None = None  # the executors' class archive there (executor_classes)
    staging_s = 0.0  # the time this launch spent staging them (the first launch of a sweep)
    staging: BackgroundStaging | None = None  # what this launch stages, beside the driver JVM's start
    hashed_s = 0.0  # hashing the archive (once a process): staging too

    def check(self) -> None:
        super().check()
        self.site = YarnSite.of(self.context)
        self.tag = f"sweeper-spark-{self.launch.index}-{uuid.uuid4().hex[:8]}"

    def variables(self) -> dict[str, str]:
        return {
            **self.site.conf.client_environment,
            "SPARK_LOCAL_IP": self.site.host,
            # the driver sends PYSPARK_PYTHON with every task: the Python the executors start workers with
            "PYSPARK_PYTHON": container_python(self.site.archive),
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "SPARK_LOCAL_DIRS": str(self.scratch / "local"),
            "SPARK_CONF_DIR": str(self.scratch),
            # Spark's client takes pyspark's Python zips from there instead of uploading them with every application
            **({"PYSPARK_ARCHIVES_PATH": ",".join(self.staged_python_libs)} if self.staged_python_libs else {}),
        }

    def conf(self) -> dict[str, str]:
        """The local launch's Spark configuration, moved onto YARN."""
        import pyspark

        conf = local_conf(self.launch, self.context, self.log4j)
        python = container_python(self.site.archive)
        # the AM and executors run on the nodes: they read the log4j file YARN localized into their directory
        container_java = f"-Dlog4j2.configurationFile={self.log4j.name}"
        conf.update(
            {
                "spark.master": "yarn",
                "spark.driver.host": self.site.host,
                "spark.driver.bindAddress": self.site.host,
                "spark.yarn.tags": application_tags(self.tag),
                "spark.yarn.dist.files": str(self.log4j),
                "spark.executor.extraJavaOptions": executor_java_options(self.launch.engine, container_java),
                "spark.submit.deployMode": "client",
                "spark.executor.instances": str(self.launch.executors),
                "spark.dynamicAllocation.enabled": "false",
                # the session is made while the executors start (YARN's default waits for 80 % of them first):
                # the launch waits for all of them itself (granted)
                "spark.scheduler.minRegisteredResourcesRatio": "0",
                # the ApplicationMaster asks for its pending executors at 0.2, 0.6, 1.4, 3 s ... (Spark doubles the
                # wait up to this interval, 3 s by default): capped at 0.5 s, an executor the ResourceManager
                # granted on a node's later heartbeat is launched up to a second sooner
                "spark.yarn.scheduler.heartbeat.interval-ms": "500",
                # the ApplicationMaster runs in the driver (sweeper/launch/spark/driver_am.py): no container or JVM of
                # its own to wait for; started once the client's poll of YARN (1 s by default) sees it ACCEPTED. A
                # grid sets it "false" where this machine cannot reach the ResourceManager's scheduler address.
                UNMANAGED_AM: "true",
                "spark.yarn.clientLaunchMonitorInterval": "100ms",
                "spark.yarn.am.memory": f"{AM_MEMORY_MIB}m",
                "spark.yarn.am.cores": "1",
                "spark.yarn.maxAppAttempts": "1",
                "spark.yarn.am.extraJavaOptions": f"{QUICK_START_JAVA_OPTIONS} {container_java}",
                "spark.executorEnv.PYSPARK_PYTHON": python,
                "spark.yarn.appMasterEnv.PYSPARK_PYTHON": python,
            }
        )
        one_machine = self.site.local_file_system
        if one_machine:  # the NodeManagers read this machine's files: stage into the run's scratch
            conf["spark.yarn.stagingDir"] = (self.scratch / "staging").as_uri()
        if self.site.archive is None or one_machine:
            conf["spark.yarn.jars"] = f"local:{Path(pyspark.__file__).parent / 'jars'}/*"
        elif self.staged_jars is not None:
            conf["spark.yarn.archive"] = self.staged_jars
        if self.site.archive is not None:
            conf["spark.yarn.dist.archives"] = f"{self.staged_archive or self.site.archive}#{ARCHIVE_LINK}"
        if self.site.options.queue:
            conf["spark.yarn.queue"] = self.site.options.queue
        if self.staged_executor_classes is not None:  # every executor maps Spark's classes archived here
            mapped = executor_classes.executor_conf(self.staged_executor_classes, pyspark_jars())
            conf["spark.yarn.dist.files"] += f",{mapped.pop('spark.yarn.dist.files')}"
            conf["spark.executor.extraJavaOptions"] += f" {mapped.pop('spark.executor.extraJavaOptions')}"
            conf.update(mapped)
        if self.site.options.java_home:  # the NodeManagers' own Java (8 or 11 on Hadoop 3.3) is too old for Spark 4
            conf["spark.yarn.appMasterEnv.JAVA_HOME"] = self.site.options.java_home
            conf["spark.executorEnv.JAVA_HOME"] = self.site.options.java_home
        return conf

    def start_cluster(self, teardown: Teardown) -> None:
        # runs after stop_spark, also when the application never started (an orphan waiting ACCEPTED)
        teardown.add(lambda: _wait_released(self.site.client, self.tag, self.app_id))
        if self.site.archive is not None and not self.site.local_file_system:  # once per cluster in a sweep
            started = time.monotonic()  # hashing the archive (once a process) is staging too
            classes = self._executor_classes_upload()
            uploads = [jars_upload(), archive_upload(self.site.archive), *classes, *python_libs_uploads()]
            self.staging = BackgroundStaging(self.site.conf, self.site.client.lib, uploads)
            self.hashed_s = time.monotonic() - started
            self.staged_jars, self.staged_archive, *rest = self.staging.uris  # named by content: known now
            if classes:
                self.staged_executor_classes, *rest = rest
            self.staged_python_libs = tuple(rest)

    def _executor_classes_upload(self) -> list[Upload]:
        """The executors' class archive to stage with the jars, where this machine has the nodes' Java."""
        import pyspark

        java_home = executor_classes.wanted(self.site.options.java_home, self.context.spark_conf)
        if java_home is None:
            return []
        return [executor_classes.executor_archive_upload(java_home, pyspark_jars(), pyspark.__version__)]

    def connect(self) -> Any:
        """Stage beside the driver JVM's start, then submit and wait until the application runs; one still waiting in
        its queue at the start limit is killed."""
        conf = self.driver_conf()  # the JVM's and the session's
        if self.staging is not None:
            self._stage_beside_the_driver_jvm(self.staging, conf)
        self.deadline = time.monotonic() + self.context.start_timeout_s
        watchdog = QueueWatchdog(self.site.client, self.tag, self.context.start_timeout_s)
        watchdog.start()
        try:
            spark = new_session(conf, self.context)
        except Exception as error:  # py4j wraps YARN's refusal (too big, unknown queue): say it plainly
            if watchdog.held_s is not None:
                in_driver = sweeper_runs_in_driver(self.context.spark_conf)
                raise LaunchError(queue_held_message(watchdog.held_s, self.site.options.queue, in_driver)) from error
            ended = self._ended_application()
            if ended is not None:  # YARN ended it while the session was made (its executors failed at once)
                client = self.site.client
                raise LaunchError(ended_message(ended, 0, self.launch.executors, client.ended_why(ended))) from error
            raise LaunchError(
                f"spark on yarn did not start: {error_text(error).strip().partition(chr(10))[0]}"
            ) from error
        finally:
            watchdog.stop()
        self.app_id = spark.sparkContext.applicationId
        return spark

    def _ended_application(self) -> str | None:
        """The id of this launch's application if YARN has ended it, else None (also when YARN cannot be asked)."""
        try:
            ended = self.site.client.applications(self.tag, ENDED_STATES)
        except LaunchError:
            return None
        return ended[0].app_id if ended else None

    def _stage_beside_the_driver_jvm(self, staging: BackgroundStaging, conf: dict[str, str]) -> None:
        """Staging (a JVM looking for the files on the cluster, putting the missing ones) and the driver's JVM start
        at once; the application is submitted once both are done. Staging's time is the session's ``staging_s``."""
        staging.start()
        try:
            start_driver_jvm(conf, self.context)
        finally:
            staged_s = staging.wait()  # waited for also when the JVM did not start; its error wins
        self.staging_s = self.site.packed_s + (self.hashed_s + staged_s if staged_s else 0.0)

    def granted(self) -> Granted:
        remaining_s = max(self.deadline - time.monotonic(), 1.0)  # the time in the queue counts too
        granted, self.node_managers = _granted_yarn_executors(
            self.spark, self.site.client, self.launch.executors, remaining_s
        )
        return granted

    def check_placement(self) -> None:
        check_placement("spark", self.launch, self.node_managers)

    def save_logs(self) -> Path | None:
        return save_tagged_logs(self.site.client, self.tag, containers_log(self.context, self.launch))

    def session(self, granted: Granted, n_jobs: int) -> SparkYarnSession:
        super().session(granted, n_jobs)
        logs = containers_log(self.context, self.launch)
        session = SparkYarnSession(self.spark, granted, n_jobs, self.site.client, self.tag, logs)
        session.staging_s = self.staging_s
        return session

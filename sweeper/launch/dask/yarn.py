"""Engine ``dask``, manager ``yarn``: matched Dask workers in YARN containers.

The scheduler runs in this process, on this machine's address toward the ResourceManager (an edge
node's address the NodeManagers reach); one YARN application (:mod:`sweeper.launch.hosts.containers`)
starts one ``distributed.cli.dask_worker`` per container (``--death-timeout``: a worker that cannot reach
the scheduler exits instead of retrying for ever) (``--nthreads`` = cores, ``--memory-limit`` = executor
memory; the container gets memory + overhead MiB and cores vcores). dask-yarn/skein are not used:
dask-yarn 0.9 (2021) imports names distributed 2025 no longer has, and skein needs a Hadoop
install's ``yarn classpath``. Stopping kills the YARN application through YARN's own client (found by
its tag), whose NodeManagers kill the workers.

The cluster is the one ``cluster.hadoop_conf_dir`` (else ``HADOOP_CONF_DIR`` or ``YARN_CONF_DIR``)
describes; the Hadoop client jars and the application's own jar come from ``deploy/yarn``
(``mvn -q -f deploy/yarn/pom.xml package``) or ``SWEEPER_YARN_LIB``. Workers run either this
interpreter (every NodeManager must have this virtualenv at the same path, true of the test
MiniYARNCluster) or, with ``cluster.python_archive``, the packed environment, which YARN unpacks into
``./environment``: on a cluster file system it is staged once per sweep (the copy Spark's launches use
too), and the row's ``staging_s`` holds the time this launch spent on it, apart from ``cluster_start_s``.
"""

from __future__ import annotations

import logging
import shlex
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

from distributed import Client, LocalCluster

from sweeper.launch.base import Granted, LaunchError
from sweeper.launch.dask.base import DaskBackend
from sweeper.launch.dask.session import DaskSession, granted_workers
from sweeper.launch.hosts.container_logs import save_tagged_logs
from sweeper.launch.hosts.containers import ContainerShape, containers_command, shipped_archive
from sweeper.launch.hosts.hadoop_conf import HadoopConf
from sweeper.launch.hosts.node_managers import wait_containers_released
from sweeper.launch.hosts.processes import kill_tree
from sweeper.launch.hosts.yarn import YarnSite, check_placement, container_python, queue_held_message
from sweeper.launch.hosts.yarn_client import YarnClient, hadoop_java
from sweeper.launch.lifecycle import Teardown
from sweeper.launch.logs import containers_log
from sweeper.planning.plan import Launch

CLIENT_LOG = "containers.log"  # the YARN client's output, in the launch's scratch directory
WORKER_DEATH_TIMEOUT_S = 60  # a worker that lost its scheduler this long exits (its container ends)


PROFILER_OFF = "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False"  # as the local and SSH workers (dask/base.py)


def worker_command(scheduler: str, launch: Launch, archive: Path | None = None) -> str:
    """One Dask worker of the planned shape, named after its YARN container."""
    python = shlex.quote(container_python(archive))
    return (
        f"exec env {PROFILER_OFF} {python} -m distributed.cli.dask_worker {scheduler} "
        f"--nthreads {launch.cores_per_executor} --memory-limit {launch.executor_memory_mib}MiB "
        f"--name $CONTAINER_ID --local-directory $PWD --no-dashboard --death-timeout {WORKER_DEATH_TIMEOUT_S}"
    )


def scheduler_options(host: str, scratch: Path) -> dict[str, Any]:
    """The ``LocalCluster`` of the scheduler alone (the workers come in containers), on ``host``.

    Its HTTP server binds ``host`` on any free port, without the dashboard: with ``dashboard_address=None``
    distributed's scheduler still starts it, on the fixed port 8787 (``Scheduler.start_http_server``'s default),
    which a second sweep (or anything else on the edge node) would have taken.
    """
    return {
        "n_workers": 0,
        "host": host,
        "scheduler_port": 0,
        "dashboard_address": f"{host}:0",
        "scheduler_kwargs": {"dashboard": False},
        "silence_logs": logging.ERROR,
        "local_directory": str(scratch),
    }


class DaskYarnSession(DaskSession):
    """Dask workers in the containers of one YARN application."""

    def __init__(self, *args: Any, yarn: YarnClient, name: str, logs: Path | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.yarn = yarn
        self.name = name
        self.logs = logs  # where the containers' logs go when a batch fails

    def save_logs(self) -> Path | None:
        """The AM's and workers' logs, from their NodeManagers, beside the launch's log."""
        return save_tagged_logs(self.yarn, self.name, self.logs)

    def abort(self, restart: bool = True) -> None:
        """Kill the application: its NodeManagers kill the workers, so the running batch fails at once."""
        _kill_application(self.yarn, self.name, client=None)


class YarnDask(DaskBackend):
    """The scheduler here, the workers in the containers of one YARN application."""

    sets_worker_environment = False  # the containers get the fit environment from the application

    def check(self) -> None:
        self.site = YarnSite.of(self.context)
        self.name = f"sweeper-dask-{self.launch.index}-{uuid.uuid4().hex[:8]}"
        self.staging_s = 0.0  # the packed environment's staging, apart from the start

    def connect(self, teardown: Teardown) -> Client:
        teardown.add(lambda: _remove_staged(self.site.conf, self.site.client.lib, self.name, self.scratch))
        cluster = LocalCluster(**scheduler_options(self.site.host, self.scratch))
        teardown.add(cluster.close)
        client = Client(cluster, set_as_default=True)
        teardown.add(client.close)
        archive, staged_s = shipped_archive(self.site.conf, self.site.client.lib, self.site.archive)
        self.staging_s = self.site.packed_s + staged_s
        shape = ContainerShape(
            self.launch.executors, self.launch.executor_memory_mib + self.launch.memory_overhead_mib,
            self.launch.cores_per_executor,
        )  # fmt: skip
        command = containers_command(
            self.site.conf, self.site.client.lib, self.name,
            worker_command(cluster.scheduler_address, self.launch, self.site.archive),
            shape, self.context.environment, archive=archive, queue=self.site.options.queue,
        )  # fmt: skip
        with open(self.scratch / CLIENT_LOG, "wb") as log:
            self.shell = subprocess.Popen(command, cwd=self.scratch, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        teardown.add(self._wait_shell)
        teardown.add(lambda: _kill_application(self.site.client, self.name, client))
        return client

    def _wait_shell(self) -> None:
        try:
            self.shell.wait(30)
        except subprocess.TimeoutExpired:
            kill_tree(self.shell.pid)

    def granted(self) -> Granted:
        try:
            timeout_s = self.context.start_timeout_s
            _wait_for_workers(self.client, self.shell, self.launch.executors, timeout_s, self.scratch)
        except LaunchError:
            waiting = [app for app in self.site.client.applications(self.name) if app.state != "RUNNING"]
            if waiting:  # the workers never came because YARN kept the application in its queue
                raise LaunchError(queue_held_message(self.context.start_timeout_s, self.site.options.queue)) from None
            raise
        return granted_workers(self.client)

    def check_placement(self) -> None:
        from sweeper.workload.usage import node_manager

        check_placement("dask", self.launch, self.client.run(node_manager).values())

    def save_logs(self) -> Path | None:
        return save_tagged_logs(self.site.client, self.name, containers_log(self.context, self.launch))

    def session(self, granted: Granted, n_jobs: int) -> DaskYarnSession:
        logs = containers_log(self.context, self.launch)
        session = DaskYarnSession(None, self.client, granted, n_jobs, yarn=self.site.client, name=self.name, logs=logs)
        session.staging_s = self.staging_s
        return session


def _remove_staged(conf: HadoopConf, lib: Path, name: str, scratch: Path) -> None:
    """Remove what the application staged (its ApplicationMaster's jar) under the file system's home."""
    if conf.default_fs.startswith("file:"):
        shutil.rmtree(Path.home() / name, ignore_errors=True)
        return
    shell = hadoop_java(conf, lib, "org.apache.hadoop.fs.FsShell", heap_mib=128)
    command = [*shell, "-rm", "-r", "-f", "-skipTrash", name]
    try:
        subprocess.run(command, cwd=scratch, stdin=subprocess.DEVNULL, capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        logging.getLogger(__name__).warning("could not remove %s from the cluster's file system", name)


def _wait_for_workers(
    client: Client, shell: subprocess.Popen[bytes], expected: int, timeout_s: float, scratch: Path
) -> None:
    deadline = time.monotonic() + timeout_s
    while len(client.scheduler_info(n_workers=-1)["workers"]) < expected:
        if shell.poll() is not None:
            tail = (scratch / CLIENT_LOG).read_text(errors="replace")[-2000:]
            raise LaunchError(f"dask on yarn: the application ended ({shell.returncode}):\n{tail}")
        if time.monotonic() > deadline:
            got = len(client.scheduler_info(n_workers=-1)["workers"])
            raise LaunchError(f"dask on yarn: {got} of {expected} workers registered within {timeout_s:.0f} s")
        time.sleep(0.2)


def _kill_application(yarn: YarnClient, name: str, client: Client | None, timeout_s: float = 30.0) -> None:
    """Kill the YARN application, wait until its workers left the scheduler and every NodeManager
    released its containers (:mod:`sweeper.launch.hosts.node_managers`)."""
    killed: list[str] = []
    try:
        killed = yarn.kill_tagged(name)
    except LaunchError as error:
        logging.getLogger(__name__).warning("could not kill YARN application %s: %s", name, error)
    deadline = time.monotonic() + timeout_s
    while client is not None and time.monotonic() < deadline:
        try:
            if not client.scheduler_info(n_workers=-1)["workers"]:
                break
        except Exception:  # the scheduler may already be closing
            break
        time.sleep(0.2)
    wait_containers_released(yarn, killed, max(deadline - time.monotonic(), 1.0))

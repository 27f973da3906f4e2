"""Engine ``dask``, manager ``yarn``: matched Dask workers in YARN containers.

The scheduler runs in this process, on this machine's address toward the ResourceManager (an edge
node's address the NodeManagers reach); Hadoop's distributedshell starts one
``distributed.cli.dask_worker`` per container (``--death-timeout``: a worker that cannot reach the
scheduler exits instead of retrying for ever) (``--nthreads`` = cores, ``--memory-limit`` = executor
memory; the container gets memory + overhead MiB and cores vcores). dask-yarn/skein are not used:
dask-yarn 0.9 (2021) imports names distributed 2025 no longer has, and skein needs a Hadoop
install's ``yarn classpath``. Stopping kills the YARN application through YARN's own client (found by
its tag), whose NodeManagers kill the workers.

The cluster is the one ``cluster.hadoop_conf_dir`` (else ``HADOOP_CONF_DIR`` or ``YARN_CONF_DIR``)
describes; the Hadoop client
jars come from ``deploy/yarn`` (``mvn -q -f deploy/yarn/pom.xml package``) or ``SWEEPER_YARN_LIB``.
Workers run either this interpreter (every NodeManager must have this virtualenv at the same path,
true of the test MiniYARNCluster) or, with ``cluster.python_archive``, the packed environment:
distributedshell's ``-localize_files`` ships it to every container as a plain file (it has no
archive type), and the container unpacks it into ``./environment`` before starting the worker
(``tar``, or ``unzip`` for a .zip, on the nodes). distributedshell stages what it ships under
``<home of fs.defaultFS>/<application name>``; teardown removes that directory. It takes local files
only, so unlike Spark's launches (sweeper/launch/hosts/staging.py) each Dask application uploads the
archive again, inside its start: the row's ``staging_s`` is null (not timed apart from ``cluster_start_s``).
"""

from __future__ import annotations

import logging
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from distributed import Client, LocalCluster

from sweeper.launch.base import Granted, LaunchError
from sweeper.launch.dask.base import DaskBackend
from sweeper.launch.dask.session import DaskSession, granted_workers
from sweeper.launch.hosts.hadoop_conf import HadoopConf
from sweeper.launch.hosts.node_managers import wait_containers_released
from sweeper.launch.hosts.processes import kill_tree
from sweeper.launch.hosts.yarn import (
    ARCHIVE_LINK,
    application_tags,
    check_placement,
    driver_address,
    hadoop_conf,
    python_archive,
    queue_held_message,
    yarn_options,
)
from sweeper.launch.hosts.yarn_client import YarnClient, hadoop_java, hadoop_lib
from sweeper.launch.lifecycle import Teardown
from sweeper.planning.plan import Launch

DISTRIBUTED_SHELL_CLIENT = "org.apache.hadoop.yarn.applications.distributedshell.Client"
AM_MEMORY_MIB = 512
WORKER_DEATH_TIMEOUT_S = 60  # a worker that lost its scheduler this long exits (its container ends)


def distributed_shell_command(
    conf: HadoopConf,
    lib: Path,
    name: str,
    command: str,
    launch: Launch,
    environment: dict[str, str],
    localize: tuple[Path, ...] = (),
    queue: str | None = None,
) -> list[str]:
    """The distributedshell client that asks YARN for one container per worker and runs ``command`` in each."""
    jars = sorted(lib.glob("hadoop-yarn-applications-distributedshell-*.jar"))
    if not jars:
        raise LaunchError(f"manager yarn needs Hadoop's distributedshell in {lib}: run make setup")
    arguments = [
        *hadoop_java(conf, lib, DISTRIBUTED_SHELL_CLIENT),
        "-jar", str(jars[-1]),
        "-appname", name,
        "-application_tags", application_tags(name),
        "-shell_command", command,
        "-num_containers", str(launch.executors),
        "-container_memory", str(launch.executor_memory_mib + launch.memory_overhead_mib),
        "-container_vcores", str(launch.cores_per_executor),
        "-master_memory", str(AM_MEMORY_MIB),
        "-master_vcores", "1",
        "-timeout", str(24 * 3600 * 1000),
    ]  # fmt: skip
    if queue:
        arguments += ["-queue", queue]
    if localize:
        arguments += ["-localize_files", ",".join(str(path) for path in localize)]
    for key, value in environment.items():
        arguments += ["-shell_env", f"{key}={value}"]
    return arguments


def unpack_command(archive: Path) -> str:
    """Shell that unpacks the localized archive (in the container's directory) into ./environment."""
    name = shlex.quote(archive.name)
    if archive.name.endswith(".zip"):
        return f"unzip -q {name} -d {ARCHIVE_LINK}"
    return f"mkdir -p {ARCHIVE_LINK} && tar -xf {name} -C {ARCHIVE_LINK}"


def worker_command(scheduler: str, launch: Launch, archive: Path | None = None) -> str:
    """One Dask worker of the planned shape, named after its YARN container."""
    python = shlex.quote(sys.executable)
    unpack = ""
    if archive is not None:
        python = f"./{ARCHIVE_LINK}/bin/python"
        unpack = f"{unpack_command(archive)} && rm -f {shlex.quote(archive.name)} && "
    return (
        f"{unpack}exec {python} -m distributed.cli.dask_worker {scheduler} "
        f"--nthreads {launch.cores_per_executor} --memory-limit {launch.executor_memory_mib}MiB "
        f"--name $CONTAINER_ID --local-directory $PWD --no-dashboard --death-timeout {WORKER_DEATH_TIMEOUT_S}"
    )


class DaskYarnSession(DaskSession):
    """Dask workers in the containers of one YARN application."""

    def __init__(self, *args: Any, yarn: YarnClient, name: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.yarn = yarn
        self.name = name

    def abort(self, restart: bool = True) -> None:
        """Kill the application: its NodeManagers kill the workers, so the running batch fails at once."""
        _kill_application(self.yarn, self.name, client=None)


class YarnDask(DaskBackend):
    """The scheduler here, the workers in distributedshell's containers of one YARN application."""

    sets_worker_environment = False  # distributedshell passes the fit environment (-shell_env)

    def check(self) -> None:
        self.options = yarn_options(self.context)
        self.conf = hadoop_conf(self.options)
        self.lib = hadoop_lib()
        self.archive = python_archive(self.options)
        self.yarn = YarnClient(self.conf, self.lib)
        self.host = driver_address(self.conf)
        self.name = f"sweeper-dask-{self.launch.index}-{uuid.uuid4().hex[:8]}"

    def connect(self, teardown: Teardown) -> Client:
        teardown.add(lambda: _remove_staged(self.conf, self.lib, self.name, self.scratch))
        cluster = LocalCluster(
            n_workers=0, host=self.host, dashboard_address=None, silence_logs=logging.ERROR,
            local_directory=str(self.scratch),
        )  # fmt: skip
        teardown.add(cluster.close)
        client = Client(cluster, set_as_default=True)
        teardown.add(client.close)
        command = distributed_shell_command(
            self.conf, self.lib, self.name, worker_command(cluster.scheduler_address, self.launch, self.archive),
            self.launch, self.context.environment, localize=(self.archive,) if self.archive is not None else (),
            queue=self.options.queue,
        )  # fmt: skip
        with open(self.scratch / "distributedshell.log", "wb") as log:
            self.shell = subprocess.Popen(command, cwd=self.scratch, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        teardown.add(self._wait_shell)
        teardown.add(lambda: _kill_application(self.yarn, self.name, client))
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
            waiting = [app for app in self.yarn.applications(self.name) if app.state != "RUNNING"]
            if waiting:  # the workers never came because YARN kept the application in its queue
                raise LaunchError(queue_held_message(self.context.start_timeout_s, self.options.queue)) from None
            raise
        return granted_workers(self.client)

    def check_placement(self) -> None:
        from sweeper.workload.usage import node_manager

        check_placement("dask", self.launch, self.client.run(node_manager).values())

    def session(self, granted: Granted, n_jobs: int) -> DaskYarnSession:
        session = DaskYarnSession(None, self.client, granted, n_jobs, yarn=self.yarn, name=self.name)
        if self.archive is not None and not self.conf.default_fs.startswith("file:"):
            session.staging_s = None  # distributedshell uploads the archive for each application, untimed
        return session


def _remove_staged(conf: HadoopConf, lib: Path, name: str, scratch: Path) -> None:
    """Remove what distributedshell staged (its AM jar, the archive) under the file system's home."""
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
            tail = (scratch / "distributedshell.log").read_text(errors="replace")[-2000:]
            raise LaunchError(f"dask on yarn: distributedshell exited ({shell.returncode}):\n{tail}")
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

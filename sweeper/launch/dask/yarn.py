"""Engine ``dask``, manager ``yarn``: matched Dask workers in YARN containers.

The scheduler runs in this process (on 127.0.0.1); Hadoop's distributedshell starts one
``distributed.cli.dask_worker`` per container (``--nthreads`` = cores, ``--memory-limit`` = executor
memory; the container gets memory + overhead MiB and cores vcores). dask-yarn/skein are not used:
dask-yarn 0.9 (2021) imports names distributed 2025 no longer has, and skein needs a Hadoop
install's ``yarn classpath``. Stopping kills the YARN application, whose NodeManagers kill the workers.

The cluster is the one ``cluster.hadoop_conf_dir`` (else ``HADOOP_CONF_DIR`` or ``YARN_CONF_DIR``)
describes; the Hadoop client
jars come from ``deploy/yarn`` (``mvn -q -f deploy/yarn/pom.xml package``) or ``SWEEPER_YARN_LIB``.
Workers run either this interpreter (every NodeManager must have this virtualenv at the same path,
true of the test MiniYARNCluster) or, with ``cluster.python_archive``, the packed environment:
distributedshell's ``-localize_files`` ships it to every container as a plain file (it has no
archive type), and the container unpacks it into ``./environment`` before starting the worker
(``tar``, or ``unzip`` for a .zip, on the nodes). distributedshell stages what it ships under
``<home of fs.defaultFS>/<application name>``; teardown removes that directory.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
import uuid
import xml.etree.ElementTree as ElementTree
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from distributed import Client, LocalCluster

from sweeper.launch.base import Granted, LaunchContext, LaunchError, Session
from sweeper.launch.dask.base import DaskBackend
from sweeper.launch.dask.session import DaskSession, granted_workers
from sweeper.launch.hosts.processes import kill_tree
from sweeper.launch.hosts.yarn import ARCHIVE_LINK, default_fs, python_archive, yarn_conf_dir, yarn_options
from sweeper.launch.lifecycle import Teardown, launched
from sweeper.planning.plan import Launch

DISTRIBUTED_SHELL_CLIENT = "org.apache.hadoop.yarn.applications.distributedshell.Client"
AM_MEMORY_MIB = 512
REPO_LIB = Path(__file__).resolve().parents[3] / "deploy" / "yarn" / "target" / "lib"


def hadoop_lib() -> Path:
    """The directory of Hadoop client jars with distributedshell in it."""
    lib = Path(os.environ.get("SWEEPER_YARN_LIB", REPO_LIB))
    if not any(lib.glob("hadoop-yarn-applications-distributedshell-*.jar")):
        raise LaunchError(
            f"manager yarn needs Hadoop's distributedshell in {lib}: run mvn -q -f deploy/yarn/pom.xml package "
            "(make setup) or set SWEEPER_YARN_LIB"
        )
    return lib


def yarn_site(conf_dir: Path) -> dict[str, str]:
    """The properties of yarn-site.xml."""
    root = ElementTree.parse(conf_dir / "yarn-site.xml").getroot()
    return {p.findtext("name") or "": p.findtext("value") or "" for p in root.iter("property")}


class ResourceManager:
    """The few calls of the ResourceManager's REST API a launch needs (a cluster without Kerberos)."""

    def __init__(self, conf_dir: Path) -> None:
        address = yarn_site(conf_dir).get("yarn.resourcemanager.webapp.address", "")
        if not address or address.endswith(":0"):
            raise LaunchError(f"no yarn.resourcemanager.webapp.address in {conf_dir / 'yarn-site.xml'}")
        self.url = f"http://{address}/ws/v1/cluster"

    def _call(self, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.url + path, data=data, method="PUT" if body is not None else "GET",
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )  # fmt: skip
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)

    def application(self, name: str) -> dict[str, Any] | None:
        """The newest application of this name, if the RM knows one."""
        apps = (self._call("/apps").get("apps") or {}).get("app") or []
        found = [app for app in apps if app.get("name") == name]
        return max(found, key=lambda app: app["startedTime"]) if found else None

    def kill(self, app_id: str) -> None:
        self._call(f"/apps/{app_id}/state", {"state": "KILLED"})


def distributed_shell_command(
    conf_dir: Path,
    lib: Path,
    name: str,
    command: str,
    launch: Launch,
    environment: dict[str, str],
    localize: tuple[Path, ...] = (),
    queue: str | None = None,
) -> list[str]:
    """The distributedshell client that asks YARN for one container per worker and runs ``command`` in each."""
    java = str(Path(os.environ["JAVA_HOME"]) / "bin" / "java") if "JAVA_HOME" in os.environ else "java"
    shell = shutil.which(java) or java
    arguments = [
        shell, "-Xmx256m", "-cp", f"{conf_dir}{os.pathsep}{lib / '*'}", DISTRIBUTED_SHELL_CLIENT,
        "-jar", str(sorted(lib.glob("hadoop-yarn-applications-distributedshell-*.jar"))[-1]),
        "-appname", name,
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
        "--name $CONTAINER_ID --local-directory $PWD --no-dashboard --host 127.0.0.1"
    )


class DaskYarnSession(DaskSession):
    """Dask workers in the containers of one YARN application."""

    def __init__(self, *args: Any, resource_manager: ResourceManager, name: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.resource_manager = resource_manager
        self.name = name

    def abort(self) -> None:
        """Kill the application: its NodeManagers kill the workers, so the running batch fails at once."""
        _kill_application(self.resource_manager, self.name, client=None)


class YarnDask(DaskBackend):
    """The scheduler here, the workers in distributedshell's containers of one YARN application."""

    sets_worker_environment = False  # distributedshell passes the fit environment (-shell_env)

    def check(self) -> None:
        self.options = yarn_options(self.context)
        self.conf_dir = yarn_conf_dir(self.options)
        self.lib = hadoop_lib()
        self.archive = python_archive(self.options)
        self.resource_manager = ResourceManager(self.conf_dir)
        self.name = f"sweeper-dask-{self.launch.index}-{uuid.uuid4().hex[:8]}"

    def connect(self, teardown: Teardown) -> Client:
        teardown.add(lambda: _remove_staged(self.conf_dir, self.lib, self.name, self.scratch))
        cluster = LocalCluster(
            n_workers=0, host="127.0.0.1", dashboard_address=None, silence_logs=logging.ERROR,
            local_directory=str(self.scratch),
        )  # fmt: skip
        teardown.add(cluster.close)
        client = Client(cluster, set_as_default=True)
        teardown.add(client.close)
        command = distributed_shell_command(
            self.conf_dir, self.lib, self.name, worker_command(cluster.scheduler_address, self.launch, self.archive),
            self.launch, self.context.environment, localize=(self.archive,) if self.archive is not None else (),
            queue=self.options.queue,
        )  # fmt: skip
        with open(self.scratch / "distributedshell.log", "wb") as log:
            self.shell = subprocess.Popen(command, cwd=self.scratch, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        teardown.add(self._wait_shell)
        teardown.add(lambda: _kill_application(self.resource_manager, self.name, client))
        return client

    def _wait_shell(self) -> None:
        try:
            self.shell.wait(30)
        except subprocess.TimeoutExpired:
            kill_tree(self.shell.pid)

    def granted(self) -> Granted:
        _wait_for_workers(self.client, self.shell, self.launch.executors, self.context.start_timeout_s, self.scratch)
        return granted_workers(self.client)

    def session(self, granted: Granted, n_jobs: int) -> DaskYarnSession:
        return DaskYarnSession(
            None, self.client, granted, n_jobs, resource_manager=self.resource_manager, name=self.name
        )


def start(launch: Launch, context: LaunchContext) -> AbstractContextManager[Session]:
    """Start matched Dask workers on YARN; the application and its containers are gone when the block ends."""
    return launched(YarnDask, launch, context)


def _remove_staged(conf_dir: Path, lib: Path, name: str, scratch: Path) -> None:
    """Remove what distributedshell staged (its AM jar, the archive) under the file system's home."""
    if default_fs(conf_dir).startswith("file:"):
        shutil.rmtree(Path.home() / name, ignore_errors=True)
        return
    java = str(Path(os.environ["JAVA_HOME"]) / "bin" / "java") if "JAVA_HOME" in os.environ else "java"
    command = [java, "-Xmx128m", "-cp", f"{conf_dir}{os.pathsep}{lib / '*'}", "org.apache.hadoop.fs.FsShell",
               "-rm", "-r", "-f", "-skipTrash", name]  # fmt: skip
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


def _kill_application(
    resource_manager: ResourceManager, name: str, client: Client | None, timeout_s: float = 30.0
) -> None:
    """Kill the YARN application (its NodeManagers kill the workers) and wait until its workers left."""
    try:
        app = resource_manager.application(name)
        if app is not None and app["state"] not in ("FINISHED", "FAILED", "KILLED"):
            resource_manager.kill(app["id"])
    except OSError:
        logging.getLogger(__name__).warning("could not reach the ResourceManager to kill %s", name)
    if client is None:
        return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if not client.scheduler_info(n_workers=-1)["workers"]:
                return
        except Exception:  # the scheduler may already be closing
            return
        time.sleep(0.2)

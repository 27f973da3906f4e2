"""A real YARN for tests: Hadoop's MiniYARNCluster (deploy/yarn), one ResourceManager and N NodeManagers.

``make setup`` builds it (``mvn -q -f deploy/yarn/pom.xml package``); :func:`mini_yarn` starts it in a
Java process of its own, waits for its ``READY`` line, yields where its ``yarn-site.xml`` and
``core-site.xml`` are (point ``HADOOP_CONF_DIR`` and ``YARN_CONF_DIR`` there) and what each
NodeManager offers, and stops it at the end: closing its stdin stops the cluster, whose NodeManagers
kill their containers; a process still there after the grace period is killed with its children.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from sweeper.launch.hosts.hadoop_conf import read_hadoop_conf

REPO = Path(__file__).resolve().parents[2]
TARGET = REPO / "deploy" / "yarn" / "target"
JAR = TARGET / "lib" / "sweeper-yarn.jar"
MAIN_CLASS = "sweeper.yarn.MiniYarn"
BUILD_HINT = "build the MiniYARNCluster first: mvn -q -f deploy/yarn/pom.xml package (part of make setup)"


@dataclass(frozen=True)
class YarnCluster:
    """A started MiniYARNCluster."""

    conf_dir: Path
    resource_manager: str
    node_managers: int
    nm_memory_mib: int
    nm_vcores: int
    min_allocation_mib: int
    start_s: float
    pid: int

    @property
    def environment(self) -> dict[str, str]:
        """What a YARN client (Spark, sweeper.yarn.Containers) needs to find this cluster."""
        return {"HADOOP_CONF_DIR": str(self.conf_dir), "YARN_CONF_DIR": str(self.conf_dir)}


def built() -> bool:
    """Whether ``deploy/yarn`` was built (the jar and its classpath)."""
    return JAR.is_file() and (TARGET / "lib").is_dir()


def classpath() -> str:
    """The Java classpath of the MiniYARNCluster: sweeper's jar (first: its log4j.properties keeps stdout for READY),
    then Hadoop 3.5's, in the same directory."""
    return f"{JAR}{os.pathsep}{TARGET / 'lib' / '*'}"


def java() -> str:
    home = os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / "java") if home else (shutil.which("java") or "java")


@contextmanager
def mini_yarn(
    work_dir: Path,
    node_managers: int = 2,
    nm_memory_mib: int = 4096,
    nm_vcores: int = 2,
    min_allocation_mib: int = 128,
    enforce_memory: bool = True,
    timeout_s: float = 120.0,
    log_retain_s: int = 0,
) -> Iterator[YarnCluster]:
    """Start a MiniYARNCluster in ``work_dir``; it and every container it started are gone afterwards."""
    if not built():
        raise FileNotFoundError(f"{JAR} is missing; {BUILD_HINT}")
    work_dir.mkdir(parents=True, exist_ok=True)
    OWN_CLUSTERS.append(work_dir.resolve())
    conf_dir = work_dir / "conf"
    log_path = work_dir / "miniyarn.log"
    command = [
        java(),
        "-Xmx768m",
        # as the namespaced cluster's daemons: without C2 and with one GC thread its start took 8.3 CPU-s instead
        # of 13.4, an idle minute 3.3 instead of 4.1 (one run each; it lives through every YARN test)
        "-XX:TieredStopAtLevel=1",
        "-XX:+UseSerialGC",
        "-Djava.net.preferIPv4Stack=true",
        f"-Djava.io.tmpdir={work_dir}",
        "-cp",
        classpath(),
        MAIN_CLASS,
        str(conf_dir),
        "--node-managers", str(node_managers),
        "--nm-memory-mb", str(nm_memory_mib),
        "--nm-vcores", str(nm_vcores),
        "--min-allocation-mb", str(min_allocation_mib),
        "--enforce-memory", str(enforce_memory).lower(),
        "--timeout-s", str(int(timeout_s)),
        "--log-retain-s", str(log_retain_s),
    ]  # fmt: skip
    started = time.monotonic()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            command, cwd=work_dir, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True
        )
    try:
        facts = _wait_ready(process, timeout_s, log_path)
        cluster = YarnCluster(
            conf_dir=conf_dir,
            resource_manager=facts["rm"],
            node_managers=int(facts["node_managers"]),
            nm_memory_mib=int(facts["nm_memory_mb"]),
            nm_vcores=int(facts["nm_vcores"]),
            min_allocation_mib=int(facts["min_allocation_mb"]),
            start_s=time.monotonic() - started,
            pid=process.pid,
        )
        yield cluster
    finally:
        _stop(process)


def _wait_ready(process: subprocess.Popen[str], timeout_s: float, log_path: Path) -> dict[str, str]:
    assert process.stdout is not None
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(process.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout_s)
    line = lines[0] if lines else ""
    if not line.startswith("READY "):
        _stop(process)
        tail = log_path.read_text(errors="replace")[-3000:] if log_path.exists() else ""
        state = "did not get ready" if reader.is_alive() else f"exited ({process.poll()})"
        raise RuntimeError(f"MiniYARNCluster {state} within {timeout_s:.0f} s; its log ends:\n{tail}")
    return dict(field.split("=", 1) for field in line.split()[1:])


def _stop(process: subprocess.Popen[str], grace_s: float = 30.0) -> None:
    """Close stdin (MiniYarn stops the cluster and exits), then kill the process tree if it lingers."""
    try:
        descendants = psutil.Process(process.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        descendants = []
    with contextlib.suppress(OSError):
        if process.stdin is not None:
            process.stdin.close()
    try:
        process.wait(grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)
    if process.stdout is not None:
        process.stdout.close()
    # containers the NodeManagers could not kill (their own children, reparented when the JVM exited)
    alive = [p for p in descendants if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    for child in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            child.kill()
    psutil.wait_procs(alive, timeout=10)


# what a YARN application leaves when its containers outlive it: Spark's AM and executors, Dask workers
CONTAINER_MARKERS = (
    "org.apache.spark.executor.YarnCoarseGrainedExecutorBackend",
    "org.apache.spark.deploy.yarn.ExecutorLauncher",
    "distributed.cli.dask_worker",
    "sweeper.yarn.ContainersMaster",
)
LIVE_STATES = ("NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING")


OWN_CLUSTERS: list[Path] = []  # the work directories of this test run's clusters (mini_yarn adds each)


def container_processes() -> list[str]:
    """Live processes of YARN containers of this test run: a container marker, run in a NodeManager's appcache
    directory under one of this run's clusters.

    The cwd check keeps Dask workers of other programs on the machine (an SSH test run) and the containers of
    another test run's clusters (a second run on the machine) out.
    """
    own = tuple(str(directory) for directory in OWN_CLUSTERS)
    found = []
    for process in psutil.process_iter(["cmdline", "status", "cwd"]):
        try:
            if process.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            cmdline = " ".join(process.info["cmdline"] or [])
            cwd = process.info["cwd"] or ""
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        ours = not own or cwd.startswith(own)
        if any(marker in cmdline for marker in CONTAINER_MARKERS) and "/appcache/" in cwd and ours:
            found.append(f"{process.pid}: {cmdline[:200]}")
    return found


def assert_no_containers(wait_s: float = 20.0) -> None:
    deadline = time.monotonic() + wait_s
    while (left := container_processes()) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert not left, "containers left running:\n" + "\n".join(left)


def rest(cluster: YarnCluster, path: str) -> Any:
    """A GET of the ResourceManager's REST API (``/ws/v1/cluster`` + ``path``), as JSON."""
    from sweeper.launch.hosts.hadoop_conf import read_hadoop_conf

    url = read_hadoop_conf(cluster.conf_dir, {}).resource_manager_urls()[0]
    with urllib.request.urlopen(f"{url}/ws/v1/cluster{path}", timeout=30) as response:
        return json.load(response)


def applications(cluster: YarnCluster) -> list[dict[str, Any]]:
    """Every application the ResourceManager knows."""
    found: list[dict[str, Any]] = (rest(cluster, "/apps")["apps"] or {}).get("app", [])
    return found


def live_applications(cluster: YarnCluster) -> list[str]:
    """Applications the ResourceManager still runs or is about to run."""
    return [f"{app['id']} {app['name']} {app['state']}" for app in applications(cluster) if app["state"] in LIVE_STATES]


def wait_until_idle(get: Callable[[str], Any], timeout_s: float = 120.0) -> None:
    """Wait until the ResourceManager (``get``: a GET of its REST API) has no container allocated: what an
    earlier test's applications held is released, so a check sizes its probes on the nodes' whole memory."""
    deadline = time.monotonic() + timeout_s
    while (allocated := int(get("/metrics")["clusterMetrics"]["allocatedMB"])) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert allocated == 0, f"{allocated} MiB still allocated after {timeout_s:.0f} s"


def closed_address() -> str:
    """``127.0.0.1:<port>`` of a port nothing listens on (bound, then released)."""
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{unused.getsockname()[1]}"


def with_webapp(yarn: YarnCluster, directory: Path, address: str) -> Path:
    """The mini cluster's configuration with the RM's web address replaced (RPC stays the real RM's)."""
    shutil.copytree(yarn.conf_dir, directory)
    site = directory / "yarn-site.xml"
    text = site.read_text()
    current = read_hadoop_conf(yarn.conf_dir, {}).get("yarn.resourcemanager.webapp.address")
    assert current and current in text
    site.write_text(text.replace(current, address))
    return directory

"""Clusters a user started before a sweep (``manager: standalone``): Spark master + worker, Dask scheduler + workers.

:func:`standalone_clusters` starts them as a user would (``spark-class`` and ``dask`` command lines, on
loopback), waits until both Dask workers are registered, yields their addresses and stops them at the end.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil

SPARK_EXECUTOR = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
DASK_WORKERS = 2


@dataclass(frozen=True)
class StandaloneClusters:
    """The running clusters: where they listen and their own processes."""

    spark_master: str  # spark://127.0.0.1:PORT
    dask_scheduler: str  # tcp://127.0.0.1:PORT
    pids: tuple[int, ...]  # Spark master, Spark worker, Dask scheduler, Dask worker (with its nannies)

    def spark_executors(self) -> list[str]:
        """Live executor JVMs the Spark worker runs for applications (none between launches)."""
        found = []
        for root in self.pids:
            try:
                processes = psutil.Process(root).children(recursive=True)
            except psutil.NoSuchProcess:
                continue
            for process in processes:
                try:
                    cmdline = " ".join(process.cmdline())
                except psutil.Error:
                    continue
                if SPARK_EXECUTOR in cmdline:
                    found.append(f"{process.pid}: {cmdline[:200]}")
        return found

    def dask_workers(self) -> int:
        """How many workers the scheduler has."""
        from distributed import Client

        with Client(self.dask_scheduler, timeout="10s") as client:
            return len(client.scheduler_info(n_workers=-1)["workers"])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_for_port(port: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")


def _commands(spark_port: int, dask_port: int) -> list[list[str]]:
    import pyspark

    spark_class = str(Path(pyspark.__file__).parent / "bin" / "spark-class")
    master = f"spark://127.0.0.1:{spark_port}"
    return [
        [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(spark_port),
         "--webui-port", str(free_port())],
        [spark_class, "org.apache.spark.deploy.worker.Worker", master, "--host", "127.0.0.1", "--cores", "2",
         "--memory", "4g", "--webui-port", str(free_port())],
        [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", str(dask_port),
         "--dashboard-address", "127.0.0.1:0"],
        [sys.executable, "-m", "distributed.cli.dask_worker", f"tcp://127.0.0.1:{dask_port}", "--nworkers",
         str(DASK_WORKERS), "--nthreads", "1", "--memory-limit", "1GiB", "--host", "127.0.0.1", "--no-dashboard"],
    ]  # fmt: skip


@contextmanager
def standalone_clusters(work: Path) -> Iterator[StandaloneClusters]:
    """A Spark master + worker (2 cores, 4 GiB) and a Dask scheduler + 2 workers (1 thread, 1 GiB), logs in ``work``."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_WORKER_DIR": str(work / "spark-work")}
    env["SPARK_LOG_DIR"] = str(work)
    spark_port, dask_port = free_port(), free_port()
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for command in _commands(spark_port, dask_port):
            log = open(work / f"{len(processes)}.log", "w")  # noqa: SIM115 - closed with the process
            processes.append(
                subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            )
            if len(processes) == 1:
                wait_for_port(spark_port)
            if len(processes) == 3:
                wait_for_port(dask_port)
        clusters = StandaloneClusters(
            f"spark://127.0.0.1:{spark_port}", f"tcp://127.0.0.1:{dask_port}", tuple(p.pid for p in processes)
        )
        # Up as a user would see it before a sweep: both workers registered. (Workers still being spawned
        # by their nannies would be new children of this process during a launch, which reaps those.)
        from distributed import Client

        with Client(clusters.dask_scheduler, timeout="60s") as client:
            client.wait_for_workers(DASK_WORKERS, timeout=120)
        yield clusters
    finally:
        for process in reversed(processes):
            os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            process.wait(30)

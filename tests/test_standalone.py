"""``manager: standalone``: sweeps on a Spark master and a Dask scheduler that were already running."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyspark
import pytest
import yaml

from sweeper.config import load as grid_file
from sweeper.planning.plan import make_plan
from sweeper.run import runner
from tests.conftest import minimal_grid
from tests.support.figures import assert_resource_figures

pytestmark = pytest.mark.integration


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


@pytest.fixture(scope="module")
def existing_clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A Spark standalone master + worker and a Dask scheduler + 2 workers, started as a user would."""
    work = tmp_path_factory.mktemp("standalone")
    spark_class = str(Path(pyspark.__file__).parent / "bin" / "spark-class")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_WORKER_DIR": str(work / "spark-work")}
    env["SPARK_LOG_DIR"] = str(work)
    spark_port, dask_port = free_port(), free_port()
    master = f"spark://127.0.0.1:{spark_port}"
    scheduler = f"tcp://127.0.0.1:{dask_port}"
    commands = [
        [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(spark_port),
         "--webui-port", str(free_port())],
        [spark_class, "org.apache.spark.deploy.worker.Worker", master, "--host", "127.0.0.1", "--cores", "2",
         "--memory", "4g", "--webui-port", str(free_port())],
        [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", str(dask_port),
         "--dashboard-address", "127.0.0.1:0"],
        [sys.executable, "-m", "distributed.cli.dask_worker", scheduler, "--nworkers", "2", "--nthreads", "1",
         "--memory-limit", "1GiB", "--host", "127.0.0.1", "--no-dashboard"],
    ]  # fmt: skip
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for command in commands:
            log = open(work / f"{len(processes)}.log", "w")  # noqa: SIM115 - closed with the process
            processes.append(
                subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            )
            if len(processes) == 1:
                wait_for_port(spark_port)
            if len(processes) == 3:
                wait_for_port(dask_port)
        # Up as a user would see it before a sweep: both workers registered. (Workers still being spawned
        # by their nannies would be new children of this process during a launch, which reaps those.)
        from distributed import Client

        with Client(scheduler, timeout="60s") as client:
            client.wait_for_workers(2, timeout=120)
        yield master, scheduler
    finally:
        for process in reversed(processes):
            os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            process.wait(30)


def test_a_sweep_runs_on_existing_clusters_and_leaves_them_running(
    existing_clusters: tuple[str, str], tmp_path: Path
) -> None:
    master, scheduler = existing_clusters
    spec = minimal_grid(name="existing", store=str(tmp_path / "store"))
    spec["cluster"] = {
        "manager": "standalone", "nodes": 1, "cores_per_node": 2, "memory_per_node": "6GiB",
        "spark_master": master, "dask_scheduler": scheduler,
    }  # fmt: skip
    spec["workload"] = {"dataset": "digits", "epochs": [5], "trials": 1}
    spec["baseline"] = False
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(spec))
    plan = make_plan(grid_file.load(path))
    assert [(x.executors, x.cores_per_executor, x.executor_memory_mib) for x in plan.launches] == [(2, 1, 1024)] * 2
    result = runner.run(plan, store=tmp_path / "store")
    assert [(r["engine"], r["status"]) for r in result.rows] == [("spark", "ok"), ("dask", "ok")], result.rows
    assert all(r["granted_executors"] == 2 and r["manager"] == "standalone" for r in result.rows)
    assert_resource_figures(pd.DataFrame(result.rows))
    # the clusters are the user's: still there after the sweep
    from distributed import Client

    with Client(scheduler, timeout="10s") as client:
        assert len(client.scheduler_info()["workers"]) == 2


def test_a_cluster_smaller_than_the_plan_fails_the_launch(existing_clusters: tuple[str, str], tmp_path: Path) -> None:
    master, scheduler = existing_clusters
    spec = minimal_grid(name="too-big", store=str(tmp_path / "store"))
    spec["cluster"] = {
        "manager": "standalone", "nodes": 2, "cores_per_node": 2, "memory_per_node": "6GiB",
        "spark_master": master, "dask_scheduler": scheduler,
    }  # fmt: skip
    spec["workload"] = {"dataset": "digits", "epochs": [5], "trials": 1}
    spec["baseline"] = False
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(spec))
    plan = make_plan(grid_file.load(path))
    # the wait for executors and workers that will never come is kept short
    result = runner.run(plan, store=tmp_path / "store", start_timeout_s=10)
    assert {r["status"] for r in result.rows} == {"failed"}
    errors = " ".join(r["error"] for r in result.rows)
    assert "planned 4 x 1 cores" in errors or "of 4" in errors or "4 x 1" in errors, errors

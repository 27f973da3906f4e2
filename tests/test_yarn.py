"""manager yarn against a real YARN: Hadoop's MiniYARNCluster (deploy/yarn), 2 NodeManagers on loopback.

Spark runs in client mode (driver here, AM and executors in YARN containers); Dask runs its
scheduler here and its workers in containers started by Hadoop's distributedshell. NodeManagers
are local, so containers are checked in the local process table.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from sweeper.datasets import Data, load
from sweeper.engines import dask_yarn, spark_yarn
from sweeper.engines.base import Granted, LaunchContext, LaunchError
from sweeper.fitting import make_batch
from sweeper.grid import Dataset
from sweeper.plan import Launch
from tests.yarn_cluster import BUILD_HINT, YarnCluster, built, mini_yarn

pytestmark = [pytest.mark.integration, pytest.mark.yarn]

# what a YARN application leaves when its containers outlive it: Spark's AM and executors, Dask workers
CONTAINER_MARKERS = (
    "org.apache.spark.executor.YarnCoarseGrainedExecutorBackend",
    "org.apache.spark.deploy.yarn.ExecutorLauncher",
    "distributed.cli.dask_worker",
    "distributedshell.ApplicationMaster",
)


def container_processes() -> list[str]:
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        try:
            if process.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            cmdline = " ".join(process.info["cmdline"] or [])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if any(marker in cmdline for marker in CONTAINER_MARKERS):
            found.append(f"{process.pid}: {cmdline[:200]}")
    return found


def assert_no_containers(wait_s: float = 20.0) -> None:
    deadline = time.monotonic() + wait_s
    while (left := container_processes()) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert not left, "containers left running:\n" + "\n".join(left)


def rest(cluster: YarnCluster, path: str) -> Any:
    address = dask_yarn.yarn_site(cluster.conf_dir)["yarn.resourcemanager.webapp.address"]
    with urllib.request.urlopen(f"http://{address}/ws/v1/cluster{path}", timeout=30) as response:
        return json.load(response)


@pytest.fixture(scope="module")
def yarn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[YarnCluster]:
    if not built():
        if os.environ.get("CI"):
            pytest.fail(BUILD_HINT)
        pytest.skip(BUILD_HINT)
    with mini_yarn(tmp_path_factory.mktemp("miniyarn"), node_managers=2, nm_memory_mib=4096, nm_vcores=2) as cluster:
        yield cluster


@pytest.fixture
def on_yarn(yarn: YarnCluster, monkeypatch: pytest.MonkeyPatch) -> YarnCluster:
    for key, value in yarn.environment.items():
        monkeypatch.setenv(key, value)
    return yarn


@pytest.fixture(scope="module")
def digits() -> Data:
    return load(Dataset("digits"))


def small_launch(engine: str, **changes: Any) -> Launch:
    shape: dict[str, Any] = {"cores_per_executor": 1, "executors": 2, "executor_memory_mib": 512,
                             "memory_overhead_mib": 384}  # fmt: skip
    shape.update(changes)
    return Launch(index=0, engine=engine, manager="yarn", nodes=2, rule="report", workers_per_node=(1, 1), **shape)


def context(tmp_path: Path) -> LaunchContext:
    return LaunchContext(
        run_dir=tmp_path / "run", environment={"OMP_NUM_THREADS": "1"}, threads_per_fit=1, start_timeout_s=120
    )


def test_the_cluster_has_two_node_managers_of_the_asked_size(yarn: YarnCluster) -> None:
    nodes = rest(yarn, "/nodes")["nodes"]["node"]
    assert len(nodes) == 2
    assert {n["state"] for n in nodes} == {"RUNNING"}
    assert {
        (n["usedMemoryMB"] + n["availMemoryMB"], n["usedVirtualCores"] + n["availableVirtualCores"]) for n in nodes
    } == {(4096, 2)}
    assert (yarn.conf_dir / "yarn-site.xml").is_file() and (yarn.conf_dir / "core-site.xml").is_file()


@pytest.mark.parametrize("engine", ["spark", "dask"])
def test_a_launch_on_yarn_is_granted_its_plan_runs_fits_and_leaves_nothing(
    engine: str, on_yarn: YarnCluster, digits: Data, tmp_path: Path
) -> None:
    tasks = make_batch(
        "replicas", {"hidden_layer_sizes": (16,)}, 5, 0, 2, n_train=digits.n_train, labels=digits.y_train,
        folds=2, param_grid=(), seed=0, exact_epochs=False, threads_per_fit=1,
    )  # fmt: skip
    start = spark_yarn.start if engine == "spark" else dask_yarn.start
    with start(small_launch(engine), context(tmp_path)) as session:
        assert session.granted == Granted(2, 1, 512)
        running = rest(on_yarn, "/apps?states=RUNNING")["apps"]["app"]
        assert len(running) == 1
        # AM + 2 containers of 512 + 384 MiB (YARN rounds up to multiples of 128 MiB)
        assert running[0]["runningContainers"] == 3
        results = session.run_batch(tasks, digits)
        assert len({r.pid for r in results}) == 2
        assert all(0 < r.accuracy <= 1 for r in results)
    assert_no_containers()
    states = {app["state"] for app in (rest(on_yarn, "/apps")["apps"] or {}).get("app", [])}
    assert "RUNNING" not in states and "ACCEPTED" not in states


def test_executors_bigger_than_any_node_manager_fail_at_once(on_yarn: YarnCluster, tmp_path: Path) -> None:
    started = time.monotonic()
    too_big = small_launch("spark", executor_memory_mib=5 * 1024)
    with (
        pytest.raises(LaunchError, match=r"above the max threshold \(4096 MB\) of this cluster"),
        spark_yarn.start(too_big, context(tmp_path)),
    ):
        pass
    assert time.monotonic() - started < 60
    assert_no_containers()


def test_an_unknown_queue_fails_at_once(on_yarn: YarnCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWEEPER_YARN_QUEUE", "nosuch")
    with (
        pytest.raises(LaunchError, match=r"unknown queue: nosuch"),
        spark_yarn.start(small_launch("spark"), context(tmp_path)),
    ):
        pass
    assert_no_containers()

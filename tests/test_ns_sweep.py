"""A real sweep on the namespaced Hadoop cluster (tests/support/ns_cluster.py): ``sweeper run`` from its edge.

The nodes are machines of their own (network, PID, mount and UTS namespaces) that see none of the edge's
Pythons, Javas or repository: Hadoop 3.3.6 daemons on Java 11, a JDK 17 at /opt/jdk-17. The grid is
grids/2node.yaml with node sizes this machine holds (no python_archive): the first launch packs this
environment with its own interpreter, the fits run there, Spark's jars come from the cluster's file
system, its containers run on the grid's java_home, and they reach the driver at the edge's address. One sweep
(a module-scoped fixture) serves every assertion: 1 Spark and 1 Dask launch of 3 executors, at most 2 on a node.

The Dask launch runs with a shell busy loop inside sw-node2 (#34; the node with fewer daemons: sw-node1 also holds the
NameNode and ResourceManager). The nodes share this machine's kernel, so ``/proc/stat`` counts every node alike;
each node's busy time is read from what its own ``/proc`` shows (:func:`sweeper.workload.usage.node_busy_s`). The
rows are disturbed, and the worst node, the one whose figures a row holds, is sw-node2: its share of others' CPU is
above sw-node1's (whose own daemons, and on a busy machine whatever else runs, count there as others too, so
sw-node1 is not asserted quiet).

The nodes' /etc/hosts is Debian's, with ``127.0.1.1 <own name>``: ``sweeper check`` rightly names that (a
Spark executor's block manager binds its node's name, so on loopback there, and the other executor's
fetches of broadcast pieces from it are refused: retries, then the driver), and nothing else. The sweep
therefore runs with ``--skip-check``; the check's verdict is asserted on its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import psutil
import pytest
import yaml

from sweeper import load_results
from sweeper.launch.spark.executor_classes import STAGED_NAME
from sweeper.launch.spark.yarn import YARN_EXECUTOR_CLASS
from tests.conftest import REPO
from tests.support.busy import busy_loop_in_node
from tests.support.figures import assert_resource_figures
from tests.support.ns_cluster import FS_SHELL, NODE_JDK17, NsCluster, in_node, init_pid, without_loopback_names
from tests.support.yarn_cluster import wait_until_idle

pytestmark = [pytest.mark.integration, pytest.mark.yarn]

LIVE = ("NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING")
HOG_HOST = "sw-node2"
HOG_LIMIT = 0.1  # the hog took 0.40 core of sw-node2's 2 worker cores (share 0.23) with this machine at load 7


@dataclass
class Sweep:
    grid: Path
    store: Path
    result: subprocess.CompletedProcess[str]
    duration_s: float
    applications: list[dict[str, Any]]  # the sweep's YARN applications, as the RM lists them afterwards
    frame: pd.DataFrame
    hog_in_node: bool  # the busy loop ran in HOG_HOST's PID namespace
    hog_cores: float  # what it used over the sweep
    executors_mapped: dict[int, bool]  # Spark's executor JVMs seen during the sweep: mapped the edge's class archive


def on_edge(
    cluster: NsCluster, argv: list[str], timeout_s: float = 900, cwd: Path = REPO
) -> subprocess.CompletedProcess[str]:
    """``argv`` on the edge, as a user there runs it (:func:`as_edge_user`), to its end."""
    return subprocess.run(as_edge_user(cluster, argv), cwd=cwd, capture_output=True, text=True, timeout=timeout_s)


def as_edge_user(cluster: NsCluster, argv: list[str]) -> list[str]:
    """The command running ``argv`` on the edge as a user there: HADOOP_CONF_DIR set, this session's own cache of packs
    (the environment is packed once per cluster, not shared with other runs)."""
    cache = cluster.directory / "edge-cache"
    return cluster.edge_command(argv, {**cluster.environment, "XDG_CACHE_HOME": str(cache)})


def applications(cluster: NsCluster) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = (cluster.rest("/apps")["apps"] or {}).get("app", [])
    return found


def home_entries(cluster: NsCluster, under: str = "") -> list[str]:
    """The names in the Hadoop user's home (or ``under`` there) on the cluster's file system (``hadoop fs -ls``)."""
    home = f"{cluster.default_fs}/user/root/{under}".rstrip("/")
    done = on_edge(cluster, cluster.java_command(FS_SHELL, "-ls", home), timeout_s=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return sorted(
        line.split()[-1].rsplit("/", 1)[-1] for line in done.stdout.splitlines() if line.startswith(("d", "-"))
    )


def ns_grid(tmp: Path) -> Path:
    """grids/2node.yaml as shipped (no python_archive, no hadoop_conf_dir: the edge's HADOOP_CONF_DIR), with nodes
    this machine can hold, the JDK 17 the nodes have for Spark, and a workload that fits the suite's time: fits long
    enough for the interference readings (> MIN_SPAN_S: 150 epochs took 0.98 s on a busy node, 300 took 0.5 s on a
    quiet machine outside a container), nothing taken again, and its own interference limit.

    2 nodes of 3 cores and 5 GiB, 1 core and 1 GiB reserved: 2 executors x 1 core (1 GiB + 1 GiB) per node, one slot
    for the ApplicationMaster -> 3 executors. The NodeManagers offer what the plan leaves (2 vcores, 4 GiB) and YARN
    counts vcores (DominantResourceCalculator): no node can hold more than 2 executors."""
    grid = yaml.safe_load((REPO / "grids" / "2node.yaml").read_text())
    assert grid["cluster"]["manager"] == "yarn" and "python_archive" not in grid["cluster"]
    grid["name"], grid["store"] = "ns-sweep", str(tmp / "store")
    grid["cluster"] |= {"cores_per_node": 3, "memory_per_node": "5GiB", "java_home": str(NODE_JDK17)}
    grid["sizing"] |= {"cores_per_executor": [1]}
    grid["workload"] = {
        "dataset": "digits", "model": {"hidden_layer_sizes": [64]}, "epochs": [700], "exact_epochs": True,
        "trials": 1, "remeasure_disturbed": 0, "interference_limit": HOG_LIMIT,
    }  # fmt: skip
    grid["baseline"] = False
    path = tmp / "ns-sweep.yaml"
    path.write_text(yaml.safe_dump(grid, sort_keys=False))
    return path


def dask_submitted(cluster: NsCluster, known: set[str]) -> bool:
    return any(app["name"].startswith("sweeper-dask-") for app in applications(cluster) if app["id"] not in known)


@pytest.fixture(scope="module")
def ns_sweep(ns_yarn: NsCluster, tmp_path_factory: pytest.TempPathFactory) -> Sweep:
    """The sweep, Spark's launch then Dask's; the busy loop from Dask's application's submission (before any of its
    fits) to the sweep's end: on 2 cores a hog through Spark's launch too cost the suite ~60 s."""
    tmp = tmp_path_factory.mktemp("ns-sweep")
    grid = ns_grid(tmp)
    known = {app["id"] for app in applications(ns_yarn)}
    node_init = init_pid(next(member for member in ns_yarn.members.values() if member.host == HOG_HOST))
    command = as_edge_user(ns_yarn, [sys.executable, "-m", "sweeper", "run", str(grid), "--skip-check"])
    started = time.monotonic()
    with subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as sweep:
        executors_mapped: dict[int, bool] = {}
        while sweep.poll() is None and not dask_submitted(ns_yarn, known):
            assert time.monotonic() - started < 900, "the sweep never submitted its Dask application"
            executors_mapped |= executor_archive_maps()
            time.sleep(0.5)
        with busy_loop_in_node(node_init) as hog:
            in_node = os.stat(f"/proc/{hog.pid}/ns/pid").st_ino == os.stat(f"/proc/{node_init}/ns/pid").st_ino
            hog_started, hog_start_s = time.monotonic(), sum(hog.cpu_times()[:2])
            stdout, stderr = sweep.communicate(timeout=900)
            hog_cores = (sum(hog.cpu_times()[:2]) - hog_start_s) / max(time.monotonic() - hog_started, 1e-9)
    result = subprocess.CompletedProcess(command, sweep.returncode, stdout, stderr)
    duration_s = time.monotonic() - started
    ours = [app for app in applications(ns_yarn) if app["id"] not in known]
    frame = load_results(tmp / "store") if (tmp / "store").exists() else pd.DataFrame()
    columns = ["engine", "status", "cluster_start_s", "fit_wall_s", "interference_cpu_share", "interference_host"]
    summary = frame[columns].to_dict("records") if len(frame) else []
    print(f"\nns sweep: cluster started in {ns_yarn.start_s:.1f} s; sweep {duration_s:.1f} s with a hog of "
          f"{hog_cores:.2f} cores on {HOG_HOST} from Dask's submission; rows {summary}")  # fmt: skip
    return Sweep(grid, tmp / "store", result, duration_s, ours, frame, in_node, hog_cores, executors_mapped)


def executor_archive_maps() -> dict[int, bool]:
    """Spark's executor JVMs running now (in the nodes' PID namespaces, seen from here): has each mapped the class
    archive the edge staged (the node's localized copy, :data:`sweeper.launch.spark.executor_classes.STAGED_NAME`)?"""
    found = {}
    for process in psutil.process_iter(["cmdline"]):
        if YARN_EXECUTOR_CLASS in (process.info["cmdline"] or []):
            try:
                maps = Path(f"/proc/{process.pid}/maps").read_text()
            except OSError:  # gone meanwhile
                continue
            found[process.pid] = f"/{STAGED_NAME}" in maps
    return found


def test_the_sweep_exits_0_with_an_ok_row_per_engine(ns_sweep: Sweep) -> None:
    result = ns_sweep.result
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-6000:]
    frame = ns_sweep.frame
    assert sorted(frame["engine"]) == ["dask", "spark"]
    assert set(frame["status"]) == {"ok"}, frame[["engine", "error"]].to_dict("records")
    assert set(frame["manager"]) == {"yarn"}
    assert ((frame["accuracy"] > 0) & (frame["accuracy"] <= 1)).all()


def test_spark_executors_map_the_classes_archived_on_the_edge(ns_sweep: Sweep) -> None:
    """#38: the grid's cluster.java_home is the edge's Java too: every executor maps Spark's classes archived there."""
    assert ns_sweep.executors_mapped, "no Spark executor JVM was seen on the nodes during the sweep"
    assert all(ns_sweep.executors_mapped.values()), ns_sweep.executors_mapped


def test_a_hog_inside_one_node_is_attributed_to_that_node(ns_sweep: Sweep) -> None:
    """#34: the Dask launch's workers on both nodes read each node's interference; the row holds the worst node's."""
    assert ns_sweep.hog_in_node
    dask = ns_sweep.frame[ns_sweep.frame["engine"] == "dask"]
    figures = dask[["fit_wall_s", "interference_cpu_share", "interference_host", "disturbed"]].to_dict("records")
    assert len(dask) == 1 and set(dask["status"]) == {"ok"}, figures
    assert set(dask["interference_host"]) == {HOG_HOST}, (ns_sweep.hog_cores, figures)
    assert dask["disturbed"].all(), (ns_sweep.hog_cores, figures)


def test_granted_is_planned(ns_sweep: Sweep) -> None:
    frame = ns_sweep.frame
    assert len(frame) == 2
    assert (frame["granted_executors"] == frame["executors"]).all() and (frame["executors"] == 3).all()
    assert (frame["granted_cores_per_executor"] == frame["cores_per_executor"]).all()
    assert (frame["granted_executor_memory_gib"] == frame["executor_memory_gib"]).all()
    assert_resource_figures(frame)  # measured in the containers, on the nodes


def test_the_fits_ran_on_both_nodes_from_a_driver_on_the_edge(ns_yarn: NsCluster, ns_sweep: Sweep) -> None:
    frame = ns_sweep.frame
    assert set(frame["host"]) == {ns_yarn.edge_name}  # the driver's host
    # the fits ran in the executors' Python processes (a fit that ends frees its slot before the last is placed:
    # Spark and Dask may give it the next fit, so not necessarily one process per executor)
    assert frame["worker_pids"].between(1, 3).all(), frame[["engine", "worker_pids"]].to_dict("records")
    runs = [app for app in ns_sweep.applications if "sweeper-check" not in app["name"]]
    assert len(runs) == 2, [(app["name"], app["state"]) for app in ns_sweep.applications]
    for app in runs:  # each application's containers ran on the cluster's nodes, never on the edge
        hosts = set(ns_yarn.container_logs(app["id"]))
        assert hosts == set(ns_yarn.nodes), (app["name"], hosts)  # the AM and 3 executors need both nodes' vcores
        environment = json.loads(frame["fit_environment"].iloc[0])
        assert environment  # the fits' environment was recorded


def test_nothing_of_the_sweep_is_left_on_the_cluster(ns_yarn: NsCluster, ns_sweep: Sweep) -> None:
    ids = {app["id"] for app in ns_sweep.applications}
    deadline = time.monotonic() + 60
    while True:
        live = [(app["id"], app["state"]) for app in applications(ns_yarn) if app["id"] in ids and app["state"] in LIVE]
        if not live or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert not live
    # the YARN client as the sweeper uses it, from the edge: no live application tagged sweeper
    code = (
        "from pathlib import Path; from sweeper.launch.hosts.hadoop_conf import read_hadoop_conf; "
        "from sweeper.launch.hosts.yarn_client import YarnClient; "
        f"conf = read_hadoop_conf(Path({str(ns_yarn.conf_dir)!r})); "
        "print([a.app_id for a in YarnClient(conf).applications('sweeper')])"
    )
    listed = on_edge(ns_yarn, [sys.executable, "-c", code], timeout_s=300)
    assert listed.returncode == 0, listed.stderr[-3000:]
    assert listed.stdout.strip().splitlines()[-1] == "[]"
    # no container process on the nodes: each node's processes are its init and daemons only
    deadline = time.monotonic() + 30
    while True:
        containers = container_processes(ns_yarn)
        if not containers or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert not containers
    # on HDFS: the staged Spark jars and archive stay for the next sweep; each application's own staging is gone
    assert set(home_entries(ns_yarn)) <= {".sweeper", ".sparkStaging"}


def test_spark_jars_and_the_archive_are_staged_once_and_timed_apart_from_the_start(
    ns_yarn: NsCluster, ns_sweep: Sweep
) -> None:
    """#20: the archive is staged once per sweep, by its first launch, and both engines' applications take it
    from there (Dask's before used distributedshell, which uploaded it into every application, untimed)."""
    staged = home_entries(ns_yarn, ".sweeper")
    assert any(name.startswith("spark-jars-") for name in staged) and [n for n in staged if n.startswith("env-")]
    assert not [name for name in staged if ".partial-" in name]
    first, later = (launch.iloc[0] for _, launch in ns_sweep.frame.groupby("launch_index", sort=True))
    assert first["staging_s"] > 0 and first["cluster_start_s"] > 0  # the sweep's first launch staged the archive
    assert later["staging_s"] == 0  # the other engine's launch found it there
    assert {first["engine"], later["engine"]} == {"spark", "dask"}


def test_each_node_keeps_one_public_copy_of_what_both_engines_ship(ns_yarn: NsCluster, ns_sweep: Sweep) -> None:
    """#38: the staged files are readable by everyone, so Spark's applications and the Containers ApplicationMaster
    (Dask's workers) both name them as public YARN resources: each node downloaded and unpacked the environment, Spark's
    jars and pyspark's Python zips once, into its NodeManager's public cache, and no application kept a private copy."""
    shipped = {"environment.tar.gz", "spark-jars.zip", "pyspark.zip"}
    for host in ns_yarn.nodes:
        local = ns_yarn.node_dir(host) / "nm-local"
        public = [path.name for path in (local / "filecache").glob("*/*")]
        private = [  # a user's private files, and each application's own
            path.name
            for pattern in ("*/filecache/*/*", "*/appcache/*/filecache/*/*")
            for path in (local / "usercache").glob(pattern)
            if path.name in shipped
        ]
        assert sorted(name for name in public if name in shipped) == sorted(shipped), (host, public)
        assert not private, (host, private)


def container_processes(cluster: NsCluster) -> list[str]:
    """Processes on the nodes other than their inits, daemon JVMs and the shells that run them: what containers left."""
    import psutil

    daemons = list(cluster.daemons().values())
    keep = {process.pid for process in daemons} | set(cluster.root_pids)
    for process in daemons:  # the init and the shells between it and each daemon
        with contextlib.suppress(psutil.NoSuchProcess):
            keep |= {parent.pid for parent in process.parents()}
    left = []
    for root in cluster.root_pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            for process in psutil.Process(root).children(recursive=True):
                with contextlib.suppress(psutil.NoSuchProcess):
                    if process.pid not in keep and process.status() != psutil.STATUS_ZOMBIE:
                        left.append(f"{process.pid}: {' '.join(process.cmdline())[:200]}")
    return left


def test_check_from_the_edge_probes_both_nodes_and_names_only_their_loopback_names(
    ns_yarn: NsCluster, ns_sweep: Sweep
) -> None:
    wait_until_idle(ns_yarn.rest)  # the sweep's containers released: each node has room for one probe
    done = on_edge(ns_yarn, [sys.executable, "-m", "sweeper", "check", str(ns_sweep.grid), "--json"], timeout_s=600)
    report = json.loads(done.stdout[done.stdout.index("{") :])
    names = {node["id"] for node in ns_yarn.rest("/nodes")["nodes"]["node"]}  # sw-node1:8041, ...
    problems = {(check["check"], check["node"]) for check in report["checks"] if not check["ok"]}
    assert problems == {("host-name", name) for name in names}, report["checks"]
    assert done.returncode == 2
    for check in ("environment", "python", "sweeper", "driver-reachable"):  # the probe ran on each node, came back
        assert {c["node"] for c in report["checks"] if c["check"] == check and c["ok"]} == names, check
    assert report["default_fs"] == ns_yarn.default_fs
    assert not [name for name in home_entries(ns_yarn) if name.startswith("sweeper-check-")]  # its staging

    # the same cluster without the 127.0.1.1 lines: healthy, and the check says so
    with without_loopback_names(ns_yarn):
        healthy = on_edge(ns_yarn, [sys.executable, "-m", "sweeper", "check", str(ns_sweep.grid)], timeout_s=600)
    assert healthy.returncode == 0, healthy.stdout[-3000:] + healthy.stderr[-3000:]
    assert not [line for line in healthy.stdout.splitlines() if line.startswith("PROBLEM")], healthy.stdout


@contextlib.contextmanager
def without_jdk17(cluster: NsCluster, host: str) -> Iterator[None]:
    """For the block, ``host`` has no JDK 17 (an empty directory over /opt/jdk-17 in its mount namespace)."""
    member = next(m for m in cluster.members.values() if m.host == host)
    in_node(member, "mount", "-t", "tmpfs", "-o", "ro,size=4k", "no-jdk", str(NODE_JDK17))
    try:
        yield
    finally:
        in_node(member, "umount", str(NODE_JDK17))


def test_planted_faults_are_named_by_check_and_by_the_failed_rows_log_file(
    ns_yarn: NsCluster, ns_sweep: Sweep, tmp_path: Path
) -> None:
    """No JDK 17 on a node and a NodeManager too small for the plan: ``sweeper check`` names both (node, path,
    need and capacity); the sweep's Spark launch then fails at start with its executors there dying, and its row
    names the file holding the containers' logs, which show why."""
    wait_until_idle(ns_yarn.rest)
    grid = yaml.safe_load(ns_sweep.grid.read_text())
    big = {**grid, "name": "ns-faults", "store": str(tmp_path / "store"), "engines": ["spark"]}
    big["cluster"] = {**grid["cluster"], "memory_per_node": "9GiB"}  # 2 x (3 GiB + 1 GiB) a node: 8 GiB > 4 GiB
    (tmp_path / "big.yaml").write_text(yaml.safe_dump(big, sort_keys=False))
    faulty = {**grid, "name": "ns-faults", "store": str(tmp_path / "store"), "engines": ["spark"]}
    faulty["workload"] = {**grid["workload"], "start_timeout_s": 60}
    # the application fails at its first dead executor: Spark would otherwise start executors on sw-node2 again and
    # again (6 deaths, ~30 s) before giving up
    faulty["spark_conf"] = {"spark.executor.maxNumFailures": 1}
    (tmp_path / "faulty.yaml").write_text(yaml.safe_dump(faulty, sort_keys=False))
    with without_jdk17(ns_yarn, "sw-node2"):
        started = time.monotonic()
        checked = on_edge(ns_yarn, [sys.executable, "-m", "sweeper", "check", str(tmp_path / "big.yaml"), "--json"])
        check_s = time.monotonic() - started
        run = [sys.executable, "-m", "sweeper", "run", str(tmp_path / "faulty.yaml"), "--skip-check"]
        swept = on_edge(ns_yarn, run)
    print(f"\nplanted faults: sweeper check {check_s:.1f} s; the failing sweep exited {swept.returncode}")
    report = json.loads(checked.stdout[checked.stdout.index("{") :])
    problems = {(c["check"], c["node"]): c["detail"] for c in report["checks"] if not c["ok"]}
    java = [detail for (check, node), detail in problems.items() if check == "java" and node.startswith("sw-node2")]
    assert java and f"install a JDK 17+ at {NODE_JDK17}" in java[0], report["checks"]
    assert not [node for check, node in problems if check == "java" and node.startswith("sw-node1")]
    capacity = [detail for (check, _), detail in problems.items() if check == "node-capacity"]
    assert capacity and "has 4.0 GiB" in capacity[0], report["checks"]
    assert checked.returncode == 2 and check_s < 300  # a probe application: bounded, not a hang
    assert swept.returncode == 3, swept.stdout[-3000:] + swept.stderr[-3000:]  # a launch that did not start
    row = load_results(tmp_path / "store").iloc[0]
    assert row["status"] == "failed" and row["error"].startswith("launch did not start")
    logs = re.search(r"\(logs: ([^)]*)\)", row["error"])
    assert logs, row["error"]
    containers = [Path(p) for p in logs.group(1).split(", ") if p.endswith("-containers.log")]
    assert containers and containers[0].is_file(), row["error"]
    text = containers[0].read_text()
    assert "sw-node2" in text and f"{NODE_JDK17}/bin/java" in text, text[-3000:]

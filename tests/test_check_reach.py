"""``sweeper check`` (issue #33, items 5 and 9): a plan whose node outgrows every NodeManager is named, a
ResourceManager that is not there is named in seconds (DNS, refused or timed out, at the address actually tried),
and an SSH grid whose hosts do not resolve still has every host checked.

The per-node check runs against the session's MiniYARNCluster (2 NodeManagers of 4 GiB and 2 vcores); the
ResourceManagers that are not there are names under ``.invalid`` (RFC 6761: never resolve) and closed ports of
this machine's loopback; no stub stands in for a ResourceManager.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sweeper.launch.hosts.hadoop_conf import HadoopConf, read_hadoop_conf
from sweeper.planning.plan import Launch
from sweeper.preflight.capacity import NodeCapacity, capacity_problem, node_capacity, node_needs
from sweeper.preflight.reach import CONNECT_TIMEOUT_S, resource_managers
from sweeper.preflight.report import Preflight
from sweeper.preflight.yarn import _reachable
from tests.conftest import minimal_grid, run_cli
from tests.support.hadoop_sites import site
from tests.support.sshd import Sshd
from tests.support.yarn_cluster import YarnCluster, rest, wait_until_idle
from tests.test_check import checks, failed, ssh_grid, yarn_grid

QUICK_S = 60.0  # far below the 120 s and more the Java client's retries took, with room for a slow machine


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port: int = unused.getsockname()[1]
    return port


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port whose listener never accepts and whose backlog is full: a connect gets no answer."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(0)
        port: int = server.getsockname()[1]
        queued = [socket.socket() for _ in range(3)]
        for client in queued:
            client.setblocking(False)
            client.connect_ex(("127.0.0.1", port))
        time.sleep(0.2)
        try:
            yield port
        finally:
            for client in queued:
                client.close()


def timed_check(grid: Path) -> tuple[dict[str, Any], float]:
    started = time.monotonic()
    result = run_cli("check", str(grid), "--json")
    took_s = time.monotonic() - started
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    return checks(result), took_s


# --- per-node capacity ---------------------------------------------------------------------------------------------


def launch(**fields: Any) -> Launch:
    """5 + 4 executors x 4 cores x 12 GiB (+ 1 GiB overhead) on 2 nodes, one slot held back for the AM."""
    shape = dict(index=3, engine="spark", manager="yarn", nodes=2, rule="report", cores_per_executor=4, executors=9,
                 executor_memory_mib=12 * 1024, memory_overhead_mib=1024, workers_per_node=(4, 5))  # fmt: skip
    return Launch(**{**shape, **fields})


def test_node_capacity_is_read_from_either_form_of_the_nodes_api() -> None:
    new = {"id": "sw-node1:8041", "totalResource": {"memory": 16384, "vCores": 8}, "availMemoryMB": 1024}
    old = {"id": "sw-node2:8041", "availMemoryMB": 12288, "usedMemoryMB": 4096, "availableVirtualCores": 6,
           "usedVirtualCores": 2}  # fmt: skip
    assert node_capacity(new) == NodeCapacity("sw-node1:8041", 16384, 8)  # Hadoop 3.3+
    assert node_capacity(old) == NodeCapacity("sw-node2:8041", 16384, 8)  # available + used
    assert node_capacity({"id": "sw-node3:8041"}) is None


def test_a_node_of_the_plan_that_no_node_manager_holds_is_named_with_its_need_and_the_largest() -> None:
    big = launch()
    needs = node_needs(big, am_mib=896, step_mib=1024)  # the first node holds a slot back: the AM goes there
    assert [(n.executors, n.memory_mib, n.vcores, n.application_master) for n in needs] == [
        (4, 4 * 13 * 1024 + 1024, 17, True), (5, 5 * 13 * 1024, 20, False),
    ]  # fmt: skip
    small = [NodeCapacity("sw-node1:8041", 16384, 8), NodeCapacity("sw-node2:8041", 8192, 8)]
    assert capacity_problem(big, needs, small) == (
        "launch 3, spark: 5 executors x 4 cores x 12 GiB (+ 1024 MiB overhead each) needs 65.0 GiB and 20 vcores "
        "on one node; the largest NodeManager (sw-node1:8041) has 16.0 GiB and 8 vcores"
    )
    one_big = [NodeCapacity("sw-node1:8041", 128 * 1024, 32), *small]
    assert capacity_problem(big, needs, one_big) == (
        "launch 3, spark: 4 executors x 4 cores x 12 GiB (+ 1024 MiB overhead each, + the ApplicationMaster) needs "
        "53.0 GiB and 17 vcores on one node, on 2 nodes; only 1 NodeManager has that much (sw-node1:8041)"
    )
    assert capacity_problem(big, needs, [*one_big, NodeCapacity("sw-node4:8041", 64 * 1024, 24)]) is None
    # memory is not all: a node with room but too few vcores does not hold the layout
    assert "has 128.0 GiB and 16 vcores" in str(capacity_problem(big, needs, [NodeCapacity("n:1", 128 * 1024, 16)]))


def test_without_held_back_slots_the_plan_places_no_application_master_and_requests_are_rounded_up() -> None:
    even = launch(executors=4, workers_per_node=(2, 2), executor_memory_mib=1000, memory_overhead_mib=384)
    needs = node_needs(even, am_mib=896, step_mib=512)
    assert [(n.memory_mib, n.application_master) for n in needs] == [(2 * 1536, False), (2 * 1536, False)]


@pytest.mark.integration
@pytest.mark.yarn
def test_a_plan_too_big_for_one_node_manager_but_within_the_cluster_is_named(yarn: YarnCluster, tmp_path: Path) -> None:
    # one node of 2 executors x 1 core x 2 GiB (+ 1 GiB overhead): 6 GiB on one node, 2 NodeManagers of 4 GiB (8 in all)
    wait_until_idle(lambda path: rest(yarn, path))
    grid = yarn_grid(yarn.conf_dir, tmp_path, nodes=1, cores_per_node=3, memory_per_node="7GiB")
    report, _ = timed_check(grid)
    problems = failed(report)
    assert ("queue", None) not in problems, problems  # the cluster's total holds it
    detail = problems[("node-capacity", None)]
    node_ids = {node["id"] for node in rest(yarn, "/nodes")["nodes"]["node"]}
    assert "2 executors x 1 core x 2 GiB" in detail and "needs 6.0 GiB and 2 vcores on one node" in detail, detail
    assert any(f"the largest NodeManager ({node}) has 4.0 GiB and 2 vcores" in detail for node in node_ids), detail
    assert not [c for c in report["checks"] if c["check"] == "node-capacity" and c["ok"]]


# --- a ResourceManager that is not there ---------------------------------------------------------------------------


def conf_with(tmp_path: Path, properties: dict[str, str]) -> Path:
    return site(tmp_path / f"conf-{uuid.uuid4().hex[:6]}", "yarn-site.xml", properties)


def test_the_rpc_addresses_follow_the_ha_ids_as_the_web_urls_do(tmp_path: Path) -> None:
    ha = read_hadoop_conf(conf_with(tmp_path, {
        "yarn.resourcemanager.ha.enabled": "true", "yarn.resourcemanager.ha.rm-ids": "rm1,rm2",
        "yarn.resourcemanager.hostname.rm1": "sw-rm1.invalid", "yarn.resourcemanager.address.rm2": "rm2.lan:9032",
        "yarn.resourcemanager.webapp.address.rm2": "rm2.lan:9088",
    }), {})  # fmt: skip
    assert ha.resource_manager_addresses() == ["sw-rm1.invalid:8032", "rm2.lan:9032"]
    assert ha.resource_manager_urls() == ["http://sw-rm1.invalid:8088", "http://rm2.lan:9088"]
    assert ha.scheduler_addresses() == ["sw-rm1.invalid:8030", "rm2.lan:8030"]
    one = read_hadoop_conf(conf_with(tmp_path, {"yarn.resourcemanager.hostname": "rm.lan"}), {})
    assert one.resource_manager_addresses() == ["rm.lan:8032"] and one.scheduler_addresses() == ["rm.lan:8030"]


def test_ha_resource_managers_whose_names_do_not_resolve_are_named_as_such_in_seconds(tmp_path: Path) -> None:
    conf = conf_with(tmp_path, {
        "yarn.resourcemanager.ha.enabled": "true", "yarn.resourcemanager.ha.rm-ids": "rm1,rm2",
        "yarn.resourcemanager.hostname.rm1": "sw-rm1.invalid", "yarn.resourcemanager.hostname.rm2": "sw-rm2.invalid",
    })  # fmt: skip
    report, took_s = timed_check(yarn_grid(conf, tmp_path))
    assert took_s < QUICK_S, f"sweeper check took {took_s:.0f} s"
    lines = [c["detail"] for c in report["checks"] if c["check"] == "resource-manager"]
    assert len(lines) == 2 and all(not c["ok"] for c in report["checks"] if c["check"] == "resource-manager")
    for rm_id, line in zip(("rm1", "rm2"), lines, strict=True):
        assert line.startswith(f"{rm_id}: sw-{rm_id}.invalid: name does not resolve"), line
        assert f"RPC sw-{rm_id}.invalid:8032" in line and f"web http://sw-{rm_id}.invalid:8088" in line, line
        assert "refused" not in line, line
    text = "\n".join(lines)
    for rm_id in ("rm1", "rm2"):  # each address named once
        for url in (f"sw-{rm_id}.invalid:8032", f"http://sw-{rm_id}.invalid:8088"):
            assert text.count(url) == 1, text
    assert {c["check"] for c in report["checks"]} == {"java", "hadoop-conf", "kerberos", "resource-manager", "load"}


def test_a_resource_manager_on_a_closed_port_is_named_refused_at_the_port_tried(tmp_path: Path) -> None:
    rpc, web = closed_port(), closed_port()
    conf = conf_with(tmp_path, {
        "yarn.resourcemanager.hostname": "127.0.0.1", "yarn.resourcemanager.address": f"127.0.0.1:{rpc}",
        "yarn.resourcemanager.webapp.address": f"127.0.0.1:{web}",
    })  # fmt: skip
    report, took_s = timed_check(yarn_grid(conf, tmp_path))
    assert took_s < QUICK_S, f"sweeper check took {took_s:.0f} s"
    detail = failed(report)[("resource-manager", None)]
    assert f"RPC 127.0.0.1:{rpc} refused the connection" in detail, detail
    assert f"web http://127.0.0.1:{web} refused the connection" in detail, detail
    assert "does not resolve" not in detail and "no ResourceManager reachable" in detail


def test_a_port_that_never_answers_is_named_timed_out_within_the_bound(tmp_path: Path, silent_port: int) -> None:
    conf = read_hadoop_conf(conf_with(tmp_path, {
        "yarn.resourcemanager.address": f"127.0.0.1:{silent_port}",
        "yarn.resourcemanager.webapp.address": f"127.0.0.1:{closed_port()}",
    }), {})  # fmt: skip
    assert isinstance(conf, HadoopConf)
    started = time.monotonic()
    (manager,) = resource_managers(conf)
    assert time.monotonic() - started < 2 * CONNECT_TIMEOUT_S + 1
    assert not manager.reachable
    assert manager.rpc.problem == f"RPC 127.0.0.1:{silent_port}: no answer within 5 s (timed out)"
    assert manager.web.problem is not None and "refused" in manager.web.problem


def test_a_scheduler_address_out_of_reach_warns_where_the_application_master_runs_in_the_driver(
    tmp_path: Path,
) -> None:
    """Spark's ApplicationMaster runs in the driver and registers at the scheduler address: a closed one is a
    warning naming the way back to a container, only where an ApplicationMaster runs in the driver (not for Dask's,
    nor for Spark's where the grid puts it in a container)."""
    scheduler = closed_port()
    with socket.socket() as rpc, socket.socket() as web:
        for server in (rpc, web):
            server.bind(("127.0.0.1", 0))
            server.listen()
        conf = read_hadoop_conf(conf_with(tmp_path, {
            "yarn.resourcemanager.address": f"127.0.0.1:{rpc.getsockname()[1]}",
            "yarn.resourcemanager.webapp.address": f"127.0.0.1:{web.getsockname()[1]}",
            "yarn.resourcemanager.scheduler.address": f"127.0.0.1:{scheduler}",
        }), {})  # fmt: skip
        with_spark, dask_only = Preflight(), Preflight()
        assert _reachable(with_spark, conf, am_in_driver=True) and _reachable(dask_only, conf, am_in_driver=False)
    (warned,) = [check for check in with_spark.checks if check.check == "rm-scheduler"]
    assert warned.ok and warned.warning, warned
    assert f"scheduler 127.0.0.1:{scheduler} refused the connection" in warned.detail, warned.detail
    assert "spark.yarn.unmanagedAM.enabled: false" in warned.detail
    assert not [check for check in dask_only.checks if check.check == "rm-scheduler"]


# --- SSH hosts whose names do not resolve --------------------------------------------------------------------------


def test_an_ssh_grid_whose_hosts_do_not_resolve_names_every_host(tmp_path: Path) -> None:
    hosts = ["sw-node1.invalid", "sw-node2.invalid", "sw-node3.invalid"]
    spec = minimal_grid(cluster={"manager": "ssh", "hosts": hosts, "cores_per_node": 2, "memory_per_node": "8GiB"})
    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump(spec, sort_keys=False))
    report, _ = timed_check(grid)
    problems = failed(report)
    assert "cannot resolve" in problems[("driver-address", None)]
    for host in hosts:
        assert host in problems[("reachable", host)] and "resolve" in problems[("reachable", host)], problems


@pytest.mark.integration
def test_a_host_that_does_not_resolve_leaves_the_others_checked_in_full(sshd: Sshd, tmp_path: Path) -> None:
    report, _ = timed_check(ssh_grid(sshd, tmp_path, hosts=["sw-node1.invalid", sshd.host]))
    problems = failed(report)
    assert set(problems) == {("reachable", "sw-node1.invalid")}, problems
    assert "Could not resolve hostname sw-node1.invalid" in problems[("reachable", "sw-node1.invalid")]
    passed = {c["check"] for c in report["checks"] if c["ok"] and c["node"] == sshd.host}
    assert {"reachable", "environment", "python", "sweeper", "driver-reachable", "java"} <= passed, report

    # a driver address that is not this machine's: no way back, but the host is still checked
    away = ssh_grid(sshd, tmp_path, ssh={**sshd.ssh_options(), "driver_host": "10.231.253.1"})
    report, _ = timed_check(away)
    assert set(failed(report)) == {("driver-address", None)}, failed(report)
    assert {"reachable", "environment", "python", "sweeper"} <= {c["check"] for c in report["checks"] if c["node"]}

"""``sweeper check``: healthy clusters pass, and every planted fault is named (exit 2, nothing measured).

SSH runs against the session's sshd; YARN against the session's MiniYARNCluster. The ResourceManager
answers that a real cluster gives rarely (a 401 from its REST API) come from a stub HTTP server,
named as such below; everything else is the real thing.
"""

from __future__ import annotations

import http.server
import json
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sweeper.launch.hosts.hadoop_conf import read_hadoop_conf
from sweeper.launch.hosts.yarn_client import YarnClient
from sweeper.preflight.report import Preflight
from sweeper.preflight.yarn import PROBE_MEMORY_MIB, probe_memory_mib
from tests.conftest import REPO, minimal_grid, run_cli
from tests.support.hadoop_sites import site
from tests.support.sshd import Sshd
from tests.support.yarn_cluster import YarnCluster, assert_no_containers, rest, wait_until_idle, with_webapp
from tests.test_yarn_client import ha_conf_dir, sleeping_application, wait_for_state


def checks(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def failed(report: dict[str, Any]) -> dict[tuple[str, str | None], str]:
    return {(c["check"], c["node"]): c["detail"] for c in report["checks"] if not c["ok"]}


def test_the_json_names_every_check_and_what_the_configuration_resolved_to() -> None:
    found = Preflight(resource_manager="http://rm:8088", default_fs="hdfs://nn:8020")
    found.add("python", "node1", True, "3.11")
    found.add("sweeper", "node2", False, "source differs")
    found.warn("load", None, "this machine is busy")
    report = json.loads(found.as_json())
    assert report == {
        "ok": False,
        "checks": [
            {"check": "python", "node": "node1", "ok": True, "detail": "3.11", "warning": False},
            {"check": "sweeper", "node": "node2", "ok": False, "detail": "source differs", "warning": False},
            {"check": "load", "node": None, "ok": True, "detail": "this machine is busy", "warning": True},
        ],
        "resource_manager": "http://rm:8088",
        "default_fs": "hdfs://nn:8020",
    }
    assert found.lines() == [
        "ok      node1  python: 3.11",
        "PROBLEM node2  sweeper: source differs",
        "warning -      load: this machine is busy",
    ]
    assert Preflight(found.checks[2:]).ok  # a warning is no problem: check exits 0


def test_kerberos_is_refused_before_anything_starts(write_grid: Any, tmp_path: Path) -> None:
    conf = site(tmp_path / "conf", "core-site.xml", {"hadoop.security.authentication": "kerberos"})
    site(conf, "yarn-site.xml", {"yarn.resourcemanager.hostname": "rm.lan"})
    grid = minimal_grid(
        cluster={"manager": "yarn", "nodes": 2, "cores_per_node": 2, "memory_per_node": "8GiB",
                 "hadoop_conf_dir": str(conf)},
    )  # fmt: skip
    path = write_grid(grid)
    result = run_cli("check", str(path), "--json")
    assert result.returncode == 2, result.stderr
    assert "Kerberos" in failed(checks(result))[("hadoop-conf", None)]
    run = run_cli("run", str(path), "--store", str(tmp_path / "store"))
    assert run.returncode == 2 and "Kerberos" in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "store").exists() or not any((tmp_path / "store").rglob("*.parquet"))


# --- SSH ------------------------------------------------------------------------------------------------------------


def ssh_grid(sshd: Sshd, tmp_path: Path, **cluster: Any) -> Path:
    spec = minimal_grid(
        name="checked",
        cluster={"manager": "ssh", "hosts": [sshd.host], "ssh": sshd.ssh_options(), "cores_per_node": 2,
                 "memory_per_node": "8GiB", **cluster},
        store=str(tmp_path / "store"),
    )  # fmt: skip
    path = tmp_path / f"grid-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def python_with_other_sweeper(tmp_path: Path) -> Path:
    """An interpreter that imports a copy of sweeper with one line changed: other fit code on the host."""
    copy = tmp_path / "other"
    shutil.copytree(REPO / "sweeper", copy / "sweeper", ignore=shutil.ignore_patterns("__pycache__"))
    fit = copy / "sweeper" / "workload" / "fit.py"
    fit.write_text(fit.read_text() + "\n# changed on this host only\n")
    wrapper = tmp_path / "python"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH={copy} exec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


@pytest.mark.integration
def test_ssh_check_passes_on_a_healthy_host_and_names_each_planted_fault(sshd: Sshd, tmp_path: Path) -> None:
    healthy = run_cli("check", str(ssh_grid(sshd, tmp_path)), "--json")
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    report = checks(healthy)
    assert report["ok"] is True
    names = {(c["check"], c["node"]) for c in report["checks"]}
    for check in ("reachable", "environment", "python", "sweeper", "host-name", "driver-reachable", "java"):
        assert (check, sshd.host) in names, check

    missing = run_cli("check", str(ssh_grid(sshd, tmp_path, python="/nonexistent/venv/bin/python")), "--json")
    assert missing.returncode == 2
    assert "/nonexistent/venv/bin/python" in failed(checks(missing))[("environment", sshd.host)]

    other = run_cli("check", str(ssh_grid(sshd, tmp_path, python=str(python_with_other_sweeper(tmp_path)))), "--json")
    assert other.returncode == 2
    assert "differs from the driver's" in failed(checks(other))[("sweeper", sshd.host)]

    # an address that is not this machine's: nodes could never connect back to it
    away = ssh_grid(sshd, tmp_path, ssh={**sshd.ssh_options(), "driver_host": "10.231.253.1"})
    nowhere = run_cli("check", str(away), "--json")
    assert nowhere.returncode == 2
    assert "10.231.253.1" in failed(checks(nowhere))[("driver-address", None)]

    text = run_cli("check", str(ssh_grid(sshd, tmp_path, python="/nonexistent/venv/bin/python")))
    assert text.returncode == 2 and "Traceback" not in text.stderr
    assert any(line.startswith("PROBLEM") and "environment" in line for line in text.stdout.splitlines())


# --- YARN -----------------------------------------------------------------------------------------------------------


def yarn_grid(conf_dir: Path, tmp_path: Path, memory: str = "3GiB", **cluster: Any) -> Path:
    spec = minimal_grid(
        name="checked",
        cluster={"manager": "yarn", "nodes": 2, "cores_per_node": 2, "memory_per_node": memory,
                 "hadoop_conf_dir": str(conf_dir), **cluster},
        sizing={"cores_per_executor": [1], "reserve": {"cores": 1, "memory": "1GiB"}, "application_master": 0},
        store=str(tmp_path / "store"),
    )  # fmt: skip
    path = tmp_path / f"grid-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


class Refusing(http.server.BaseHTTPRequestHandler):
    """STUB ResourceManager REST API (not a real RM): answers every request 401, as one behind SPNEGO does."""

    def do_GET(self) -> None:
        self.send_response(401, "Authentication required")
        self.send_header("WWW-Authenticate", "Negotiate")
        self.end_headers()

    def log_message(self, *_: Any) -> None:
        return


@pytest.fixture
def refusing_rest() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_probe_container_is_sized_so_that_every_node_holds_exactly_one() -> None:
    size_mib = probe_memory_mib([4096, 4096], step_mib=1024, largest_mib=8192, room_mib=8192)
    assert size_mib == 3072  # above half of 4096 at the scheduler's step, and room for the AM's 1024 beside it
    assert probe_memory_mib([4096, 4096], step_mib=256, largest_mib=8192, room_mib=None) == 2304
    assert probe_memory_mib([8192, 2048], 1024, 8192, None) == PROBE_MEMORY_MIB  # 4097+ fits no 2048 node
    assert probe_memory_mib([4096, 4096], 1024, 2048, None) == PROBE_MEMORY_MIB  # over the largest container
    assert probe_memory_mib([4096, 4096], 1024, 8192, 6144) == PROBE_MEMORY_MIB  # two of 3072 + AM over the queue


@pytest.mark.integration
@pytest.mark.yarn
def test_yarn_check_passes_on_the_mini_cluster_and_names_each_planted_fault(
    yarn: YarnCluster, tmp_path: Path, refusing_rest: str
) -> None:
    wait_until_idle(lambda path: rest(yarn, path))  # an earlier test's containers released: every node has room
    healthy = run_cli("check", str(yarn_grid(yarn.conf_dir, tmp_path)), "--json")
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    report = checks(healthy)
    assert report["resource_manager"].startswith(("http://127.0.0.1:", "http://localhost:"))
    assert report["default_fs"].startswith("file:")
    probed = {c["node"] for c in report["checks"] if c["check"] == "sweeper" and c["ok"]}
    running = {node["id"] for node in rest(yarn, "/nodes")["nodes"]["node"]}
    assert len(running) == 2 and probed == running, report["checks"]  # every NodeManager ran the probe
    assert {c["node"] for c in report["checks"] if c["check"] == "driver-reachable" and c["ok"]} == probed
    scheduler = [c for c in report["checks"] if c["check"] == "rm-scheduler"]  # Spark's AM, run by the driver
    assert [(c["ok"], c.get("warning")) for c in scheduler] == [(True, False)], scheduler
    fits = [c["detail"] for c in report["checks"] if c["check"] == "node-capacity"]  # 1 x 1 core x 2 GiB per node
    assert len(fits) == 1 and "the busiest needs 2.0 GiB and 1 vcore;" in fits[0], report["checks"]

    ha = run_cli("check", str(yarn_grid(ha_conf_dir(yarn, tmp_path / "ha"), tmp_path)), "--json")
    assert ha.returncode == 0, ha.stdout + ha.stderr  # rm1 down: the client and REST fail over to rm2

    too_big = run_cli("check", str(yarn_grid(yarn.conf_dir, tmp_path, memory="64GiB")), "--json")
    assert too_big.returncode == 2
    assert "wait ACCEPTED for ever" in failed(checks(too_big))[("queue", None)]

    refused = run_cli("check", str(yarn_grid(with_webapp(yarn, tmp_path / "stub", refusing_rest), tmp_path)), "--json")
    assert refused.returncode == 2
    assert "401" in failed(checks(refused))[("queue", None)]

    # an orphan: a launch's application (the sweeper's own containers client, as a Dask launch submits its workers)
    # whose client was killed with SIGKILL, as by a kill of `sweeper run`. Its containers sleep for 10 minutes: a real
    # Dask launch's workers end 60 s after their scheduler (`--death-timeout`), which a busy machine's two checks
    # outlasted
    conf = read_hadoop_conf(yarn.conf_dir, {})
    client = YarnClient(conf)
    name = f"sweeper-dask-0-{uuid.uuid4().hex[:8]}"
    submitter = sleeping_application(conf, name, tmp_path)
    try:
        assert wait_for_state(client, name, ("RUNNING",)) == ["RUNNING"]
        submitter.kill()
        submitter.wait(30)
        (orphan,) = client.applications(name)
        grid = yarn_grid(yarn.conf_dir, tmp_path)
        found = run_cli("check", str(grid), "--json")
        assert found.returncode == 2 and orphan.app_id in failed(checks(found))[("orphans", None)]
        assert [app.state for app in client.applications(name)] == ["RUNNING"]  # named, not killed
        killed = run_cli("check", str(grid), "--json", "--kill-orphans")
        assert orphan.app_id in {c["check"]: c["detail"] for c in checks(killed)["checks"]}["orphans"]
        assert wait_for_state(client, name, ("KILLED",)) == ["KILLED"]
    finally:
        submitter.kill()
        client.kill_tagged(name)
    deadline = time.monotonic() + 60
    while client.applications("sweeper") and time.monotonic() < deadline:
        time.sleep(1)
    assert client.applications("sweeper") == []
    assert_no_containers()

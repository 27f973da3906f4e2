"""A Ray cluster for the tests (``ray start`` processes of this test run), and Ray's processes left by a launch.

:func:`ray_cluster` starts a head without work and worker nodes of the given shape as the local launch
does (sweeper.launch.ray.nodes), each waited for in turn, its pids marked as a shared cluster's
(tests/support/leftovers.py) while it runs; it is stopped (SIGTERM, then kill) with its temp dir.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil

from sweeper.launch.ray.auth import drive_with_cluster_auth
from sweeper.launch.ray.nodes import head_arguments, start_command, this_environment, worker_arguments
from sweeper.launch.ray.processes import NodeProcess, head_address, stop_nodes
from tests.support.leftovers import RUN_VARIABLE, in_shared_cluster, shared_cluster

STARTED_LINE = "Ray runtime started."  # what ray start prints once its node registered with the head
# on the command lines of a Ray node's processes: ray start, GCS, raylet, the agents, monitors and workers
RAY_MARKERS = ("ray.scripts.scripts", "ray start", "gcs_server", "/raylet", "ray::", "ray/dashboard/", "ray/_private/")


@dataclass
class RayCluster:
    """A running Ray cluster: the address of its head's GCS, its nodes' ``ray start`` processes."""

    address: str
    nodes: list[NodeProcess]

    def alive(self) -> bool:
        return all(node.ended() is None for node in self.nodes)


@contextmanager
def ray_cluster(
    log_dir: Path, workers: int, cores: int, memory_mib: int, timeout_s: float = 120.0
) -> Iterator[RayCluster]:
    """A head and ``workers`` nodes of ``cores`` CPUs and ``memory_mib`` each, on this machine, for the block."""
    temp_dir = Path(tempfile.mkdtemp(prefix="sweeper-ray-test-"))
    drive_with_cluster_auth()  # as a user of a token-authenticated cluster exports its token for the driver
    environment = this_environment({"OMP_NUM_THREADS": "1"})
    command = start_command(sys.executable)
    nodes: list[NodeProcess] = []
    try:
        nodes.append(NodeProcess([*command, *head_arguments(str(temp_dir))], environment, log_dir / "ray-head.log"))
        address = head_address(nodes[0], temp_dir, timeout_s)
        for index in range(workers):
            arguments = worker_arguments(address, cores, memory_mib)
            nodes.append(NodeProcess([*command, *arguments], environment, log_dir / f"ray-node-{index + 1}.log"))
            wait_for_line(nodes[-1], STARTED_LINE, timeout_s)
        with shared_cluster(node.process.pid for node in nodes):
            yield RayCluster(address, nodes)
    finally:
        stop_nodes(nodes)
        shutil.rmtree(temp_dir, ignore_errors=True)


def wait_for_line(node: NodeProcess, line: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while line not in node.log.read_text(errors="replace"):
        assert node.ended() is None, node.ended()
        assert time.monotonic() < deadline, f"no {line!r} in {node.log} within {timeout_s:.0f} s"
        time.sleep(0.2)


def ray_processes() -> list[str]:
    """Command lines of live Ray processes this test run started or orphaned (not a shared cluster's)."""
    me, run = os.getpid(), os.environ.get(RUN_VARIABLE)
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        try:
            if process.info["status"] == psutil.STATUS_ZOMBIE or in_shared_cluster(process):
                continue
            cmdline = " ".join(process.info["cmdline"] or [])
            if not any(marker in cmdline for marker in RAY_MARKERS):
                continue
            orphan = process.ppid() == 1 and process.environ().get(RUN_VARIABLE) in (None, run)
            if orphan or me in {parent.pid for parent in process.parents()}:
                found.append(f"{process.pid}: {cmdline[:200]}")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def assert_no_ray_processes(wait_s: float = 15.0) -> None:
    """Fail if Ray processes of this run are still alive after ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while (left := ray_processes()) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert not left, "Ray processes left running:\n" + "\n".join(left)

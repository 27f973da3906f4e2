"""Engine ``ray`` on ``manager: ssh``: a Ray cluster started over SSH for each launch.

The first host runs the head (no work: ``--num-cpus 0``); every host runs one worker node per executor the plan
places there (``--num-cpus`` its cores, ``--memory`` its memory), as Dask's SSH launch runs its workers. Each
node binds the host's address as the driver resolves it, on ports of Ray's choice (0: free ones), so two
launches on one host never meet. Ray's driver attaches to a raylet of its own machine: a node without work
(``--num-cpus 0``) started here, bound to the driver's address on the route to the hosts, joins the head
first, and the joblib ``ray`` backend runs through it. Teardown ends the driver's node here and every node on
the hosts (:mod:`sweeper.launch.ray.remote`), then removes the launch's directories.
"""

from __future__ import annotations

import secrets
import shlex
import shutil
import sys
import tempfile
import time
from collections import Counter
from functools import partial
from pathlib import Path

import ray

from sweeper.launch.base import LaunchError
from sweeper.launch.hosts.ssh import check_host, cluster_of, driver_address, on_hosts, resolve, run_remote
from sweeper.launch.lifecycle import Teardown
from sweeper.launch.ray.base import RayBackend
from sweeper.launch.ray.nodes import (
    ADDRESS_FILE,
    EVERY_NODE,
    HEAD_OBJECT_STORE_MIB,
    head_arguments,
    node_environment,
    start_command,
    this_environment,
    worker_arguments,
)
from sweeper.launch.ray.processes import NodeProcess, stop_nodes, wait_started
from sweeper.launch.ray.remote import RemoteNodes, check_ray_version, check_socket_room
from sweeper.launch.ray.session import granted_nodes

LIVENESS_S = 2.0  # while nodes join, how often the hosts are asked whether their ray start still runs
POLL_S = 0.2


def driver_node_arguments(address: str, driver_ip: str, temp_dir: str) -> list[str]:
    """The driver's own node: no work, bound to ``driver_ip``, holding what the driver puts (the training data).

    >>> driver_node_arguments("10.0.0.2:6379", "10.0.0.1", "/tmp/x")[:3]
    ['--address=10.0.0.2:6379', '--num-cpus=0', '--num-gpus=0']
    """
    return [
        f"--address={address}",
        "--num-cpus=0",
        "--num-gpus=0",
        "--memory=0",
        f"--object-store-memory={HEAD_OBJECT_STORE_MIB * 1024 * 1024}",
        f"--temp-dir={temp_dir}",
        f"--node-ip-address={driver_ip}",
        *EVERY_NODE,
    ]


class SshRay(RayBackend):
    """A head and worker nodes started over SSH on the hosts, the driver's node here; all gone at the end."""

    def check(self) -> None:
        cluster = self.cluster = cluster_of(self.launch, self.context)
        hosts = list(cluster.hosts)

        def check_one(host_and_kind: str) -> None:  # the environment and Ray's version, each host at once
            host, kind = host_and_kind.rsplit(" ", 1)
            if kind == "environment":
                check_host(host, cluster.options, cluster.python, java=None)
            else:
                check_ray_version(host, cluster)

        on_hosts([f"{host} {kind}" for host in hosts for kind in ("environment", "ray")], check_one)
        token = secrets.token_hex(8)
        scratch = f"{cluster.remote_dir.rstrip('/')}/sweeper-ray-{self.launch.index}-{token}"
        check_socket_room(scratch)
        self.remote = RemoteNodes(cluster, token, scratch)
        self.addresses = [resolve(host) for host in hosts]

    def connect(self, teardown: Teardown) -> str:
        """The head on the first host, then the driver's node here while each host starts its first worker node;
        the head's GCS address."""
        remote, hosts = self.remote, list(self.cluster.hosts)
        teardown.add_checked(remote.stop)
        on_hosts(hosts, self._make_scratch)
        remote.start(hosts[0], head_arguments(remote.scratch, self.addresses[0]), {})
        address = remote.head_address(hosts[0], ADDRESS_FILE, self.context.start_timeout_s)
        self.driver_ip = driver_address(self.cluster)
        temp_dir = Path(tempfile.mkdtemp(prefix="sweeper-ray-"))
        teardown.add(partial(shutil.rmtree, temp_dir, ignore_errors=True))
        driver_node: list[NodeProcess] = []
        teardown.add_checked(partial(stop_nodes, driver_node))
        command = [*start_command(sys.executable), *driver_node_arguments(address, self.driver_ip, str(temp_dir))]
        driver_node.append(NodeProcess(command, this_environment({}), self.scratch / "ray-driver-node.log"))
        self._start_round(address, 0)
        wait_started(driver_node[0], self.context.start_timeout_s)
        return address

    def add_nodes(self, teardown: Teardown, address: str) -> None:
        """Round by round (the first one started with the driver's node), one worker node more on each host that
        has one more planned: two nodes of one host never start at once."""
        for round_index in range(max(self.launch.workers_per_node)):
            hosts = self._start_round(address, round_index) if round_index else self._round(0)
            self._wait_for(sum(min(n, round_index + 1) for n in self.launch.workers_per_node), hosts)

    def _round(self, round_index: int) -> list[str]:
        """The hosts with a worker node in round ``round_index``."""
        counts = zip(self.cluster.hosts, self.launch.workers_per_node, strict=True)
        return [host for host, count in counts if count > round_index]

    def _start_round(self, address: str, round_index: int) -> list[str]:
        """Start round ``round_index``'s worker nodes (one per host at once); their hosts."""
        launch, environment = self.launch, node_environment({}, self.context.environment)

        def start(host: str) -> None:
            arguments = worker_arguments(
                address, launch.cores_per_executor, launch.executor_memory_mib, resolve(host), self.remote.scratch
            )
            self.remote.start(host, arguments, environment)

        hosts = self._round(round_index)
        on_hosts(hosts, start)
        return hosts

    def _wait_for(self, count: int, hosts: list[str]) -> None:
        """Until ``count`` worker nodes joined; a LaunchError when a node on ``hosts`` ended, or at timeout."""
        deadline = time.monotonic() + self.context.start_timeout_s
        asked = time.monotonic()
        while granted_nodes(ray.nodes()).executors < count:
            if time.monotonic() - asked > LIVENESS_S:
                asked = time.monotonic()
                ended = [why for why in on_hosts(hosts, self.remote.ended) if why is not None]
                if ended:
                    raise LaunchError(f"ray: a worker node did not start: {ended[0]}")
            if time.monotonic() > deadline:
                raise LaunchError(f"ray: {count} worker node(s) not up within {self.context.start_timeout_s:.0f} s")
            time.sleep(POLL_S)

    def check_placement(self) -> None:
        """Each host runs the planned number of worker nodes (Ray names a node by its address)."""
        workers = [n for n in ray.nodes() if n.get("Alive") and n["Resources"].get("CPU", 0) > 0]
        per_address = Counter(str(node["NodeManagerAddress"]) for node in workers)
        placed = tuple(per_address.get(address, 0) for address in self.addresses)
        if placed != tuple(self.launch.workers_per_node):
            layout = ", ".join(f"{host}: {n}" for host, n in zip(self.cluster.hosts, placed, strict=True))
            planned = " + ".join(map(str, self.launch.workers_per_node))
            raise LaunchError(f"ray worker nodes placed {layout}; planned {planned}")

    def _make_scratch(self, host: str) -> None:
        scratch = self.remote.scratch
        status, _, err = run_remote(host, f"mkdir -p -m 700 -- {shlex.quote(scratch)}", self.cluster.options)
        if status != 0:
            raise LaunchError(f"host {host}: cannot create {scratch} ({err.strip()})")

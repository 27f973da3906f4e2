"""What every manager's Ray launch does alike: the driver's connection, the grant, the session."""

from __future__ import annotations

import logging
import time
from abc import abstractmethod
from collections.abc import Callable

import ray

from sweeper.launch.base import Granted, LaunchError
from sweeper.launch.lifecycle import ManagerBackend, Teardown
from sweeper.launch.ray.auth import drive_with_cluster_auth
from sweeper.launch.ray.session import RaySession, granted_nodes

POLL_S = 0.2  # how often the grant is looked at while the nodes join


class RayBackend(ManagerBackend):
    """The driver connected to a Ray cluster; a manager says where the head and the worker nodes come from."""

    engine = "ray"
    driver_ip: str | None = None  # the address of the driver's node, when other nodes of the cluster run here too
    starts_nodes = True  # the launch starts its cluster's nodes: they and the driver run with cluster_auth()

    @abstractmethod
    def connect(self, teardown: Teardown) -> str:
        """Start or reach the cluster's head; the address the driver connects to."""

    def add_nodes(self, teardown: Teardown, address: str) -> None:
        """Start the worker nodes, with the driver connected (it sees each join)."""

    def start(self, teardown: Teardown) -> None:
        self.teardown = teardown
        if self.starts_nodes:
            drive_with_cluster_auth()  # the local nodes inherit it
        address = self.connect(teardown)
        if ray.is_initialized():  # a launch before this one left its connection: never reuse another cluster
            ray.shutdown()
        try:
            ray.init(
                address=address,
                logging_level=logging.ERROR,
                log_to_driver=False,
                configure_logging=False,
                _node_ip_address=self.driver_ip,
            )
        except (ConnectionError, RuntimeError, ValueError) as error:
            raise LaunchError(f"ray: could not connect to {address}: {error}") from error
        teardown.add(ray.shutdown)
        self.add_nodes(teardown, address)

    def wait_for_nodes(self, count: int, started: Callable[[], str | None]) -> None:
        """Until ``count`` worker nodes joined; a LaunchError when ``started`` says why a node ended, or at timeout."""
        deadline = time.monotonic() + self.context.start_timeout_s
        while granted_nodes(ray.nodes()).executors < count:
            if (why := started()) is not None:
                raise LaunchError(f"ray: a worker node did not start: {why}")
            if time.monotonic() > deadline:
                raise LaunchError(f"ray: {count} worker node(s) not up within {self.context.start_timeout_s:.0f} s")
            time.sleep(POLL_S)

    def granted(self) -> Granted:
        """What the cluster's worker nodes give, once the planned number joined (or the start timeout passed)."""
        deadline = time.monotonic() + self.context.start_timeout_s
        while (granted := granted_nodes(ray.nodes())).executors < self.launch.executors:
            if time.monotonic() > deadline:
                break
            time.sleep(POLL_S)
        return granted

    def session(self, granted: Granted, n_jobs: int) -> RaySession:
        session = RaySession(granted, n_jobs, self.context.threads_per_fit)
        self.teardown.add(session.close)
        return session

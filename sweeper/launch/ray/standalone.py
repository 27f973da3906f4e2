"""Engine ``ray`` on ``manager: standalone``: the driver connected to a Ray cluster that is already running.

The cluster's address is the grid's ``cluster.ray_address`` (``HOST:PORT`` of the head's GCS). Ray's driver
attaches to a raylet of its own machine, so this machine must be a node of that cluster (``ray start --address
HEAD --num-cpus 0`` here makes it one without work: only nodes with CPUs count as executors). Nothing is started
or stopped: the launch connects, checks that the cluster's worker nodes (those with CPUs) match the plan (a
mismatch fails the launch), runs its batches and disconnects; its actors end with the connection. The nodes'
environment is the cluster's own, so the fit environment is observed and recorded per row, not set.
"""

from __future__ import annotations

from sweeper.launch.base import LaunchError
from sweeper.launch.lifecycle import Teardown
from sweeper.launch.options import StandaloneOptions
from sweeper.launch.ray.base import RayBackend


class StandaloneRay(RayBackend):
    """A driver of the Ray cluster at ``cluster.ray_address``; the nodes and their environment are the cluster's."""

    starts_nodes = False  # its authentication is the user's environment's

    def check(self) -> None:
        options = self.context.options
        if not isinstance(options, StandaloneOptions) or not options.ray_address:
            raise LaunchError("manager standalone needs cluster.ray_address (HOST:PORT of a Ray head) in the grid")
        self.address = options.ray_address

    def connect(self, teardown: Teardown) -> str:
        return self.address

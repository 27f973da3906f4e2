"""Engine ``ray`` on ``manager: standalone``: the driver connected to a Ray cluster that is already running.

The cluster's address is Ray's own ``RAY_ADDRESS`` (``HOST:PORT`` of the head's GCS), set where the sweep
runs: the grid has no key for it yet. Ray's driver attaches to a raylet of its own machine, so this machine
must be a node of that cluster (``ray start --address HEAD --num-cpus 0`` here makes it one without work: only
nodes with CPUs count as executors). Nothing is started or stopped: the launch connects, checks that
the cluster's worker nodes (those with CPUs) match the plan (a mismatch fails the launch), runs its
batches and disconnects; its actors end with the connection. The nodes' environment is the cluster's
own, so the fit environment is observed and recorded per row, not set.
"""

from __future__ import annotations

import os

from sweeper.launch.base import LaunchError
from sweeper.launch.lifecycle import Teardown
from sweeper.launch.ray.base import RayBackend

ADDRESS_VARIABLE = "RAY_ADDRESS"


class StandaloneRay(RayBackend):
    """A driver of the Ray cluster at ``RAY_ADDRESS``; the nodes and their environment are the cluster's own."""

    def check(self) -> None:
        address = os.environ.get(ADDRESS_VARIABLE, "").strip()
        if not address:
            raise LaunchError(
                f"engine ray on manager standalone connects to the cluster at {ADDRESS_VARIABLE} (HOST:PORT of its "
                "head), which is not set"
            )
        self.address = address

    def connect(self, teardown: Teardown) -> str:
        return self.address

"""Engine ``ray`` on ``manager: local``: a Ray cluster of the launch's shape on this machine.

A head without work and one worker node per executor (``num_cpus`` = its cores, ``memory`` = its memory),
each a real ``ray start --block`` process with its own raylet, all this launch's children: teardown
stops them (SIGTERM, then kill), never ``ray stop``, which would end every Ray cluster on the machine.
Their sessions and sockets live in a short temp dir of the launch's own (Unix socket paths are short).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from functools import partial
from pathlib import Path

from sweeper.launch.lifecycle import Teardown
from sweeper.launch.ray.base import RayBackend
from sweeper.launch.ray.nodes import head_arguments, start_command, this_environment, worker_arguments
from sweeper.launch.ray.processes import NodeProcess, head_address, stop_nodes


class LocalRay(RayBackend):
    """A head and ``executors`` worker nodes, started here with the sweeper's interpreter and fit environment."""

    nodes: list[NodeProcess]

    def connect(self, teardown: Teardown) -> str:
        self.nodes = []
        temp_dir = Path(tempfile.mkdtemp(prefix="sweeper-ray-"))
        teardown.add(partial(shutil.rmtree, temp_dir, ignore_errors=True))
        environment = this_environment(self.context.environment)
        command = start_command(sys.executable)
        teardown.add_checked(partial(stop_nodes, self.nodes))
        head = NodeProcess([*command, *head_arguments(str(temp_dir))], environment, self.scratch / "ray-head.log")
        self.nodes.append(head)
        return head_address(head, temp_dir, self.context.start_timeout_s)

    def add_nodes(self, teardown: Teardown, address: str) -> None:
        """One worker node after the other: two raylets of one machine starting at once may time out."""
        launch = self.launch
        command = [*start_command(sys.executable)]
        command += worker_arguments(address, launch.cores_per_executor, launch.executor_memory_mib)
        environment = this_environment(self.context.environment)
        for index in range(launch.executors):
            node = NodeProcess(command, environment, self.scratch / f"ray-node-{index + 1}.log")
            self.nodes.append(node)
            self.wait_for_nodes(index + 1, node.ended)

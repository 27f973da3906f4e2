"""``ray start --block`` processes started on this machine: each node's processes are its children until it ends."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import psutil

from sweeper.launch.base import LaunchError
from sweeper.launch.hosts.processes import kill_tree
from sweeper.launch.ray.nodes import ADDRESS_FILE

STOP_GRACE_S = 20.0  # after SIGTERM, how long ``ray start`` may take to end its node's processes
POLL_S = 0.1
LOG_TAIL_CHARS = 2000
STARTED_LINE = "Ray runtime started."  # what ray start prints once its node joined the cluster


class NodeProcess:
    """One ``ray start --block`` (a head or a worker node), its output in ``log``."""

    def __init__(self, command: list[str], environment: dict[str, str], log: Path) -> None:
        self.log = log
        with open(log, "ab") as out:
            self.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=environment
            )

    def ended(self) -> str | None:
        """None while it runs; else why it ended, with the end of its output."""
        if self.process.poll() is None:
            return None
        tail = self.log.read_text(errors="replace")[-LOG_TAIL_CHARS:]
        return f"ray start ended with {self.process.returncode}:\n{tail}"


def head_address(head: NodeProcess, temp_dir: Path, timeout_s: float) -> str:
    """HOST:PORT of the head's GCS, once the head wrote it; a LaunchError if the head ends or the time passes."""
    deadline = time.monotonic() + timeout_s
    written = temp_dir / ADDRESS_FILE
    while not (written.exists() and (address := written.read_text().strip())):
        if (why := head.ended()) is not None:
            raise LaunchError(f"ray: the head did not start: {why}")
        if time.monotonic() > deadline:
            raise LaunchError(f"ray: the head did not start within {timeout_s:.0f} s (log: {head.log})")
        time.sleep(POLL_S)
    return address


def wait_started(node: NodeProcess, timeout_s: float) -> None:
    """Until ``ray start`` says its node joined the cluster; a LaunchError if it ends or the time passes."""
    deadline = time.monotonic() + timeout_s
    while STARTED_LINE not in node.log.read_text(errors="replace"):
        if (why := node.ended()) is not None:
            raise LaunchError(f"ray: a node did not start: {why}")
        if time.monotonic() > deadline:
            raise LaunchError(f"ray: a node did not start within {timeout_s:.0f} s (log: {node.log})")
        time.sleep(POLL_S)


def stop_nodes(nodes: list[NodeProcess]) -> list[str]:
    """SIGTERM to each ``ray start`` (it ends its node's processes), then kill what is left; what had to be killed."""
    trees = {}
    for node in nodes:
        try:
            root = psutil.Process(node.process.pid)
            trees[node.process.pid] = [root, *root.children(recursive=True)]
            root.terminate()
        except psutil.NoSuchProcess:
            continue
    everything = [process for tree in trees.values() for process in tree]
    _, alive = psutil.wait_procs(everything, timeout=STOP_GRACE_S)
    for process in alive:
        kill_tree(process.pid, grace_s=0.0)
    for node in nodes:
        node.process.wait()
    if not alive:
        return []
    return [f"ray: killed {len(alive)} process(es) still running {STOP_GRACE_S:.0f} s after ray start was stopped"]

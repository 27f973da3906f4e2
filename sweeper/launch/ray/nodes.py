"""The ``ray start`` command lines of a launch's head and worker nodes, as every manager that starts them writes them.

The head runs no fits (``--num-cpus 0 --memory 0``); each worker node is one executor: ``--num-cpus`` its
cores and ``--memory`` its memory (a resource Ray schedules by, not a limit it enforces). Every port is
Ray's choice of a free one (``--port 0``, the agents' ports 0, its workers' ports 0 rather than the range
10002-19999 every node would share) so that clusters of two runs on one machine never meet;
the object store is small and explicit (a quarter of a node's memory, at least Ray's minimum); no node runs a log
monitor (the driver does not read the nodes' logs).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from sweeper.names import UNSET_BY_DEFAULT

BYTES_PER_MIB = 1024 * 1024
OBJECT_STORE_MIN_MIB = 80  # Ray refuses an object store under 75 MiB
HEAD_OBJECT_STORE_MIB = 128  # the head holds what the driver puts (the training data), then the nodes copy it
# ports every node takes free (0): its workers' (else the range 10002-19999 of every node), the dashboard agent's
FREE_PORTS = ("--min-worker-port=0", "--max-worker-port=0", "--dashboard-agent-listen-port=0")
# The driver reads no node's logs (``ray.init(log_to_driver=False)``): no node runs the log monitor that would tail
# them for it, polling every log file beside the fits (3 monitors ~1 CPU-s over a 9-s local launch of 2 nodes)
NO_LOG_MONITOR = "--include-log-monitor=false"
EVERY_NODE = (NO_LOG_MONITOR, *FREE_PORTS)  # on every node's command line, whatever its role
ADDRESS_FILE = "ray_current_cluster"  # in the head's temp dir: HOST:PORT of its GCS once it is up


def start_command(python: str) -> list[str]:
    """``ray start`` run by ``python`` (the sweeper's interpreter), in the foreground: its nodes are its children."""
    return [python, "-m", "ray.scripts.scripts", "start", "--block", "--disable-usage-stats"]


def head_arguments(temp_dir: str, node_ip: str | None = None) -> list[str]:
    """A head without work on any free port, its sessions and sockets under ``temp_dir`` (keep it short)."""
    arguments = [
        "--head",
        "--port=0",
        "--num-cpus=0",
        "--num-gpus=0",
        "--memory=0",
        f"--object-store-memory={HEAD_OBJECT_STORE_MIB * BYTES_PER_MIB}",
        f"--temp-dir={temp_dir}",
        "--include-dashboard=false",
        *EVERY_NODE,
    ]
    return arguments + ([f"--node-ip-address={node_ip}"] if node_ip else [])


def worker_arguments(
    address: str, cores: int, memory_mib: int, node_ip: str | None = None, temp_dir: str | None = None
) -> list[str]:
    """One executor: a worker node of ``cores`` CPUs and ``memory_mib`` of memory, joining the head at ``address``
    (its sessions and sockets under ``temp_dir``, else Ray's default)."""
    arguments = [
        f"--address={address}",
        f"--num-cpus={cores}",
        "--num-gpus=0",
        f"--memory={memory_mib * BYTES_PER_MIB}",
        f"--object-store-memory={_object_store_mib(memory_mib) * BYTES_PER_MIB}",
        *EVERY_NODE,
    ]
    arguments += [f"--node-ip-address={node_ip}"] if node_ip else []
    return arguments + ([f"--temp-dir={temp_dir}"] if temp_dir else [])


def _object_store_mib(memory_mib: int) -> int:
    """A worker node's object store: a quarter of its memory, at least Ray's minimum.

    >>> _object_store_mib(512), _object_store_mib(4096)
    (128, 1024)
    """
    return max(OBJECT_STORE_MIN_MIB, memory_mib // 4)


def node_environment(base: Mapping[str, str], fit_environment: Mapping[str, str]) -> dict[str, str]:
    """The nodes' environment, which their worker processes inherit: ``base`` with the fit environment.

    >>> node_environment({"MALLOC_TRIM_THRESHOLD_": "0", "HOME": "/h"}, {"OMP_NUM_THREADS": "1"})["OMP_NUM_THREADS"]
    '1'
    """
    variables = {name: value for name, value in base.items() if name not in UNSET_BY_DEFAULT}
    variables.update(fit_environment)
    variables["RAY_USAGE_STATS_ENABLED"] = "0"
    return variables


def this_environment(fit_environment: Mapping[str, str]) -> dict[str, str]:
    """:func:`node_environment` from this process's own environment."""
    return node_environment(os.environ, fit_environment)

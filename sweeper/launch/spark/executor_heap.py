"""The executors' heaps, read on their own nodes by Spark tasks: the one module a Python worker imports for it.

A task's Python worker unpickles :func:`own_executor_heap` by importing this module, so it imports nothing
beyond the standard library and :mod:`sweeper.workload.usage` (from :mod:`sweeper.launch.spark.session`, the
worker imported joblib, numpy and the planner: 0.27-0.46 s of a YARN launch's start).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any


def heap_mib(cmdline: list[str]) -> int:
    """A JVM's ``-Xmx`` in MiB (0 without one).

    >>> heap_mib(["java", "-Xmx2g", "-cp", "x"]), heap_mib(["java", "-Xmx1536m"]), heap_mib(["java"])
    (2048, 1536, 0)
    """
    for argument in cmdline:
        match = re.fullmatch(r"-Xmx(\d+)([mMgG])", argument)
        if match:
            return int(match.group(1)) * (1024 if match.group(2) in "gG" else 1)
    return 0


def own_executor_heap(_: Iterable[int]) -> Iterator[tuple[str, str, int, int]]:
    """In a Spark task: (node, machine, pid, heap MiB) of the executor JVM running it, read on its own node.

    The node is the container's NodeManager on YARN (:func:`sweeper.workload.usage.node_manager`).
    """
    import os
    from pathlib import Path

    from sweeper.workload.usage import executor_jvm, machine, node_manager

    jvm = executor_jvm(os.getpid())
    if jvm is not None:
        arguments = Path(f"/proc/{jvm}/cmdline").read_bytes().decode(errors="replace").split("\0")
        yield node_manager(), machine(), jvm, heap_mib(arguments)


def executor_heaps(spark: Any, executors: int, cores: int, rounds: int = 3) -> dict[tuple[str, str, int], int]:
    """The heap (-Xmx, MiB) of each of the application's executor JVMs, keyed by (node, machine, pid).

    Each is read by a task on its own node: small tasks spread over every slot; a round that did not
    reach every executor is repeated with more of them. Nothing is read from this machine.
    """
    seen: dict[tuple[str, str, int], int] = {}
    tasks = 2 * executors * cores
    for _ in range(rounds):
        found = spark.sparkContext.parallelize(range(tasks), tasks).mapPartitions(own_executor_heap).collect()
        seen.update({(node, where, pid): heap for node, where, pid, heap in found})
        if len(seen) >= executors:
            break
        tasks *= 2
    return seen

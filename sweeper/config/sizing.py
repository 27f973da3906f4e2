"""Executor-sizing rules: turn a cluster and a cores-per-executor choice into a launch shape.

Pure functions. The ``report`` rule is the one of the Spark-vs-Dask report (section 4.3, also
Cloudera's and Clairvoyant's guides); ``spark-default`` keeps the per-node slot of that rule
but sizes the overhead as Spark itself does (``max(384 MiB, 10 % of the heap)``).

Dask is matched to Spark as in the report's Table 2: workers = executors, threads per worker =
cores per executor, memory limit = executor memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sweeper.shapes import ExecutorFigures, counted
from sweeper.units import MIB_PER_GIB

MIN_OVERHEAD_MIB = 384
REPORT_OVERHEAD_FRACTION = 0.07
MIN_EXECUTOR_MEMORY_MIB = MIB_PER_GIB
REPORT_RULE, SPARK_DEFAULT_RULE = "report", "spark-default"
RULES = (REPORT_RULE, SPARK_DEFAULT_RULE)  # sizing.rule, the first its default
RESERVE_CORES = 1  # sizing.reserve.cores: per node, left to the OS and Hadoop daemons
RESERVE_MEMORY_MIB = MIB_PER_GIB  # sizing.reserve.memory
APPLICATION_MASTER_SLOTS = 1  # sizing.application_master: slots held back for YARN's ApplicationMaster


@dataclass(frozen=True)
class Cluster:
    """What the grid says about the machines."""

    nodes: int
    cores_per_node: int
    memory_per_node_mib: int
    reserve_cores: int = RESERVE_CORES
    reserve_memory_mib: int = RESERVE_MEMORY_MIB
    application_master: int = APPLICATION_MASTER_SLOTS


@dataclass(frozen=True)
class ExecutorShape(ExecutorFigures):
    """The result of a sizing rule for one cores-per-executor choice."""

    rule: str
    cores_per_executor: int
    executors_per_node: int
    executors: int
    slot_mib: int
    executor_memory_mib: int
    memory_overhead_mib: int
    nodes: int
    held_back: int

    @property
    def workers_per_node(self) -> tuple[int, ...]:
        """Executors on each node (one entry per node, so built only when asked for)."""
        return workers_per_node(self.executors_per_node, self.nodes, self.held_back)


class InfeasibleShape(ValueError):
    """The cluster cannot hold even one executor of the asked shape."""


def report_overhead_mib(slot_mib: int) -> int:
    """The report's overhead: ``max(384 MiB, 7 % of the slot)`` rounded up to whole GiB.

    >>> report_overhead_mib(15 * 1024), report_overhead_mib(12 * 1024), report_overhead_mib(2048)
    (2048, 1024, 1024)
    """
    overhead = max(MIN_OVERHEAD_MIB, REPORT_OVERHEAD_FRACTION * slot_mib)
    return math.ceil(overhead / MIB_PER_GIB) * MIB_PER_GIB


def spark_default_heap_mib(slot_mib: int) -> int:
    """Largest whole-MiB heap whose heap + Spark's overhead fits in the slot.

    Spark's overhead is ``max(384, heap // 10)`` MiB (:func:`spark_overhead_mib`); closed form,
    exact for any slot.

    >>> spark_default_heap_mib(15 * 1024)  # 13964 + 1396 = 15360
    13964
    >>> spark_default_heap_mib(2048)  # small slots pay the 384 MiB minimum
    1664
    """
    # heap + heap // 10 is 11q + r for heap = 10q + r (0 <= r <= 9): the largest heap within the slot
    # is 10q + r for slot = 11q + r, and 10q + 9 when the slot's remainder is 10
    q, r = divmod(slot_mib, 11)
    return min(10 * q + min(r, 9), slot_mib - MIN_OVERHEAD_MIB)


def spark_overhead_mib(heap_mib: int) -> int:
    """Spark's default ``spark.executor.memoryOverhead`` for a heap: ``max(384, 10 % of the heap)``.

    Spark computes ``(0.10 * heap).toLong``; integer arithmetic gives the same for any heap below
    2**50 MiB and stays exact above.

    >>> spark_overhead_mib(13 * 1024), spark_overhead_mib(1024)
    (1331, 384)
    """
    return max(MIN_OVERHEAD_MIB, heap_mib // 10)


def workers_per_node(executors_per_node: int, nodes: int, held_back: int) -> tuple[int, ...]:
    """Executors (Dask workers) on each node once ``held_back`` slots go to the AM/scheduler.

    The held-back slots are taken from the first node(s), where the YARN ApplicationMaster
    or the Dask scheduler runs.

    >>> workers_per_node(4, 2, 1)
    (3, 4)
    >>> workers_per_node(1, 3, 2)
    (0, 0, 1)
    """
    layout = []
    left = held_back
    for _ in range(nodes):
        taken = min(left, executors_per_node)
        layout.append(executors_per_node - taken)
        left -= taken
    return tuple(layout)


def size_executors(cluster: Cluster, cores_per_executor: int, rule: str = REPORT_RULE) -> ExecutorShape:
    """Apply a sizing rule.

    The report's Table 1 (2 nodes x 24 cores x 64 GiB, 1 core + 1 GiB reserved, 1 AM slot):

    >>> two_nodes = Cluster(nodes=2, cores_per_node=24, memory_per_node_mib=64 * 1024)
    >>> [(s.executors, s.executor_memory_gib) for s in
    ...  (size_executors(two_nodes, c) for c in (4, 5, 6))]
    [(9, 11.0), (7, 13.0), (5, 19.0)]
    """
    if rule not in RULES:
        raise ValueError(f"unknown sizing rule {rule!r}, expected one of {list(RULES)}")
    usable_cores = cluster.cores_per_node - cluster.reserve_cores
    executors_per_node = usable_cores // cores_per_executor
    if executors_per_node < 1:
        raise InfeasibleShape(
            f"{cores_per_executor} cores per executor do not fit in the {usable_cores} usable "
            f"cores of a node ({cluster.cores_per_node} - {cluster.reserve_cores} reserved)"
        )
    executors = executors_per_node * cluster.nodes - cluster.application_master
    if executors < 1:
        raise InfeasibleShape(
            f"{cores_per_executor} cores per executor leave no executor: "
            f"{executors_per_node} per node x {counted(cluster.nodes, 'node')} - "
            f"{cluster.application_master} for the application master"
        )
    usable_gib = (cluster.memory_per_node_mib - cluster.reserve_memory_mib) // MIB_PER_GIB
    slot_mib = (usable_gib // executors_per_node) * MIB_PER_GIB
    if rule == REPORT_RULE:
        overhead_mib = report_overhead_mib(slot_mib)
        memory_mib = slot_mib - overhead_mib
    else:
        memory_mib = spark_default_heap_mib(slot_mib)
        overhead_mib = spark_overhead_mib(memory_mib)
    if memory_mib < MIN_EXECUTOR_MEMORY_MIB:
        raise InfeasibleShape(
            f"{cores_per_executor} cores per executor leave {memory_mib} MiB per executor "
            f"(slot {slot_mib} MiB - overhead {overhead_mib} MiB); at least 1 GiB is needed"
        )
    return ExecutorShape(
        rule=rule,
        cores_per_executor=cores_per_executor,
        executors_per_node=executors_per_node,
        executors=executors,
        slot_mib=slot_mib,
        executor_memory_mib=memory_mib,
        memory_overhead_mib=overhead_mib,
        nodes=cluster.nodes,
        held_back=cluster.application_master,
    )

"""Whether each node the plan lays out fits on a NodeManager: YARN places containers node by node, so a launch
whose node holds more than any NodeManager offers passes the queue's total and then waits at start for ever.

A planned node needs its executors' containers (executor memory + overhead, each rounded up to the scheduler's
step; cores per executor in vcores) and, on the node where the plan holds slots back, the ApplicationMaster's.
Each planned node, the busiest first, takes the smallest NodeManager left that holds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sweeper.planning.plan import Launch
from sweeper.shapes import counted, shape_text_mib
from sweeper.units import MIB_PER_GIB

AM_VCORES = 1  # spark.yarn.am.cores, and the Containers client's ApplicationMaster


@dataclass(frozen=True)
class NodeCapacity:
    """What one RUNNING NodeManager offers in all (free or not)."""

    node: str  # its id, host:port
    memory_mib: int
    vcores: int

    def holds(self, need: NodeNeed) -> bool:
        return self.memory_mib >= need.memory_mib and self.vcores >= need.vcores

    def text(self) -> str:
        return f"{gib(self.memory_mib)} and {counted(self.vcores, 'vcore')}"


@dataclass(frozen=True)
class NodeNeed:
    """What one planned node of a launch holds at once."""

    executors: int
    memory_mib: int
    vcores: int
    application_master: bool


def gib(mib: int) -> str:
    """``60.0 GiB``."""
    return f"{mib / MIB_PER_GIB:.1f} GiB"


def node_capacity(node: dict[str, Any]) -> NodeCapacity | None:
    """A NodeManager of ``/ws/v1/cluster/nodes``: ``totalResource`` (Hadoop 3.3+), else available + used;
    None when it reports neither."""
    total = node.get("totalResource")
    try:
        if isinstance(total, dict) and "memory" in total:
            return NodeCapacity(str(node["id"]), int(total["memory"]), int(total.get("vCores", 0)))
        memory_mib = int(node["availMemoryMB"]) + int(node["usedMemoryMB"])
        vcores = int(node["availableVirtualCores"]) + int(node["usedVirtualCores"])
    except (KeyError, TypeError, ValueError):
        return None
    return NodeCapacity(str(node["id"]), memory_mib, vcores)


def _rounded_mib(mib: int, step_mib: int) -> int:
    """A request as the scheduler grants it: rounded up to its minimum allocation."""
    return -(-mib // step_mib) * step_mib


def node_needs(launch: Launch, am_mib: int, step_mib: int) -> list[NodeNeed]:
    """Each planned node's need (nodes holding nothing left out); the ApplicationMaster on the first node whose
    slots the plan holds back (none when it holds none back: YARN then puts it where there is room)."""
    layout = launch.workers_per_node
    container_mib = _rounded_mib(launch.executor_memory_mib + launch.memory_overhead_mib, step_mib)
    am_node = next((index for index, executors in enumerate(layout) if executors < max(layout)), None)
    needs = []
    for index, executors in enumerate(layout):
        master = index == am_node
        memory_mib = executors * container_mib + (_rounded_mib(am_mib, step_mib) if master else 0)
        vcores = executors * launch.cores_per_executor + (AM_VCORES if master else 0)
        if memory_mib:
            needs.append(NodeNeed(executors, memory_mib, vcores, master))
    return needs


def _unplaced(needs: list[NodeNeed], capacities: list[NodeCapacity]) -> NodeNeed | None:
    """The first planned node, the busiest first, that no NodeManager left holds (None: every one fits)."""
    free = sorted(capacities, key=lambda c: (c.memory_mib, c.vcores))
    for need in sorted(needs, key=lambda n: (n.memory_mib, n.vcores), reverse=True):
        fit = next((capacity for capacity in free if capacity.holds(need)), None)
        if fit is None:
            return need
        free.remove(fit)
    return None


def capacity_problem(launch: Launch, needs: list[NodeNeed], capacities: list[NodeCapacity]) -> str | None:
    """Why the launch's nodes do not fit on the NodeManagers, naming the node, its need and what they have."""
    need = _unplaced(needs, capacities)
    if need is None:
        return None
    shape = shape_text_mib(need.executors, launch.cores_per_executor, launch.executor_memory_mib)
    overhead = f" (+ {launch.memory_overhead_mib} MiB overhead each"
    overhead += ", + the ApplicationMaster)" if need.application_master else ")"
    wanted = f"launch {launch.index}, {launch.engine}: {shape}{overhead} needs {gib(need.memory_mib)} and "
    wanted += f"{counted(need.vcores, 'vcore')} on one node"
    holding = [capacity for capacity in capacities if capacity.holds(need)]
    if not holding:
        largest = max(capacities, key=lambda c: (c.memory_mib, c.vcores))
        return f"{wanted}; the largest NodeManager ({largest.node}) has {largest.text()}"
    alike = sum(1 for other in needs if other.memory_mib >= need.memory_mib and other.vcores >= need.vcores)
    names = ", ".join(capacity.node for capacity in holding)
    have = "has" if len(holding) == 1 else "have"
    return f"{wanted}, on {alike} nodes; only {counted(len(holding), 'NodeManager')} {have} that much ({names})"

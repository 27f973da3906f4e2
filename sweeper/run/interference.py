"""How much else used the nodes while a batch ran: interference per measurement, read where the fits ran.

Every fit reads its machine's CPU counters before and after (:func:`sweeper.workload.usage.machine_reading`);
per node, from its first fit's start to its last fit's end (the span):

- ``interference_cpu_share``: CPU seconds the node was busy minus those of the launch's own processes there
  (the workers and their executor JVMs; on the driver's machine, the driver's whole process tree, which holds a
  local launch's workers, JVMs and scheduler), over the launch's cores on that
  node x the span: 0.5 = another process took half of what the launch had; above 1, more than all of it;
- ``steal_share``: CPU seconds the hypervisor gave other guests, over the node's cores x the span;
- ``cpu_pressure_share``: the share of the span in which some task on the node waited for a CPU (the kernel's
  pressure stall information, ``/proc/pressure/cpu``; the launch's own oversubscription counts too, so it is
  recorded, not judged);
- ``interference_host``: the node with the largest ``interference_cpu_share`` (the figures are that node's).

A measurement is **disturbed** when its ``interference_cpu_share`` or ``steal_share`` exceeds the grid's
``workload.interference_limit``: it is kept, marked, and left out of every verdict.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from sweeper.store.row import InterferenceColumns
from sweeper.workload.usage import MachineReading, ProcessUsage, Usage, machine

# /proc/stat and each process's CPU count in ticks of 10 ms: a node's "other" CPU seconds are known to about
# +-0.08 s (2 cores, 2 workers), +-0.08 of one core over 1 s; over a shorter span a share says nothing sure
# against the 0.25 limit, and a batch shorter than this gets no reading (null, never disturbed).
MIN_SPAN_S = 1.0


@dataclass(frozen=True)
class NodeInterference:
    """One node's figures over the launch's span there."""

    host: str
    cpu_share: float
    steal_share: float
    pressure_share: float | None


def interference_columns(
    usages: Sequence[Usage], cores_per_executor: int, limit: float, driver_tree_cpu_s: float = 0.0
) -> InterferenceColumns:
    """The worst node's figures and whether they disturb the measurement (all None where no node was read).

    ``driver_tree_cpu_s``: CPU seconds of the driver and all its descendants over the batch."""
    nodes = [
        node
        for host, mine in _by_host(usages).items()
        if (node := _node(host, mine, cores_per_executor, driver_tree_cpu_s)) is not None
    ]
    if not nodes:
        return InterferenceColumns(
            interference_cpu_share=None, steal_share=None, cpu_pressure_share=None, interference_host=None,
            disturbed=None,
        )  # fmt: skip
    worst = max(nodes, key=lambda n: (n.cpu_share, n.steal_share))
    return InterferenceColumns(
        interference_cpu_share=worst.cpu_share,
        steal_share=worst.steal_share,
        cpu_pressure_share=worst.pressure_share,
        interference_host=worst.host.split(":", 1)[0],
        disturbed=max(n.cpu_share for n in nodes) > limit or max(n.steal_share for n in nodes) > limit,
    )


def _by_host(usages: Sequence[Usage]) -> dict[str, list[Usage]]:
    found: dict[str, list[Usage]] = defaultdict(list)
    for usage in usages:
        if usage.machine_before is not None and usage.machine_after is not None:
            found[usage.host].append(usage)
    return found


def _node(host: str, usages: list[Usage], cores_per_executor: int, driver_tree_cpu_s: float) -> NodeInterference | None:
    """One node's figures from its fits' readings (None for a span too short to tell: :data:`MIN_SPAN_S`)."""
    first = min((u.machine_before for u in usages if u.machine_before), key=lambda r: r.at_s)
    last = max((u.machine_after for u in usages if u.machine_after), key=lambda r: r.at_s)
    span_s = last.at_s - first.at_s
    if span_s < MIN_SPAN_S:
        return None
    own_s = max(_own_cpu_s(usages), driver_tree_cpu_s) if host == machine() else _own_cpu_s(usages)
    executors = len({(u.jvm_before or u.before).pid for u in usages})
    launch_cores = max(executors * cores_per_executor, 1)
    other_s = max(last.busy_s - first.busy_s - own_s, 0.0)
    return NodeInterference(
        host,
        cpu_share=other_s / (launch_cores * span_s),
        steal_share=max(last.steal_s - first.steal_s, 0.0) / (last.cores * span_s),
        pressure_share=_pressure_share(first, last, span_s),
    )


def _own_cpu_s(usages: list[Usage]) -> float:
    """CPU seconds of the launch's processes on one node (each worker and JVM over the readings of its fits)."""
    seen: dict[int, list[ProcessUsage]] = defaultdict(list)
    for usage in usages:
        seen[usage.before.pid] += [usage.before, usage.after]
        if usage.jvm_before is not None and usage.jvm_after is not None:
            seen[usage.jvm_before.pid] += [usage.jvm_before, usage.jvm_after]
    return sum(max(p.cpu_s for p in readings) - min(p.cpu_s for p in readings) for readings in seen.values())


def _pressure_share(first: MachineReading, last: MachineReading, span_s: float) -> float | None:
    if first.stall_s is None or last.stall_s is None:
        return None
    return min(max(last.stall_s - first.stall_s, 0.0) / span_s, 1.0)


def process_tree_cpu_s() -> float:
    """CPU seconds so far (user + system) of this process and every descendant still running."""
    import psutil

    me = psutil.Process()
    total = 0.0
    for process in [me, *me.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total

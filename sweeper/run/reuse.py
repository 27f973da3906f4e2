"""Dry runs measure each shrunk measurement once.

Shrunk to this machine, several planned measurements can become the same one: three executor
shapes that all shrink to one local executor, or epochs 100, 1000 and 10000 capped at 20. The
first of them is measured; the others reuse its row under their own planned configuration,
epochs and key, naming the measured row in ``reused_from``.
"""

from __future__ import annotations

from typing import Any

from sweeper.planning.plan import Plan
from sweeper.run.rows import Todo, planned_columns, trained_epochs


def shrunk_identity(plan: Plan, item: Todo) -> tuple[Any, ...]:
    """What a measurement is once shrunk: the launch as it runs here, the point as it trains, the trial."""
    launch, point = item.launch, item.point
    shape = (launch.manager, launch.cores_per_executor, launch.executors, launch.executor_memory_mib)
    return (launch.engine, *shape, launch.workers_per_node, point.params, point.fraction, point.mode,
            trained_epochs(plan, point), item.trial)  # fmt: skip


def split_reused(plan: Plan, todo: list[Todo]) -> tuple[list[Todo], dict[str, list[Todo]]]:
    """The measurements to take, in plan order, and for each (by key) the planned ones that reuse its row."""
    first: dict[tuple[Any, ...], Todo] = {}
    stand_ins: dict[str, list[Todo]] = {}
    for item in todo:
        measured = first.setdefault(shrunk_identity(plan, item), item)
        stand_ins.setdefault(measured.key, [])
        if measured is not item:
            stand_ins[measured.key].append(item)
    return list(first.values()), stand_ins


def reused_row(plan: Plan, row: dict[str, Any], item: Todo) -> dict[str, Any]:
    """``row`` standing for the planned measurement ``item``: its key, configuration and epochs."""
    return {**row, **planned_columns(plan, item), "reused_from": row["measurement_key"]}

"""A measurement's identity: what to measure, in plan order, under a key that survives restarts.

:func:`measurement_key` names a measurement (the same point on the same planned launch shape and
trial); :func:`pending` lists what a run still has to take; a dry run measures each shrunk
measurement once (:func:`split_reused`): shrunk to this machine, several planned measurements can
become the same one (three executor shapes that all shrink to one local executor, or epochs 100,
1000 and 10000 capped at 20); the first is measured, the others reuse its row.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from sweeper.config.grid import DEFAULT_ESTIMATOR, Grid
from sweeper.planning.plan import Launch, Plan, Point


@dataclass
class Todo:
    """A measurement still to take."""

    launch: Launch
    point: Point
    trial: int
    key: str


def measurement_key(grid: Grid, plan: Plan, launch: Launch, point: Point, trial: int) -> str:
    """A stable identity for a measurement: the same point on the same planned launch shape and trial."""
    workload = grid.workload
    planned = launch.as_planned
    identity: dict[str, Any] = {
        "sweep": grid.name,
        "engine": launch.engine,
        "manager": planned.manager,
        "shape": [planned.rule, planned.cores_per_executor, planned.executors, planned.executor_memory_mib],
        "dataset": [workload.dataset.name, workload.dataset.path, point.fraction, workload.test_size],
        "model": point.params,
        "epochs": point.epochs,
        "trial": trial,
        "batch": [point.mode, plan.fits(point.mode), workload.folds, workload.param_grid, workload.seed],
        "fits": [workload.exact_epochs, workload.threads_per_fit, grid.environment],
        "dry_run": launch.dry_run,
    }
    if workload.estimator != DEFAULT_ESTIMATOR:  # MLPClassifier on max_iter by accuracy: the keys it always had
        estimator = workload.estimator
        identity["estimator"] = [estimator.steps, estimator.work_parameter, estimator.scoring]
    text = json.dumps(identity, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def pending(plan: Plan, done: set[str]) -> tuple[list[Todo], int]:
    """Measurements not yet recorded as ``ok``, in plan order, and how many were skipped."""
    todo = []
    skipped = 0
    for launch in plan.launches:
        for point in plan.points[launch.index]:
            for trial in range(plan.grid.workload.trials):
                key = measurement_key(plan.grid, plan, launch, point, trial)
                if key in done:
                    skipped += 1
                else:
                    todo.append(Todo(launch, point, trial, key))
    return todo, skipped


def trained_epochs(plan: Plan, point: Point) -> int:
    """The epochs a point trains for (a dry run caps them)."""
    return min(point.epochs, plan.epochs_cap) if plan.epochs_cap else point.epochs


def _shrunk_identity(plan: Plan, item: Todo) -> tuple[Any, ...]:
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
        measured = first.setdefault(_shrunk_identity(plan, item), item)
        stand_ins.setdefault(measured.key, [])
        if measured is not item:
            stand_ins[measured.key].append(item)
    return list(first.values()), stand_ins

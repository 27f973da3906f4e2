"""The rows a sweep writes: which measurements are still to take, and the columns of each row.

A measurement is identified by :func:`measurement_key` (the same point on the same planned launch
shape and trial), so a resumed sweep skips what is already in the store.
"""

from __future__ import annotations

import hashlib
import json
import socket
import statistics
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sweeper.config.grid import Grid
from sweeper.launch.base import Session
from sweeper.planning.plan import Launch, Plan, Point
from sweeper.run.versions import versions
from sweeper.workload.data import Data
from sweeper.workload.fit import FitResult


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
    identity = {
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


def row_of(plan: Plan, item: Todo, data: Data | None, shared: dict[str, Any], **values: Any) -> dict[str, Any]:
    """The columns every row of a measurement has, whatever its outcome.

    The configuration and epochs are the planned ones; a dry run records what ran here in the
    ``granted_*`` and ``dry_run_*`` columns, so its rows show the tables the real sweep will.
    """
    params = item.point.model_params
    row = {
        **shared,
        **planned_columns(plan, item),
        "engine": item.launch.engine,
        "dataset": data.name if data else plan.grid.workload.dataset.name,
        "fraction": item.point.fraction,
        "mode": item.point.mode,
        "n_fits": plan.fits(item.point.mode),
        "model_params": json.dumps(params, sort_keys=True, default=list),
        "hidden_layer_sizes": "x".join(str(n) for n in params.get("hidden_layer_sizes", ())),
        "started_at": datetime.now(UTC),
        "dry_run": item.launch.dry_run,
    }
    if item.launch.dry_run:
        row["dry_run_epochs"] = trained_epochs(plan, item.point)
    if data is not None:
        row.update(n_train=data.n_train_planned, n_test=data.n_test, n_features=data.n_features)
        if item.launch.dry_run:
            row["dry_run_train_rows"] = data.n_train
    row.update(values)
    return row


def planned_columns(plan: Plan, item: Todo) -> dict[str, Any]:
    """What a row says of the measurement it stands for: its key, planned launch, epochs and trial."""
    launch = item.launch.as_planned
    return {
        "measurement_key": item.key,
        "launch_index": launch.index,
        "manager": launch.manager,
        "rule": launch.rule,
        "nodes": launch.nodes,
        "cores_per_executor": launch.cores_per_executor,
        "executors": launch.executors,
        "total_cores": launch.total_cores,
        "executor_memory_gib": launch.executor_memory_gib,
        "memory_overhead_gib": launch.memory_overhead_gib,
        "epochs": item.point.epochs,
        "trial": item.trial,
    }


def result_columns(results: list[FitResult]) -> dict[str, Any]:
    """The columns of a batch that completed: times, accuracy, convergence, the fits' environment."""
    accuracies = [r.accuracy for r in results]
    epochs_run = [r.epochs_run for r in results]
    return {
        "status": "ok",
        "fit_task_sum_s": sum(r.fit_s for r in results),
        "fit_task_max_s": max(r.fit_s for r in results),
        "accuracy": statistics.fmean(accuracies),
        "accuracy_best": max(accuracies),
        "epochs_run": max(epochs_run),
        "epochs_run_mean": statistics.fmean(epochs_run),
        "converged": all(r.converged for r in results),
        "worker_pids": len({(r.usage.host if r.usage else "", r.pid) for r in results}),
        "shards": results[0].shards,
        "rounds": results[0].rounds,
        "round_s_mean": results[0].round_s_mean,
        "comm_bytes_per_round": results[0].comm_bytes_per_round,
        "fit_environment": json.dumps(results[0].environment, sort_keys=True),
    }


def granted_columns(session: Session) -> dict[str, Any]:
    """What the launch was granted (on a dry run: the shape it ran at here), and what its start spent staging."""
    granted = session.granted
    return {
        "granted_executors": granted.executors,
        "granted_cores_per_executor": granted.cores_per_executor,
        "granted_executor_memory_gib": granted.executor_memory_gib,
        "staging_s": session.staging_s,
    }


def shared_columns(grid: Grid, run_id: str, environment: dict[str, str]) -> dict[str, Any]:
    """The columns every row of one run has alike."""
    return {
        "sweep": grid.name,
        "run_id": run_id,
        "grid_hash": grid.grid_hash,
        "exact_epochs": grid.workload.exact_epochs,
        "threads_per_fit": grid.workload.threads_per_fit,
        "fit_environment": json.dumps(environment, sort_keys=True),
        "host": socket.gethostname(),
        "cluster_hosts": ",".join(grid.hosts) or None,
        **versions(),
    }

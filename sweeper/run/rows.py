"""The columns of the rows a sweep writes (which measurements to take: :mod:`sweeper.planning.measurements`)."""

from __future__ import annotations

import json
import socket
import statistics
from datetime import UTC, datetime
from typing import Any

from sweeper.config.grid import HALVING, Grid
from sweeper.launch.base import Session
from sweeper.names import OK
from sweeper.planning.measurements import Todo, trained_epochs
from sweeper.planning.plan import Plan
from sweeper.run.versions import versions
from sweeper.workload.data import Data
from sweeper.workload.fit import FitResult


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
        "status": OK,
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
        "rung_axis": grid.search.rung_axis if grid.search.strategy == HALVING else None,
        **versions(),
    }


def reused_row(plan: Plan, row: dict[str, Any], item: Todo) -> dict[str, Any]:
    """``row`` standing for the planned measurement ``item``: its key, configuration and epochs."""
    return {**row, **planned_columns(plan, item), "reused_from": row["measurement_key"]}

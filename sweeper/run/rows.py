"""A sweep's rows, each assembled once from its typed groups (:class:`sweeper.store.row.Row`).

Which measurements to take: :mod:`sweeper.planning.measurements`; what a batch measured:
:mod:`sweeper.run.measure`.
"""

from __future__ import annotations

import json
import socket
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from sweeper.config.grid import HALVING, RACE, Grid
from sweeper.launch.base import Session
from sweeper.names import OK, Status
from sweeper.planning.measurements import Todo, trained_epochs
from sweeper.planning.plan import Plan
from sweeper.run.versions import versions
from sweeper.store.row import (
    BatchColumns,
    OutcomeColumns,
    PlannedColumns,
    ResultColumns,
    Row,
    RunColumns,
    SearchColumns,
    StartColumns,
)
from sweeper.workload.data import Data
from sweeper.workload.fit import FitResult


@dataclass(frozen=True)
class RunRecord:
    """What every row of one run shares: its columns, and the environment its fits are given (as JSON)."""

    columns: RunColumns
    environment: str

    @classmethod
    def of(cls, grid: Grid, run_id: str, environment: Mapping[str, str]) -> RunRecord:
        estimator = grid.workload.estimator
        racing = grid.search.strategy == RACE
        searching = racing or grid.search.strategy == HALVING  # halving's rank check uses delta and confidence too
        columns = RunColumns(
            sweep=grid.name,
            run_id=run_id,
            grid_hash=grid.grid_hash,
            exact_epochs=grid.workload.exact_epochs,
            threads_per_fit=grid.workload.threads_per_fit,
            host=socket.gethostname(),
            cluster_hosts=",".join(grid.cluster_key("hosts") or ()) or None,
            search_strategy=grid.search.strategy,
            rung_axis=grid.search.rung_axis if grid.search.strategy == HALVING else None,
            race_delta=grid.search.delta if searching else None,
            race_confidence=grid.search.confidence if searching else None,
            race_max_trials=grid.workload.trials if racing else None,
            estimator=estimator.name,
            work_axis=estimator.work_parameter,
            scoring=estimator.scoring,
            **versions(),
        )
        return cls(columns, json.dumps(dict(environment), sort_keys=True))

    @property
    def run_id(self) -> str:
        return self.columns["run_id"]

    def outcome(
        self,
        status: Status,
        error: str | None,
        *,
        error_type: str | None = None,
        fit_wall_s: float | None = None,
        started_at: datetime | None = None,
    ) -> OutcomeColumns:
        """How a measurement ended without results (failed, timed out, pruned, never started), in the run's
        environment; ``started_at`` defaults to now."""
        return OutcomeColumns(
            status=status,
            error_type=error_type,
            error=error,
            started_at=started_at or datetime.now(UTC),
            fit_wall_s=fit_wall_s,
            fit_environment=self.environment,
        )


def measurement_row(
    plan: Plan,
    item: Todo,
    run: RunRecord,
    data: Data | None,
    *,
    outcome: OutcomeColumns,
    start: StartColumns | None = None,
    result: ResultColumns | None = None,
    search: SearchColumns | None = None,
) -> Row:
    """The row of measurement ``item``: the run's, the plan's and the batch's columns, then what its launch's start,
    the batch and the search strategy gave (absent groups: null). The configuration and epochs are the planned
    ones; a dry run records what ran here in the ``granted_*`` and ``dry_run_*`` columns."""
    return Row(
        **run.columns,
        **planned_columns(plan, item),
        **_batch_columns(plan, item, data),
        **(start or StartColumns()),
        **outcome,
        **(result or ResultColumns()),
        **(search or SearchColumns()),
        predicted_s=plan.predicted_s.get((item.launch.index, item.point)),
    )


def planned_columns(plan: Plan, item: Todo) -> PlannedColumns:
    """What a row says of the measurement it stands for: its key, planned launch, epochs and trial."""
    launch = item.launch.as_planned
    return PlannedColumns(
        measurement_key=item.key,
        launch_index=launch.index,
        engine=launch.engine,
        manager=launch.manager,
        rule=launch.rule,
        nodes=launch.nodes,
        cores_per_executor=launch.cores_per_executor,
        executors=launch.executors,
        total_cores=launch.total_cores,
        executor_memory_gib=launch.executor_memory_gib,
        memory_overhead_gib=launch.memory_overhead_gib,
        epochs=item.point.epochs,
        trial=item.trial,
    )


def _batch_columns(plan: Plan, item: Todo, data: Data | None) -> BatchColumns:
    """The batch's data, mode and model (``data`` None: the launch never started, the sizes unknown)."""
    params = item.point.model_params
    dry_run = item.launch.dry_run
    return BatchColumns(
        dataset=data.name if data else plan.grid.workload.dataset.name,
        fraction=item.point.fraction,
        mode=item.point.mode,
        n_fits=plan.fits(item.point.mode),
        model_params=json.dumps(params, sort_keys=True, default=list),
        hidden_layer_sizes="x".join(str(n) for n in params.get("hidden_layer_sizes", ())),
        dry_run=dry_run,
        n_train=data.n_train_planned if data else None,
        n_test=data.n_test if data else None,
        n_features=data.n_features if data else None,
        dry_run_epochs=trained_epochs(plan, item.point) if dry_run else None,
        dry_run_train_rows=data.n_train if dry_run and data else None,
    )


def start_columns(session: Session, cluster_start_s: float, warmup_s: float | None) -> StartColumns:
    """One start of a launch: its time, warm-up and staging, and what it was granted (on a dry run: the shape it
    ran at here)."""
    granted = session.granted
    return StartColumns(
        cluster_start_s=cluster_start_s,
        staging_s=session.staging_s,
        warmup_s=warmup_s,
        granted_executors=granted.executors,
        granted_cores_per_executor=granted.cores_per_executor,
        granted_executor_memory_gib=granted.executor_memory_gib,
    )


def ok_outcome(results: list[FitResult], started_at: datetime, fit_wall_s: float) -> OutcomeColumns:
    """A batch that completed, in the environment its fits observed."""
    return OutcomeColumns(
        status=OK,
        error_type=None,
        error=None,
        started_at=started_at,
        fit_wall_s=fit_wall_s,
        fit_environment=json.dumps(results[0].environment, sort_keys=True),
    )


def result_columns(results: list[FitResult]) -> ResultColumns:
    """The fits' times, accuracy and convergence of a batch that completed (resources: :mod:`sweeper.run.resources`)."""
    accuracies = [r.accuracy for r in results]
    epochs_run = [r.epochs_run for r in results]
    return ResultColumns(
        fit_task_sum_s=sum(r.fit_s for r in results),
        fit_task_max_s=max(r.fit_s for r in results),
        accuracy=statistics.fmean(accuracies),
        accuracy_best=max(accuracies),
        epochs_run=max(epochs_run),
        epochs_run_mean=statistics.fmean(epochs_run),
        converged=all(r.converged for r in results),
        worker_pids=len({(r.usage.host if r.usage else "", r.pid) for r in results}),
        shards=results[0].shards,
        rounds=results[0].rounds,
        round_s_mean=results[0].round_s_mean,
        comm_bytes_per_round=results[0].comm_bytes_per_round,
    )


def reused_row(plan: Plan, row: Row, item: Todo) -> Row:
    """``row`` standing for the planned measurement ``item``: its key, configuration and epochs."""
    return Row(**{**row, **planned_columns(plan, item)}, reused_from=row["measurement_key"])

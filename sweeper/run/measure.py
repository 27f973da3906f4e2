"""Take one measurement on a started launch: the batch of fits, its time limit, and what it measured.

The deadline alone decides a timeout: a batch that has not ended by ``workload.timeout_s`` is
aborted (the launch's workers killed and, unless the run is stopping, started again) and recorded
as ``timeout``, whatever it raises or returns afterwards.
"""

from __future__ import annotations

import contextlib
import threading
import time
from datetime import UTC, datetime
from typing import Any

from sweeper.errors import error_text
from sweeper.launch.base import SavesLogs, Session
from sweeper.names import BASELINE_ENGINE, FAILED, TIMEOUT, on_spark
from sweeper.planning.measurements import Todo, trained_epochs
from sweeper.planning.plan import Launch, Plan, Point
from sweeper.run.interference import interference_columns, process_tree_cpu_s
from sweeper.run.resources import resource_columns
from sweeper.run.rows import RunRecord, ok_outcome, result_columns
from sweeper.store.row import OutcomeColumns, ResultColumns
from sweeper.workload.data import Data
from sweeper.workload.fit import FitResult
from sweeper.workload.tasks import FitTask, Recipe, make_batch

ERROR_CHARS = 2000  # of a failed batch's error kept in its row


class MeasurementTimeout(Exception):
    """A batch ran past ``workload.timeout_s``."""


def measure(
    plan: Plan, item: Todo, session: Session, data: Data, run: RunRecord
) -> tuple[OutcomeColumns, ResultColumns]:
    """Run measurement ``item``'s batch on ``session``: how it ended and, when it completed, what it measured."""
    workload = plan.grid.workload
    tasks = batch_for(plan, item.launch, item.point, item.trial, data, epochs=trained_epochs(plan, item.point))
    started_at = datetime.now(UTC)
    driver_cpu_s = process_tree_cpu_s()
    started = time.perf_counter()
    try:
        results = with_timeout(session, tasks, data, workload.timeout_s)
    except MeasurementTimeout:
        why, error_type = f"batch ran past {workload.timeout_s:g} s", MeasurementTimeout.__name__
        status = TIMEOUT
    except Exception as error:
        saved = session.save_logs() if isinstance(session, SavesLogs) else None
        note = f" (containers' logs: {saved})" if saved is not None else ""
        why, error_type = error_text(error)[: ERROR_CHARS - len(note)] + note, type(error).__name__
        status = FAILED
    else:
        fit_wall_s = time.perf_counter() - started
        driver_cpu_s = process_tree_cpu_s() - driver_cpu_s
        measured = _measured(item, session, results, fit_wall_s)
        usages = [r.usage for r in results if r.usage is not None]
        granted = session.granted.cores_per_executor
        measured.update(interference_columns(usages, granted, workload.interference_limit, driver_cpu_s))
        return ok_outcome(results, started_at, fit_wall_s), measured
    wall_s = time.perf_counter() - started
    return run.outcome(status, why, error_type=error_type, fit_wall_s=wall_s, started_at=started_at), ResultColumns()


def _measured(item: Todo, session: Session, results: list[FitResult], fit_wall_s: float) -> ResultColumns:
    """What a completed batch measured: its fits' figures and the resources its workers used."""
    granted = session.granted
    result = result_columns(results)
    result.update(
        resource_columns(
            results,
            fit_wall_s,
            granted.executors * granted.cores_per_executor,
            spark=on_spark(item.launch.engine),
            jvm_peak_heap_gib=session.jvm_peak_heap_gib(),
        )
    )
    return result


def warm_up(plan: Plan, item: Todo, session: Session, data: Data) -> tuple[float | None, bool]:
    """One untimed batch of 1-epoch fits, so worker start-up and imports are not in trial 0's time.

    Returns its time (None when it did not complete) and whether it ran past the time limit, which
    aborted the launch's running fits.
    """
    tasks = batch_for(plan, item.launch, item.point, item.trial, data, epochs=1)
    started = time.perf_counter()
    try:
        with_timeout(session, tasks, data, plan.grid.workload.timeout_s)
    except MeasurementTimeout:
        return None, True
    except Exception:  # the measurement that follows will fail the same way and record why
        return None, False
    return time.perf_counter() - started, False


def batch_for(plan: Plan, launch: Launch, point: Point, trial: int, data: Data, *, epochs: int) -> list[FitTask]:
    """The fits of one measurement: ``point`` trained for ``epochs`` on ``launch``, as the plan's workload says."""
    recipe = Recipe.of(plan.grid.workload)
    n_fits = plan.fits(point.mode)
    return make_batch(
        recipe, point.mode, point.model_params, epochs, trial, n_fits, labels=data.y_train, shards=shards(plan, launch)
    )


def shards(plan: Plan, launch: Launch) -> int:
    """Data-parallel shards of a launch: ``workload.shards``, else one per slot (the baseline: one)."""
    if launch.engine == BASELINE_ENGINE:
        return 1
    workload = plan.grid.workload
    return workload.shards or max(1, launch.total_cores // workload.threads_per_fit)


def with_timeout(session: Session, tasks: list[FitTask], data: Data, timeout_s: float) -> list[FitResult]:
    """Run the batch in a helper thread; past the limit, abort the launch's workers (see the module's text)."""
    outcome: dict[str, Any] = {}
    ended = threading.Event()
    deadline = time.monotonic() + timeout_s

    def target() -> None:
        try:
            outcome["results"] = session.run_batch(tasks, data)
        except BaseException as error:  # handed to the main thread
            outcome["error"] = error
        finally:
            outcome["in_time"] = time.monotonic() <= deadline
            ended.set()

    thread = threading.Thread(target=target, name="sweeper-batch", daemon=True)
    thread.start()
    try:
        while not ended.wait(min(0.2, max(0.0, deadline - time.monotonic()))) and time.monotonic() < deadline:
            pass
    except KeyboardInterrupt:
        with contextlib.suppress(Exception):  # the interrupt matters more than an abort that failed
            session.abort(restart=False)  # the launch is torn down next: nothing needs to come back
        thread.join(30)
        raise
    abort_error = None
    if not ended.is_set():
        try:
            session.abort()
        except Exception as error:  # e.g. the workers did not come back: still a timeout, the launch restarts
            abort_error = error
        thread.join(30)
    if abort_error is not None or not outcome.get("in_time"):
        raise MeasurementTimeout() from abort_error
    if "error" in outcome:
        raise outcome["error"]
    results: list[FitResult] = outcome["results"]
    return results

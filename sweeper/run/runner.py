"""Run a plan: start each launch once, take all its measurements, write a row for each.

A measurement's outcome is data, not an exception that ends the sweep: a fit that raises, a
launch that cannot start or a batch past its time limit becomes a ``failed`` or ``timeout``
row and the sweep goes on. Ctrl-C (or SIGTERM) tears the running launch down, keeps every
finished row and stops.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sweeper.config.grid import FULL_GRID, HALVING, Grid
from sweeper.errors import UserError, error_text
from sweeper.launch.base import LaunchContext, Session
from sweeper.launch.logs import launch_log, log_note
from sweeper.launch.options import LocalOptions, options_for
from sweeper.launch.registry import check_installed, starter
from sweeper.names import BASELINE_ENGINE, FAILED, OK, PRUNED, TIMEOUT, on_spark
from sweeper.planning.measurements import Todo, pending, split_reused, trained_epochs
from sweeper.planning.plan import Launch, Plan, Point
from sweeper.run.halving import HalvingRun, rung_lines
from sweeper.run.resources import resource_columns
from sweeper.run.rows import granted_columns, result_columns, reused_row, row_of, shared_columns
from sweeper.run.run_dir import run_directory
from sweeper.run.signals import deferred_interrupts, exit_status, signals_as_interrupt
from sweeper.run.trials import FixedQueue, LaunchQueue, TrialQueue, trial_policy
from sweeper.store.lock import holding
from sweeper.store.parquet import (
    StoreWriteError,
    check_writable,
    compact,
    finish_merges,
    grid_hashes,
    read_table,
    recorded_rows,
    remove_sweep,
    sweep_dir,
    write_rows,
)
from sweeper.workload import data as datasets
from sweeper.workload.data import Data
from sweeper.workload.environment import applied, fit_environment
from sweeper.workload.fit import FitResult
from sweeper.workload.tasks import FitTask, make_batch


class MeasurementTimeout(Exception):
    """A batch ran past ``workload.timeout_s``."""


@dataclass
class RunResult:
    """What a sweep did, for the summary and the exit code."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0
    interrupted: bool = False
    exit_status: int = 0  # stopped: 130 (Ctrl-C) or 143 (SIGTERM)
    notes: list[str] = field(default_factory=list)  # what a search strategy decided, for the end of the run


Reporter = Callable[[dict[str, Any]], None]


def load_data(plan: Plan, warn: Callable[[str], None]) -> dict[float, Data]:
    """The training data for every fraction, loaded once before any launch."""
    workload = plan.grid.workload
    dataset = workload.dataset
    dry_run = plan.max_train_rows is not None
    loaded = {}
    split: dict[str, Any] = {
        "test_size": workload.test_size,
        "seed": workload.seed,
        "max_train_rows": plan.max_train_rows,
    }
    for fraction in workload.fractions:
        try:
            loaded[fraction] = datasets.load(dataset, fraction=fraction, **split)
        except UserError as error:
            if not dry_run:
                raise
            warn(f"dry run: {error.problems[0]}; using the bundled digits instead")
            dataset = replace(dataset, name="digits", path=None)
            loaded[fraction] = datasets.load(dataset, fraction=fraction, **split)
    return loaded


def run(
    plan: Plan,
    *,
    store: Path,
    fresh: bool = False,
    report: Reporter | None = None,
    warn: Callable[[str], None] = print,
    progress: Callable[[int, int], None] | None = None,
    start_timeout_s: float | None = None,
    reuse: bool = True,
) -> RunResult:
    """Take every pending measurement of the plan and write its row to the store.

    Everything that can be checked is checked before the first launch: engines and managers,
    the dataset, the store (a probe file written and removed before ``fresh`` deletes anything), and
    that no other run writes the sweep (its lock is held until the run ends: :mod:`sweeper.store.lock`).
    A dry run takes each shrunk measurement once and reuses its row for the planned measurements
    that shrink to the same one (see :mod:`sweeper.run.reuse`), unless ``reuse`` is false.
    """
    _check_first(plan, store)
    with holding(sweep_dir(store, plan.grid.name), warn):  # one writer per sweep, from before --fresh deletes
        return _run_held(plan, store, fresh, report, warn, progress, start_timeout_s, reuse)


def _run_held(
    plan: Plan,
    store: Path,
    fresh: bool,
    report: Reporter | None,
    warn: Callable[[str], None],
    progress: Callable[[int, int], None] | None,
    start_timeout_s: float | None,
    reuse: bool,
) -> RunResult:
    """:func:`run` once the sweep's lock is held."""
    grid = plan.grid
    if fresh:
        remove_sweep(store, grid.name)
    repaired = finish_merges(store, grid.name)
    if repaired:
        warn(f"removed {len(repaired)} part files a stopped merge left beside their merged file")
    table = read_table(store, grid.name)  # once: what the sweep holds
    others = grid_hashes(table) - {grid.grid_hash}
    if others:
        warn(
            f"sweep {grid.name} in {store} holds rows of another grid (hash {', '.join(sorted(others))}); "
            f"this grid's (hash {grid.grid_hash}) join them: give it another name, or --fresh, to keep them apart"
        )
    recorded = recorded_rows(store, grid.name, table)
    done_s = {key: time_s for key, (status, time_s) in recorded.items() if status == OK and time_s is not None}
    static = grid.workload.adaptive is None and grid.search.strategy == FULL_GRID
    todo, skipped = pending(plan, set(done_s)) if static else ([], 0)
    result = RunResult(skipped=skipped)
    if static and not todo:
        return result
    run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    with run_directory(store, run_id, warn) as run_dir:  # scratch/ is removed at the end, logs/ is kept
        context = _launch_context(grid, run_dir, start_timeout_s)
        shared = shared_columns(grid, run_id, context.environment)
        total = len(todo) if static else plan.n_measurements

        def emit(row: dict[str, Any]) -> None:
            result.rows.append(row)
            if report:
                report(row)
            if progress:
                progress(len(result.rows), max(total, len(result.rows)))

        launches = Launches(plan, load_data(plan, warn), context, shared, store)
        try:
            with applied(context.environment), signals_as_interrupt():
                if static:
                    _run_fixed(plan, todo, launches, emit, reuse)
                else:
                    pruned = {key for key, (status, _) in recorded.items() if status == PRUNED}
                    result.skipped = _run_decided(plan, launches, done_s, pruned, emit, result.notes)
        except KeyboardInterrupt as stop:
            result.interrupted = True
            result.exit_status = exit_status(stop)
    return result


def _run_fixed(
    plan: Plan, todo: list[Todo], launches: Launches, emit: Callable[[dict[str, Any]], None], reuse: bool
) -> None:
    """Measurements decided before the run, launch by launch (a dry run's: each shrunk one once, see reuse)."""
    dry_run = any(launch.dry_run for launch in plan.launches)
    measured, launches.stand_ins = split_reused(plan, todo) if dry_run and reuse else (todo, {})
    by_launch: dict[int, list[Todo]] = {}
    for item in measured:
        by_launch.setdefault(item.launch.index, []).append(item)
    for items in by_launch.values():
        for row in launches.run(items[0].launch, FixedQueue(items)):
            emit(row)


def _run_decided(
    plan: Plan,
    launches: Launches,
    done_s: dict[str, float],
    pruned: set[str],
    emit: Callable[[dict[str, Any]], None],
    notes: list[str],
) -> int:
    """Trials decided as they come (adaptive), configurations rung by rung (halving); returns the skipped count."""
    policy = trial_policy(plan.grid.workload)
    if plan.grid.search.strategy != HALVING:
        skipped = 0
        for launch in plan.launches:
            queue = TrialQueue(plan, launch, plan.points[launch.index], done_s, policy)
            for row in launches.run(launch, queue):
                emit(row)
            skipped += queue.skipped
        return skipped
    halving = HalvingRun(plan, launches.run, done_s, emit)
    notes += rung_lines(halving.run(), halving.rungs, halving.axis)
    rows = halving.pruned_rows(launches.shared, pruned, launches.data)
    if rows:
        write_rows(launches.store, plan.grid.name, rows, f"part-{launches.shared['run_id']}-pruned")
        for row in rows:
            emit(row)
    return halving.skipped


def _check_first(plan: Plan, store: Path) -> None:
    """What can fail before any launch: engines and managers (their packages imported: one missing is
    a UserError, never a failed row), the dataset, a store that cannot be written."""
    for engine, manager in dict.fromkeys((launch.engine, launch.manager) for launch in plan.launches):
        check_installed(engine, manager)
    if plan.max_train_rows is None:  # a dry run falls back to the bundled digits instead
        datasets.check_available(plan.grid.workload.dataset)
    check_writable(store, plan.grid.name)


def _launch_context(grid: Grid, run_dir: Path, start_timeout_s: float | None) -> LaunchContext:
    """What every launch of the run is given: its scratch, the fit environment, the grid's options."""
    return LaunchContext(
        run_dir=run_dir / "scratch",
        log_dir=run_dir / "logs",
        environment=fit_environment(grid.workload.threads_per_fit, dict(grid.environment)),
        threads_per_fit=grid.workload.threads_per_fit,
        start_timeout_s=grid.workload.start_timeout_s if start_timeout_s is None else start_timeout_s,
        spark_conf=dict(grid.spark_conf),
        options=options_for(grid),
    )


def _context_of(launch: Launch, context: LaunchContext) -> LaunchContext:
    """A launch's context: a launch on manager local (a dry run's) has no options of the grid's manager."""
    return replace(context, options=LocalOptions()) if launch.manager == "local" else context


class Launches:
    """Starts the plan's launches and takes a queue's measurements on each, writing every row at once."""

    def __init__(
        self, plan: Plan, data: dict[float, Data], context: LaunchContext, shared: dict[str, Any], store: Path
    ) -> None:
        self.plan, self.data, self.context, self.shared, self.store = plan, data, context, shared, store
        self.stand_ins: dict[str, list[Todo]] = {}  # a dry run's rows that reuse a measured one, by its key
        self.started: dict[int, int] = {}

    def run(self, launch: Launch, queue: LaunchQueue) -> Iterator[dict[str, Any]]:
        """Start ``launch``, take its queue's measurements, tear it down; restart it after one that failed.

        A launch that cannot start (or is not granted its plan) records what its queue still had as
        ``failed``, with the error; its processes are gone all the same.
        """
        serial = self.started[launch.index] = self.started.get(launch.index, -1) + 1
        stem = f"part-{self.shared['run_id']}-{launch.index:03d}" + (f"-{serial}" if serial else "")
        files: list[Path] = []
        teardowns_s: list[float] = []  # of each start that ended cleanly; the rows keep the last

        def keep(row: dict[str, Any]) -> list[dict[str, Any]]:
            rows = [row, *(reused_row(self.plan, row, i) for i in self.stand_ins.get(row["measurement_key"], ()))]
            files.append(write_rows(self.store, self.plan.grid.name, rows, f"{stem}-{len(files):04d}"))
            return rows

        try:
            for row in self._sessions(launch, queue, teardowns_s):
                yield from keep(row)
        finally:
            failed_write = isinstance(sys.exc_info()[1], StoreWriteError)
            fill = {"teardown_s": teardowns_s[-1]} if teardowns_s else {}
            try:
                with deferred_interrupts():  # a reader sees the parts or the merged file, never both
                    compact(self.store, self.plan.grid.name, files, stem, **fill)
            except StoreWriteError:
                if not failed_write:
                    raise
                # the store could not take a row (a full disk): the parts stay as they are, intact and read

    def _sessions(self, launch: Launch, queue: LaunchQueue, teardowns_s: list[float]) -> Iterator[dict[str, Any]]:
        """The rows of each start of the launch; each start that ended cleanly adds its teardown's time to
        ``teardowns_s`` (the merged file of the launch's rows carries it: :func:`sweeper.store.parquet.compact`)."""
        plan, context = self.plan, _context_of(launch, self.context)
        warm_up = True
        while (item := queue.next()) is not None:
            begun = time.perf_counter()
            start_s: float | None = None
            try:
                with starter(launch.engine, launch.manager)(launch, context) as session:
                    start_s = time.perf_counter() - begun - (session.staging_s or 0.0)  # staging: its own column
                    warmup_s, aborted = _warm_up(plan, item, session, self.data) if warm_up else (None, False)
                    if aborted:  # past the time limit: measure on a fresh launch, without warm-up from now on
                        warm_up = False
                        continue
                    while item is not None:
                        row = _measure(plan, item, session, self.data, start_s, self.shared)
                        row["warmup_s"] = warmup_s
                        if row["status"] != OK:  # what the launch's processes said may explain it
                            row["error"] = f"{row['error']}{log_note(launch_log(context, launch))}"
                        queue.record(item, row)
                        yield row
                        if row["status"] != OK:
                            break  # workers were killed or lost: start the launch again at its planned shape
                        item = queue.next()
                    closing = time.perf_counter()
                teardowns_s.append(time.perf_counter() - closing)
            except Exception as error:
                if start_s is not None:
                    raise  # teardown itself failed: rows are kept, the error is the engine's
                note = log_note(launch_log(context, launch))
                for left in queue.rest():
                    row = row_of(plan, left, None, self.shared, cluster_start_s=time.perf_counter() - begun)
                    row.update(status=FAILED, error_type=type(error).__name__)
                    row["error"] = f"launch did not start: {error_text(error)}{note}"
                    queue.stamp(row)
                    yield row


def _warm_up(plan: Plan, item: Todo, session: Session, data: dict[float, Data]) -> tuple[float | None, bool]:
    """One untimed batch of 1-epoch fits, so worker start-up and imports are not in trial 0's time.

    Returns its time (None when it did not complete) and whether it ran past the time limit, which
    aborted the launch's running fits.
    """
    fit_data = data[item.point.fraction]
    tasks = batch_for(plan, item.launch, item.point, item.trial, fit_data, epochs=1)
    started = time.perf_counter()
    try:
        _with_timeout(session, tasks, fit_data, plan.grid.workload.timeout_s)
    except MeasurementTimeout:
        return None, True
    except Exception:  # the measurement that follows will fail the same way and record why
        return None, False
    return time.perf_counter() - started, False


def batch_for(plan: Plan, launch: Launch, point: Point, trial: int, data: Data, *, epochs: int) -> list[FitTask]:
    """The fits of one measurement: ``point`` trained for ``epochs`` on ``launch``, as the plan's workload says."""
    workload = plan.grid.workload
    return make_batch(
        point.mode,
        point.model_params,
        epochs,
        trial,
        plan.fits(point.mode),
        n_train=data.n_train,
        labels=data.y_train,
        folds=workload.folds,
        param_grid=workload.param_grid,
        seed=workload.seed,
        exact_epochs=workload.exact_epochs,
        threads_per_fit=workload.threads_per_fit,
        local_epochs=workload.local_epochs,
        shards=shards(plan, launch),
    )


def shards(plan: Plan, launch: Launch) -> int:
    """Data-parallel shards of a launch: ``workload.shards``, else one per slot (the baseline: one)."""
    if launch.engine == BASELINE_ENGINE:
        return 1
    workload = plan.grid.workload
    return workload.shards or max(1, launch.total_cores // workload.threads_per_fit)


def _measure(
    plan: Plan, item: Todo, session: Session, data: dict[float, Data], start_s: float, shared: dict[str, Any]
) -> dict[str, Any]:
    workload = plan.grid.workload
    fit_data = data[item.point.fraction]
    tasks = batch_for(plan, item.launch, item.point, item.trial, fit_data, epochs=trained_epochs(plan, item.point))
    row = row_of(plan, item, fit_data, shared, cluster_start_s=start_s)
    row.update(granted_columns(session))
    started = time.perf_counter()
    try:
        results = _with_timeout(session, tasks, fit_data, workload.timeout_s)
    except MeasurementTimeout:
        row.update(status=TIMEOUT, error_type="MeasurementTimeout", error=f"batch ran past {workload.timeout_s:g} s")
        row["fit_wall_s"] = time.perf_counter() - started
        return row
    except KeyboardInterrupt:
        raise
    except Exception as error:
        row.update(status=FAILED, error_type=type(error).__name__, error=error_text(error)[:2000])
        row["fit_wall_s"] = time.perf_counter() - started
        return row
    row["fit_wall_s"] = time.perf_counter() - started
    row.update(result_columns(results))
    granted = session.granted
    row.update(
        resource_columns(
            results,
            row["fit_wall_s"],
            granted.executors * granted.cores_per_executor,
            spark=on_spark(item.launch.engine),
            jvm_peak_heap_gib=session.jvm_peak_heap_gib(),
        )
    )
    return row


def _with_timeout(session: Session, tasks: list[FitTask], data: Data, timeout_s: float) -> list[FitResult]:
    """Run the batch in a helper thread; past the limit, abort the launch's workers.

    The deadline alone decides: a batch that has not ended by then is a timeout, whatever it raises
    or returns afterwards (an aborted batch fails in ways that depend on where the abort caught it).
    """
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

"""Run a plan: start each launch once, take all its measurements, write a row for each.

A measurement's outcome is data, not an exception that ends the sweep: a fit that raises, a
launch that cannot start or a batch past its time limit becomes a ``failed`` or ``timeout``
row and the sweep goes on. Ctrl-C (or SIGTERM) tears the running launch down, keeps every
finished row and stops. The exit status says how the rows ended (:func:`exit_code`).
"""

from __future__ import annotations

import itertools
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from sweeper.config.grid import DEFAULT_DATASET, FULL_GRID, HALVING, RACE, Grid
from sweeper.config.managers import descriptor
from sweeper.errors import UserError
from sweeper.launch.base import LaunchContext
from sweeper.launch.options import options_for
from sweeper.launch.registry import check_installed
from sweeper.names import FAILED, OK, PRUNED, TIMEOUT
from sweeper.planning.measurements import Todo, pending, split_reused
from sweeper.planning.plan import Plan
from sweeper.run.halving import HalvingRun, rung_lines
from sweeper.run.launches import Launches
from sweeper.run.race import RaceRun, Recorded
from sweeper.run.rows import RunRecord
from sweeper.run.run_dir import run_directory
from sweeper.run.signals import EXIT_LAUNCH_FAILED, EXIT_MEASUREMENT_FAILED, exit_status, signals_as_interrupt
from sweeper.run.trials import (
    FixedQueue,
    TrialQueue,
    one_round,
    one_round_visits,
    trial_policy,
)
from sweeper.search.accounting import NOT_STARTED
from sweeper.shapes import counted
from sweeper.store.lock import holding
from sweeper.store.parquet import (
    RecordedRow,
    check_writable,
    finish_merges,
    grid_hashes,
    merge_leftovers,
    race_decisions,
    race_rounds,
    read_table,
    recorded_rows,
    remove_sweep,
    sweep_dir,
    write_rows,
)
from sweeper.store.row import Row
from sweeper.workload import data as datasets
from sweeper.workload.data import Data
from sweeper.workload.environment import applied, fit_environment
from sweeper.workload.machine_load import LoadSample


@dataclass
class RunResult:
    """What a sweep did, for the summary and the exit code."""

    rows: list[Row] = field(default_factory=list)
    skipped: int = 0
    interrupted: bool = False
    exit_status: int = 0  # by the rows (exit_code); stopped: 130 (Ctrl-C) or 143 (SIGTERM)
    exit_reason: str | None = None  # why the rows make it non-zero (None: 0, or stopped)
    notes: list[str] = field(default_factory=list)  # what a search strategy decided, for the end of the run


Reporter = Callable[[Row], None]


@dataclass(frozen=True)
class _Settings:
    """What :func:`run` was asked, as one value for the steps that follow the lock."""

    store: Path
    fresh: bool
    report: Reporter | None
    warn: Callable[[str], None]
    progress: Callable[[int, int], None] | None
    start_timeout_s: float | None
    reuse: bool
    planned: Callable[[dict[int, int]], None] | None


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
            dataset = replace(dataset, name=DEFAULT_DATASET, path=None)
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
    planned: Callable[[dict[int, int]], None] | None = None,
) -> RunResult:
    """Take every pending measurement of the plan and write its row to the store.

    Everything that can be checked is checked before the first launch: engines and managers,
    the dataset, the store (a probe file written and removed before ``fresh`` deletes anything), and
    that no other run writes the sweep (its lock is held until the run ends: :mod:`sweeper.store.lock`).
    A dry run takes each shrunk measurement once and reuses its row for the planned measurements that shrink
    to the same one (see :func:`sweeper.planning.measurements.split_reused`), unless ``reuse`` is false. A run
    whose measurements are decided before it starts tells ``planned`` the rows each launch it starts will write.
    """
    _check_first(plan, store)
    with holding(sweep_dir(store, plan.grid.name), warn):  # one writer per sweep, from before --fresh deletes
        result = _run_held(plan, _Settings(store, fresh, report, warn, progress, start_timeout_s, reuse, planned))
    if not result.interrupted:
        result.exit_status, result.exit_reason = exit_code(result.rows)
    return result


def exit_code(rows: Sequence[Row]) -> tuple[int, str | None]:
    """``sweeper run``'s exit status by the rows it wrote, and why it is not 0 (None when it is).

    0 when every row is ``ok`` or ``pruned``; :data:`~sweeper.run.signals.EXIT_LAUNCH_FAILED` when a launch did
    not start (whatever else failed); else :data:`~sweeper.run.signals.EXIT_MEASUREMENT_FAILED` when a measurement
    failed or timed out. A launch that did not start leaves a ``failed`` row per measurement it had left, like a
    fit that raised: its ``error`` tells them apart, begun by :mod:`sweeper.run.launches` with "launch did not
    start" (:data:`sweeper.search.accounting.NOT_STARTED`, which the cluster-time accounting reads too).
    """
    not_started: set[int] = set()  # launch indexes
    lost = 0  # measurements of the launches that did not start
    ended: Counter[str] = Counter()  # the other rows that are not ok, by status
    for row in rows:
        if row["status"] in (OK, PRUNED):
            continue
        if row["status"] == FAILED and (row["error"] or "").startswith(NOT_STARTED):
            not_started.add(row["launch_index"])
            lost += 1
        else:
            ended[TIMEOUT if row["status"] == TIMEOUT else FAILED] += 1
    launches = counted(len(not_started), "launch", "launches")
    parts = [f"{launches} did not start, failing {counted(lost, 'measurement')}"] if not_started else []
    parts += [f"{counted(ended[FAILED], 'measurement')} failed"] if ended[FAILED] else []
    parts += [f"{counted(ended[TIMEOUT], 'measurement')} timed out"] if ended[TIMEOUT] else []
    if not parts:
        return 0, None
    code = EXIT_LAUNCH_FAILED if not_started else EXIT_MEASUREMENT_FAILED
    return code, f"{', '.join(parts)}; see the rows' error column"


def _run_held(plan: Plan, settings: _Settings) -> RunResult:
    """:func:`run` once the sweep's lock is held."""
    grid, store, warn = plan.grid, settings.store, settings.warn
    table = _sweep_table(grid, store, settings.fresh, warn)
    recorded = recorded_rows(store, grid.name, table)
    done_s = _done_s(recorded)
    static = grid.workload.adaptive is None and grid.search.strategy == FULL_GRID
    todo, skipped = pending(plan, set(done_s)) if static else ([], 0)
    result = RunResult(skipped=skipped)
    if static and not todo:
        return result
    run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    with run_directory(store, run_id, warn) as run_dir:  # scratch/ is removed at the end, logs/ is kept
        context = _launch_context(grid, run_dir, settings.start_timeout_s)
        run_record = RunRecord.of(grid, run_id, context.environment)
        total = len(todo) if static else plan.n_measurements

        def emit(row: Row) -> None:
            result.rows.append(row)
            if settings.report:
                settings.report(row)
            if settings.progress:
                settings.progress(len(result.rows), max(total, len(result.rows)))

        launches = Launches(plan, _data_on_a_sampled_machine(plan, warn), context, run_record, store)
        try:
            with applied(context.environment), signals_as_interrupt():
                if static:
                    _run_fixed(plan, todo, launches, emit, settings.reuse, settings.planned)
                else:
                    pruned = {key for key, row in recorded.items() if row.status == PRUNED}
                    stored = Recorded(done_s, race_decisions(table), race_rounds(table))
                    result.skipped = _run_decided(plan, launches, stored, pruned, emit, result.notes)
        except KeyboardInterrupt as stop:
            result.interrupted = True
            result.exit_status = exit_status(stop)
    result.notes.append(_order_note(grid.workload.seed))
    return result


def _order_note(seed: int) -> str:
    """The run's one line on its order of visits (the rows' ``visit_round`` and ``visit_position``)."""
    return (
        f"the baseline first, then the launches (and each launch its points) in a random order per round, drawn "
        f"from workload.seed {seed} (randomized interleaving: the rows' visit_round, visit_position, started_at)"
    )


def _sweep_table(grid: Grid, store: Path, fresh: bool, warn: Callable[[str], None]) -> pa.Table:
    """What the sweep holds, read once: after ``--fresh`` removed it, stopped merges finished and left parts merged,
    with a warning when another grid's rows are among it."""
    if fresh:
        remove_sweep(store, grid.name)
    repaired = finish_merges(store, grid.name)
    if repaired:
        warn(f"removed {len(repaired)} part files a stopped merge left beside their merged file")
    leftovers = merge_leftovers(store, grid.name)
    if leftovers:
        warn(f"merged {len(leftovers)} part files a stopped run left unmerged")
    table = read_table(store, grid.name)
    others = grid_hashes(table) - {grid.grid_hash}
    if others:
        warn(
            f"sweep {grid.name} in {store} holds rows of another grid (hash {', '.join(sorted(others))}); "
            f"this grid's (hash {grid.grid_hash}) join them: give it another name, or --fresh, to keep them apart"
        )
    return table


def _done_s(recorded: dict[str, RecordedRow]) -> dict[str, float | None]:
    """The ok measurements the store holds, by key, with their times (a disturbed one: taken, without its time)."""
    return {
        key: None if row.disturbed else row.time_s
        for key, row in recorded.items()
        if row.status == OK and (row.time_s is not None or row.disturbed)
    }


def _data_on_a_sampled_machine(plan: Plan, warn: Callable[[str], None]) -> dict[float, Data]:
    """:func:`load_data`, while this machine's load is sampled where launches run on it: a busy one is warned of."""
    limit = plan.grid.workload.interference_limit
    here = any(descriptor(launch.manager).on_this_machine for launch in plan.launches)
    sample = LoadSample.start(limit) if here else None
    data = load_data(plan, warn)
    if sample is not None and (busy := sample.finish()) is not None:
        warn(busy.warning(limit))
    return data


def _run_fixed(
    plan: Plan,
    todo: list[Todo],
    launches: Launches,
    emit: Callable[[Row], None],
    reuse: bool,
    planned: Callable[[dict[int, int]], None] | None,
) -> None:
    """Measurements decided before the run, launch by launch (a dry run's: each shrunk one once, see reuse).

    One round (:func:`sweeper.run.trials.one_round`): the baseline first, then the launches in a random order drawn
    from the grid's seed, each launch's measurements in rounds of trials. A resumed run takes what is left in the
    order the stopped run would have taken it (each launch keeps its draw; the store's measurements are left out),
    so the same grid and seed visit in the same order however often the sweep was stopped."""
    dry_run = any(launch.dry_run for launch in plan.launches)
    measured, launches.stand_ins = split_reused(plan, todo) if dry_run and reuse else (todo, {})
    by_launch: dict[int, list[Todo]] = {}
    for item in measured:
        by_launch.setdefault(item.launch.index, []).append(item)
    if planned:  # rows per launch: its measurements and the rows reusing them
        planned({i: sum(1 + len(launches.stand_ins.get(t.key, ())) for t in items) for i, items in by_launch.items()})
    remeasure = plan.grid.workload.remeasure_disturbed
    for visit, items in one_round(plan, measured):
        for row in launches.run(items[0].launch, FixedQueue(items, remeasure, visit)):
            emit(row)


def _run_decided(
    plan: Plan,
    launches: Launches,
    recorded: Recorded,
    pruned: set[str],
    emit: Callable[[Row], None],
    notes: list[str],
) -> int:
    """Trials decided as they come (adaptive), configurations rung by rung (halving) or raced point by point (race);
    returns the skipped count. Each round's launches in a random order drawn from the grid's seed and the round (a
    resumed run draws the same, the store's trials counted without being taken again)."""
    strategy = plan.grid.search.strategy
    if strategy == RACE:
        written = itertools.count()

        def decisions(rows: list[Row]) -> None:  # a file per round with decisions, named apart
            if rows:
                _write_decided(plan, launches, rows, emit, f"race-{next(written):03d}")

        race = RaceRun(plan, launches.run, recorded, emit, decisions, launches.run_record, launches.data)
        rounds = race.run()
        notes += [f"{rounds} round(s) of launches", *race.lines()]
        return race.skipped
    done_s = recorded.done_s
    if strategy == HALVING:
        halving = HalvingRun(plan, launches.run, done_s, emit)
        notes += rung_lines(halving.run(), halving.rungs, halving.axis)
        _write_decided(plan, launches, halving.pruned_rows(launches.run_record, pruned, launches.data), emit, "pruned")
        return halving.skipped
    policy = trial_policy(plan.grid.workload)
    skipped = 0
    for visit, index in one_round_visits(plan, range(len(plan.launches))):
        launch = plan.launches[index]
        queue = TrialQueue(plan, launch, plan.points[index], done_s, policy, visit=visit)
        for row in launches.run(launch, queue):
            emit(row)
        skipped += queue.skipped
    return skipped


def _write_decided(plan: Plan, launches: Launches, rows: list[Row], emit: Callable[[Row], None], name: str) -> None:
    """Write a search strategy's rows of what it decided not to measure (``pruned``), and report them."""
    if rows:
        write_rows(launches.store, plan.grid.name, rows, f"part-{launches.run_record.run_id}-{name}")
        for row in rows:
            emit(row)


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

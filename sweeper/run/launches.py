"""Start a launch, take its queue's measurements on it, tear it down; every row written as it is taken.

A launch that cannot start (or is not granted its plan) records what its queue still had as
``failed``, with the error; its processes are gone all the same. After a measurement that did not
end ``ok`` (workers killed or lost), the launch starts again at its planned shape.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from sweeper.config.managers import LOCAL
from sweeper.errors import error_text
from sweeper.launch.base import LaunchContext
from sweeper.launch.logs import containers_log, launch_log, log_note
from sweeper.launch.options import LocalOptions
from sweeper.launch.registry import starter
from sweeper.names import FAILED, OK
from sweeper.planning.measurements import Todo
from sweeper.planning.plan import Launch, Plan
from sweeper.run.measure import measure, warm_up
from sweeper.run.rows import RunRecord, measurement_row, reused_row, start_columns
from sweeper.run.signals import deferred_interrupts
from sweeper.run.trials import LaunchQueue
from sweeper.search.accounting import NOT_STARTED
from sweeper.store.parquet import StoreWriteError, compact, write_rows
from sweeper.store.row import Row, StartColumns
from sweeper.workload.data import Data


class Launches:
    """Starts the plan's launches and takes a queue's measurements on each, writing every row at once."""

    def __init__(
        self, plan: Plan, data: dict[float, Data], context: LaunchContext, run: RunRecord, store: Path
    ) -> None:
        self.plan, self.data, self.context, self.run_record, self.store = plan, data, context, run, store
        self.stand_ins: dict[str, list[Todo]] = {}  # a dry run's rows that reuse a measured one, by its key
        self.started: dict[int, int] = {}

    def run(self, launch: Launch, queue: LaunchQueue) -> Iterator[Row]:
        """The rows of ``launch``'s queue, each written when taken; the launch's files merged at its end, with the
        time its last start took to tear down (:func:`sweeper.store.parquet.compact`)."""
        serial = self.started[launch.index] = self.started.get(launch.index, -1) + 1
        stem = f"part-{self.run_record.run_id}-{launch.index:03d}" + (f"-{serial}" if serial else "")
        files: list[Path] = []
        teardowns_s: list[float] = []  # of each start that ended cleanly; the rows keep the last

        def keep(row: Row) -> list[Row]:
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

    def _sessions(self, launch: Launch, queue: LaunchQueue, teardowns_s: list[float]) -> Iterator[Row]:
        """The rows of each start of the launch; each start that ended cleanly adds its teardown's time to
        ``teardowns_s``."""
        plan, run, context = self.plan, self.run_record, _context_of(launch, self.context)
        warming_up = True
        while (item := queue.next()) is not None:
            begun = time.perf_counter()
            start_s: float | None = None
            try:
                with starter(launch.engine, launch.manager)(launch, context) as session:
                    start_s = time.perf_counter() - begun - (session.staging_s or 0.0)  # staging: its own column
                    fit_data = self.data[item.point.fraction]
                    warmup_s, aborted = warm_up(plan, item, session, fit_data) if warming_up else (None, False)
                    if aborted:  # past the time limit: measure on a fresh launch, without warm-up from now on
                        warming_up = False
                        continue
                    start = start_columns(session, start_s, warmup_s)
                    while item is not None:
                        fit_data = self.data[item.point.fraction]
                        outcome, result = measure(plan, item, session, fit_data, run)
                        ok = outcome["status"] == OK
                        if not ok:  # what the launch's processes said may explain it
                            outcome["error"] = f"{outcome['error']}{log_note(launch_log(context, launch))}"
                        disturbed = result.get("disturbed") is True
                        search = queue.record(item, outcome["fit_wall_s"] if ok else None, disturbed)
                        yield measurement_row(
                            plan, item, run, fit_data, outcome=outcome, start=start, result=result, search=search
                        )
                        if not ok:
                            break  # workers were killed or lost: start the launch again at its planned shape
                        item = queue.next()
                    closing = time.perf_counter()
                teardowns_s.append(time.perf_counter() - closing)
            except Exception as error:
                if start_s is not None:
                    raise  # teardown itself failed: rows are kept, the error is the engine's
                failed_start = StartColumns(cluster_start_s=time.perf_counter() - begun)
                logs = log_note(launch_log(context, launch), containers_log(context, launch))
                why = f"{NOT_STARTED}: {error_text(error)}{logs}"
                outcome = run.outcome(FAILED, why, error_type=type(error).__name__)
                for left in queue.rest():
                    yield measurement_row(
                        plan, left, run, None, outcome=outcome, start=failed_start, search=queue.columns()
                    )


def _context_of(launch: Launch, context: LaunchContext) -> LaunchContext:
    """A launch's context: a launch on manager local (a dry run's) has no options of the grid's manager."""
    return replace(context, options=LocalOptions()) if launch.manager == LOCAL else context

"""What ``sweeper run`` shows while it works: a line per launch as it starts, a line per measurement, and a
progress bar that says what the running launch is doing and an ETA that counts the starts (:mod:`sweeper.run.eta`).

A launch's start can take a minute (a Spark driver, its executors): the bar names the stage and how long it has
lasted, and a stage that lasts past :data:`LONG_WAIT_S` gets a line of its own, again every :data:`REPEAT_S`,
so that a log without the bar says what the run waits for too.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TimeElapsedColumn
from rich.table import Column
from rich.text import Text

from sweeper.config.managers import descriptor
from sweeper.launch.lifecycle import STARTED, STARTING, STOPPING, WAITING
from sweeper.names import BASELINE_ENGINE, on_spark
from sweeper.planning.plan import Launch, Plan
from sweeper.run.eta import Eta
from sweeper.run.view import measurement_line
from sweeper.shapes import counted, shape_text
from sweeper.store.row import Row
from sweeper.text import plain, say

LONG_WAIT_S = 15.0  # a stage this long gets a line saying what it waits for
REPEAT_S = 60.0  # and another one this often after it
MEASURING = "measuring"  # the stage of a started launch


def _clock_text(seconds: float | None) -> str:
    """``0:01:05``, or ``-:--:--`` for no estimate."""
    if seconds is None:
        return "-:--:--"
    whole = int(seconds + 0.5)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def units(launch: Launch) -> str:
    """What the launch's engine calls its workers: ``2 executors``, ``2 workers``, ``1 worker process``."""
    if launch.engine == BASELINE_ENGINE:
        return counted(launch.executors, "worker process", "worker processes")
    return counted(launch.executors, "executor" if on_spark(launch.engine) else "worker")


def _stage_text(launch: Launch, stage: str) -> str:
    """What a launch in ``stage`` does, in words: ``starting 2 executors``, ``waiting for 2 workers``."""
    where = "" if descriptor(launch.manager).on_this_machine else f" on {launch.manager}"
    return {
        STARTING: f"starting {units(launch)}{where}",
        WAITING: f"waiting for {units(launch)}{where}",
        MEASURING: "measuring",
        STOPPING: "stopping",
    }[stage]


@dataclass(frozen=True)
class _Stage:
    launch: Launch
    stage: str
    since_s: float
    told: int = 0  # long-wait lines printed for it


class RunProgress:
    """The progress display of one run: feed it the launches' stages, the plan's rows per launch and each row."""

    def __init__(self, console: Console, plan: Plan, clock: Callable[[], float] = time.monotonic) -> None:
        self.plan, self.clock = plan, clock
        self.bar = Progress(
            _StatusColumn(self),
            BarColumn(bar_width=16),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            _EtaColumn(self),
            console=console,
            transient=True,
        )
        trials = plan.grid.workload.trials
        self.rows_planned = {launch.index: len(plan.points[launch.index]) * trials for launch in plan.launches}
        self.eta = Eta({launch.index: (launch.engine, self.rows_planned[launch.index]) for launch in plan.launches})
        self.starts: dict[int, int] = {}  # launch index -> its starts, in the order first started
        self.current: _Stage | None = None  # set under _lock: the long-wait thread updates it too
        self._lock = threading.Lock()
        self.rows_of_launch: dict[int, int] = {}

    @property
    def console(self) -> Console:
        return self.bar.console

    def print(self, text: Text) -> None:
        """A line above the bar (wrapped at the console's width)."""
        say(self.console, text)

    def planned(self, rows: dict[int, int]) -> None:
        """The rows each launch writes in this run, once the run knows them (what is in the store is skipped)."""
        self.rows_planned = rows
        by_index = {launch.index: launch for launch in self.plan.launches}
        self.eta.replan({index: (by_index[index].engine, count) for index, count in rows.items()})

    def ordinal(self, launch: Launch) -> str:
        """``launch 2 of 5``: its place in the order this run first started its launches (a random order per round,
        :mod:`sweeper.search.interleaving`), among the launches it starts."""
        total = len(self.rows_planned) if launch.index in self.rows_planned else len(self.plan.launches)
        if launch.index in self.starts:
            return f"launch {list(self.starts).index(launch.index) + 1} of {total}"
        return f"launch {len(self.starts) + 1} of {total}"

    def stage(self, launch: Launch, stage: str) -> None:
        """A launch entered ``stage`` (:data:`sweeper.launch.lifecycle.STAGES`): a line when it starts."""
        now_s = self.clock()
        if stage == STARTING:
            self.eta.starting(launch.index, now_s)
            self.starts[launch.index] = self.starts.get(launch.index, 0) + 1
            again = " again" if self.starts[launch.index] > 1 else ""
            rows = self.rows_planned.get(launch.index, 0) - self.rows_of_launch.get(launch.index, 0)
            shape = shape_text(
                launch.executors, launch.cores_per_executor, launch.executor_memory_gib,
                baseline=launch.engine == BASELINE_ENGINE,
            )  # fmt: skip
            self.print(
                plain(f"{self.ordinal(launch)}{again}: ", "bold")
                + plain(
                    f"{launch.engine} {shape}, {counted(max(rows, 0), 'measurement')}: {_stage_text(launch, stage)}"
                )
            )
        elif stage == STARTED:
            self.eta.started(launch.index, now_s)
            begun = self.current.since_s if self.current and self.current.launch.index == launch.index else now_s
            self.print(plain(f"{self.ordinal(launch)}: {launch.engine} started in {now_s - begun:.1f} s"))
            stage = MEASURING
        elif stage == STOPPING:
            self.eta.stopping(launch.index, now_s)
        with self._lock:  # waiting goes on with the start: its time counts from the first stage
            since_s = self.current.since_s if stage == WAITING and self.current is not None else now_s
            self.current = _Stage(launch, stage, since_s)
        self.bar.refresh()

    def row(self, row: Row) -> None:
        """A row was written: its line, and the ETA learns its time."""
        index = int(row["launch_index"])
        self.eta.row(index, self.clock())
        self.rows_of_launch[index] = self.rows_of_launch.get(index, 0) + 1
        with self._lock:
            current = self.current
            if current is not None and current.stage == MEASURING and current.launch.index == index:
                self.current = _Stage(current.launch, MEASURING, self.clock())  # the next measurement's wait
        self.print(measurement_line(row))

    def advance(self, done: int, total: int) -> None:
        """``done`` of ``total`` rows written."""
        self.bar.update(self.bar.task_ids[0], completed=done, total=total)

    def status(self) -> str:
        """The bar's words: the running launch's stage and how long it has lasted."""
        current = self.current
        if current is None:
            return "preparing"
        launch, lasted = current.launch, _clock_text(self.clock() - current.since_s)
        return f"{self.ordinal(launch)} {launch.engine}: {_stage_text(launch, current.stage)} {lasted}"

    def remaining_s(self) -> float | None:
        return self.eta.remaining_s(self.clock())

    def tick(self) -> None:
        """A line for a stage that has lasted past :data:`LONG_WAIT_S` (then every :data:`REPEAT_S`)."""
        with self._lock:
            current = self.current
            if current is None:
                return
            lasted_s = self.clock() - current.since_s
            if lasted_s < LONG_WAIT_S + current.told * REPEAT_S:
                return
            self.current = replace(current, told=current.told + 1)
        self.print(plain(self.long_wait_text(current.launch, current.stage, lasted_s), "yellow"))

    def long_wait_text(self, launch: Launch, stage: str, lasted_s: float) -> str:
        """``launch 2 of 5: spark still waiting for 2 executors after 15 s (limit 300 s)``."""
        workload = self.plan.grid.workload
        head = f"{self.ordinal(launch)}: {launch.engine} still"
        if stage in (STARTING, WAITING):
            return f"{head} {_stage_text(launch, stage)} after {lasted_s:.0f} s (limit {workload.start_timeout_s:g} s)"
        if stage == MEASURING:
            taken = self.rows_of_launch.get(launch.index, 0)
            of = self.rows_planned.get(launch.index, taken + 1)
            which = f"measurement {taken + 1} of {of}" if taken < of else "a measurement again"
            return f"{head} measuring after {lasted_s:.0f} s: {which} (time limit {workload.timeout_s:g} s a batch)"
        return f"{head} stopping after {lasted_s:.0f} s"


class _StatusColumn(ProgressColumn):
    """The running launch's stage and how long it has lasted."""

    def __init__(self, progress: RunProgress) -> None:
        super().__init__(table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1))
        self.progress = progress

    def render(self, task: Task) -> Text:
        return Text(self.progress.status(), overflow="ellipsis", no_wrap=True)


class _EtaColumn(ProgressColumn):
    """The run's remaining time, starts counted."""

    def __init__(self, progress: RunProgress) -> None:
        super().__init__(table_column=Column(no_wrap=True))
        self.progress = progress

    def render(self, task: Task) -> Text:
        return Text(f"ETA {_clock_text(self.progress.remaining_s())}")


@contextmanager
def run_progress(console: Console, plan: Plan, total: int) -> Iterator[RunProgress]:
    """The run's progress display on ``console`` while the block runs, and a thread that tells long waits."""
    progress = RunProgress(console, plan)
    stop = threading.Event()

    def tell_long_waits() -> None:
        while not stop.wait(1.0):
            progress.tick()

    teller = threading.Thread(target=tell_long_waits, name="sweeper-long-waits", daemon=True)
    with progress.bar:
        progress.bar.add_task("sweep", total=total)
        teller.start()
        try:
            yield progress
        finally:
            stop.set()
            teller.join()

"""``sweeper run``'s progress: a line per launch as it starts, an ETA that counts the starts, long waits told, every
line within 100 columns; a launch's stages and its in-process logs, heard and kept off the terminal.

The view's tests drive it with a clock of their own (no sleeping); the lifecycle's start a real baseline launch.
"""

from __future__ import annotations

import io
import logging
import re
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from sweeper.config import load as grid_file
from sweeper.launch.lifecycle import STARTED, STARTING, STOPPING, WAITING, launched, stages_to
from sweeper.launch.registry import check_installed
from sweeper.planning.plan import Launch, Plan, make_plan
from sweeper.run.eta import DEFAULT_START_S, Eta
from sweeper.run.progress import LONG_WAIT_S, REPEAT_S, RunProgress
from sweeper.store.row import Row
from tests.conftest import minimal_grid
from tests.support import launches

COLUMNS = 100


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now_s = 1000.0

    def __call__(self) -> float:
        return self.now_s


@pytest.fixture
def plan(tmp_path: Path) -> Plan:
    """The baseline, Spark 2 x 1 and Dask 2 x 1, epochs 3 and 8, 2 trials: 4 rows per launch."""
    grid = minimal_grid(name="p" * 60, store=str(tmp_path / "store"))  # a long name: lines must still fit
    grid["workload"] = {"dataset": "digits", "epochs": [3, 8], "trials": 2}
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(grid))
    return make_plan(grid_file.load(path))


def shown(plan: Plan) -> tuple[RunProgress, Clock, io.StringIO]:
    clock = Clock()
    out = io.StringIO()
    console = Console(file=out, width=COLUMNS, force_terminal=True, color_system=None, markup=False)
    return RunProgress(console, plan, clock), clock, out


def row(launch: Launch, epochs: int, trial: int) -> Row:
    return Row(  # type: ignore[typeddict-item]
        launch_index=launch.index, status="ok", engine=launch.engine, mode="replicas", executors=launch.executors,
        cores_per_executor=launch.cores_per_executor, executor_memory_gib=launch.executor_memory_gib,
        epochs=epochs, trial=trial, fit_wall_s=0.25, accuracy=0.9, epochs_run=epochs,
    )  # fmt: skip


def take(progress: RunProgress, clock: Clock, launch: Launch, start_s: float, row_s: float) -> None:
    """A launch's whole life on the test's clock: started in ``start_s``, 4 rows of ``row_s``, torn down in 1 s."""
    progress.stage(launch, STARTING)
    progress.stage(launch, WAITING)
    clock.now_s += start_s
    progress.stage(launch, STARTED)
    for epochs, trial in ((3, 0), (3, 1), (8, 0), (8, 1)):
        clock.now_s += row_s
        progress.row(row(launch, epochs, trial))
    progress.stage(launch, STOPPING)
    clock.now_s += 1.0


def lines_of(out: io.StringIO) -> list[str]:
    return [re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", line) for line in out.getvalue().splitlines()]


def test_each_launch_gets_a_line_as_it_starts_with_its_engine_shape_and_what_it_waits_for(plan: Plan) -> None:
    progress, clock, out = shown(plan)
    baseline, spark, dask = plan.launches
    take(progress, clock, baseline, start_s=0.5, row_s=0.2)
    progress.stage(spark, STARTING)
    progress.stage(dask, STARTING)
    text = lines_of(out)
    assert "launch 1 of 3: local 1 thread (baseline), 4 measurements: starting 1 worker process" in text
    assert "launch 1 of 3: local started in 0.5 s" in text
    assert "launch 2 of 3: spark 2 executors x 1 core x 2 GiB, 4 measurements: starting 2 executors" in text
    assert "launch 3 of 3: dask 2 executors x 1 core x 2 GiB, 4 measurements: starting 2 workers" in text
    assert max(map(len, text)) <= COLUMNS


def test_the_run_says_which_launches_it_starts_once_it_knows(plan: Plan) -> None:
    """A resumed run that has only Dask's rows left numbers its launches among those it starts."""
    progress, _, out = shown(plan)
    dask = plan.launches[2]
    progress.planned({dask.index: 1})
    progress.stage(dask, STARTING)
    assert "launch 1 of 1: dask 2 executors x 1 core x 2 GiB, 1 measurement: starting 2 workers" in lines_of(out)


def test_the_eta_before_a_spark_start_counts_the_start(plan: Plan) -> None:
    """The issue: after the baseline's quick rows an ETA from rows alone said 0:00:07 before a 30-60 s start."""
    progress, clock, _ = shown(plan)
    baseline, spark, dask = plan.launches
    take(progress, clock, baseline, start_s=0.5, row_s=0.2)
    rows_s = 8 * 0.2  # Spark's and Dask's, at the baseline's row time until timed (no teardown timed yet)
    expected_s = DEFAULT_START_S["spark"] + DEFAULT_START_S["dask"] + rows_s
    assert progress.remaining_s() == pytest.approx(expected_s)
    take(progress, clock, spark, start_s=50.0, row_s=1.0)  # the baseline's teardown is timed: 1 s
    assert progress.remaining_s() == pytest.approx(DEFAULT_START_S["dask"] + 4 * (0.2 * 4 + 4 * 1.0) / 8 + 1.0)
    progress.stage(dask, STARTING)
    clock.now_s += 2.0  # Dask's start has lasted 2 of its 5 s
    assert progress.remaining_s() == pytest.approx(3.0 + 4 * 0.6 + 1.0)
    take(progress, clock, dask, start_s=0.0, row_s=0.5)
    assert progress.remaining_s() == 0.0


def test_a_launch_that_starts_again_counts_its_start_and_its_rows_left() -> None:
    eta = Eta({0: ("dask", 2)})
    eta.starting(0, 0.0)
    eta.started(0, 4.0)
    eta.row(0, 6.0)
    eta.stopping(0, 6.0)  # the measurement failed: the launch starts again for its last row
    eta.starting(0, 7.0)
    assert eta.remaining_s(7.0) == pytest.approx(4.0 + 2.0 + 1.0)


def test_a_starts_first_row_carries_the_warm_up_and_is_not_taken_for_the_rows_after_it() -> None:
    eta = Eta({0: ("dask", 3), 1: ("dask", 3)})
    eta.starting(0, 0.0)
    eta.started(0, 1.0)
    eta.row(0, 15.0)  # the warm-up and a row: 14 s
    eta.row(0, 15.5)  # a row: 0.5 s
    assert eta.remaining_s(15.5) == pytest.approx(0.5 + 1.0 + 14.0 + 2 * 0.5)  # launch 1: its start as timed


def test_no_eta_until_a_row_is_timed(plan: Plan) -> None:
    progress, _, _ = shown(plan)
    progress.stage(plan.launches[0], STARTING)
    assert progress.remaining_s() is None
    assert "ETA -:--:--" in bar_line(progress)


def bar_line(progress: RunProgress) -> str:
    """The live line as a terminal shows it."""
    out = io.StringIO()
    console = Console(file=out, width=COLUMNS, force_terminal=True, color_system=None, markup=False)
    progress.bar.add_task("sweep", total=12)
    for renderable in progress.bar.get_renderables():
        console.print(renderable)
    [line] = lines_of(out)
    return line


def test_the_bar_says_what_the_launch_waits_for_and_since_when_within_100_columns(plan: Plan) -> None:
    progress, clock, _ = shown(plan)
    baseline, spark, _ = plan.launches
    take(progress, clock, baseline, start_s=0.5, row_s=0.2)
    progress.stage(spark, STARTING)
    progress.stage(spark, WAITING)
    clock.now_s += 42.0
    line = bar_line(progress)
    assert line.startswith("launch 2 of 3 spark: waiting for 2 executors 0:00:42"), line
    assert re.search(r"ETA 0:00:\d\d$", line) and len(line) <= COLUMNS, line


def test_a_long_wait_is_told_once_past_the_limit_and_again_every_minute(plan: Plan) -> None:
    progress, clock, out = shown(plan)
    spark = plan.launches[1]
    progress.stage(spark, STARTING)
    told = []
    for lasted_s in (LONG_WAIT_S - 1, LONG_WAIT_S, LONG_WAIT_S + 1, LONG_WAIT_S + REPEAT_S):
        clock.now_s = 1000.0 + lasted_s
        progress.tick()
        told.append([line for line in lines_of(out) if "still" in line])
    assert [len(lines) for lines in told] == [0, 1, 1, 2]
    # the plan's second launch, started first: "launch 1" (launches are numbered as this run visits them, in a
    # random order per round)
    assert told[-1] == [
        "launch 1 of 3: spark still starting 2 executors after 15 s (limit 180 s)",
        "launch 1 of 3: spark still starting 2 executors after 75 s (limit 180 s)",
    ]
    progress.stage(spark, STARTED)
    clock.now_s += LONG_WAIT_S
    progress.tick()
    assert lines_of(out)[-1].startswith("launch 1 of 3: spark still measuring after 15 s: measurement 1 of 4")


def test_a_launch_tells_its_stages_and_its_process_logs_go_to_its_log(tmp_path: Path) -> None:
    """A real baseline launch: its stages in order; what this process logs while it lives goes to its log file
    (Dask's scheduler, which runs here, logs "workers died" there at Ctrl-C), not to standard error."""
    heard: list[str] = []
    launch = launches.launch("local", executors=1, executor_memory_mib=0, memory_overhead_mib=0)
    context = launches.context(tmp_path / "run", log_dir=tmp_path / "logs")
    logger = logging.getLogger("distributed.scheduler")
    standard_error = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115 (a process's sys.stderr, not pytest's)
    handler = logging.StreamHandler(standard_error)  # as distributed installs its own at import
    logger.addHandler(handler)
    backend = check_installed("local", "local")
    try:
        with stages_to(lambda _, stage: heard.append(stage)), launched(backend, launch, context):
            assert heard == [STARTING, WAITING, STARTED]
            logger.error("Task x marked as failed because 1 workers died while trying to run it")
    finally:
        logger.removeHandler(handler)
        standard_error.close()
    assert heard == [STARTING, WAITING, STARTED, STOPPING]
    [log] = (tmp_path / "logs").iterdir()
    assert "workers died" in log.read_text()

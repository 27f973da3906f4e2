"""Dry runs preview the real sweep: planned configurations and epochs, each shrunk measurement taken once."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from sweeper.config import load as grid_file
from sweeper.names import OK
from sweeper.planning.dry_run import MAX_EPOCHS, MAX_TRAIN_ROWS, shrink_launch, shrink_plan
from sweeper.planning.measurements import pending, split_reused
from sweeper.planning.plan import Plan, make_plan
from sweeper.run.rows import RunRecord, measurement_row, planned_columns, reused_row
from tests.conftest import REPO, minimal_grid, run_cli

SMALL_MACHINE = {"local_cores": 2, "local_memory_mib": 16 * 1024}  # every shape of 2node.yaml shrinks to 1 x 2 x 8 GiB


def report_grid_dry_run(**machine: int) -> Plan:
    plan = make_plan(grid_file.load(REPO / "grids" / "2node.yaml"))
    launches = tuple(shrink_launch(launch, **(machine or SMALL_MACHINE)) for launch in plan.launches)
    return replace(plan, launches=launches, epochs_cap=MAX_EPOCHS, max_train_rows=MAX_TRAIN_ROWS)


def test_shrunk_launches_remember_the_planned_one() -> None:
    plan = report_grid_dry_run()
    planned = [launch.as_planned for launch in plan.launches]
    assert [(p.cores_per_executor, p.executors) for p in planned if p.engine == "spark"] == [(4, 9), (5, 7), (6, 5)]
    assert {(launch.executors, launch.cores_per_executor) for launch in plan.launches[1:]} == {(1, 2)}


def test_measurements_that_shrink_alike_are_taken_once() -> None:
    plan = report_grid_dry_run()
    todo, _ = pending(plan, set())
    measured, stand_ins = split_reused(plan, todo)
    # per engine (baseline, spark, dask): epochs 10, and 100/1000/10000 all capped at 20; 3 trials
    assert len(todo) == 84 and len(measured) == 3 * 2 * 3
    assert sum(len(items) for items in stand_ins.values()) == 84 - 18
    for item in measured:
        for other in stand_ins[item.key]:
            assert other.launch.engine == item.launch.engine and other.trial == item.trial
            assert min(other.point.epochs, MAX_EPOCHS) == min(item.point.epochs, MAX_EPOCHS)


def test_shapes_that_shrink_apart_are_measured_apart() -> None:
    plan = report_grid_dry_run(local_cores=16, local_memory_mib=256 * 1024)  # the planned shapes fit as they are
    measured, _ = split_reused(plan, pending(plan, set())[0])
    assert len(measured) == 2 * 3 + 2 * 3 * 2 * 3  # baseline: 2 capped epochs x 3 trials; engines: x 3 shapes


def test_a_reused_row_stands_for_its_own_planned_measurement() -> None:
    plan = report_grid_dry_run()
    todo, _ = pending(plan, set())
    measured, stand_ins = split_reused(plan, todo)
    source = next(item for item in measured if item.launch.engine == "spark" and item.point.epochs == 100)
    other = next(i for i in stand_ins[source.key] if i.launch.as_planned.cores_per_executor == 6)
    run = RunRecord.of(plan.grid, "run", {})
    row = measurement_row(plan, source, run, None, outcome=run.outcome(OK, None, fit_wall_s=1.5))
    copy = reused_row(plan, row, other)
    assert copy["reused_from"] == source.key != copy["measurement_key"] == other.key
    assert (copy["cores_per_executor"], copy["executors"], copy["executor_memory_gib"]) == (6, 5, 19.0)
    assert copy["epochs"] == other.point.epochs and copy["dry_run_epochs"] == MAX_EPOCHS == row["dry_run_epochs"]
    assert copy["fit_wall_s"] == 1.5 and copy == {**row, **planned_columns(plan, other), "reused_from": source.key}


def test_plan_dry_run_shows_the_shape_each_launch_has_here() -> None:
    result = run_cli("plan", "grids/2node.yaml", "--dry-run", columns=250)
    assert result.returncode == 0, result.stderr
    flat = " ".join(result.stdout.split())
    assert "dry run here" in flat and re.search(r"local: 1 executor x \d+ cores? x \d+(\.\d+)? GiB", flat)
    assert "measurements taken here" in flat and "84 measurements in 7 launches" in flat
    launches = json.loads(run_cli("plan", "grids/2node.yaml", "--dry-run", "--json").stdout)
    spark = [o for o in launches if o["engine"] == "spark"]
    assert [(o["cores_per_executor"], o["executors"]) for o in spark] == [(4, 9), (5, 7), (6, 5)]
    assert all(o["dry_run"] and o["here"]["manager"] == "local" for o in launches)


def test_a_dry_run_previews_the_whole_grid_with_a_fixed_number_of_trials(write_grid: Callable[..., Path]) -> None:
    spec = minimal_grid()
    spec["workload"] = {"dataset": "digits", "epochs": [5, 10], "trials": {"min": 4, "max": 20}}
    spec["search"] = {"strategy": "halving", "eta": 2}
    plan = make_plan(grid_file.load(write_grid(spec)))
    assert plan.grid.search.strategy == "halving" and plan.grid.workload.adaptive is not None
    dry = shrink_plan(plan)
    assert dry.grid.search.strategy == "grid" and dry.grid.workload.adaptive is None
    assert dry.grid.workload.trials == 4 and len(pending(dry, set())[0]) == 4 * len(pending(plan, set())[0]) // 20

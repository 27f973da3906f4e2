"""Render a plan for people: the matched launch table, the workload axes, the hand commands
(a PySpark shell and Dask's command lines on each launch's shape); and for scripts: ``sweeper plan --json``.

Everything is printed through :func:`~sweeper.text.plain`, never as console markup, so
names and paths from a grid (``[`` and ``]`` included) show as written.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from sweeper.config.grid import DEFAULT_ESTIMATOR, HALVING, Estimator, Workload
from sweeper.config.managers import descriptor
from sweeper.engines import DASK
from sweeper.names import BASELINE_ENGINE, on_spark
from sweeper.planning.hand_commands import dask_commands, spark_command, wrapped
from sweeper.planning.measurements import pending, split_reused
from sweeper.planning.plan import Launch, Plan
from sweeper.shapes import BASELINE_TEXT, counted, noun_for, shape_text_mib
from sweeper.text import json_text, plain
from sweeper.units import MIB_PER_GIB, format_mib


def warning_line(text: str) -> Text:
    """``warning: TEXT``, the text as written (not read as console markup)."""
    return plain("warning:", "yellow") + plain(f" {text}")


def show_plan(plan: Plan, console: Console) -> None:
    """Print what a sweep of this plan will start and measure."""
    grid = plan.grid
    cluster = grid.cluster
    console.print(
        plain(grid.name, "bold")
        + plain(
            f" ({grid.path}): manager {grid.manager}, {counted(cluster.nodes, 'node')} x "
            f"{counted(cluster.cores_per_node, 'core')} x {format_mib(cluster.memory_per_node_mib)}; rule "
            f"{grid.rule}, reserve {cluster.reserve_cores} core(s) + "
            f"{format_mib(cluster.reserve_memory_mib)} per node, {cluster.application_master} "
            "slot(s) for the ApplicationMaster / Dask scheduler"
        )
    )
    for warning in [*grid.warnings, *beyond_this_machine(plan)]:
        console.print(warning_line(warning))
    console.print(_launch_table(plan))
    _show_workload(plan, console)
    _show_hand_commands(plan, console)


def beyond_this_machine(plan: Plan) -> list[str]:
    """Where launches run on this machine (``manager: local``), what the grid asks of a node that it does not have.

    Dask's launch then fails (its workers' memory limits are checked against the machine) while Spark's
    over-commits: the comparison would not be fair. A dry run shrinks the launches to fit: no warning.
    """
    import os

    import psutil

    grid = plan.grid
    if not descriptor(grid.manager).on_this_machine or any(launch.dry_run for launch in plan.launches):
        return []
    cores, memory_mib = os.cpu_count() or 1, psutil.virtual_memory().total // 2**20
    found = []
    if grid.cluster.cores_per_node > cores:
        found.append(f"cluster.cores_per_node: {grid.cluster.cores_per_node} is more than this machine's {cores} cores")
    if grid.cluster.memory_per_node_mib > memory_mib:
        found.append(
            f"cluster.memory_per_node: {format_mib(grid.cluster.memory_per_node_mib)} is more than this machine's "
            f"{format_mib(memory_mib)}"
        )
    return [f"{text}: a local run over-commits the machine (use --dry-run, or describe this machine)" for text in found]


def _launch_table(plan: Plan) -> Table:
    """One row per launch: its shape, its layout per node, how many measurements it takes.

    A dry run's table shows the grid's launches, each with the shape it will have on this machine.
    """
    dry_run = any(launch.dry_run for launch in plan.launches)
    table = Table(title="Matched launches (Spark executors = Dask workers)")
    for column in ("#", "engine", "executors/workers", "cores/threads", "memory", "overhead", "per node"):
        table.add_column(column, justify="left" if column == "engine" else "right")
    table.add_column("measurements", justify="right")
    if dry_run:
        table.add_column("dry run here", justify="left")
    for launch in plan.launches:
        planned = launch.as_planned
        baseline = launch.engine == BASELINE_ENGINE
        cells = [
            str(launch.index + 1),
            launch.engine + (" (baseline)" if baseline else ""),
            str(planned.executors),
            str(planned.cores_per_executor),
            "-" if baseline else format_mib(planned.executor_memory_mib),
            format_mib(planned.memory_overhead_mib) if on_spark(launch.engine) else "-",
            "-" if baseline else " + ".join(str(n) for n in planned.workers_per_node),
            str(len(plan.points[launch.index]) * plan.grid.workload.trials),
        ]
        if dry_run:
            cells.append(BASELINE_TEXT if baseline else f"{launch.manager}: {_shape_text(launch)}")
        table.add_row(*cells)
    return table


def _shape_text(launch: Launch) -> str:
    return shape_text_mib(launch.executors, launch.cores_per_executor, launch.executor_memory_mib)


def _estimator_text(estimator: Estimator) -> str:
    """The estimator's class names (a pipeline's joined by ``+``), and its scorer where not accuracy.

    >>> _estimator_text(Estimator(("sklearn.linear_model.Ridge",), "regressor", None, "r2"))
    'Ridge (scored by r2)'
    """
    names = " + ".join(step.rpartition(".")[2] for step in estimator.steps)
    return names if estimator.scoring == "accuracy" else f"{names} (scored by {estimator.scoring})"


def _work_axis_text(workload: Workload) -> str:
    """The work axis and its values: ``epochs 10, 100`` (MLPClassifier's max_iter), ``n_estimators 10, 50``."""
    parameter = workload.estimator.work_parameter
    if parameter is None:
        return "no work axis"
    name = "epochs" if workload.estimator == DEFAULT_ESTIMATOR else parameter
    return f"{name} {', '.join(map(str, workload.epochs))}"


def _show_workload(plan: Plan, console: Console) -> None:
    workload = plan.grid.workload
    trials = workload.trials
    adaptive = workload.adaptive
    trials_text = (
        f"{trials} trial(s)"
        if adaptive is None
        else f"{adaptive.min_trials} to {adaptive.max_trials} trials, until the median's 95 % CI is within "
        f"+-{adaptive.target_rel_ci:g} of it"
    )
    dataset = workload.dataset.path or workload.dataset.name
    console.print(
        plain(
            f"Workload: {_estimator_text(workload.estimator)} on {dataset}, "
            + ", ".join(f"mode {mode} ({plan.fits(mode)} fits per batch)" for mode in workload.modes)
            + f", {workload.threads_per_fit} thread(s) per fit; {_work_axis_text(workload)}; "
            f"fraction {', '.join(map(str, workload.fractions))}; {trials_text}"
        )
    )
    for name, values in workload.model_axes:
        console.print(plain(f"  model.{name}: {', '.join(map(str, values))}"))
    search = plan.grid.search
    at_most = "" if adaptive is None and search.strategy == "grid" else "at most "
    console.print(
        plain(f"{at_most}{plan.n_measurements}", "bold")
        + plain(
            f" {noun_for(plan.n_measurements, 'measurement')} in "
            f"{counted(len(plan.launches), 'launch', 'launches')}, "
            f"{counted(sum(plan.fits(p.mode) for points in plan.points.values() for p in points) * trials, 'fit')}."
        )
    )
    if search.strategy == HALVING:
        console.print(
            plain(
                f"Search: successive halving on {search.rung_axis}, keeping the fastest 1/{search.eta} "
                "(at least 2) configurations per rung; pruned ones get rows with status pruned."
            )
        )
    if any(launch.dry_run for launch in plan.launches):
        measured, _ = split_reused(plan, pending(plan, set())[0])
        console.print(
            plain(
                f"Dry run: epochs capped at {plan.epochs_cap}, at most {plan.max_train_rows} training rows; "
                f"{len(measured)} measurements taken here, the others reuse the row of one that shrinks "
                "to the same (sweeper run --dry-run --no-reuse takes each)."
            )
        )


def _show_hand_commands(plan: Plan, console: Console) -> None:
    console.print("\nThe same shapes by hand (a PySpark shell; Dask's scheduler and workers; from .venv/bin):")
    for launch in (launch.as_planned for launch in plan.launches):
        commands = (
            [spark_command(launch, plan.grid)]
            if on_spark(launch.engine)
            else dask_commands(launch, plan.grid)
            if launch.engine == DASK
            else []
        )
        for command in commands:
            for line in wrapped(command, f"  [{launch.index + 1}] "):
                console.print(plain(line), soft_wrap=True)


def _launch_json(launch: Launch, plan: Plan) -> dict[str, Any]:
    """The stable JSON object of ``sweeper plan --json`` for one launch."""
    shape: dict[str, Any] = {
        "engine": launch.engine,
        "manager": launch.manager,
        "rule": launch.rule,
        "nodes": launch.nodes,
        "cores_per_executor": launch.cores_per_executor,
        "executors": launch.executors,
        "executor_memory_gib": _gib(launch.executor_memory_mib),
        "workers_per_node": list(launch.workers_per_node),
        "total_cores": launch.total_cores,
        "measurements": len(plan.points[launch.index]) * plan.grid.workload.trials,
        "n_fits": plan.n_fits,
        "dry_run": launch.dry_run,
    }
    if on_spark(launch.engine):
        shape["memory_overhead_gib"] = _gib(launch.memory_overhead_mib)
        shape["command"] = spark_command(launch, plan.grid)
    elif launch.engine == DASK:
        shape["workers"] = launch.executors
        shape["threads_per_worker"] = launch.cores_per_executor
        shape["memory_limit_gib"] = _gib(launch.executor_memory_mib)
        shape["command"] = dask_commands(launch, plan.grid)
    return shape


def plan_json(plan: Plan) -> str:
    """``sweeper plan --json``: one object per launch (a dry run's: the planned launch and its shape ``here``)."""
    objects = []
    for launch in plan.launches:
        shape = _launch_json(launch.as_planned, plan)
        if launch.dry_run:
            shape.update(dry_run=True, here=_here_json(launch))
        objects.append(shape)
    return json_text(objects, indent=2)


def _here_json(launch: Launch) -> dict[str, Any]:
    """The shape a dry run's launch has on this machine."""
    return {
        "manager": launch.manager,
        "cores_per_executor": launch.cores_per_executor,
        "executors": launch.executors,
        "executor_memory_gib": _gib(launch.executor_memory_mib),
    }


def _gib(mib: int) -> int | float:
    return mib // MIB_PER_GIB if mib % MIB_PER_GIB == 0 else round(mib / MIB_PER_GIB, 3)

"""Turn a validated grid into the ordered list of matched launches and their measurements.

A launch is one cluster started once (an engine on an executor shape); a measurement is one
point of the workload axes (model parameters x fraction x epochs) and one trial on it.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, replace
from typing import Any

from sweeper.grid import ONE_MODEL_ENGINES, Grid
from sweeper.sizing import ExecutorShape, size_executors
from sweeper.units import MIB_PER_GIB, format_mib, spark_size

BASELINE_ENGINE = "local"


@dataclass(frozen=True)
class Launch:
    """One cluster to start: an engine with a planned executor (worker) shape."""

    index: int
    engine: str
    manager: str
    nodes: int
    rule: str
    cores_per_executor: int
    executors: int
    executor_memory_mib: int
    memory_overhead_mib: int
    workers_per_node: tuple[int, ...]
    dry_run: bool = False

    @property
    def executor_memory_gib(self) -> float:
        return self.executor_memory_mib / MIB_PER_GIB

    @property
    def memory_overhead_gib(self) -> float:
        return self.memory_overhead_mib / MIB_PER_GIB

    @property
    def total_cores(self) -> int:
        return self.executors * self.cores_per_executor

    @property
    def label(self) -> str:
        if self.engine == BASELINE_ENGINE:
            return "local baseline, 1 thread"
        unit = "executors" if self.engine.startswith("spark") else "workers"
        return (
            f"{self.engine} {self.executors} {unit} x {self.cores_per_executor} cores x "
            f"{format_mib(self.executor_memory_mib)}"
        )


@dataclass(frozen=True)
class Point:
    """One point of the workload axes, run for every trial on every launch."""

    params: tuple[tuple[str, Any], ...]
    fraction: float
    epochs: int
    mode: str = "replicas"

    @property
    def model_params(self) -> dict[str, Any]:
        return dict(self.params)


@dataclass(frozen=True)
class Plan:
    """Everything a sweep will do, decided before any cluster starts."""

    grid: Grid
    launches: tuple[Launch, ...]
    points: dict[int, tuple[Point, ...]]
    n_fits: int
    epochs_cap: int | None = None
    max_train_rows: int | None = None

    @property
    def n_measurements(self) -> int:
        return sum(len(p) for p in self.points.values()) * self.grid.workload.trials

    def fits(self, mode: str) -> int:
        """Fits in one measurement's batch: ``cv`` one per fold, ``search`` one per combination and fold,
        ``replicas`` :attr:`n_fits`, ``data-parallel`` one model trained across the launch."""
        workload = self.grid.workload
        if mode == "cv":
            return workload.folds
        if mode == "search":
            return math.prod(len(values) for _, values in workload.param_grid) * workload.folds
        if mode == "data-parallel":
            return 1
        return self.n_fits


def launch_for(index: int, engine: str, grid: Grid, shape: ExecutorShape) -> Launch:
    """A Spark or Dask launch of the given shape (the two are matched by construction)."""
    return Launch(
        index=index,
        engine=engine,
        manager=grid.manager,
        nodes=grid.cluster.nodes,
        rule=shape.rule,
        cores_per_executor=shape.cores_per_executor,
        executors=shape.executors,
        executor_memory_mib=shape.executor_memory_mib,
        memory_overhead_mib=shape.memory_overhead_mib,
        workers_per_node=shape.workers_per_node,
    )


def baseline_launch(index: int, grid: Grid) -> Launch:
    """The single-thread, no-cluster baseline (McSherry's COST compares against it)."""
    return Launch(
        index=index,
        engine=BASELINE_ENGINE,
        manager="local",
        nodes=1,
        rule=grid.rule,
        cores_per_executor=1,
        executors=1,
        executor_memory_mib=0,
        memory_overhead_mib=0,
        workers_per_node=(1,),
    )


def make_plan(grid: Grid) -> Plan:
    """Order the launches (engines alternate per configuration) and their measurement points.

    The engine order flips from one configuration to the next (A B, B A, ...) so that a
    machine that drifts during a sweep does not favour one engine.
    """
    launches: list[Launch] = []
    if grid.baseline:
        launches.append(baseline_launch(0, grid))
    for position, cores in enumerate(grid.cores_per_executor):
        shape = size_executors(grid.cluster, cores, grid.rule)
        engines = grid.engines if position % 2 == 0 else tuple(reversed(grid.engines))
        for engine in engines:
            launches.append(launch_for(len(launches), engine, grid, shape))
    all_points = _points(grid)
    points = {}
    kept: list[Launch] = []
    for launch in launches:
        mine = tuple(p for p in all_points if _selected(grid, launch, p))
        if mine:
            launch = replace(launch, index=len(kept))
            kept.append(launch)
            points[launch.index] = mine
    return Plan(grid=grid, launches=tuple(kept), points=points, n_fits=batch_size(grid, kept))


def batch_size(grid: Grid, launches: list[Launch]) -> int:
    """Fits per ``replicas`` batch: the same for every launch, so their times compare.

    ``workload.n_fits`` when set, else the slots of the largest launch.
    """
    workload = grid.workload
    if workload.n_fits is not None:
        return workload.n_fits
    slots = [launch.total_cores // workload.threads_per_fit for launch in launches if launch.engine != BASELINE_ENGINE]
    return max([1, *slots])


def _points(grid: Grid) -> list[Point]:
    workload = grid.workload
    names = [name for name, _ in workload.model_axes]
    value_lists = [values for _, values in workload.model_axes]
    return [
        Point(params=tuple(zip(names, combo, strict=True)), fraction=fraction, epochs=epochs, mode=mode)
        for mode in workload.modes
        for combo in itertools.product(*value_lists)
        for fraction in workload.fractions
        for epochs in workload.epochs
    ]


def _selected(grid: Grid, launch: Launch, point: Point) -> bool:
    if launch.engine in ONE_MODEL_ENGINES and point.mode != "data-parallel":
        return False
    axes: dict[str, Any] = {
        "mode": point.mode,
        "engine": launch.engine,
        "cores_per_executor": launch.cores_per_executor,
        "epochs": point.epochs,
        "fraction": point.fraction,
        **{f"model.{k}": v for k, v in point.params},
    }
    if any(_matches(rule, axes) for rule in grid.exclude):
        return False
    return not grid.only or any(_matches(rule, axes) for rule in grid.only)


def _matches(rule: dict[str, Any], axes: dict[str, Any]) -> bool:
    for key, wanted in rule.items():
        have = axes.get(key)
        if key == "model.hidden_layer_sizes" and isinstance(wanted, list):
            wanted = tuple(wanted)
        if key == "engine" and have == BASELINE_ENGINE:
            return False
        if have != wanted:
            return False
    return True


def spark_command(launch: Launch) -> str:
    """The spark-submit line a person would type for this launch."""
    memory = spark_size(launch.executor_memory_mib)
    overhead = spark_size(launch.memory_overhead_mib)
    sized = (
        f"--executor-cores {launch.cores_per_executor} --executor-memory {memory} "
        f"--conf spark.executor.memoryOverhead={overhead}"
    )
    if launch.manager == "yarn":
        return (
            f"spark-submit --master yarn --deploy-mode client --num-executors {launch.executors} "
            f"{sized} --conf spark.dynamicAllocation.enabled=false sweep.py"
        )
    if launch.manager == "local":
        worker_mib = launch.executor_memory_mib + launch.memory_overhead_mib
        cluster = f"local-cluster[{launch.executors},{launch.cores_per_executor},{worker_mib}]"
        return f"spark-submit --master '{cluster}' {sized} sweep.py"
    return f"spark-submit --master spark://MASTER:7077 --total-executor-cores {launch.total_cores} {sized} sweep.py"


def dask_commands(launch: Launch) -> list[str]:
    """The dask scheduler/worker lines a person would type, one worker line per node."""
    lines = ["dask scheduler --host SCHEDULER_HOST  # on node 1"]
    for node, workers in enumerate(launch.workers_per_node, start=1):
        if workers:
            lines.append(
                f"dask worker tcp://SCHEDULER_HOST:8786 --nworkers {workers} "
                f"--nthreads {launch.cores_per_executor} "
                f"--memory-limit {format_mib(launch.executor_memory_mib)}  # on node {node}"
            )
    return lines


def launch_json(launch: Launch, plan: Plan) -> dict[str, Any]:
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
    if launch.engine.startswith("spark"):
        shape["memory_overhead_gib"] = _gib(launch.memory_overhead_mib)
        shape["command"] = spark_command(launch)
    elif launch.engine == "dask":
        shape["workers"] = launch.executors
        shape["threads_per_worker"] = launch.cores_per_executor
        shape["memory_limit_gib"] = _gib(launch.executor_memory_mib)
        shape["command"] = dask_commands(launch)
    return shape


def plan_json(plan: Plan) -> str:
    """``sweeper plan --json``: one object per launch."""
    return json.dumps([launch_json(launch, plan) for launch in plan.launches], indent=2)


def _gib(mib: int) -> int | float:
    return mib // MIB_PER_GIB if mib % MIB_PER_GIB == 0 else round(mib / MIB_PER_GIB, 3)

"""Turn a validated grid into the ordered list of matched launches and their measurements.

A launch is one cluster started once (an engine on an executor shape); a measurement is one
point of the workload axes (model parameters x fraction x epochs) and one trial on it.

The measurements are counted before any is built, and refused above :data:`MAX_MEASUREMENTS`;
``exclude``/``only`` are applied as boolean arrays over the axes' cross product, so planning
takes time and memory in proportion to what the sweep will measure.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from sweeper.config.grid import Grid, Workload
from sweeper.config.model import MLLIB_ONLY_PARAMS
from sweeper.config.sizing import ExecutorShape, size_executors
from sweeper.errors import UserError
from sweeper.names import BASELINE_ENGINE, ONE_MODEL_ENGINES, on_spark
from sweeper.shapes import BASELINE_TEXT, ExecutorFigures, shape_text_mib
from sweeper.text import shown
from sweeper.units import MIB_PER_GIB, format_mib, spark_size

# measurements (launches x points x trials, counted before exclude/only) one grid may ask for
MAX_MEASUREMENTS = 1_000_000
# launches x nodes: every cluster launch lays out (and the plan prints) each node
MAX_LAUNCH_NODES = 100_000
# exclude and only rules together: each is checked against every point of the axes
MAX_RULES = 1_000
# rule axes that belong to the launch; the others belong to the point
LAUNCH_AXES = ("engine", "cores_per_executor")


@dataclass(frozen=True)
class Launch(ExecutorFigures):
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
    planned: Launch | None = None  # a dry run's launch: the grid's launch it stands in for

    @property
    def as_planned(self) -> Launch:
        """The grid's launch: this one, or the one a dry run shrank into it."""
        return self.planned or self

    @property
    def label(self) -> str:
        if self.engine == BASELINE_ENGINE:
            return f"{BASELINE_ENGINE} {BASELINE_TEXT}"
        return f"{self.engine} {shape_text_mib(self.executors, self.cores_per_executor, self.executor_memory_mib)}"


@dataclass(frozen=True, slots=True)
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
    machine that drifts during a sweep does not favour one engine. Refuses (:class:`UserError`)
    a grid larger than the plan's limits (:func:`check_plan_size`) or whose ``exclude``/``only``
    leave no measurement; a rule that matches no measurement is a warning in ``plan.grid.warnings``.
    """
    axes = WorkloadAxes(grid.workload)
    asked = check_plan_size(grid, axes)
    launches = _launches(grid)
    selection = Selection(grid, axes, launches)
    blocks = {
        mode: axes.points(mode) for mode in sorted({m for launch in launches for m in axes.modes_of(launch.engine)})
    }
    kept: list[Launch] = []
    chosen: dict[int, tuple[Point, ...]] = {}
    for launch, indices in zip(launches, selection.kept_indices(), strict=True):
        if indices.size:
            launch = replace(launch, index=len(kept))
            kept.append(launch)
            modes, offsets = np.divmod(indices, axes.per_mode)
            points = (blocks[m][o] for m, o in zip(modes.tolist(), offsets.tolist(), strict=True))
            mllib_only = launch.engine not in ONE_MODEL_ENGINES and set(axes.model_names) & set(MLLIB_ONLY_PARAMS)
            chosen[launch.index] = tuple(_scikit_learn_points(points) if mllib_only else points)
    if not kept:
        raise UserError(
            f"{grid.path}: exclude/only leave no measurement of the {asked:,} the axes ask for; loosen or remove a rule"
        )
    grid = replace(grid, warnings=grid.warnings + tuple(selection.warnings()))
    return Plan(grid=grid, launches=tuple(kept), points=chosen, n_fits=batch_size(grid, kept))


def _scikit_learn_points(points: Iterable[Point]) -> dict[Point, None]:
    """Points without the parameters only Spark ML reads (``mllib_solver``), each once, in order.

    scikit-learn's engines would measure the same fit once per ``mllib_solver`` value otherwise.
    """
    return {
        replace(point, params=tuple((k, v) for k, v in point.params if k not in MLLIB_ONLY_PARAMS)): None
        for point in points
    }


def _launches(grid: Grid) -> list[Launch]:
    """Every launch of the grid, before exclude/only: the baseline, then the engines of each configuration."""
    launches: list[Launch] = []
    if grid.baseline:
        launches.append(baseline_launch(0, grid))
    for position, cores in enumerate(grid.cores_per_executor):
        shape = size_executors(grid.cluster, cores, grid.rule)
        engines = grid.engines if position % 2 == 0 else tuple(reversed(grid.engines))
        for engine in engines:
            launches.append(launch_for(len(launches), engine, grid, shape))
    return launches


def check_plan_size(grid: Grid, axes: WorkloadAxes) -> int:
    """The measurements a grid asks for (before exclude/only), refused above the plan's limits.

    Counted from the grid alone, before any launch, point or array is built: at most
    MAX_MEASUREMENTS measurements, MAX_LAUNCH_NODES launch nodes, MAX_RULES exclude/only rules.
    """
    engines = [BASELINE_ENGINE] * int(grid.baseline) + list(grid.engines) * len(grid.cores_per_executor)
    trials = grid.workload.trials
    asked = sum(len(axes.modes_of(engine)) for engine in engines) * axes.per_mode * trials
    if asked > MAX_MEASUREMENTS:
        raise UserError(
            f"{grid.path}: the grid asks for {asked:,} measurements (axes: {len(engines):,} launch(es) x "
            f"{axes.describe()} x {trials:,} trial(s), before exclude/only); at most {MAX_MEASUREMENTS:,}: "
            "shorten an axis or split the grid"
        )
    cluster_launches = len(grid.engines) * len(grid.cores_per_executor)
    launch_nodes = cluster_launches * grid.cluster.nodes
    if launch_nodes > MAX_LAUNCH_NODES:
        raise UserError(
            f"{grid.path}: the plan would lay out {launch_nodes:,} launch nodes ({cluster_launches:,} launches "
            f"x {grid.cluster.nodes:,} cluster.nodes); at most {MAX_LAUNCH_NODES:,}: fewer nodes or "
            "sizing.cores_per_executor values"
        )
    rules = len(grid.exclude) + len(grid.only)
    if rules > MAX_RULES:
        raise UserError(f"{grid.path}: exclude/only: {rules:,} rules; at most {MAX_RULES:,} together")
    return asked


class WorkloadAxes:
    """The workload axes in point order: mode outermost, then the model axes, fraction, epochs innermost.

    A point is an index into their cross product (row-major, as :func:`itertools.product` runs);
    a set of points is a boolean array over it.
    """

    def __init__(self, workload: Workload) -> None:
        self.model_names = tuple(name for name, _ in workload.model_axes)
        self.names = ("mode", *(f"model.{name}" for name in self.model_names), "fraction", "epochs")
        self.values: tuple[tuple[Any, ...], ...] = (
            workload.modes,
            *(values for _, values in workload.model_axes),
            workload.fractions,
            workload.epochs,
        )
        self.per_mode = math.prod(len(values) for values in self.values[1:])
        self.size = len(workload.modes) * self.per_mode

    def describe(self) -> str:
        """The axes of more than one value, as ``2 mode x 3 model.alpha x 4 epochs`` (``1 point``: none)."""
        sizes = [f"{len(values):,} {name}" for name, values in zip(self.names, self.values, strict=True)]
        return " x ".join(size for size in sizes if not size.startswith("1 ")) or "1 point"

    def modes_of(self, engine: str) -> list[int]:
        """Positions of the modes an engine measures: only data-parallel for the one-model engines."""
        modes = self.values[0]
        if engine in ONE_MODEL_ENGINES:
            return [position for position, mode in enumerate(modes) if mode == "data-parallel"]
        return list(range(len(modes)))

    def where(self, axis: int, hits: np.ndarray) -> np.ndarray:
        """The points whose value on ``axis`` is one of the ``hits`` (a boolean per value of that axis)."""
        inner = math.prod(len(values) for values in self.values[axis + 1 :])
        outer = math.prod(len(values) for values in self.values[:axis])
        return np.tile(np.repeat(hits, inner), outer)

    def matching(self, rule: dict[str, Any]) -> np.ndarray | None:
        """The points a rule's point axes match (None: none); its launch axes are not looked at."""
        found = np.ones(self.size, dtype=bool)
        for key, wanted in rule.items():
            if key in LAUNCH_AXES:
                continue
            options = rule_values(key, wanted)
            if key not in self.names:  # a model parameter the grid does not sweep: not set, None
                if None in options:
                    continue
                return None
            axis = self.names.index(key)
            hits = np.array([value in options for value in self.values[axis]], dtype=bool)
            if not hits.any():
                return None
            found &= self.where(axis, hits)
        return found

    def points(self, mode_position: int) -> list[Point]:
        """The points of one mode, in point order (one params tuple per model combination, shared)."""
        mode = self.values[0][mode_position]
        fractions, epochs = self.values[-2], self.values[-1]
        points: list[Point] = []
        for combo in itertools.product(*self.values[1:-2]):
            params = tuple(zip(self.model_names, combo, strict=True))
            points.extend(Point(params, fraction, epoch, mode) for fraction in fractions for epoch in epochs)
        return points


def rule_values(key: str, wanted: Any) -> tuple[Any, ...]:
    """The values an exclude/only rule accepts for one axis: a list is any of its values.

    For ``model.hidden_layer_sizes`` a list of widths is one value (the layers).

    >>> rule_values("epochs", [10, 100]), rule_values("epochs", 10), rule_values("model.hidden_layer_sizes", [100, 50])
    ((10, 100), (10,), ((100, 50),))
    """
    if not isinstance(wanted, list):
        return (wanted,)
    if key == "model.hidden_layer_sizes":
        return (tuple(wanted),)
    return tuple(wanted)


class Selection:
    """The points each launch measures once ``exclude`` and ``only`` apply, and the rules that match nothing.

    Launch x point sets are boolean matrices (one row per launch), so applying a rule is a few array
    operations whatever the number of launches and points. A rule matches nothing when no measurement
    of the grid (before exclude/only) has all its values.
    """

    def __init__(self, grid: Grid, axes: WorkloadAxes, launches: list[Launch]) -> None:
        self.path = grid.path
        self.axes = axes
        self.engines = sorted({launch.engine for launch in launches})
        self.cores = sorted({launch.cores_per_executor for launch in launches})
        self.engine_of = np.array([self.engines.index(launch.engine) for launch in launches], dtype=np.intp)
        self.cores_of = np.array([self.cores.index(launch.cores_per_executor) for launch in launches], dtype=np.intp)
        self.measures = np.zeros((len(launches), len(axes.values[0])), dtype=bool)
        for row, launch in enumerate(launches):
            self.measures[row, axes.modes_of(launch.engine)] = True
        self.keep = np.repeat(self.measures, axes.per_mode, axis=1)
        chosen = np.zeros_like(self.keep) if grid.only else None
        self.unmatched: list[tuple[str, dict[str, Any]]] = []
        for kind, rules in (("exclude", grid.exclude), ("only", grid.only)):
            for index, rule in enumerate(rules):
                if not self._apply(rule, chosen if kind == "only" else None):
                    self.unmatched.append((f"{kind}[{index}]", rule))
        if chosen is not None:
            self.keep &= chosen

    def _launches_matching(self, rule: dict[str, Any]) -> np.ndarray:
        """The launches (rows) whose engine and cores match the rule's (an engine rule never takes the baseline)."""
        engines = [
            "engine" not in rule or (engine != BASELINE_ENGINE and engine in rule_values("engine", rule["engine"]))
            for engine in self.engines
        ]
        cores = [
            "cores_per_executor" not in rule or value in rule_values("cores_per_executor", rule["cores_per_executor"])
            for value in self.cores
        ]
        return np.array(engines, dtype=bool)[self.engine_of] & np.array(cores, dtype=bool)[self.cores_of]

    def _apply(self, rule: dict[str, Any], chosen: np.ndarray | None) -> bool:
        """Apply an exclude rule (``chosen`` None) or an only rule; whether it matched any measurement."""
        rows = self._launches_matching(rule)
        points = self.axes.matching(rule) if rows.any() else None
        if points is None:
            return False
        modes_hit = points.reshape(len(self.axes.values[0]), self.axes.per_mode).any(axis=1)
        if chosen is None:
            self.keep[rows] &= ~points
        else:
            chosen[rows] |= points
        return bool((self.measures[rows] & modes_hit).any())

    def kept_indices(self) -> list[np.ndarray]:
        """The indices of the points each launch keeps, in point order."""
        return [np.flatnonzero(row) for row in self.keep]

    def warnings(self) -> list[str]:
        return [
            f"{self.path}: {where}: matches no measurement of the grid ({shown(rule)}); check its values"
            for where, rule in self.unmatched
        ]


def batch_size(grid: Grid, launches: list[Launch]) -> int:
    """Fits per ``replicas`` batch: the same for every launch, so their times compare.

    ``workload.n_fits`` when set, else the slots of the largest launch.
    """
    workload = grid.workload
    if workload.n_fits is not None:
        return workload.n_fits
    slots = [launch.total_cores // workload.threads_per_fit for launch in launches if launch.engine != BASELINE_ENGINE]
    return max([1, *slots])


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
    if on_spark(launch.engine):
        shape["memory_overhead_gib"] = _gib(launch.memory_overhead_mib)
        shape["command"] = spark_command(launch)
    elif launch.engine == "dask":
        shape["workers"] = launch.executors
        shape["threads_per_worker"] = launch.cores_per_executor
        shape["memory_limit_gib"] = _gib(launch.executor_memory_mib)
        shape["command"] = dask_commands(launch)
    return shape


def plan_json(plan: Plan) -> str:
    """``sweeper plan --json``: one object per launch (a dry run's: the planned launch and its shape ``here``)."""
    objects = []
    for launch in plan.launches:
        shape = launch_json(launch.as_planned, plan)
        if launch.dry_run:
            shape.update(dry_run=True, here=here_json(launch))
        objects.append(shape)
    return json.dumps(objects, indent=2)


def here_json(launch: Launch) -> dict[str, Any]:
    """The shape a dry run's launch has on this machine."""
    return {
        "manager": launch.manager,
        "cores_per_executor": launch.cores_per_executor,
        "executors": launch.executors,
        "executor_memory_gib": _gib(launch.executor_memory_mib),
    }


def _gib(mib: int) -> int | float:
    return mib // MIB_PER_GIB if mib % MIB_PER_GIB == 0 else round(mib / MIB_PER_GIB, 3)

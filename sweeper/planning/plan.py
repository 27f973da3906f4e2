"""Turn a validated grid into the ordered list of matched launches and their measurements.

A launch is one cluster started once (an engine on an executor shape); a measurement is one
point of the workload axes (model parameters x fraction x epochs) and one trial on it.

The measurements are counted before any is built, and refused above :data:`MAX_MEASUREMENTS`;
``exclude``/``only`` are applied as boolean arrays over the axes' cross product
(:mod:`sweeper.planning.selection`), so planning takes time and memory in proportion to what the
sweep will measure. How a plan is shown (the table, the hand commands, ``--json``): :mod:`sweeper.planning.view`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from sweeper.config import modes
from sweeper.config.grid import Grid
from sweeper.config.managers import LOCAL
from sweeper.config.model import MLLIB_ONLY_PARAMS
from sweeper.config.sizing import ExecutorShape, size_executors
from sweeper.errors import UserError
from sweeper.names import BASELINE_ENGINE, ONE_MODEL_ENGINES, REPLICAS
from sweeper.planning.selection import Selection, WorkloadAxes
from sweeper.shapes import BASELINE_TEXT, ExecutorFigures, shape_text_mib

# measurements (launches x points x trials, counted before exclude/only) one grid may ask for
MAX_MEASUREMENTS = 1_000_000
# launches x nodes: every cluster launch lays out (and the plan prints) each node
MAX_LAUNCH_NODES = 100_000
# exclude and only rules together: each is checked against every point of the axes
MAX_RULES = 1_000


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
    mode: str = REPLICAS

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
    # (launch index, point) -> the batch time the what-if model predicts (sweeper run --predict-from)
    predicted_s: dict[tuple[int, Point], float] = field(default_factory=dict, hash=False, compare=False)

    @property
    def n_measurements(self) -> int:
        return sum(len(p) for p in self.points.values()) * self.grid.workload.trials

    def fits(self, mode: str) -> int:
        """Fits in one measurement's batch: ``cv`` one per fold, ``search`` one per combination and fold,
        ``replicas`` :attr:`n_fits`, ``data-parallel`` one model trained across the launch."""
        return modes.mode(mode).fits(self.grid.workload, self.n_fits)


def _launch_for(index: int, engine: str, grid: Grid, shape: ExecutorShape) -> Launch:
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
        manager=LOCAL,
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

    The engine order flips from one configuration to the next (A B, B A, ...): the order the plan lists
    and numbers them in. A run visits them in a random order per round, drawn from the grid's seed
    (:mod:`sweeper.search.interleaving`), so that a machine that drifts during a sweep favours no
    configuration. Refuses (:class:`UserError`)
    a grid larger than the plan's limits (:func:`_check_plan_size`) or whose ``exclude``/``only``
    leave no measurement; a rule that matches no measurement is a warning in ``plan.grid.warnings``.
    """
    axes = WorkloadAxes(grid.workload)
    asked = _check_plan_size(grid, axes)
    launches = _launches(grid)
    selection = Selection(grid, axes, launches)
    blocks = {
        mode: _mode_points(axes, mode)
        for mode in sorted({m for launch in launches for m in axes.modes_of(launch.engine)})
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


def _mode_points(axes: WorkloadAxes, mode_position: int) -> list[Point]:
    """The points of one mode, in point order (one params tuple per model combination, shared)."""
    mode = axes.values[0][mode_position]
    fractions, epochs = axes.values[-2], axes.values[-1]
    points: list[Point] = []
    for combo in itertools.product(*axes.values[1:-2]):
        params = tuple(zip(axes.model_names, combo, strict=True))
        points.extend(Point(params, fraction, epoch, mode) for fraction in fractions for epoch in epochs)
    return points


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
            launches.append(_launch_for(len(launches), engine, grid, shape))
    return launches


def _check_plan_size(grid: Grid, axes: WorkloadAxes) -> int:
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


def batch_size(grid: Grid, launches: list[Launch]) -> int:
    """Fits per ``replicas`` batch: the same for every launch, so their times compare.

    ``workload.n_fits`` when set, else the slots of the largest launch.
    """
    workload = grid.workload
    if workload.n_fits is not None:
        return workload.n_fits
    slots = [launch.total_cores // workload.threads_per_fit for launch in launches if launch.engine != BASELINE_ENGINE]
    return max([1, *slots])

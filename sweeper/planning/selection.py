"""The ``exclude``/``only`` rule matrix: which points of the workload axes each launch measures.

A point is an index into the workload axes' cross product (:class:`WorkloadAxes`); the points each
launch keeps are one row of a boolean launch x point matrix (:class:`Selection`), so a rule costs a few
array operations whatever the number of launches and points. :func:`~sweeper.planning.plan.make_plan`
turns the kept indices into the plan's points.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from sweeper.config.grid import Grid, Workload
from sweeper.names import BASELINE_ENGINE, ONE_MODEL_ENGINES
from sweeper.text import shown

# rule axes that belong to the launch; the others belong to the point
LAUNCH_AXES = ("engine", "cores_per_executor")


class LaunchAxes(Protocol):
    """What a rule reads of a launch (the plan's ``Launch``): its values on the :data:`LAUNCH_AXES`."""

    @property
    def engine(self) -> str: ...

    @property
    def cores_per_executor(self) -> int: ...


class WorkloadAxes:
    """The workload axes in point order: mode outermost, then the model axes, fraction, epochs innermost.

    A point is an index into their cross product (row-major, as :func:`itertools.product` runs);
    a set of points is a boolean array over it.
    """

    def __init__(self, workload: Workload) -> None:
        self.model_names = tuple(name for name, _ in workload.model_axes)
        self.averaged = workload.estimator.is_mlp  # whether data-parallel on a joblib engine averages its weights
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
        """Positions of the modes an engine measures: only data-parallel for the one-model engines, and no
        data-parallel for the others on an estimator other than MLPClassifier (Spark ML's own trains it)."""
        modes = self.values[0]
        if engine in ONE_MODEL_ENGINES:
            return [position for position, mode in enumerate(modes) if mode == "data-parallel"]
        if not self.averaged:
            return [position for position, mode in enumerate(modes) if mode != "data-parallel"]
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
            options = _rule_values(key, wanted)
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


def _rule_values(key: str, wanted: Any) -> tuple[Any, ...]:
    """The values an exclude/only rule accepts for one axis: a list is any of its values.

    For ``model.hidden_layer_sizes`` a list of widths is one value (the layers).

    >>> _rule_values("epochs", [10, 100]), _rule_values("epochs", 10)
    ((10, 100), (10,))
    >>> _rule_values("model.hidden_layer_sizes", [100, 50])
    ((100, 50),)
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

    def __init__(self, grid: Grid, axes: WorkloadAxes, launches: Sequence[LaunchAxes]) -> None:
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
            "engine" not in rule or (engine != BASELINE_ENGINE and engine in _rule_values("engine", rule["engine"]))
            for engine in self.engines
        ]
        cores = [
            "cores_per_executor" not in rule or value in _rule_values("cores_per_executor", rule["cores_per_executor"])
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

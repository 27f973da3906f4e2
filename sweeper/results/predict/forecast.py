"""A sweep's what-if models and their predictions for the shapes of another grid (``sweeper predict``).

Each prediction's interval is its engine's largest held-out error around it, as a factor either way
(``predicted x/÷ exp(max |log(predicted / measured)|)``), twice that (in log) where the shape lies outside what
was measured; an engine without a held-out error (fewer than 3 configurations) gets no interval: it is untested.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property

import pandas as pd

from sweeper.config.work import EPOCHS, sweep_axis_name
from sweeper.errors import UserError
from sweeper.planning.plan import Plan, Point
from sweeper.results.predict.model import EngineModel, Shape, fit_engine, medians
from sweeper.results.predict.targets import PREDICTED_ENGINES, Ranges, measured_ranges, outside, plan_targets
from sweeper.results.predict.validation import Validation, validate
from sweeper.search.accounting import warm_launch_s

MIN_RELATIVE_WIDTH = 0.02  # no interval narrower than +-2 %: run-to-run noise on a quiet cluster


@dataclass(frozen=True)
class Prediction:
    """One shape's predicted median batch time, its interval, and its expected memory peak."""

    shape: Shape
    predicted_s: float
    interval_s: tuple[float, float] | None  # None: the engine's model could not be validated
    extrapolated_on: tuple[str, ...]
    peak_gib: float | None

    @property
    def extrapolated(self) -> bool:
        return bool(self.extrapolated_on)

    @property
    def fits_memory(self) -> bool | None:
        """Whether the expected peak stays within the executor memory (None: no peak was measured)."""
        return None if self.peak_gib is None else self.peak_gib <= self.shape.executor_memory_gib


@dataclass(frozen=True)
class Learned:
    """What a sweep teaches: its medians, each engine's model, the held-out validation."""

    points: pd.DataFrame
    models: dict[str, EngineModel]
    validation: Validation
    launch_overhead_s: dict[str, float]  # per engine: a launch's median warm node's start + warm-up + teardown
    work_axis: str = "epochs"  # what the epochs column holds: an MLP's epochs, or the parameter the grid's axis set

    @cached_property
    def ranges(self) -> dict[str, Ranges]:
        """Per engine, what it was measured over (:func:`~sweeper.results.predict.targets.measured_ranges`)."""
        return measured_ranges(self.points)

    def predict(self, shape: Shape) -> Prediction:
        model = self.models.get(shape.engine)
        if model is None:
            raise UserError(f"the sweep measured no {shape.engine} batch: its times cannot be predicted")
        predicted = model.batch_s(shape)
        extrapolated_on = tuple(outside(shape, self.ranges))
        held_out = self.validation.max_log_error(shape.engine)
        interval = None
        if held_out is not None:
            width = max(held_out, math.log1p(MIN_RELATIVE_WIDTH)) * (2 if extrapolated_on else 1)
            interval = (predicted * math.exp(-width), predicted * math.exp(width))
        return Prediction(shape, predicted, interval, extrapolated_on, model.peak_gib(shape))


def learn(df: pd.DataFrame) -> Learned:
    """Fit every engine's model to a sweep's rows and validate it."""
    points = medians(df)
    if points.empty:
        raise UserError(
            f"the sweep has no ok replicas batches of {' or '.join(PREDICTED_ENGINES)} (dry runs excluded): nothing "
            "to learn a model from"
        )
    models = {engine: model for engine in PREDICTED_ENGINES if (model := fit_engine(points, engine)) is not None}
    return Learned(points, models, validate(points), _launch_overheads(df), work_axis_name(df))


def work_axis_name(df: pd.DataFrame) -> str:
    """The name of what the rows' ``epochs`` hold (:func:`sweeper.config.work.sweep_axis_name`): ``epochs`` (an
    MLP's, or rows before schema 11), else the parameter the grid's work axis set (``n_estimators``)."""
    if "estimator" not in df:
        return EPOCHS
    named = df[["estimator", "work_axis"]] if "work_axis" in df else df[["estimator"]].assign(work_axis=None)
    return sweep_axis_name(named.drop_duplicates().itertuples(index=False, name=None))


def _launch_overheads(df: pd.DataFrame) -> dict[str, float]:
    """Per engine, the median over its launches of a warm node's start, warm-up and teardown seconds
    (:func:`sweeper.search.accounting.warm_launch_s`: a launch's own start, at most the median of its engine's other
    launches'; the first launch on a node pays what later ones find there, such as YARN's localized jars and
    environment)."""
    started = df[df["cluster_start_s"].notna() & ~df["dry_run"].fillna(False).astype(bool)]
    if started.empty:
        return {}
    warm_node_s = warm_launch_s(started)  # node-seconds, per launch_index
    by_launch = started.groupby(started["launch_index"].astype(int))
    engine = by_launch["engine"].first().reindex(warm_node_s.index).astype(object)
    nodes = by_launch["nodes"].max().reindex(warm_node_s.index).astype(float)
    seconds = warm_node_s / nodes.fillna(1.0).clip(lower=1.0)
    return {str(name): float(each.median()) for name, each in seconds.groupby(engine)}


@dataclass(frozen=True)
class PlannedCost:
    """A grid's predicted cluster time: node-seconds of its launches' starts and of its measured batches."""

    starts_node_s: float
    batches_node_s: float

    @property
    def total_node_s(self) -> float:
        return self.starts_node_s + self.batches_node_s


def planned_cost(learned: Learned, plan: Plan) -> PlannedCost:
    """What running the plan's predicted launches would cost: each launch's nodes x (its engine's measured start,
    warm-up and teardown + the grid's trials x its predicted batches)."""
    trials = plan.grid.workload.trials
    targets = predicted_targets(learned, plan)
    batches = sum(learned.predict(shape).predicted_s * trials * shape.nodes for _, _, shape in targets)
    launches = {index: shape for index, _, shape in targets}
    starts = sum(learned.launch_overhead_s.get(s.engine, 0.0) * s.nodes for s in launches.values())
    return PlannedCost(starts, batches)


def predicted_targets(learned: Learned, plan: Plan) -> list[tuple[int, Point, Shape]]:
    """The plan's launches and points the sweep can predict: those of an engine it measured."""
    return [target for target in plan_targets(plan, learned.points) if target[2].engine in learned.models]


def unpredicted_engines(learned: Learned, plan: Plan) -> list[str]:
    """The plan's Spark and Dask engines the sweep measured no batch of: their launches are not predicted."""
    return sorted({shape.engine for _, _, shape in plan_targets(plan, learned.points)} - set(learned.models))


def with_predictions(plan: Plan, learned: Learned) -> Plan:
    """The plan with each Spark and Dask launch's predicted batch time at each replicas point, written with its rows."""
    predicted = {
        (index, point): learned.predict(shape).predicted_s for index, point, shape in predicted_targets(learned, plan)
    }
    return replace(plan, predicted_s=predicted)

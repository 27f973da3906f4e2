"""A sweep's what-if models and their predictions for the shapes of another grid (``sweeper predict``).

Each prediction's interval is its engine's largest held-out relative error around it (the in-sample largest
where no configuration could be held out), twice that where the shape lies outside what was measured.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd

from sweeper.errors import UserError
from sweeper.planning.plan import Plan
from sweeper.results.predict.model import EngineModel, Shape, fit_engine, medians, shape_of
from sweeper.results.predict.targets import PREDICTED_ENGINES, outside, plan_targets
from sweeper.results.predict.validation import Validation, validate

MIN_RELATIVE_WIDTH = 0.02  # no interval narrower than +-2 %: run-to-run noise on a quiet cluster


@dataclass(frozen=True)
class Prediction:
    """One shape's predicted median batch time, its interval, and its expected memory peak."""

    shape: Shape
    predicted_s: float
    interval_s: tuple[float, float]
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
    launch_overhead_s: dict[str, float]  # per engine: a launch's median start + warm-up + teardown

    @property
    def measured(self) -> list[Shape]:
        return [shape_of(row) for _, row in self.points.iterrows()]

    def in_sample_error(self, engine: str) -> float:
        mine = self.points[self.points["engine"] == engine]
        model = self.models[engine]
        errors = [abs(model.batch_s(shape_of(row)) / float(row["wall_s"]) - 1) for _, row in mine.iterrows()]
        return max(errors, default=0.0)

    def predict(self, shape: Shape) -> Prediction:
        model = self.models.get(shape.engine)
        if model is None:
            raise UserError(f"the sweep measured no {shape.engine} batch: its times cannot be predicted")
        predicted = model.batch_s(shape)
        held_out = self.validation.max_error(shape.engine)
        width = max(held_out if held_out is not None else self.in_sample_error(shape.engine), MIN_RELATIVE_WIDTH)
        extrapolated_on = tuple(outside(shape, self.measured))
        if extrapolated_on:
            width *= 2
        interval = (predicted / (1 + width), predicted * (1 + width))
        return Prediction(shape, predicted, interval, extrapolated_on, model.peak_gib(shape))


def learn(df: pd.DataFrame) -> Learned:
    """Fit every engine's model to a sweep's rows and validate it."""
    points = medians(df)
    if points.empty:
        raise UserError(
            "the sweep has no ok replicas batches of spark or dask (dry runs excluded): nothing to learn a model from"
        )
    models = {engine: model for engine in PREDICTED_ENGINES if (model := fit_engine(points, engine)) is not None}
    return Learned(points, models, validate(points), _launch_overheads(df))


def _launch_overheads(df: pd.DataFrame) -> dict[str, float]:
    """Per engine, the median over its launches of the first start's start, warm-up and teardown seconds."""
    parts = ["cluster_start_s", "warmup_s", "teardown_s"]
    started = df[df["cluster_start_s"].notna()]
    launches = started.groupby(["engine", "run_id", "launch_index"], sort=True)[parts].first().fillna(0.0)
    total = launches.astype(float).sum(axis=1)
    return {str(engine): float(seconds.median()) for engine, seconds in total.groupby(level="engine")}


@dataclass(frozen=True)
class PlannedCost:
    """A grid's predicted cluster time: node-seconds of its launches' starts and of its measured batches."""

    starts_node_s: float
    batches_node_s: float

    @property
    def total_node_s(self) -> float:
        return self.starts_node_s + self.batches_node_s


def planned_cost(learned: Learned, predictions: list[Prediction], trials: int) -> PlannedCost:
    """What running the predicted launches would cost: each launch's nodes x (its engine's measured start, warm-up
    and teardown + ``trials`` x its predicted batches)."""
    batches = sum(p.predicted_s * trials * p.shape.nodes for p in predictions)
    first = {(p.shape.engine, p.shape.executors, p.shape.cores_per_executor, p.shape.executor_memory_gib): p.shape
             for p in predictions}  # fmt: skip
    starts = sum(learned.launch_overhead_s.get(s.engine, 0.0) * s.nodes for s in first.values())
    return PlannedCost(starts, batches)


def with_predictions(plan: Plan, learned: Learned) -> Plan:
    """The plan with each Spark and Dask launch's predicted batch time at each replicas point, written with its rows."""
    predicted = {
        (index, point): learned.predict(shape).predicted_s for index, point, shape in plan_targets(plan, learned.points)
    }
    return replace(plan, predicted_s=predicted)

"""Untested shapes of the same cluster that the what-if model expects to beat the measured best (``recommend``).

Only for an engine whose model predicts each measured configuration from the others within
:data:`~sweeper.results.predict.validation.TRUSTED_MEDIAN_ERROR` (median): the candidates are the other
splits of the engine's largest measured core count over executors (same nodes, same memory per core), and
one is named where its predicted median is below the measured best by more than the model's held-out median
error (twice that for a shape beyond what was measured) and its expected memory peak fits.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd

from sweeper.errors import UserError
from sweeper.results.predict.forecast import Learned, learn
from sweeper.results.predict.model import Shape, shape_of

WORKLOAD_POINT = ["dataset", "fraction", "threads_per_fit", "epochs", "n_train", "n_fits"]


@dataclass(frozen=True)
class WorthMeasuring:
    """One untested shape expected to beat the measured best at one workload point."""

    shape: Shape
    predicted_s: float
    measured_best: str
    measured_best_s: float
    held_out_error: float
    extrapolated_on: tuple[str, ...]

    @property
    def gain(self) -> float:
        return 1 - self.predicted_s / self.measured_best_s


def worth_measuring(df: pd.DataFrame) -> list[WorthMeasuring]:
    """At most one shape per workload point; none where no engine's model validates well."""
    try:
        learned = learn(df)
    except UserError:
        return []
    trusted = [engine for engine in learned.models if learned.validation.trusted(engine)]
    found = []
    for _, point in learned.points.groupby(WORKLOAD_POINT, sort=True, dropna=False):
        best = point.loc[point["wall_s"].astype(float).idxmin()]
        candidates = [w for engine in trusted for w in _candidates(learned, point, engine, best)]
        if candidates:
            found.append(min(candidates, key=lambda w: w.predicted_s))
    return found


def _candidates(learned: Learned, point: pd.DataFrame, engine: str, best: pd.Series) -> list[WorthMeasuring]:
    mine = point[point["engine"] == engine]
    if mine.empty:
        return []
    largest = mine.loc[(mine["cores_per_executor"] * mine["executors"]).astype(int).idxmax()]
    template = shape_of(largest)
    cores = template.cores_per_executor * template.executors
    per_core_gib = template.executor_memory_gib / template.cores_per_executor
    measured = {(int(r["cores_per_executor"]), int(r["executors"])) for _, r in mine.iterrows()}
    error = learned.validation.median_error(engine) or 0.0
    label = f"{best['engine']} {int(best['executors'])} x {int(best['cores_per_executor'])} cores"
    found = []
    for per_executor in range(1, cores + 1):
        if cores % per_executor or (per_executor, cores // per_executor) in measured:
            continue
        if per_executor < template.threads_per_fit:  # an executor that cannot hold one fit
            continue
        shape = replace(
            template,
            cores_per_executor=per_executor,
            executors=cores // per_executor,
            executor_memory_gib=per_core_gib * per_executor,
        )
        prediction = learned.predict(shape)
        margin = error * (2 if prediction.extrapolated else 1)
        if prediction.predicted_s < float(best["wall_s"]) * (1 - margin) and prediction.fits_memory is not False:
            found.append(
                WorthMeasuring(
                    shape, prediction.predicted_s, label, float(best["wall_s"]), error, prediction.extrapolated_on
                )
            )
    return found

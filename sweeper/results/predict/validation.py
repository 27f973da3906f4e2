"""How far to trust the what-if model: each measured configuration predicted from the others.

Leave-one-configuration-out: for every configuration (engine, executors and cores: the model has no term for
memory or nodes, so configurations that differ only there are held out together) of an engine with at least
:data:`MIN_CONFIGURATIONS` measured, the model is fitted to that engine's other configurations and predicts
the held-out one's median batch time at each of its workload points. The relative errors
``|predicted / measured - 1|`` are what ``sweeper predict`` shows (median and largest), and what
``recommend`` requires before it names a shape worth measuring.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from sweeper.results.predict.model import fit_engine, shape_of

MIN_CONFIGURATIONS = 3  # an engine's configurations for a held-out one to be predicted from at least 2 others
TRUSTED_MEDIAN_ERROR = 0.10  # held-out median relative error under which recommend trusts the model


@dataclass(frozen=True)
class HeldOut:
    """One held-out configuration's workload point."""

    engine: str
    configuration: str
    epochs: int
    measured_s: float
    predicted_s: float

    @property
    def relative_error(self) -> float:
        return abs(self.predicted_s / self.measured_s - 1)

    @property
    def log_error(self) -> float:
        """``|log(predicted / measured)|``: the same factor either way, what an interval is built from."""
        return abs(math.log(self.predicted_s / self.measured_s))


@dataclass(frozen=True)
class Validation:
    """The held-out errors of a store's model, overall and per engine."""

    held_out: tuple[HeldOut, ...] = field(default=())

    def errors(self, engine: str | None = None) -> np.ndarray:
        return np.array([h.relative_error for h in self.held_out if engine is None or h.engine == engine])

    def max_log_error(self, engine: str) -> float | None:
        errors = [h.log_error for h in self.held_out if h.engine == engine]
        return max(errors) if errors else None

    def median_error(self, engine: str | None = None) -> float | None:
        errors = self.errors(engine)
        return float(np.median(errors)) if errors.size else None

    def max_error(self, engine: str | None = None) -> float | None:
        errors = self.errors(engine)
        return float(errors.max()) if errors.size else None

    def trusted(self, engine: str | None = None) -> bool:
        median = self.median_error(engine)
        return median is not None and median <= TRUSTED_MEDIAN_ERROR

    def to_json(self) -> dict[str, float | int | None]:
        return {
            "held_out_median_rel_error": self.median_error(),
            "held_out_max_rel_error": self.max_error(),
            "n_held_out": len(self.held_out),
        }


HELD_OUT = ["engine", "executors", "cores_per_executor"]  # what the model tells configurations apart by


def configuration_label(row: pd.Series) -> str:
    return (
        f"{row['engine']} {int(row['executors'])} x {int(row['cores_per_executor'])} cores "
        f"x {float(row['executor_memory_gib']):g} GiB on {int(row['nodes'])} node(s)"
    )


def validate(points: pd.DataFrame) -> Validation:
    """Leave-one-configuration-out over the medians (:func:`sweeper.results.predict.model.medians`)."""
    held: list[HeldOut] = []
    for engine, mine in points.groupby("engine", sort=True):
        configurations = mine.groupby(HELD_OUT, sort=True)  # memory and nodes apart, the model has no term for them
        if configurations.ngroups < MIN_CONFIGURATIONS:
            continue
        for key, out in configurations:
            rest = mine[~mine.set_index(HELD_OUT).index.isin([key])]
            model = fit_engine(rest, str(engine))
            if model is None:
                continue
            for _, row in out.iterrows():
                predicted = model.batch_s(shape_of(row))
                held.append(
                    HeldOut(str(engine), configuration_label(row), int(row["epochs"]), float(row["wall_s"]), predicted)
                )
    return Validation(tuple(held))

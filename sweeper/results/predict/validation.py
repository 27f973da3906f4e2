"""How far to trust the what-if model: each measured configuration predicted from the others.

Leave-one-configuration-out: for every configuration (engine, executors and cores: the model has no term for
memory or nodes, so configurations that differ only there are held out together) of an engine with at least
:data:`MIN_CONFIGURATIONS` measured, the model is fitted to that engine's other configurations and predicts
the held-out one's median batch time at each of its workload points. The relative errors
``|predicted / measured - 1|`` are what ``sweeper predict`` shows (median and largest), and what
``recommend`` requires before it names a shape worth measuring.

An engine with more than :data:`MAX_FOLDS` configurations is held out in that many folds instead (configuration
``i``, in sorted order, in fold ``i mod MAX_FOLDS``; each fold predicted from the others), so validation costs
at most ``MAX_FOLDS`` fits per engine, each linear in the medians: 10^4 configurations take seconds, not hours.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from sweeper.results.predict.model import fit_terms, terms_of

MIN_CONFIGURATIONS = 3  # an engine's configurations for a held-out one to be predicted from at least 2 others
MAX_FOLDS = 200  # fits per engine at most: beyond, configurations are held out in this many folds
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

    @cached_property
    def _errors(self) -> dict[str | None, tuple[np.ndarray, np.ndarray]]:
        """Per engine (None: all), the relative and the log errors, computed once."""
        found: dict[str | None, tuple[list[float], list[float]]] = {None: ([], [])}
        for h in self.held_out:
            for key in (None, h.engine):
                relative, log = found.setdefault(key, ([], []))
                relative.append(h.relative_error)
                log.append(h.log_error)
        return {key: (np.array(relative), np.array(log)) for key, (relative, log) in found.items()}

    def errors(self, engine: str | None = None) -> np.ndarray:
        return self._errors.get(engine, (np.array([]), np.array([])))[0]

    def max_log_error(self, engine: str) -> float | None:
        errors = self._errors.get(engine, (np.array([]), np.array([])))[1]
        return float(errors.max()) if errors.size else None

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


def validate(points: pd.DataFrame) -> Validation:
    """Leave-one-configuration-out over the medians (:func:`sweeper.results.predict.model.medians`): one fit per
    held-out configuration, each on the engine's terms computed once."""
    held: list[HeldOut] = []
    for engine, mine in points.groupby("engine", sort=True):
        # memory and nodes apart: the model has no term for them
        configuration = mine.groupby(HELD_OUT, sort=True).ngroup().to_numpy()
        if int(configuration.max()) + 1 < MIN_CONFIGURATIONS:
            continue
        terms = terms_of(mine)
        fold = configuration % MAX_FOLDS
        predicted = np.empty(len(mine))
        for index in np.unique(fold):
            out = fold == index
            predicted[out] = fit_terms(terms.subset(~out), str(engine)).batch_s_of(terms.subset(out))
        order = np.argsort(configuration, kind="stable")  # held out in the order of their configurations
        labels = _labels(mine)
        epochs = mine["epochs"].astype("int64").to_numpy()
        held.extend(
            HeldOut(str(engine), labels[i], int(epochs[i]), float(terms.wall_s[i]), float(predicted[i])) for i in order
        )
    return Validation(tuple(held))


def _labels(points: pd.DataFrame) -> list[str]:
    """Every median's configuration, as the held-out errors name it."""
    return [
        f"{engine} {executors} x {cores} cores x {memory:g} GiB on {nodes} node(s)"
        for engine, executors, cores, memory, nodes in zip(
            points["engine"].astype(str),
            points["executors"].astype("int64"),
            points["cores_per_executor"].astype("int64"),
            points["executor_memory_gib"].astype(float),
            points["nodes"].astype("int64"),
            strict=True,
        )
    ]

"""What-if model of a batch's time, per engine, from the structure of the work (``sweeper predict``).

A batch is ``n_fits`` independent fits that joblib schedules over the launch's slots (total cores /
threads per fit; alike fits as each slot's share at once, :func:`sweeper.launch.joblib_batch.dispatch_groups`).
The model has three parts, each fitted to the medians of a sweep's configurations and workload points by
non-negative least squares on relative errors:

- **one fit**: ``fit_s = fixed_s + work_s x w + contention_s x w x (c - 1)``, ``w`` = epochs x training rows / 1e6
  (``epochs``: the value of the grid's work axis, ``max_iter`` or ``n_estimators`` or another knob, 1 without
  one), from ``fit_task_sum_s / n_fits``; ``c`` is the fits one executor runs at once (its cores / threads per fit,
  at most the batch's fits per executor), so fits that share an executor (a Dask worker's threads share one
  interpreter) can slow each other. Where the sweep measured a single ``w``, ``fixed_s`` and ``work_s`` are not
  told apart (all goes to ``fixed_s``): other epochs or rows are then beyond what it can say, and flagged so;
- **the schedule**: ``batch_s = batch_overhead_s + per_executor_s x executors + wave_factor x waves x fit_s``,
  ``waves = ceil(n_fits / slots)``: the last partial wave costs a whole one, and ``wave_factor`` (1 or more: a
  batch waits at least for its waves of fits) holds what waits on the slowest fit of each wave (stragglers) and
  the dispatch of each fit;
- **memory**: ``peak_gib = base_gib + per_fit_gib x c``, the largest worker's peak, where measured.

It assumes fits run their planned epochs (``exact_epochs``), time linear in epochs x rows (an epoch of an MLP,
a tree of a forest: work grows with the axis's value; a depth, whose work grows faster, is beyond it), and a
cluster of the same nodes; it cannot follow what changes the work's nature (a memory limit crossed, spilling,
another dataset), and says how far to trust it by predicting each measured configuration from the others
(:mod:`sweeper.results.predict.validation`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import nnls

from sweeper.engines import PREDICTED_ENGINES
from sweeper.results.statistics import ok_mask

WORK_UNIT = 1e6  # epochs x training rows per work unit, so coefficients read as seconds per unit
SHAPE = ("engine", "nodes", "cores_per_executor", "executors", "executor_memory_gib")  # a configuration
POINT = ("epochs", "n_train", "n_fits")


@dataclass(frozen=True)
class Shape:
    """One launch and workload point to predict: a configuration, its threads per fit, and the batch."""

    engine: str
    nodes: int
    cores_per_executor: int
    executors: int
    executor_memory_gib: float
    threads_per_fit: int
    epochs: int
    n_train: int
    n_fits: int

    @property
    def slots(self) -> int:
        return max(self.cores_per_executor * self.executors // max(self.threads_per_fit, 1), 1)

    @property
    def waves(self) -> int:
        return math.ceil(self.n_fits / self.slots)

    @property
    def concurrent(self) -> int:
        """Fits one executor runs at once."""
        per_executor = max(self.cores_per_executor // max(self.threads_per_fit, 1), 1)
        return min(per_executor, max(math.ceil(self.n_fits / self.executors), 1))

    @property
    def work(self) -> float:
        return self.epochs * self.n_train / WORK_UNIT


@dataclass(frozen=True)
class EngineModel:
    """One engine's fitted coefficients (names as the module docstring writes the formulas)."""

    engine: str
    fixed_s: float
    work_s: float
    contention_s: float
    batch_overhead_s: float
    per_executor_s: float
    wave_factor: float
    base_gib: float | None
    per_fit_gib: float | None
    points: int  # configuration x workload medians it was fitted to

    def fit_s(self, shape: Shape) -> float:
        return self.fixed_s + (self.work_s + self.contention_s * (shape.concurrent - 1)) * shape.work

    def batch_s(self, shape: Shape) -> float:
        return (
            self.batch_overhead_s
            + self.per_executor_s * shape.executors
            + self.wave_factor * shape.waves * self.fit_s(shape)
        )

    def batch_s_of(self, terms: Terms) -> np.ndarray:
        """:meth:`batch_s` of many medians at once."""
        fit_s = self.fixed_s + (self.work_s + self.contention_s * (terms.concurrent - 1)) * terms.work
        return self.batch_overhead_s + self.per_executor_s * terms.executors + self.wave_factor * terms.waves * fit_s

    def peak_gib(self, shape: Shape) -> float | None:
        if self.base_gib is None or self.per_fit_gib is None:
            return None
        return self.base_gib + self.per_fit_gib * shape.concurrent

    def coefficients(self) -> dict[str, float | None]:
        return {
            "fixed_s": self.fixed_s,
            "work_s": self.work_s,
            "contention_s": self.contention_s,
            "batch_overhead_s": self.batch_overhead_s,
            "per_executor_s": self.per_executor_s,
            "wave_factor": self.wave_factor,
            "base_gib": self.base_gib,
            "per_fit_gib": self.per_fit_gib,
        }


def medians(df: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration and workload point of a sweep's ok replicas batches (those measured under load
    left out): the median batch, fit and peak, and the trials behind them."""
    keys = [*SHAPE, "threads_per_fit", "dataset", "fraction", *POINT]
    wanted = ok_mask(df) & (df["mode"] == "replicas") & ~df["dry_run"].fillna(False).astype(bool)  # not disturbed
    wanted &= df["engine"].isin(PREDICTED_ENGINES) & df["fit_wall_s"].notna() & df["fit_task_sum_s"].notna()
    positive = (df["n_fits"].fillna(0) > 0) & (df["fit_wall_s"].fillna(0) > 0) & (df["fit_task_sum_s"].fillna(0) > 0)
    ok = df[wanted & df[keys].notna().all(axis=1) & positive]
    ok = ok.assign(fit_s=ok["fit_task_sum_s"].astype(float) / ok["n_fits"].astype(float))
    grouped = ok.groupby(keys, dropna=False, sort=True)
    out = grouped.agg(
        wall_s=("fit_wall_s", "median"),
        fit_s=("fit_s", "median"),
        peak_gib=("worker_peak_rss_gib_max", "median"),
        trials=("fit_wall_s", "size"),
    )
    return out.reset_index()


def shape_of(row: pd.Series) -> Shape:
    return Shape(
        engine=str(row["engine"]),
        nodes=int(row["nodes"]),
        cores_per_executor=int(row["cores_per_executor"]),
        executors=int(row["executors"]),
        executor_memory_gib=float(row["executor_memory_gib"]),
        threads_per_fit=int(row["threads_per_fit"]),
        epochs=int(row["epochs"]),
        n_train=int(row["n_train"]),
        n_fits=int(row["n_fits"]),
    )


@dataclass(frozen=True)
class Terms:
    """The model's terms for many medians at once (what :class:`Shape`'s properties give one shape), with the
    targets they are fitted to: arrays of one length, one entry per median."""

    work: np.ndarray
    concurrent: np.ndarray
    slots: np.ndarray
    waves: np.ndarray
    executors: np.ndarray
    fit_s: np.ndarray
    wall_s: np.ndarray
    peak_gib: np.ndarray

    def subset(self, keep: np.ndarray) -> Terms:
        """The terms of the medians ``keep`` (a boolean mask) selects."""
        return Terms(*(getattr(self, name)[keep] for name in self.__dataclass_fields__))


def terms_of(points: pd.DataFrame) -> Terms:
    """:class:`Terms` of medians (:func:`medians`), computed as :class:`Shape` does, column by column."""

    def column(name: str) -> np.ndarray:
        return points[name].astype("int64").to_numpy()

    threads = np.maximum(column("threads_per_fit"), 1)
    cores, executors, n_fits = column("cores_per_executor"), column("executors"), column("n_fits")
    slots = np.maximum(cores * executors // threads, 1)
    per_executor = np.maximum(cores // threads, 1)
    concurrent = np.minimum(per_executor, np.maximum(-(-n_fits // np.maximum(executors, 1)), 1))
    return Terms(
        work=column("epochs") * column("n_train") / WORK_UNIT,
        concurrent=concurrent,
        slots=slots,
        waves=-(-n_fits // slots),
        executors=executors,
        fit_s=points["fit_s"].astype(float).to_numpy(),
        wall_s=points["wall_s"].astype(float).to_numpy(),
        peak_gib=points["peak_gib"].astype(float).to_numpy(),
    )


def fit_engine(points: pd.DataFrame, engine: str) -> EngineModel | None:
    """The engine's model from its medians (:func:`medians`); None without any."""
    mine = points[points["engine"] == engine]
    if mine.empty:
        return None
    return fit_terms(terms_of(mine), engine)


def fit_terms(terms: Terms, engine: str) -> EngineModel:
    """The engine's model from the terms of its medians (at least one)."""
    fit_s, work = terms.fit_s, terms.work
    fixed_s, work_s, contention_s = _relative_nnls(
        np.column_stack([np.ones_like(work), work, work * (terms.concurrent - 1)]),
        fit_s,
        fallback=(float(np.median(fit_s)), 0, 0),
    )
    waited = terms.waves * fit_s  # a batch waits at least this
    overhead_s, per_executor_s, straggle = _relative_nnls(
        np.column_stack([np.ones_like(waited), terms.executors, waited]), terms.wall_s, fallback=(0, 0, 0), less=waited
    )
    wave_factor = 1.0 + straggle
    peaks = terms.peak_gib
    has_peak = ~np.isnan(peaks)
    base_gib: float | None = None
    per_fit_gib: float | None = None
    if has_peak.any():
        concurrent = terms.concurrent[has_peak]
        base_gib, per_fit_gib = _relative_nnls(
            np.column_stack([np.ones_like(concurrent), concurrent]),
            peaks[has_peak],
            fallback=(float(np.median(peaks[has_peak])), 0),
        )
    coefficients = (fixed_s, work_s, contention_s, overhead_s, per_executor_s, wave_factor, base_gib, per_fit_gib)
    return EngineModel(engine, *coefficients, points=fit_s.size)


def _relative_nnls(
    columns: np.ndarray, target: np.ndarray, fallback: tuple[float, ...], less: np.ndarray | None = None
) -> tuple[float, ...]:
    """Non-negative coefficients minimising the squared relative error of ``less + columns @ x`` against ``target``
    (``less``: a known part of it, 0 by default)."""
    matrix = np.asarray(columns, dtype=float)
    known = np.zeros(len(target)) if less is None else np.asarray(less, dtype=float)
    usable = np.isfinite(target) & (target > 0) & np.isfinite(matrix).all(axis=1) & np.isfinite(known)
    if not usable.any():
        return tuple(float(v) for v in fallback)
    weights = 1.0 / target[usable]
    solution, _ = nnls(matrix[usable] * weights[:, None], (target[usable] - known[usable]) * weights)
    return tuple(float(v) for v in solution)

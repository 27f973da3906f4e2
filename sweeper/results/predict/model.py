"""What-if model of a batch's time, per engine, from the structure of the work (``sweeper predict``).

A batch is ``n_fits`` independent fits that joblib schedules over the launch's slots (total cores /
threads per fit). The model has three parts, each fitted to the medians of a sweep's configurations and
workload points by non-negative least squares on relative errors:

- **one fit**: ``fit_s = fixed_s + work_s x w + contention_s x w x (c - 1)``, ``w`` = epochs x training rows / 1e6,
  from ``fit_task_sum_s / n_fits``; ``c`` is the fits one executor runs at once (its cores / threads per fit,
  at most the batch's fits per executor), so fits that share an executor (a Dask worker's threads share one
  interpreter) can slow each other. Where the sweep measured a single ``w``, ``fixed_s`` and ``work_s`` are not
  told apart (all goes to ``fixed_s``): other epochs or rows are then beyond what it can say, and flagged so;
- **the schedule**: ``batch_s = batch_overhead_s + per_executor_s x executors + wave_factor x waves x fit_s``,
  ``waves = ceil(n_fits / slots)``: the last partial wave costs a whole one, and ``wave_factor`` (1 or more: a
  batch waits at least for its waves of fits) holds what waits on the slowest fit of each wave (stragglers) and
  the dispatch of each fit;
- **memory**: ``peak_gib = base_gib + per_fit_gib x c``, the largest worker's peak, where measured.

It assumes fits run their planned epochs (``exact_epochs``), time linear in epochs x rows, and a cluster of
the same nodes; it cannot follow what changes the work's nature (a memory limit crossed, spilling, another
dataset), and says how far to trust it by predicting each measured configuration from the others
(:mod:`sweeper.results.predict.validation`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import nnls

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
    """One row per configuration and workload point of a sweep's ok replicas batches: the median batch, fit
    and peak, and the trials behind them."""
    keys = [*SHAPE, "threads_per_fit", "dataset", "fraction", *POINT]
    wanted = (df["status"] == "ok") & (df["mode"] == "replicas") & ~df["dry_run"].fillna(False).astype(bool)
    wanted &= df["engine"].isin(("spark", "dask")) & df["fit_wall_s"].notna() & df["fit_task_sum_s"].notna()
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


def fit_engine(points: pd.DataFrame, engine: str) -> EngineModel | None:
    """The engine's model from its medians (:func:`medians`); None without any."""
    mine = points[points["engine"] == engine]
    if mine.empty:
        return None
    shapes = [shape_of(row) for _, row in mine.iterrows()]
    fit_s = mine["fit_s"].astype(float).to_numpy()
    fixed_s, work_s, contention_s = _relative_nnls(
        [[1.0, s.work, s.work * (s.concurrent - 1)] for s in shapes], fit_s, fallback=(float(np.median(fit_s)), 0, 0)
    )
    wall_s = mine["wall_s"].astype(float).to_numpy()
    waited = np.array([s.waves * f for s, f in zip(shapes, fit_s, strict=True)])  # a batch waits at least this
    overhead_s, per_executor_s, straggle = _relative_nnls(
        [[1.0, s.executors, w] for s, w in zip(shapes, waited, strict=True)], wall_s, fallback=(0, 0, 0), less=waited
    )
    wave_factor = 1.0 + straggle
    peaks = mine["peak_gib"].astype(float).to_numpy()
    has_peak = ~np.isnan(peaks)
    base_gib: float | None = None
    per_fit_gib: float | None = None
    if has_peak.any():
        concurrent = [s.concurrent for s, known in zip(shapes, has_peak, strict=True) if known]
        base_gib, per_fit_gib = _relative_nnls(
            [[1.0, c] for c in concurrent], peaks[has_peak], fallback=(float(np.median(peaks[has_peak])), 0)
        )
    return EngineModel(
        engine, fixed_s, work_s, contention_s, overhead_s, per_executor_s, wave_factor, base_gib, per_fit_gib, len(mine)
    )


def _relative_nnls(
    columns: list[list[float]], target: np.ndarray, fallback: tuple[float, ...], less: np.ndarray | None = None
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

"""Synthetic stores drawn from a known law of the work, for the what-if model's tests (``sweeper predict``).

:class:`Law` is the truth: each of ``n_fits`` fits takes ``fixed_s + work_s x epochs x rows / 1e6 x (1 +
contention x (c - 1))`` seconds with log-normal noise (``spread``, 4 %), the fits are scheduled greedily over
the slots (each to the first free slot: waves, the last partial wave and stragglers as they come), and the
batch adds ``batch_overhead_s + per_executor_s x executors``. :meth:`Law.median_s` is a shape's true median,
from many draws. ``step_gib``: a shape whose memory per concurrent fit is below it runs 3x slower (spilling),
what no model of the work's structure follows.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np

from sweeper.results.predict.model import Shape
from tests.support.budget_stores import RUN_ID, WORKLOAD
from tests.support.stored_rows import VERSIONS, stored_row
from tests.support.synthetic_stores import START

N_TRAIN = 1347
SHAPES = ((1, 12), (2, 6), (3, 4), (4, 3))  # (cores per executor, executors) of a 2-node cluster's 12 slots
EPOCHS = (10, 100, 1000)


@dataclass(frozen=True)
class Law:
    """One engine's true behaviour."""

    fixed_s: float
    work_s: float
    contention: float
    batch_overhead_s: float
    per_executor_s: float
    spread: float = 0.04  # each fit's
    batch_spread: float = 0.04  # each batch's, on top
    base_gib: float = 0.3
    per_fit_gib: float = 0.15
    step_gib: float | None = None

    def fit_s(self, shape: Shape) -> float:
        return self.fixed_s + self.work_s * shape.work * (1 + self.contention * (shape.concurrent - 1))

    def draw_s(self, shape: Shape, rng: np.random.Generator) -> tuple[float, list[float]]:
        """One batch: its wall time and its fits' times."""
        fits = [self.fit_s(shape) * math.exp(self.spread * rng.standard_normal()) for _ in range(shape.n_fits)]
        free = [0.0] * shape.slots
        for fit in fits:  # each fit to the first free slot
            heapq.heappush(free, heapq.heappop(free) + fit)
        wall = self.batch_overhead_s + self.per_executor_s * shape.executors + max(free)
        wall *= math.exp(self.batch_spread * rng.standard_normal())
        memory_per_fit = shape.executor_memory_gib / shape.concurrent
        if self.step_gib is not None and memory_per_fit < self.step_gib:
            wall *= 3
        return wall, fits

    def median_s(self, shape: Shape, draws: int = 400, seed: int = 99) -> float:
        rng = np.random.default_rng(seed)
        return float(np.median([self.draw_s(shape, rng)[0] for _ in range(draws)]))


SPARK = Law(fixed_s=0.4, work_s=0.9, contention=0.02, batch_overhead_s=2.5, per_executor_s=0.3)
DASK = Law(fixed_s=0.05, work_s=0.8, contention=0.15, batch_overhead_s=0.3, per_executor_s=0.05)


def shape(
    engine: str,
    cores: int,
    executors: int,
    epochs: int,
    nodes: int = 2,
    n_fits: int = 24,
    memory_gib: float | None = None,
) -> Shape:
    """A shape of the law's cluster: 2 GiB per core unless ``memory_gib`` per executor is given."""
    return Shape(engine, nodes, cores, executors, memory_gib or 2.0 * cores, 1, epochs, N_TRAIN, n_fits)


def law_rows(
    laws: dict[str, Law],
    shapes: Sequence[tuple[int, int]] = SHAPES,
    epochs: Sequence[int] = EPOCHS,
    trials: int = 5,
    seed: int = 0,
    sweep: str = "whatif",
    memory_gib: float | None = None,
) -> list[dict[str, Any]]:
    """Every engine x shape x epochs x trial of ``laws`` as an ok row; launch ``i`` is one engine and shape."""
    rng = np.random.default_rng(seed)
    rows, clock, index = [], START, 0
    for engine, law in laws.items():
        for cores, executors in shapes:
            for epoch in epochs:
                s = shape(engine, cores, executors, epoch, memory_gib=memory_gib)
                for trial in range(trials):
                    wall, fits = law.draw_s(s, rng)
                    peak = law.base_gib + law.per_fit_gib * s.concurrent * math.exp(0.03 * rng.standard_normal())
                    rows.append(_row(s, index, sweep, trial, wall, fits, peak, clock))
                    clock += timedelta(seconds=wall)
            index += 1
    return rows


def _row(
    s: Shape, index: int, sweep: str, trial: int, wall: float, fits: list[float], peak: float, clock: Any
) -> dict[str, Any]:
    values = {
        **WORKLOAD,
        **VERSIONS,
        "sweep": sweep,
        "run_id": RUN_ID,
        "launch_index": index,
        "measurement_key": f"{index}-{s.epochs}-{trial}",
        "engine": s.engine,
        "nodes": s.nodes,
        "cores_per_executor": s.cores_per_executor,
        "executors": s.executors,
        "total_cores": s.cores_per_executor * s.executors,
        "executor_memory_gib": s.executor_memory_gib,
        "memory_overhead_gib": 1.0,
        "granted_executors": s.executors,
        "granted_cores_per_executor": s.cores_per_executor,
        "granted_executor_memory_gib": s.executor_memory_gib,
        "n_train": s.n_train,
        "n_fits": s.n_fits,
        "epochs": s.epochs,
        "epochs_run": s.epochs,
        "trial": trial,
        "status": "ok",
        "fit_wall_s": wall,
        "fit_task_sum_s": sum(fits),
        "fit_task_max_s": max(fits),
        "worker_peak_rss_gib_max": peak,
        "accuracy": 0.9,
        "started_at": clock,
        "cluster_start_s": 20.0,
        "warmup_s": 2.0,
        "teardown_s": 2.0,
        "worker_pids": s.executors,
    }
    return stored_row(**values)

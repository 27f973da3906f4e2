"""Synthetic full-grid stores with known answers, for the tests of adaptive trials, halving and replay.

Each :class:`Arm` is an engine and executor shape whose true median time at ``e`` epochs is
``batch_s + per_epoch_s * e`` (a fixed cost per batch plus the training), with log-normal noise
of sigma ``spread`` (so the median of the distribution is the true median). :func:`budget_rows`
draws every arm x epochs x trial from a seeded generator, one launch per arm (start, warm-up and
teardown set as the runner sets them), one dict per row with every column of
:data:`sweeper.store.parquet.SCHEMA`; :func:`write_store` writes them as a store.

The presets are the known answers: :func:`easy_winner`, :func:`close_race` and
:func:`proxy_reversal` (the fastest at 10..1000 epochs is not the fastest at 10000).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from sweeper.store.parquet import SCHEMA, SCHEMA_VERSION, as_frame
from tests.support.stored_rows import stored_row, write_test_rows
from tests.support.synthetic_stores import START
from tests.support.synthetic_stores import WORKLOAD as SYNTHETIC_WORKLOAD

EPOCHS = (10, 100, 1000, 10000)
RUN_ID = "20260302T090000-budget"
WORKLOAD: dict[str, Any] = {
    **SYNTHETIC_WORKLOAD,
    "model_params": '{"hidden_layer_sizes": [32]}',
    "manager": "standalone",
    "rule": "report",
    "exact_epochs": True,
    "host": "synthetic-host",
    "grid_hash": "feedfacecafe",
}


@dataclass(frozen=True)
class Arm:
    """One engine and executor shape: true median ``batch_s + per_epoch_s * epochs`` seconds."""

    engine: str
    cores_per_executor: int
    executors: int
    batch_s: float
    per_epoch_s: float
    spread: float = 0.02
    nodes: int = 1
    executor_memory_gib: float = 4.0
    table_s: tuple[tuple[int, float], ...] = ()  # (epochs, median) measured, instead of the linear law

    def median_s(self, epochs: int) -> float:
        return dict(self.table_s).get(epochs, self.batch_s + self.per_epoch_s * epochs)


@dataclass(frozen=True)
class Overhead:
    """A launch's start, warm-up and teardown seconds (the same for every launch)."""

    start_s: float = 30.0
    warmup_s: float = 5.0
    teardown_s: float = 5.0


def budget_rows(
    arms: Sequence[Arm],
    epochs: Sequence[int] = EPOCHS,
    trials: int = 10,
    seed: int = 0,
    sweep: str = "budget",
    overhead: Overhead = Overhead(),
) -> list[dict[str, Any]]:
    """Every arm x epochs x trial as an ok row; launch ``i`` is arm ``i``, one session each."""
    rng = np.random.default_rng(seed)
    rows, clock = [], START
    for index, arm in enumerate(arms):
        for epoch in epochs:
            for trial in range(trials):
                fit_wall_s = float(arm.median_s(epoch) * np.exp(arm.spread * rng.standard_normal()))
                values = {
                    **_launch_columns(arm, index, overhead),
                    "sweep": sweep,
                    "epochs": epoch,
                    "epochs_run": epoch,
                    "trial": trial,
                    "fit_wall_s": fit_wall_s,
                    "started_at": clock,
                    "measurement_key": f"{index}-{epoch}-{trial}",
                }
                rows.append(stored_row(**values))
                clock += timedelta(seconds=fit_wall_s)
    return rows


def _launch_columns(arm: Arm, index: int, overhead: Overhead) -> dict[str, Any]:
    total_cores = arm.cores_per_executor * arm.executors
    return {
        **WORKLOAD,
        "schema_version": SCHEMA_VERSION,
        "run_id": RUN_ID,
        "launch_index": index,
        "engine": arm.engine,
        "nodes": arm.nodes,
        "cores_per_executor": arm.cores_per_executor,
        "executors": arm.executors,
        "total_cores": total_cores,
        "executor_memory_gib": arm.executor_memory_gib,
        "memory_overhead_gib": 1.0,
        "granted_executors": arm.executors,
        "granted_cores_per_executor": arm.cores_per_executor,
        "granted_executor_memory_gib": arm.executor_memory_gib,
        "cluster_start_s": overhead.start_s,
        "warmup_s": overhead.warmup_s,
        "teardown_s": overhead.teardown_s,
        "accuracy": 0.9,
        "status": "ok",
        "worker_pids": arm.executors,
    }


def frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Rows typed as :func:`sweeper.load_results` returns them (nullable pandas dtypes)."""
    return as_frame(pa.Table.from_pylist(list(rows), schema=SCHEMA))


def write_store(root: Path, rows: Sequence[dict[str, Any]]) -> Path:
    """Write rows as a store under ``root`` (one file per sweep and launch); returns ``root``."""
    by_file: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for row in rows:
        by_file.setdefault((row["sweep"], row["launch_index"]), []).append(row)
    for (sweep, launch), part in by_file.items():
        write_test_rows(root, sweep, part, f"part-{RUN_ID}-{launch:03d}")
    return root


def easy_winner() -> list[Arm]:
    """3 shapes x 2 engines; Dask with 4 cores x 2 executors is fastest at every epochs value, by far."""
    return [
        Arm("spark", 1, 8, batch_s=3.0, per_epoch_s=0.060),
        Arm("spark", 2, 4, batch_s=2.5, per_epoch_s=0.050),
        Arm("spark", 4, 2, batch_s=2.5, per_epoch_s=0.045),
        Arm("dask", 1, 8, batch_s=1.5, per_epoch_s=0.040),
        Arm("dask", 2, 4, batch_s=1.2, per_epoch_s=0.035),
        Arm("dask", 4, 2, batch_s=1.0, per_epoch_s=0.020),
    ]


def close_race() -> list[Arm]:
    """Spark 2x4 and Dask 2x4 lead at every epochs value, 1 % apart with 6 % noise: no significant engine verdict."""
    return [
        Arm("spark", 1, 8, batch_s=3.0, per_epoch_s=0.060, spread=0.06),
        Arm("spark", 2, 4, batch_s=2.0, per_epoch_s=0.0303, spread=0.06),
        Arm("spark", 4, 2, batch_s=2.8, per_epoch_s=0.050, spread=0.06),
        Arm("dask", 1, 8, batch_s=2.6, per_epoch_s=0.045, spread=0.06),
        Arm("dask", 2, 4, batch_s=2.0, per_epoch_s=0.030, spread=0.06),
        Arm("dask", 4, 2, batch_s=3.5, per_epoch_s=0.040, spread=0.06),
    ]


SEED_EPOCHS = (10, 100, 1000)


def seed_001(spread: float = 0.04) -> list[Arm]:
    """Seed 001's tables (3 shapes x 2 engines, epochs 10/100/1000): Spark 3-4x slower than Dask, Spark's order
    reversing between 10 and 1000 epochs, Dask's three shapes within 1-4 % at 1000 epochs; ``spread`` noise."""
    tables = {
        ("spark", 4, 9): (33.6, 265.0, 1128.0),
        ("spark", 5, 7): (41.2, 264.0, 1045.0),
        ("spark", 6, 5): (42.0, 352.0, 1027.0),
        ("dask", 4, 9): (9.45, 92.0, 312.0),
        ("dask", 5, 7): (9.21, 89.0, 304.0),
        ("dask", 6, 5): (9.34, 68.0, 301.0),
    }
    return [
        Arm(
            engine,
            cores,
            executors,
            0.0,
            0.0,
            spread=spread,
            nodes=2,
            table_s=tuple(zip(SEED_EPOCHS, medians_s, strict=True)),
        )
        for (engine, cores, executors), medians_s in tables.items()
    ]


def proxy_reversal() -> list[Arm]:
    """Spark 4x2 is the fastest at 10000 epochs (270 s) but only third at 10..1000 epochs.

    At 10..1000 epochs Dask 1x8 (1.4 s .. 41 s) leads Dask 2x4; at 10000 they swap (401 s vs 378 s),
    which is what a rank check can see; Spark 4x2 (a large fixed cost per batch, the cheapest
    epochs) was pruned at the first rung.
    """
    return [
        Arm("dask", 1, 8, batch_s=1.0, per_epoch_s=0.040),
        Arm("dask", 2, 4, batch_s=8.0, per_epoch_s=0.037),
        Arm("spark", 4, 2, batch_s=20.0, per_epoch_s=0.025),
        Arm("spark", 1, 8, batch_s=30.0, per_epoch_s=0.050),
        Arm("spark", 2, 4, batch_s=40.0, per_epoch_s=0.050),
        Arm("dask", 4, 2, batch_s=50.0, per_epoch_s=0.050),
    ]

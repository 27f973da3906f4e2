"""Synthetic store rows with known answers, for the tests of ``sweeper recommend`` (and budgets).

Each arm (engine and configuration) is an :class:`ArmSpec`: its true median time, its spread (the
sigma of a log-normal, so the median of the distribution is ``median_s``), its trials, its accuracy,
its peak memory and its slot utilisation. :func:`synthetic_rows` draws the rows from a seeded
generator, one dict per measurement with every column of :data:`sweeper.store.parquet.SCHEMA`;
:func:`synthetic_frame` returns them typed as :func:`sweeper.load_results` does, without files.

Example: two arms drawn from one distribution (no true winner)::

    same = [ArmSpec("spark", 2, 2, 4.0, median_s=10.0), ArmSpec("dask", 2, 2, 4.0, median_s=10.0)]
    df = synthetic_frame(same, seed=7)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from sweeper.store.parquet import SCHEMA, SCHEMA_VERSION, as_frame
from tests.support.stored_rows import VERSIONS, stored_row

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
WORKLOAD: dict[str, Any] = {
    "dataset": "digits",
    "n_train": 1347,
    "n_test": 450,
    "n_features": 64,
    "fraction": 1.0,
    "mode": "replicas",
    "n_fits": 8,
    "model_params": '{"hidden_layer_sizes": [32], "solver": "adam"}',
    "hidden_layer_sizes": "32",
    "threads_per_fit": 1,
    "dry_run": False,
}


@dataclass(frozen=True)
class ArmSpec:
    """One engine and configuration with its true behaviour (``None`` memory: not measured, as older stores)."""

    engine: str
    cores_per_executor: int
    executors: int
    executor_memory_gib: float
    median_s: float = 10.0
    spread: float = 0.05
    trials: int = 5
    accuracy: float = 0.90
    accuracy_sd: float = 0.002
    peak_gib: float | None = 1.0
    jvm_heap_gib: float | None = None
    python_gib: float | None = None  # Spark: one executor's Python workers' peak
    slot_utilisation: float | None = 0.9
    straggle: float = 1.1  # longest fit / mean fit
    nodes: int = 1
    memory_overhead_gib: float = 1.0


def synthetic_rows(
    arms: Sequence[ArmSpec],
    epochs: Sequence[int] = (10,),
    seed: int = 0,
    sweep: str = "synthetic",
    identical_fits: bool = False,
    **workload: Any,
) -> list[dict[str, Any]]:
    """The ok rows of every arm, epochs value and trial, with every store column (unknown ones None).

    ``identical_fits``: the accuracy depends only on epochs and trial, the same on every arm (a
    ``replicas`` batch with the same seeds). ``workload`` replaces entries of :data:`WORKLOAD`.
    """
    rng = np.random.default_rng(seed)
    shared = {**WORKLOAD, **workload}
    same_accuracy = {(e, t): float(rng.normal(0.9, 0.002)) for e in epochs for t in range(64)}
    rows = []
    clock = START
    for launch_index, arm in enumerate(arms):
        for epoch in epochs:
            for trial in range(arm.trials):
                fit_wall_s = float(arm.median_s * np.exp(arm.spread * rng.standard_normal()))
                accuracy = (
                    same_accuracy[(epoch, trial)]
                    if identical_fits
                    else float(arm.accuracy + arm.accuracy_sd * rng.standard_normal())
                )
                values = _row(arm, shared, fit_wall_s, accuracy, float(rng.uniform(0.95, 1.0)))
                values.update(
                    sweep=sweep,
                    launch_index=launch_index,
                    epochs=epoch,
                    epochs_run=epoch,
                    trial=trial,
                    started_at=clock,
                    measurement_key=f"{arm.engine}-{arm.cores_per_executor}-{arm.executors}-{epoch}-{trial}",
                )
                rows.append(stored_row(**values))
                clock += timedelta(seconds=fit_wall_s)
    return rows


def _row(arm: ArmSpec, workload: dict[str, Any], fit_wall_s: float, accuracy: float, jitter: float) -> dict[str, Any]:
    """One measurement's columns other than its place in the sweep."""
    total_cores = arm.cores_per_executor * arm.executors
    slots = total_cores // int(workload["threads_per_fit"])
    utilisation = arm.slot_utilisation
    task_sum_s = fit_wall_s * slots * (utilisation if utilisation is not None else 0.9)
    peak = None if arm.peak_gib is None else arm.peak_gib * jitter
    return {
        **workload,
        **VERSIONS,
        "schema_version": SCHEMA_VERSION,
        "run_id": "run-synthetic",
        "grid_hash": "feedfacecafe",
        "engine": arm.engine,
        "manager": "local",
        "rule": "report",
        "nodes": arm.nodes,
        "cores_per_executor": arm.cores_per_executor,
        "executors": arm.executors,
        "total_cores": total_cores,
        "executor_memory_gib": arm.executor_memory_gib,
        "memory_overhead_gib": arm.memory_overhead_gib,
        "granted_executors": arm.executors,
        "granted_cores_per_executor": arm.cores_per_executor,
        "granted_executor_memory_gib": arm.executor_memory_gib,
        "exact_epochs": True,
        "converged": False,
        "cluster_start_s": 3.0,
        "warmup_s": 0.5,
        "fit_wall_s": fit_wall_s,
        "fit_task_sum_s": task_sum_s,
        "fit_task_max_s": task_sum_s / int(workload["n_fits"]) * arm.straggle,
        "accuracy": accuracy,
        "accuracy_best": accuracy,
        "teardown_s": 1.0,
        "status": "ok",
        "host": "synthetic-host",
        "fit_environment": "OMP_NUM_THREADS=1",
        "worker_pids": arm.executors,
        "cpu_s_fits": task_sum_s,
        "cpu_s_workers": task_sum_s * 1.05,
        "slot_utilisation": utilisation,
        "worker_peak_rss_gib_max": peak,
        "worker_peak_rss_gib_median": None if peak is None else peak * 0.9,
        "jvm_peak_heap_gib": arm.jvm_heap_gib if arm.engine.startswith("spark") else None,
        "python_peak_rss_gib_max": arm.python_gib if arm.engine == "spark" else None,
        "resource_note": "memory not measured (synthetic)" if peak is None else None,
    }


def to_frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Rows typed as :func:`sweeper.load_results` returns them (nullable pandas dtypes)."""
    return as_frame(pa.Table.from_pylist(list(rows), schema=SCHEMA))


def synthetic_frame(arms: Sequence[ArmSpec], **options: Any) -> pd.DataFrame:
    """:func:`synthetic_rows` as a typed DataFrame (same options)."""
    return to_frame(synthetic_rows(arms, **options))


# What a store's text may hold that every output must show and never obey: a colour and a window title (ANSI CSI
# and OSC, ended by BEL), a carriage return (the line overwritten), Rich markup, HTML, a Markdown table cell and code.
HOSTILE_TEXT = "\x1b[31m\x1b]0;owned\x07\r[bold]<script>|`x`"
HOSTILE_ENGINE = "spark" + HOSTILE_TEXT  # no engine a grid names: its rows are compared all the same
HOSTILE_COLUMNS = (  # free text the runner writes; every one of them hostile in hostile_rows
    "sweep", "run_id", "grid_hash", "host", "manager", "rule", "model_params", "hidden_layer_sizes", "resource_note",
    "fit_environment", "cluster_hosts", "python_version", "sklearn_version", "java_version", "search_strategy",
    "stop_reason", "reused_from",
)  # fmt: skip


def hostile_rows(seed: int = 0) -> list[dict[str, Any]]:
    """A sweep of Spark and Dask arms and a faster one of :data:`HOSTILE_ENGINE` (the full grid's best, so every
    summary names it) whose text columns (:data:`HOSTILE_COLUMNS`) hold :data:`HOSTILE_TEXT`, with a failed row
    whose ``error``, ``error_type`` and ``measurement_key`` hold it too. The dataset stays ``digits``, so a grid of
    digits is predicted from it."""
    arms = [
        ArmSpec("spark", 1, 2, 4.0, median_s=12.0, trials=3),
        ArmSpec("dask", 1, 2, 4.0, median_s=14.0, trials=3),
        ArmSpec("dask", 2, 2, 4.0, median_s=9.0, trials=3),
        ArmSpec(HOSTILE_ENGINE, 2, 2, 4.0, median_s=5.0, trials=3),
    ]
    rows = synthetic_rows(arms, epochs=(5, 10), seed=seed)
    for row in rows:
        row.update(dict.fromkeys(HOSTILE_COLUMNS, "x" + HOSTILE_TEXT))
    failed = {**rows[0], "status": "failed", "error": HOSTILE_TEXT, "error_type": HOSTILE_TEXT, "trial": 3}
    failed.update(fit_wall_s=None, accuracy=None, accuracy_best=None, measurement_key="k" + HOSTILE_TEXT)
    return [*rows, failed]

"""The sweeper's fixed costs: planning a ~10,000-measurement grid, and writing and loading a large store."""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.bench.settings import plan_grid
from tests.bench.stats import median


def time_planning(measurements: int, runs: int = 5) -> dict[str, Any]:
    """Parse and plan an in-memory grid of ~``measurements`` measurements; medians of ``runs``."""
    from sweeper.config import load as grids
    from sweeper.planning.plan import make_plan

    raw = plan_grid(measurements)
    parse_s, plan_s = [], []
    plan = None
    for _ in range(runs):
        started = time.perf_counter()
        grid = grids.parse(raw, Path("<bench-plan>"))
        parsed = time.perf_counter()
        plan = make_plan(grid)
        plan_s.append(time.perf_counter() - parsed)
        parse_s.append(parsed - started)
    assert plan is not None
    return {
        "measurements": plan.n_measurements,
        "launches": len(plan.launches),
        "points_per_launch": len(plan.points[plan.launches[0].index]),
        "trials": plan.grid.workload.trials,
        "runs": runs,
        "parse_s": parse_s,
        "make_plan_s": plan_s,
        "parse_median_s": median(parse_s),
        "make_plan_median_s": median(plan_s),
    }


def synthetic_rows(count: int, start: int = 0) -> list[Mapping[str, Any]]:
    """Store rows shaped like a sweep's (every column filled, a few distinct values per column)."""
    from tests.support.stored_rows import VERSIONS, stored_row

    base = datetime(2025, 1, 1, tzinfo=UTC)
    rows: list[Mapping[str, Any]] = []
    for i in range(start, start + count):
        engine = ("spark", "dask", "local")[i % 3]
        row: dict[str, Any] = {
            "sweep": "bench",
            "run_id": f"run-{i // 10_000}",
            "grid_hash": "0123456789ab",
            "measurement_key": f"key-{i}",
            "launch_index": i % 5,
            "engine": engine,
            "manager": "local",
            "rule": "report",
            "nodes": 1,
            "cores_per_executor": 1 + i % 2,
            "executors": 2,
            "total_cores": 2,
            "executor_memory_gib": 2.0,
            "memory_overhead_gib": 1.0,
            "granted_executors": 2,
            "granted_cores_per_executor": 1,
            "granted_executor_memory_gib": 2.0,
            "dataset": "fashion-mnist",
            "n_train": 12_000,
            "n_test": 10_000,
            "n_features": 784,
            "fraction": 1.0,
            "mode": "replicas",
            "n_fits": 8,
            "model_params": '{"hidden_layer_sizes": [100, 50], "solver": "adam"}',
            "hidden_layer_sizes": "100,50",
            "exact_epochs": True,
            "epochs": 1 + i % 100,
            "epochs_run": 1 + i % 100,
            "epochs_run_mean": float(1 + i % 100),
            "converged": False,
            "trial": i % 4,
            "cluster_start_s": 2.5,
            "warmup_s": 1.0,
            "fit_wall_s": 10.0 + (i % 97) / 10,
            "fit_task_sum_s": 40.0,
            "fit_task_max_s": 5.0,
            "accuracy": 0.8 + (i % 13) / 100,
            "accuracy_best": 0.85,
            "teardown_s": 1.0,
            "status": "ok" if i % 50 else "failed",
            "error_type": None if i % 50 else "ValueError",
            "error": None if i % 50 else "synthetic failure",
            "host": "bench-host",
            "started_at": base.replace(microsecond=i % 1_000_000),
            "threads_per_fit": 1,
            "fit_environment": '{"OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "6640"}',
            "worker_pids": 2,
            **VERSIONS,
            "dry_run": False,
        }
        rows.append(stored_row(**row))
    return rows


def time_store(rows: int, files: int, directory: Path, runs: int = 5) -> dict[str, Any]:
    """Write a synthetic store of ``rows`` rows in ``files`` files, then time ``load_results`` against a plain
    ``pandas.read_parquet`` of the same files, taking turns (a busy machine slows both alike: their ratio holds)."""
    import pandas as pd

    from sweeper.store.parquet import load_results
    from tests.support.stored_rows import write_test_rows

    per_file = -(-rows // files)
    started = time.perf_counter()
    for index in range(files):
        count = min(per_file, rows - index * per_file)
        write_test_rows(directory, "bench", synthetic_rows(count, start=index * per_file), f"part-bench-{index:03d}")
    write_s = time.perf_counter() - started
    load_s, parquet_s = [], []
    loaded = 0
    for _ in range(runs):
        started = time.perf_counter()
        pd.read_parquet(directory)
        parquet_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        frame = load_results(directory)
        load_s.append(time.perf_counter() - started)
        loaded = len(frame)
        del frame
    return {
        "rows": loaded,
        "files": files,
        "bytes": sum(p.stat().st_size for p in directory.rglob("*.parquet")),
        "write_s": write_s,
        "runs": runs,
        "load_s": load_s,
        "load_median_s": median(load_s),
        "parquet_s": parquet_s,
        "parquet_median_s": median(parquet_s),
        "load_vs_parquet": median([load / plain for load, plain in zip(load_s, parquet_s, strict=True)]),
    }

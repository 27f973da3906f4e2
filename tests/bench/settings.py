"""What one bench run runs: its sizes, and the in-memory grids it plans."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.bench.targets import MIN_FITS


@dataclass(frozen=True)
class Settings:
    """Sizes of one bench run."""

    rows: int = 12_000
    fits: int = MIN_FITS
    epochs: int = 32
    repeats: int = 5
    dask_launches: int = 20
    spark_launches: int = 3
    plan_measurements: int = 10_000
    store_rows: int = 100_000
    store_files: int = 4
    analysis_configurations: int = 1_000
    quiet_trials: int = 20  # per engine, of the quiet sweep (false marks: tests/bench/quiet.py)
    quiet_engines: tuple[str, ...] = ("spark", "dask")
    racing_repeats: int = 300  # replays of racing per store (tests/bench/racing.py)
    yarn_start_sweeps: int = 3  # one-launch Spark sweeps on the namespaced YARN cluster (tests/bench/yarn_starts.py)
    quick: bool = False


# The quick run (tests/test_bench.py, in make test) takes every path once at the least size. No Spark launch of the
# memory test (its code is the Dask one's; the batch comparison starts Spark) took it from 48 s to 42 s on a quiet
# machine; the quiet sweep's Dask launch alone, 2 trials (a launch's first row is never compared: its second is), from
# 91 s to 81 s on a busy one.
QUICK = Settings(
    rows=1_000,
    fits=4,
    epochs=2,
    repeats=3,
    dask_launches=2,
    spark_launches=0,
    store_rows=10_000,
    analysis_configurations=20,
    quiet_trials=2,
    quiet_engines=("dask",),
    racing_repeats=20,
    yarn_start_sweeps=0,
    quick=True,
)


def plan_grid(measurements: int) -> dict[str, Any]:
    """An in-memory grid with about ``measurements`` measurements (5 launches x 10 model points x epochs x 4 trials).

    >>> grid = plan_grid(10_000)
    >>> len(grid["workload"]["epochs"]) * 5 * 10 * grid["workload"]["trials"]
    10000
    """
    trials = 4
    per_epoch = 5 * 10 * trials  # launches (baseline + 2 shapes x 2 engines) x model points x trials
    epochs = max(1, round(measurements / per_epoch))
    return {
        "name": "bench-plan",
        "cluster": {"manager": "local", "nodes": 1, "cores_per_node": 2, "memory_per_node": "8GiB"},
        "sizing": {"cores_per_executor": [1, 2], "reserve": {"cores": 0, "memory": "1GiB"}, "application_master": 0},
        "engines": ["spark", "dask"],
        "workload": {
            "dataset": "digits",
            "model": {"hidden_layer_sizes": [[100, 50], [64]], "alpha": [0.0001, 0.001, 0.01, 0.1, 1.0]},
            "epochs": list(range(1, epochs + 1)),
            "trials": trials,
        },
    }


def launch_grid(dataset: str, epochs: int, fits: int, trials: int) -> dict[str, Any]:
    """The grid of the batch comparison: this machine as 2 executors (workers) x 1 core, MLP (100, 50)."""
    return {
        "name": "bench",
        "cluster": {"manager": "local", "nodes": 1, "cores_per_node": 2, "memory_per_node": "8GiB"},
        "sizing": {"cores_per_executor": [1], "reserve": {"cores": 0, "memory": "1GiB"}, "application_master": 0},
        "engines": ["spark", "dask"],
        "baseline": False,
        "workload": {
            "dataset": dataset,
            "model": {"hidden_layer_sizes": [100, 50], "solver": "adam"},
            "epochs": [epochs],
            "trials": trials,
            "n_fits": fits,
            "exact_epochs": True,
            "threads_per_fit": 1,
        },
    }

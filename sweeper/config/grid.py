"""A validated grid: frozen dataclasses (no YAML, no scikit-learn: workers import them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweeper.planning.sizing import Cluster


@dataclass(frozen=True)
class Dataset:
    """Which data to train on: a bundled name, or a file/directory path."""

    name: str
    path: str | None = None


@dataclass(frozen=True)
class Workload:
    """What every launch trains, with its sweep axes as tuples."""

    dataset: Dataset
    fractions: tuple[float, ...]
    model_axes: tuple[tuple[str, tuple[Any, ...]], ...]
    epochs: tuple[int, ...]
    trials: int
    modes: tuple[str, ...]
    folds: int
    param_grid: tuple[tuple[str, tuple[Any, ...]], ...]
    n_fits: int | None
    local_epochs: int
    shards: int | None
    exact_epochs: bool
    threads_per_fit: int
    timeout_s: float
    seed: int
    test_size: float
    start_timeout_s: float = 180.0


@dataclass(frozen=True)
class Grid:
    """A validated grid file."""

    path: Path
    name: str
    manager: str
    cluster: Cluster
    rule: str
    cores_per_executor: tuple[int, ...]
    engines: tuple[str, ...]
    baseline: bool
    workload: Workload
    exclude: tuple[dict[str, Any], ...]
    only: tuple[dict[str, Any], ...]
    store: Path
    environment: tuple[tuple[str, str], ...]
    spark_conf: tuple[tuple[str, str], ...] = ()
    hosts: tuple[str, ...] = ()
    ssh: tuple[tuple[str, Any], ...] = ()
    python: str | None = None
    java_home: str | None = None
    remote_dir: str | None = None
    queue: str | None = None
    hadoop_conf_dir: str | None = None
    python_archive: str | None = None
    spark_master: str | None = None
    dask_scheduler: str | None = None
    grid_hash: str = field(default="", compare=False)
    warnings: tuple[str, ...] = field(default=(), compare=False)

"""The measurement row: one typed record per measurement, in groups by what knows them.

:class:`Row` is the one definition of a stored row's columns and their types; the Parquet schema
(:data:`sweeper.store.parquet.SCHEMA`) is derived from it and the README's column table documents
it (:mod:`sweeper.store.column_docs`). A row is assembled once, from its groups, by
:func:`sweeper.run.rows.measurement_row`. Integers are 32-bit unless marked :data:`Int64`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, TypedDict

INT64 = "int64"
Int64 = Annotated[int, INT64]  # a count that may pass 2**31 (rows, bytes)


class StoreColumns(TypedDict, total=False):
    """Written by the store itself."""

    schema_version: int


class VersionColumns(TypedDict):
    """The interpreter's, the libraries' and the JVM's versions (:func:`sweeper.run.versions.versions`); each
    engine's library is its descriptor's ``version_column`` (:data:`sweeper.engines.VERSION_PACKAGES`)."""

    python_version: str
    sklearn_version: str
    joblib_version: str
    dask_version: str
    pyspark_version: str
    ray_version: str  # schema 13
    java_version: str


class RunColumns(VersionColumns):
    """Alike in every row of one run: which sweep and run, the grid's content, where and with what it ran."""

    sweep: str
    run_id: str
    grid_hash: str
    exact_epochs: bool
    threads_per_fit: int
    host: str
    cluster_hosts: str | None
    search_strategy: str
    rung_axis: str | None
    race_delta: float | None
    race_confidence: float | None
    race_max_trials: int | None
    estimator: str | None
    work_axis: str | None
    scoring: str | None


class PlannedColumns(TypedDict):
    """The measurement a row stands for: its key, the grid's launch, epochs and trial."""

    measurement_key: str
    launch_index: int
    engine: str
    manager: str
    rule: str
    nodes: int
    cores_per_executor: int
    executors: int
    total_cores: int
    executor_memory_gib: float
    memory_overhead_gib: float
    epochs: int
    trial: int


class BatchColumns(TypedDict):
    """What the batch trained on (the data's sizes: null when the launch never started) and a dry run's
    shrunk figures."""

    dataset: str
    fraction: float
    mode: str
    n_fits: int
    model_params: str
    hidden_layer_sizes: str
    dry_run: bool
    n_train: Int64 | None
    n_test: Int64 | None
    n_features: int | None
    dry_run_epochs: int | None
    dry_run_train_rows: Int64 | None


class StartColumns(TypedDict, total=False):
    """One start of the launch: its times, what it was granted; ``teardown_s`` comes with the launch's merge."""

    cluster_start_s: float | None
    staging_s: float | None
    warmup_s: float | None
    granted_executors: int | None
    granted_cores_per_executor: int | None
    granted_executor_memory_gib: float | None
    teardown_s: float | None


class OutcomeColumns(TypedDict):
    """How the measurement ended, whatever the outcome."""

    status: str
    error_type: str | None
    error: str | None
    started_at: datetime
    fit_wall_s: float | None
    fit_environment: str


class ResourceColumns(TypedDict, total=False):
    """What the workers that ran a completed batch used (:mod:`sweeper.run.resources`)."""

    cpu_s_fits: float | None
    cpu_s_workers: float | None
    slot_utilisation: float | None
    worker_peak_rss_gib_max: float | None
    worker_peak_rss_gib_median: float | None
    jvm_peak_heap_gib: float | None
    python_peak_rss_gib_max: float | None
    resource_note: str | None


class InterferenceColumns(TypedDict, total=False):
    """What else used the nodes while a completed batch ran (:mod:`sweeper.run.interference`)."""

    interference_cpu_share: float | None
    steal_share: float | None
    cpu_pressure_share: float | None
    interference_host: str | None
    disturbed: bool | None


class ResultColumns(ResourceColumns, InterferenceColumns, total=False):
    """What a completed batch measured: the fits' times, accuracy, convergence, data-parallel rounds."""

    fit_task_sum_s: float
    fit_task_max_s: float
    accuracy: float
    accuracy_best: float
    epochs_run: int
    epochs_run_mean: float
    converged: bool
    worker_pids: int
    shards: int | None
    rounds: int | None
    round_s_mean: float | None
    comm_bytes_per_round: Int64 | None


class VisitColumns(TypedDict, total=False):
    """Where the measurement's launch visit came in the run's random order (:mod:`sweeper.search.interleaving`)."""

    visit_round: int | None
    visit_position: int | None


class SearchColumns(VisitColumns, total=False):
    """What a search strategy added: its visit order, why a point stopped, its rung or race round, the measured row a
    dry run's row reuses."""

    stop_reason: str | None
    rung: int | None
    race_round: int | None
    reused_from: str | None


class PredictionColumns(TypedDict, total=False):
    """What the plan predicted of the batch (``sweeper run --predict-from``)."""

    predicted_s: float | None


class Row(
    StoreColumns,
    RunColumns,
    PlannedColumns,
    BatchColumns,
    StartColumns,
    OutcomeColumns,
    ResultColumns,
    SearchColumns,
    PredictionColumns,
    total=False,
):
    """One stored measurement: every column, each in one group."""

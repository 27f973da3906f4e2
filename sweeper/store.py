"""The Parquet store: one row per measurement, one directory per sweep, files written atomically.

Layout: ``STORE/SWEEP/part-RUNID-LAUNCH-SEQ.parquet``. Each finished measurement is written at
once under a temporary dot-name and renamed, so a crash loses nothing that finished and readers
never see half a file; after a launch its files are compacted into one. The files are plain
Parquet with one schema, readable by pandas, pyarrow.dataset, DuckDB and Spark.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from sweeper.errors import UserError

SCHEMA_VERSION = 3
# Columns added after version 1: files written before them read with them empty.
ADDED_AFTER_VERSION_1 = (
    "shards",  # version 2: data-parallel
    "rounds",
    "round_s_mean",
    "comm_bytes_per_round",
    "cluster_hosts",  # version 3: the hosts of manager ssh
)
STATUSES = ("ok", "failed", "timeout")

SCHEMA = pa.schema(
    [
        ("schema_version", pa.int32()),
        ("sweep", pa.string()),
        ("run_id", pa.string()),
        ("grid_hash", pa.string()),
        ("measurement_key", pa.string()),
        ("launch_index", pa.int32()),
        ("engine", pa.string()),
        ("manager", pa.string()),
        ("rule", pa.string()),
        ("nodes", pa.int32()),
        ("cores_per_executor", pa.int32()),
        ("executors", pa.int32()),
        ("total_cores", pa.int32()),
        ("executor_memory_gib", pa.float64()),
        ("memory_overhead_gib", pa.float64()),
        ("granted_executors", pa.int32()),
        ("granted_cores_per_executor", pa.int32()),
        ("granted_executor_memory_gib", pa.float64()),
        ("dataset", pa.string()),
        ("n_train", pa.int64()),
        ("n_test", pa.int64()),
        ("n_features", pa.int32()),
        ("fraction", pa.float64()),
        ("mode", pa.string()),
        ("n_fits", pa.int32()),
        ("model_params", pa.string()),
        ("hidden_layer_sizes", pa.string()),
        ("exact_epochs", pa.bool_()),
        ("epochs", pa.int32()),
        ("epochs_run", pa.int32()),
        ("epochs_run_mean", pa.float64()),
        ("converged", pa.bool_()),
        ("trial", pa.int32()),
        ("cluster_start_s", pa.float64()),
        ("warmup_s", pa.float64()),
        ("fit_wall_s", pa.float64()),
        ("fit_task_sum_s", pa.float64()),
        ("fit_task_max_s", pa.float64()),
        ("accuracy", pa.float64()),
        ("accuracy_best", pa.float64()),
        ("teardown_s", pa.float64()),
        ("status", pa.string()),
        ("error_type", pa.string()),
        ("error", pa.string()),
        ("host", pa.string()),
        ("cluster_hosts", pa.string()),
        ("started_at", pa.timestamp("us", tz="UTC")),
        ("threads_per_fit", pa.int32()),
        ("fit_environment", pa.string()),
        ("worker_pids", pa.int32()),
        ("shards", pa.int32()),
        ("rounds", pa.int32()),
        ("round_s_mean", pa.float64()),
        ("comm_bytes_per_round", pa.int64()),
        ("python_version", pa.string()),
        ("sklearn_version", pa.string()),
        ("joblib_version", pa.string()),
        ("dask_version", pa.string()),
        ("pyspark_version", pa.string()),
        ("java_version", pa.string()),
        ("dry_run", pa.bool_()),
    ]
)
COLUMNS = tuple(SCHEMA.names)


def sweep_dir(store: Path, sweep: str) -> Path:
    return store / sweep


def write_rows(store: Path, sweep: str, rows: list[Mapping[str, Any]], stem: str) -> Path:
    """Write rows as one Parquet file, atomically (temporary dot-name, then rename)."""
    unknown = {key for row in rows for key in row} - set(COLUMNS)
    if unknown:
        raise ValueError(f"columns not in the store schema: {sorted(unknown)}")
    directory = sweep_dir(store, sweep)
    directory.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist([{**row, "schema_version": SCHEMA_VERSION} for row in rows], schema=SCHEMA)
    final = directory / f"{stem}.parquet"
    temporary = directory / f".{stem}.{uuid.uuid4().hex}.tmp"
    pq.write_table(table, temporary)
    os.replace(temporary, final)
    return final


def compact(store: Path, sweep: str, files: Iterable[Path], stem: str, **fill: Any) -> Path | None:
    """Merge a launch's measurement files into one (filling e.g. ``teardown_s``), then remove them."""
    parts = list(files)
    if not parts:
        return None
    rows = [row for part in parts for row in pq.read_table(part, schema=SCHEMA).to_pylist()]
    for row in rows:
        row.update(fill)
    merged = write_rows(store, sweep, rows, stem)
    for part in parts:
        if part != merged:
            part.unlink()
    return merged


def _files(store: Path, sweep: str | None) -> list[Path]:
    root = sweep_dir(store, sweep) if sweep else store
    if not root.exists():
        return []
    return sorted(p for p in root.rglob("*.parquet") if not p.name.startswith((".", "_")))


def read_table(store: str | Path, sweep: str | None = None) -> pa.Table:
    """All rows of a store (or one sweep) as an Arrow table with the store schema."""
    for _ in range(10):
        try:
            return _read_files(_files(Path(store), sweep))
        except FileNotFoundError:
            continue  # a running sweep compacted files between listing and reading them: list again
    return _read_files(_files(Path(store), sweep))


def _read_files(paths: list[Path]) -> pa.Table:
    tables = []
    for path in paths:
        try:
            table = pq.read_table(path)
        except FileNotFoundError:
            raise
        except (pa.ArrowInvalid, OSError) as error:
            raise UserError(f"{path}: not a readable Parquet file of a sweeper store ({error})") from None
        for name in ADDED_AFTER_VERSION_1:
            if name not in table.column_names and "measurement_key" in table.column_names:
                table = table.append_column(name, pa.nulls(table.num_rows, SCHEMA.field(name).type))
        missing = set(COLUMNS) - set(table.column_names)
        if missing:
            raise UserError(
                f"{path}: not a sweeper store file (missing columns {sorted(missing)[:5]}); "
                "move it out of the store directory"
            )
        tables.append(table.select(list(COLUMNS)).cast(SCHEMA))
    return pa.concat_tables(tables) if tables else SCHEMA.empty_table()


def load_results(store: str | Path, sweep: str | None = None) -> pd.DataFrame:
    """The rows of a store as a typed pandas DataFrame (nullable dtypes), oldest first.

    Examples
    --------
    In a notebook, after ``make sweep``::

        df = load_results("results/")
        df[df.status == "ok"].groupby(["engine", "cores_per_executor", "epochs"]).fit_wall_s.median()
    """
    table = read_table(store, sweep)
    frame = table.to_pandas(types_mapper=_nullable)
    return frame.sort_values(["started_at", "launch_index", "epochs", "trial"], kind="stable").reset_index(drop=True)


def _nullable(arrow_type: pa.DataType) -> Any:
    mapping = {
        pa.int32(): pd.Int32Dtype(),
        pa.int64(): pd.Int64Dtype(),
        pa.float64(): pd.Float64Dtype(),
        pa.bool_(): pd.BooleanDtype(),
        pa.string(): pd.StringDtype(),
    }
    return mapping.get(arrow_type)


def completed_keys(store: Path, sweep: str) -> set[str]:
    """Measurement keys already recorded as ``ok`` in this sweep (a resumed run skips them)."""
    table = read_table(store, sweep)
    if table.num_rows == 0:
        return set()
    keys = table.column("measurement_key").to_pylist()
    statuses = table.column("status").to_pylist()
    return {key for key, status in zip(keys, statuses, strict=True) if status == "ok"}


def remove_sweep(store: Path, sweep: str) -> int:
    """``--fresh``: delete one sweep's files (never other sweeps'); returns how many."""
    files = _files(store, sweep)
    for path in files:
        path.unlink()
    return len(files)

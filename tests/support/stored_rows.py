"""Rows as the store holds them, for the tests' synthetic stores, the committed fixture store and the benchmark.

:func:`stored_row` fills every column of :data:`sweeper.store.parquet.COLUMNS`, in the schema's order, with
the values given and ``None`` for the others; :data:`VERSIONS` are the version columns the synthetic rows
record (as :func:`sweeper.run.versions.versions` would on a machine of fixed versions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from sweeper.store.parquet import COLUMNS, write_rows
from sweeper.store.row import Row

VERSIONS: dict[str, str] = {
    "python_version": "3.11.2",
    "sklearn_version": "1.6.1",
    "joblib_version": "1.4.2",
    "dask_version": "2025.2.0",
    "pyspark_version": "4.0.1",
    "java_version": "17.0.16",
}


def stored_row(**values: Any) -> dict[str, Any]:
    """One row with every store column: ``values``, ``None`` for the columns not given (as an older store's
    columns read). A name that is not a store column is refused (:class:`ValueError`), as ``write_rows`` does."""
    unknown = set(values) - set(COLUMNS)
    if unknown:
        raise ValueError(f"columns not in the store schema: {sorted(unknown)}")
    return {column: values.get(column) for column in COLUMNS}


def write_test_rows(store: Path, sweep: str, rows: Sequence[Mapping[str, Any]], stem: str) -> Path:
    """:func:`sweeper.store.parquet.write_rows` of rows a test makes as plain mappings (partial, hostile, or
    :func:`stored_row`'s): the store checks their columns at run time, as it checks a run's typed rows."""
    return write_rows(store, sweep, cast("Sequence[Row]", rows), stem)

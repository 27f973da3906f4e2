"""The Parquet store: atomic files, one schema, typed reads, resume keys, clear errors."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.dataset as ds
import pytest

from sweeper import load_results
from sweeper.errors import UserError
from sweeper.store import COLUMNS, SCHEMA_VERSION, compact, completed_keys, read_table, remove_sweep, write_rows


def row(key: str, status: str = "ok", **values: Any) -> dict[str, Any]:
    return {
        "sweep": "s",
        "measurement_key": key,
        "engine": "dask",
        "epochs": 10,
        "trial": 0,
        "launch_index": 0,
        "status": status,
        "fit_wall_s": 1.5,
        "started_at": datetime(2026, 1, 1, tzinfo=UTC),
        **values,
    }


def test_rows_round_trip_through_pandas_and_pyarrow_dataset(tmp_path: Path) -> None:
    write_rows(tmp_path, "s", [row("a"), row("b", status="failed", error="boom")], "part-1")
    frame = load_results(tmp_path)
    assert list(frame.columns) == list(COLUMNS)
    assert frame["measurement_key"].tolist() == ["a", "b"]
    assert frame["epochs"].dtype == pd.Int32Dtype()
    assert frame["fit_wall_s"].dtype == pd.Float64Dtype()
    assert frame["schema_version"].tolist() == [SCHEMA_VERSION, SCHEMA_VERSION] == [3, 3]
    assert frame["accuracy"].isna().all()  # missing values stay missing, typed
    assert pd.read_parquet(tmp_path / "s").shape[0] == 2
    assert ds.dataset(tmp_path, format="parquet").to_table().num_rows == 2


def test_writes_are_atomic_and_leave_no_temporary_files(tmp_path: Path) -> None:
    path = write_rows(tmp_path, "s", [row("a")], "part-1")
    assert [p.name for p in path.parent.iterdir()] == ["part-1.parquet"]


def test_unknown_columns_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="fit_time"):
        write_rows(tmp_path, "s", [row("a", fit_time=3)], "part-1")


def test_compact_merges_and_fills_teardown(tmp_path: Path) -> None:
    parts = [write_rows(tmp_path, "s", [row(k)], f"part-x-{i}") for i, k in enumerate("abc")]
    merged = compact(tmp_path, "s", parts, "part-x", teardown_s=2.5)
    assert merged is not None and [p.name for p in (tmp_path / "s").iterdir()] == ["part-x.parquet"]
    frame = load_results(tmp_path)
    assert frame["measurement_key"].tolist() == ["a", "b", "c"]
    assert frame["teardown_s"].tolist() == [2.5, 2.5, 2.5]


def test_completed_keys_count_only_ok_rows_and_fresh_removes_one_sweep(tmp_path: Path) -> None:
    write_rows(tmp_path, "s", [row("a"), row("b", status="failed"), row("c", status="timeout")], "p1")
    write_rows(tmp_path, "other", [{**row("z"), "sweep": "other"}], "p1")
    assert completed_keys(tmp_path, "s") == {"a"}
    assert remove_sweep(tmp_path, "s") == 1
    assert completed_keys(tmp_path, "s") == set()
    assert load_results(tmp_path)["sweep"].tolist() == ["other"]


def test_load_results_of_one_sweep(tmp_path: Path) -> None:
    write_rows(tmp_path, "s", [row("a")], "p1")
    write_rows(tmp_path, "t", [{**row("b"), "sweep": "t"}], "p1")
    assert load_results(tmp_path, sweep="t")["measurement_key"].tolist() == ["b"]
    assert len(load_results(tmp_path)) == 2


def test_an_empty_store_reads_as_an_empty_typed_frame(tmp_path: Path) -> None:
    frame = load_results(tmp_path / "nothing")
    assert frame.empty and list(frame.columns) == list(COLUMNS)


def test_a_truncated_file_is_named_in_the_error(tmp_path: Path) -> None:
    path = write_rows(tmp_path, "s", [row("a")], "p1")
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(UserError, match=r"p1\.parquet: not a readable Parquet file"):
        read_table(tmp_path)


def test_a_foreign_parquet_file_is_named_in_the_error(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    pd.DataFrame({"x": [1]}).to_parquet(tmp_path / "s" / "foreign.parquet")
    with pytest.raises(UserError, match=r"foreign\.parquet: not a sweeper store file"):
        load_results(tmp_path)


def test_a_version_1_file_reads_with_the_later_columns_empty(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from sweeper.store import ADDED_AFTER_VERSION_1

    path = write_rows(tmp_path, "s", [row("a")], "p1")
    old = pq.read_table(path).drop_columns(list(ADDED_AFTER_VERSION_1))
    pq.write_table(old, path)
    frame = load_results(tmp_path)
    assert frame["rounds"].isna().all() and frame["measurement_key"].tolist() == ["a"]

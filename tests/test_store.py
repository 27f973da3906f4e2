"""The Parquet store: atomic files, one schema, typed reads, resume keys, clear errors."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
import yaml

from sweeper import load_results
from sweeper.errors import UserError
from sweeper.store.parquet import (
    COLUMNS,
    SCHEMA_VERSION,
    check_writable,
    compact,
    finish_merges,
    merge_leftovers,
    read_table,
    recorded_rows,
    remove_sweep,
    sweeps,
)
from tests.support.stored_rows import write_test_rows


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
    write_test_rows(tmp_path, "s", [row("a"), row("b", status="failed", error="boom")], "part-1")
    frame = load_results(tmp_path)
    assert list(frame.columns) == list(COLUMNS)
    assert frame["measurement_key"].tolist() == ["a", "b"]
    assert frame["epochs"].dtype == pd.Int32Dtype()
    assert frame["fit_wall_s"].dtype == pd.Float64Dtype()
    assert frame["schema_version"].tolist() == [SCHEMA_VERSION, SCHEMA_VERSION] == [13, 13]
    assert frame["accuracy"].isna().all()  # missing values stay missing, typed
    assert pd.read_parquet(tmp_path / "s").shape[0] == 2
    assert ds.dataset(tmp_path, format="parquet").to_table().num_rows == 2


def test_text_read_through_dictionaries_is_the_files_text_cut_to_its_bound_and_missing_as_na(tmp_path: Path) -> None:
    long_error, long_host = "E" * 2500, "h" * 300
    write_test_rows(tmp_path, "s", [row("a", error=long_error, host="node-1"), row("b", host=long_host)], "part-1")
    write_test_rows(tmp_path, "s", [row("c", error=long_error, host="node-2"), row("d", error="boom")], "part-2")
    write_test_rows(tmp_path, "s", [row("e", grid_hash="g" * 300)], "part-3")  # a key: never cut
    frame = load_results(tmp_path)
    assert frame["measurement_key"].tolist() == ["a", "b", "c", "d", "e"]
    assert all(frame[name].dtype == pd.StringDtype() for name in ("error", "host", "engine", "measurement_key"))
    assert frame["error"].tolist()[:2] == ["E" * 1999 + "\u2026", pd.NA]
    assert frame["error"].tolist()[2:] == ["E" * 1999 + "\u2026", "boom", pd.NA]
    assert frame["host"].tolist() == ["node-1", "h" * 199 + "\u2026", "node-2", pd.NA, pd.NA]
    assert frame["grid_hash"].tolist()[-1] == "g" * 300
    assert frame["engine"].tolist() == ["dask"] * 5
    frame.loc[0, "engine"] = "spark"  # one array per column: a row's change is its own
    assert frame["engine"].tolist() == ["spark"] + ["dask"] * 4


def test_dry_run_rows_are_left_out_where_real_rows_are_read_with_them(tmp_path: Path) -> None:
    write_test_rows(tmp_path, "2node", [row("real")], "part-1")
    write_test_rows(tmp_path, "2node-dry-run", [row("dry", dry_run=True)], "part-1")
    assert load_results(tmp_path)["measurement_key"].tolist() == ["real"]
    assert load_results(tmp_path, "2node-dry-run")["measurement_key"].tolist() == ["dry"]  # only dry: kept
    assert sorted(load_results(tmp_path, dry_runs=True)["measurement_key"]) == ["dry", "real"]
    assert load_results(tmp_path, "2node-dry-run", dry_runs=False).empty


def test_writes_are_atomic_and_leave_no_temporary_files(tmp_path: Path) -> None:
    path = write_test_rows(tmp_path, "s", [row("a")], "part-1")
    assert [p.name for p in path.parent.iterdir()] == ["part-1.parquet"]


def test_unknown_columns_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="fit_time"):
        write_test_rows(tmp_path, "s", [row("a", fit_time=3)], "part-1")


def test_compact_merges_and_fills_teardown(tmp_path: Path) -> None:
    parts = [write_test_rows(tmp_path, "s", [row(k)], f"part-x-{i}") for i, k in enumerate("abc")]
    merged = compact(tmp_path, "s", parts, "part-x", teardown_s=2.5)
    assert merged is not None and [p.name for p in (tmp_path / "s").iterdir()] == ["part-x.parquet"]
    frame = load_results(tmp_path)
    assert frame["measurement_key"].tolist() == ["a", "b", "c"]
    assert frame["teardown_s"].tolist() == [2.5, 2.5, 2.5]


@pytest.mark.parametrize("deleted", ["store", "sweep"])
def test_compacting_a_deleted_store_is_a_user_error_naming_it(deleted: str, tmp_path: Path) -> None:
    store = tmp_path / "store"
    parts = [write_test_rows(store, "s", [row(k)], f"part-x-{i}") for i, k in enumerate("ab")]
    shutil.rmtree(store if deleted == "store" else store / "s")
    with pytest.raises(UserError) as raised:
        compact(store, "s", parts, "part-x", teardown_s=2.5)
    assert str(raised.value) == (
        f"store {store}: part-x-0.parquet, a measurement this sweep wrote, is gone (the "
        f"{'store' if deleted == 'store' else 'sweep' + chr(39) + 's directory'} deleted while the sweep ran?); "
        "the sweep stops here: run it again to measure what the store lacks"
    )
    assert not store.exists() or not (store / "s").exists()  # nothing written back


def test_a_store_deleted_under_a_running_sweep_ends_it_with_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real sweep (the baseline's one fit, in this process) whose store is deleted once its row is written."""
    from sweeper import cli
    from sweeper.run import launches
    from tests.conftest import minimal_grid

    grid, store = tmp_path / "g.yaml", tmp_path / "store"
    grid.write_text(yaml.safe_dump(minimal_grid(exclude=[{"engine": ["spark", "dask"]}])))
    written = launches.write_rows

    def then_deleted(*args: Any, **options: Any) -> Path:
        path = written(*args, **options)
        shutil.rmtree(store)
        return path

    monkeypatch.setattr(launches, "write_rows", then_deleted)
    assert cli.main(["run", str(grid), "--store", str(store)]) == 2
    out, err = capsys.readouterr()
    said = " ".join(err.split())  # its lines unwrapped
    assert "Traceback" not in out + err and said.startswith(f"error: store {store}: part-")
    assert "is gone (the store deleted while the sweep ran?)" in said


def ok_keys(store: Path, sweep: str) -> set[str]:
    return {key for key, row in recorded_rows(store, sweep).items() if row.status == "ok"}


def test_recorded_rows_give_each_keys_status_an_ok_row_first_and_fresh_removes_one_sweep(tmp_path: Path) -> None:
    write_test_rows(tmp_path, "s", [row("a"), row("b", status="failed"), row("c", status="timeout")], "p1")
    write_test_rows(tmp_path, "s", [row("b", status="ok"), row("a", status="failed")], "p2")
    write_test_rows(tmp_path, "other", [{**row("z"), "sweep": "other"}], "p1")
    recorded = recorded_rows(tmp_path, "s")
    assert {key: row.status for key, row in recorded.items()} == {"a": "ok", "b": "ok", "c": "timeout"}
    assert recorded["a"][1] == row("a")["fit_wall_s"]
    assert remove_sweep(tmp_path, "s") == 2
    assert recorded_rows(tmp_path, "s") == {}
    assert load_results(tmp_path)["sweep"].tolist() == ["other"]


def test_load_results_of_one_sweep(tmp_path: Path) -> None:
    write_test_rows(tmp_path, "s", [row("a")], "p1")
    write_test_rows(tmp_path, "t", [{**row("b"), "sweep": "t"}], "p1")
    assert load_results(tmp_path, sweep="t")["measurement_key"].tolist() == ["b"]
    assert len(load_results(tmp_path)) == 2


def test_a_sweep_directory_given_as_the_store_is_named_with_the_way_out(tmp_path: Path) -> None:
    write_test_rows(tmp_path, "s", [row("a")], "p1")
    with pytest.raises(UserError, match=r"s: holds store files itself.*pass its parent as the store, with --sweep s"):
        load_results(tmp_path / "s")


def test_an_empty_store_reads_as_an_empty_typed_frame(tmp_path: Path) -> None:
    frame = load_results(tmp_path / "nothing")
    assert frame.empty and list(frame.columns) == list(COLUMNS)


def test_a_truncated_file_is_named_in_the_error(tmp_path: Path) -> None:
    path = write_test_rows(tmp_path, "s", [row("a")], "p1")
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

    from sweeper.store.parquet import ADDED_AFTER_VERSION_1

    path = write_test_rows(tmp_path, "s", [row("a")], "p1")
    old = pq.read_table(path).drop_columns(list(ADDED_AFTER_VERSION_1))
    pq.write_table(old, path)
    frame = load_results(tmp_path)
    assert frame["rounds"].isna().all() and frame["measurement_key"].tolist() == ["a"]


# -- sweep names: a sweep is always one directory of the store, --fresh deletes only its files --------


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("..", id="parent"),
        pytest.param(".", id="store-itself"),
        pytest.param("", id="empty"),
        pytest.param("a/b", id="slash"),
        pytest.param("a\\b", id="backslash"),
        pytest.param("-rf", id="option-like"),
        pytest.param("a\x00b", id="nul"),
        pytest.param("a\nb", id="newline"),
        pytest.param("x" * 101, id="101-characters"),
        pytest.param(".scratch", id="hidden-the-runners-scratch"),
        pytest.param("_x", id="underscore-hidden-from-pyarrow"),
    ],
)
def test_an_unsafe_sweep_name_is_refused_by_every_store_function(tmp_path: Path, name: str) -> None:
    store = tmp_path / "store"
    for action in (
        lambda: write_test_rows(store, name, [row("a")], "p1"),
        lambda: remove_sweep(store, name),
        lambda: load_results(store, name),
        lambda: check_writable(store, name),
    ):
        with pytest.raises(UserError, match=r"^sweep name must"):
            action()
    assert not store.exists()


@pytest.mark.parametrize("name", ["2node", "a b", "x" * 100, "ü[bold]x", "v1.2"])
def test_safe_sweep_names_are_direct_children_of_the_store(tmp_path: Path, name: str) -> None:
    path = write_test_rows(tmp_path, name, [row("a", sweep=name)], "p1")
    assert path.parent.parent == tmp_path and path.parent.name == name
    assert load_results(tmp_path, name)["measurement_key"].tolist() == ["a"]


def plant(path: Path) -> Path:
    """A real store file (one row) at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    written = write_test_rows(path.parent.parent, path.parent.name, [row("planted")], path.stem)
    written.rename(path)
    return path


def test_fresh_never_deletes_a_file_outside_its_own_sweep(tmp_path: Path) -> None:
    store = tmp_path / "parent" / "store"
    outside = [
        plant(tmp_path / "parent" / "beside" / "next-to-the-store.parquet"),
        plant(tmp_path / "above" / "in-the-grandparent.parquet"),
        plant(store / "other" / "another-sweep.parquet"),
        plant(store / "s" / "sub" / "in-a-subdirectory.parquet"),
    ]
    (tmp_path / "parent" / "in-the-parent.parquet").write_bytes(outside[0].read_bytes())
    (store / "in-the-store-itself.parquet").write_bytes(outside[0].read_bytes())
    outside += [tmp_path / "parent" / "in-the-parent.parquet", store / "in-the-store-itself.parquet"]
    mine = [write_test_rows(store, "s", [row("a")], "p1"), write_test_rows(store, "s", [row("b")], "p2")]
    link = store / "s" / "link-out.parquet"
    link.symlink_to(outside[1])
    for name in ("..", ".", "s/..", "../parent"):
        with pytest.raises(UserError, match=r"^sweep name must"):
            remove_sweep(store, name)
        assert all(path.exists() for path in [*outside, *mine, link])
    assert remove_sweep(store, "s") == 3
    assert not any(path.exists() or path.is_symlink() for path in [*mine, link])
    assert all(path.exists() for path in outside)  # the link went, not what it pointed to


def test_fresh_refuses_a_sweep_directory_that_is_a_symbolic_link(tmp_path: Path) -> None:
    elsewhere = plant(tmp_path / "elsewhere" / "s" / "kept.parquet")
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "s").symlink_to(elsewhere.parent)
    with pytest.raises(UserError, match=r"store/s: the sweep's directory is a symbolic link"):
        remove_sweep(tmp_path / "store", "s")
    assert elsewhere.exists()


def test_reading_one_sweep_reads_only_its_directory(tmp_path: Path) -> None:
    write_test_rows(tmp_path, "s", [row("a")], "p1")
    plant(tmp_path / "s" / "sub" / "nested.parquet")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "broken.parquet").write_bytes(b"not parquet")
    assert load_results(tmp_path, "s")["measurement_key"].tolist() == ["a"]
    assert ok_keys(tmp_path, "s") == {"a"}
    with pytest.raises(UserError, match=r"other/broken\.parquet: not a readable Parquet file"):
        load_results(tmp_path)  # the whole store: every sweep's files
    assert sweeps(tmp_path) == ["other", "s"]


# -- files that are not what this sweeper writes: a UserError naming the file ---------------------------


def rewrite(path: Path, change: Callable[[pa.Table], pa.Table]) -> None:
    pq.write_table(change(pq.read_table(path)), path)


def test_a_column_of_the_wrong_type_is_named_with_its_file(tmp_path: Path) -> None:
    path = write_test_rows(tmp_path, "s", [row("a")], "p1")
    index = COLUMNS.index("fit_wall_s")
    rewrite(path, lambda t: t.set_column(index, "fit_wall_s", pa.array(["1.5"])))
    with pytest.raises(UserError, match=r"s/p1\.parquet: not a sweeper store file \(column fit_wall_s is string"):
        load_results(tmp_path)
    with pytest.raises(UserError, match=r"p1\.parquet"):
        recorded_rows(tmp_path, "s")


def test_wider_integers_and_other_time_units_still_read(tmp_path: Path) -> None:
    """What pandas or another tool writes back (int64, nanoseconds, an all-null column) reads as the store's types."""
    path = write_test_rows(tmp_path, "s", [row("a")], "p1")
    table = pq.read_table(path)
    table = table.set_column(COLUMNS.index("epochs"), "epochs", table.column("epochs").cast(pa.int64()))
    started = table.column("started_at").cast(pa.timestamp("ns", tz="UTC"))
    table = table.set_column(COLUMNS.index("started_at"), "started_at", started)
    table = table.set_column(COLUMNS.index("accuracy"), "accuracy", pa.nulls(1))
    pq.write_table(table, path)
    frame = load_results(tmp_path)
    assert frame["epochs"].tolist() == [10] and frame["epochs"].dtype == pd.Int32Dtype()
    assert frame["accuracy"].isna().all()


def test_a_value_that_does_not_fit_the_column_is_named_with_its_file(tmp_path: Path) -> None:
    path = write_test_rows(tmp_path, "s", [row("a")], "p1")
    rewrite(path, lambda t: t.set_column(COLUMNS.index("epochs"), "epochs", pa.array([2**40])))
    with pytest.raises(UserError, match=r"p1\.parquet: values that do not fit the store's column types"):
        load_results(tmp_path)


def test_a_file_of_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = write_test_rows(tmp_path, "s", [row("a")], "p1")
    newer = SCHEMA_VERSION + 1
    rewrite(path, lambda t: t.set_column(0, "schema_version", pa.array([newer], pa.int32())).drop_columns(["error"]))
    message = rf"p1\.parquet: written by a newer sweeper \(schema {newer}, this one reads up to {SCHEMA_VERSION}\)"
    with pytest.raises(UserError, match=message):
        load_results(tmp_path)


def test_links_and_special_files_named_like_store_files_are_named_in_the_error(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    loop = tmp_path / "s" / "loop.parquet"
    loop.symlink_to(loop)
    with pytest.raises(UserError, match=r"s/loop\.parquet: cannot be read: Too many levels of symbolic links"):
        load_results(tmp_path)
    loop.unlink()
    (tmp_path / "s" / "dangling.parquet").symlink_to(tmp_path / "gone.parquet")
    with pytest.raises(UserError, match=r"s/dangling\.parquet: a symbolic link to a missing file"):
        load_results(tmp_path, "s")
    (tmp_path / "s" / "dangling.parquet").unlink()
    os.mkfifo(tmp_path / "s" / "fifo.parquet")  # reading it would block for ever
    with pytest.raises(UserError, match=r"s/fifo\.parquet: not a regular file"):
        load_results(tmp_path)
    (tmp_path / "s" / "fifo.parquet").unlink()
    (tmp_path / "s" / "dir.parquet").mkdir()  # a directory is not a store file: not read, not deleted
    assert load_results(tmp_path).empty and remove_sweep(tmp_path, "s") == 0


# -- the store probe ------------------------------------------------------------------------------------


def test_the_probe_creates_the_sweep_directory_and_leaves_nothing_in_it(tmp_path: Path) -> None:
    check_writable(tmp_path / "new" / "store", "s")
    assert list((tmp_path / "new" / "store" / "s").iterdir()) == []


def test_the_probe_names_the_path_and_the_reason(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match=r"store .*/file: cannot create and write .*: Not a directory"):
        check_writable(tmp_path / "file", "s")
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "s").write_text("in the way")
    with pytest.raises(UserError, match=r"a file that is not a directory is in the way \(.*store/s\)"):
        check_writable(tmp_path / "store", "s")
    with pytest.raises(UserError, match=r"File name too long"):
        check_writable(tmp_path / ("x" * 300), "s")


def test_a_quiet_ok_row_wins_over_a_disturbed_one_whose_time_is_not_counted(tmp_path: Path) -> None:
    loaded = {"disturbed": True, "interference_cpu_share": 0.9}
    write_test_rows(tmp_path, "s", [{**row("a"), **loaded}, {**row("b"), **loaded, "fit_wall_s": 9.0}], "p1")
    later = pd.Timestamp("2026-01-01 00:01", tz="UTC")
    again = {"disturbed": False, "interference_cpu_share": 0.01, "started_at": later}
    write_test_rows(tmp_path, "s", [{**row("b"), **again}], "p2")
    recorded = recorded_rows(tmp_path, "s")
    assert recorded["a"] == ("ok", row("a")["fit_wall_s"], True)  # taken, under load
    assert recorded["b"] == ("ok", row("b")["fit_wall_s"], False)  # its quiet re-measurement


def test_a_merge_stopped_before_removing_its_parts_never_counts_a_row_twice_and_is_finished(tmp_path: Path) -> None:
    parts = [write_test_rows(tmp_path, "s", [row(key)], f"part-r-001-{n:04d}") for n, key in enumerate(("a", "b"))]
    merged = compact(tmp_path, "s", parts, "part-r-001", teardown_s=2.5)
    assert merged is not None
    for n, key in enumerate(("a", "b")):  # the parts again, as a kill -9 between the rename and the unlinks leaves them
        rows = [r for r in load_results(tmp_path, "s").to_dict("records") if r["measurement_key"] == key]
        write_test_rows(tmp_path, "s", [{**rows[0], "teardown_s": None}], f"part-r-001-{n:04d}")
    frame = load_results(tmp_path, "s")
    assert sorted(frame["measurement_key"]) == ["a", "b"] and (frame["teardown_s"] == 2.5).all()  # the merged copy
    assert recorded_rows(tmp_path, "s") == {"a": ("ok", 1.5, False), "b": ("ok", 1.5, False)}
    removed = finish_merges(tmp_path, "s")
    assert sorted(p.name for p in removed) == ["part-r-001-0000.parquet", "part-r-001-0001.parquet"]
    assert [p.name for p in (tmp_path / "s").iterdir()] == ["part-r-001.parquet"]
    # a part whose rows are not all in the merged file is not a copy: it stays
    write_test_rows(tmp_path, "s", [row("c")], "part-r-001-0002")
    assert finish_merges(tmp_path, "s") == [] and len(load_results(tmp_path, "s")) == 3


def test_parts_a_killed_run_never_merged_are_merged_by_the_next_run_once(tmp_path: Path) -> None:
    """kill -9 before a launch's merge leaves one file per measurement; the next run merges them, one file per
    launch, every row kept once; the current run's own parts and merged files are left alone."""
    for n, key in enumerate(("a", "b", "c")):
        write_test_rows(tmp_path, "s", [row(key)], f"part-killed-001-{n:04d}")
    write_test_rows(tmp_path, "s", [row("d")], "part-killed-002-0000")
    write_test_rows(tmp_path, "s", [row("e")], "part-done-001")  # a launch merged as usual
    before = sorted(load_results(tmp_path, "s")["measurement_key"])
    merged = merge_leftovers(tmp_path, "s")
    assert len(merged) == 4 and not any(p.exists() for p in merged)
    names = sorted(p.name for p in (tmp_path / "s").iterdir())
    assert names == ["part-done-001.parquet", "part-killed-001.parquet", "part-killed-002.parquet"]
    assert sorted(load_results(tmp_path, "s")["measurement_key"]) == before == ["a", "b", "c", "d", "e"]
    assert merge_leftovers(tmp_path, "s") == []

"""The Parquet store: one row per measurement, one directory per sweep, files written atomically.

Layout: ``STORE/SWEEP/part-RUNID-LAUNCH-SEQ.parquet``. Each finished measurement is written at
once under a temporary dot-name and renamed, so a crash loses nothing that finished and readers
never see half a file; after a launch its files are compacted into one. The files are plain
Parquet with one schema, readable by pandas, pyarrow.dataset, DuckDB and Spark.

A sweep's name is one safe directory name (see :func:`sweep_dir`), so a sweep's files are
always a direct child directory of the store, and ``--fresh`` deletes only files directly in it.
"""

from __future__ import annotations

import contextlib
import os
import stat
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, NamedTuple, Union, get_args, get_origin, get_type_hints

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sweeper.config.names import check_sweep_name
from sweeper.errors import UserError
from sweeper.names import OK, PRUNED
from sweeper.store.row import INT64, Row

SCHEMA_VERSION = 13
# Columns added after version 1: files written before them read with them empty.
ADDED_AFTER_VERSION_1 = (
    "shards",  # version 2: data-parallel
    "rounds",
    "round_s_mean",
    "comm_bytes_per_round",
    "cluster_hosts",  # version 3: the hosts of manager ssh
    "cpu_s_fits",  # version 4: resource use, dry-run previews, adaptive trials and halving
    "cpu_s_workers",
    "slot_utilisation",
    "worker_peak_rss_gib_max",
    "worker_peak_rss_gib_median",
    "jvm_peak_heap_gib",
    "resource_note",
    "dry_run_epochs",
    "dry_run_train_rows",
    "reused_from",
    "stop_reason",
    "rung",
    "staging_s",  # version 5: staging on the cluster's file system, apart from cluster_start_s
    "python_peak_rss_gib_max",  # version 6: Spark's Python workers apart, for the overhead's advice
    "rung_axis",  # version 7: the axis a halving run's rungs grew, stored rather than guessed
    "search_strategy",  # version 8: racing; every run's strategy, a race's settings and decision
    "race_delta",
    "race_confidence",
    "race_max_trials",
    "race_round",
    "predicted_s",  # version 9: the batch time the plan predicted (sweeper run --predict-from)
    "interference_cpu_share",  # version 10: what else used the nodes during the batch
    "steal_share",
    "cpu_pressure_share",
    "interference_host",
    "disturbed",
    "estimator",  # version 11: any scikit-learn estimator, its work axis and its scorer (null: MLP, max_iter, accuracy)
    "work_axis",
    "scoring",
    "visit_round",  # version 12: randomized interleaving, the round and place of each launch visit
    "visit_position",
    "ray_version",  # version 13: engine ray's library, as its descriptor records it (sweeper.engines)
)

_ARROW_TYPES = {
    str: pa.string(),
    bool: pa.bool_(),
    int: pa.int32(),
    float: pa.float64(),
    datetime: pa.timestamp("us", tz="UTC"),
}


def _arrow_type(hint: Any) -> pa.DataType:
    """The Arrow type of one :class:`~sweeper.store.row.Row` column's type hint (``X | None``: X's)."""
    if get_origin(hint) is Annotated:
        return pa.int64() if INT64 in get_args(hint)[1:] else _arrow_type(get_args(hint)[0])
    if get_origin(hint) in (Union, UnionType):
        (kind,) = (kind for kind in get_args(hint) if kind is not type(None))
        return _arrow_type(kind)
    return _ARROW_TYPES[hint]


SCHEMA = pa.schema([(name, _arrow_type(hint)) for name, hint in get_type_hints(Row, include_extras=True).items()])
COLUMNS = tuple(SCHEMA.names)
ROW_IDENTITY = ("measurement_key", "run_id", "started_at", "status")  # one row, wherever it is stored
# The store's columns as :func:`load_results` reads them: text other than the row's identity as Arrow dictionaries.
# A sweep repeats its names and versions in every row, and Parquet stores such a column as its distinct values and
# an index per row; read so, a column is not made into a string per row twice (Arrow's, then Python's).
DICTIONARY_SCHEMA = pa.schema(
    [
        pa.field(field.name, pa.dictionary(pa.int32(), pa.string()))
        if field.type == pa.string() and field.name not in ROW_IDENTITY
        else field
        for field in SCHEMA
    ]
)


def sweep_dir(store: Path, sweep: str) -> Path:
    """The directory of one sweep: always a direct child of the store (an unsafe name is a UserError)."""
    problem = check_sweep_name(sweep)
    if problem:
        raise UserError(f"sweep name {problem}")
    return Path(store) / sweep


def check_writable(store: Path, sweep: str) -> None:
    """Create the sweep's directory and write and remove a probe file there, before anything starts.

    Raises :class:`~sweeper.errors.UserError` naming the path and the reason the system gave.
    """
    directory = sweep_dir(store, sweep)
    # as long as the longest name written (the temporary names of write_rows), so a length limit shows here
    probe = directory / f".probe-{uuid.uuid4().hex}.{uuid.uuid4().hex}.tmp"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"sweeper store probe\n")
        probe.unlink()
    except OSError as error:
        with contextlib.suppress(OSError):  # created, then the disk was full: not left behind
            probe.unlink()
        raise UserError(
            f"store {store}: cannot create and write the sweep directory {directory}: {_os_reason(error)}"
        ) from None


def _os_reason(error: OSError) -> str:
    """What went wrong, in the system's words, with the path it concerns."""
    reason = "a file that is not a directory is in the way" if isinstance(error, FileExistsError) else error.strerror
    return f"{reason or error} ({error.filename})" if error.filename else str(reason or error)


class StoreWriteError(UserError):
    """A store file could not be written (a full disk, a quota, permissions)."""


def write_rows(store: Path, sweep: str, rows: Sequence[Row], stem: str) -> Path:
    """Write rows as one Parquet file, atomically (temporary dot-name, then rename)."""
    return _write_file(store, sweep, rows, stem)


def _write_file(store: Path, sweep: str, rows: Sequence[Mapping[str, Any]], stem: str) -> Path:
    """:func:`write_rows` of any mapping: the typed rows a run makes, and the stored rows :func:`compact` merges."""
    unknown = {key for row in rows for key in row} - set(COLUMNS)
    if unknown:
        raise ValueError(f"columns not in the store schema: {sorted(unknown)}")
    directory = sweep_dir(store, sweep)
    directory.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist([{**row, "schema_version": SCHEMA_VERSION} for row in rows], schema=SCHEMA)
    final = directory / f"{stem}.parquet"
    temporary = directory / f".{stem}.{uuid.uuid4().hex}.tmp"
    try:
        pq.write_table(table, temporary)
        os.replace(temporary, final)
    except OSError as error:  # a full disk, a quota: one clear error; every file written before is intact
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise StoreWriteError(
            f"store {store}: cannot write {final.name} in {directory}: {_os_reason(error)}; "
            "the rows written before it are intact: make room, then run again to resume"
        ) from None
    return final


def compact(store: Path, sweep: str, files: Iterable[Path], stem: str, **fill: Any) -> Path | None:
    """Merge a launch's measurement files into one (filling e.g. ``teardown_s``), then remove them.

    A part that is gone (the store or the sweep's directory deleted under the running sweep) is a
    :class:`StoreWriteError` naming it: the sweep ends there, with the parts still in place left as they are.
    """
    parts = list(files)
    if not parts:
        return None
    rows = [row for part in parts for row in _part_rows(store, part).to_pylist()]
    for row in rows:
        row.update(fill)
    merged = _write_file(store, sweep, rows, stem)
    for part in parts:
        if part != merged:
            part.unlink(missing_ok=True)
    return merged


def _part_rows(store: Path, part: Path) -> pa.Table:
    """One measurement file a launch wrote, read back to be merged (its absence a :class:`StoreWriteError`)."""
    try:
        return pq.read_table(part, schema=SCHEMA)
    except FileNotFoundError:
        places = (("the store", Path(store)), ("the sweep's directory", part.parent))
        gone = next((name for name, place in places if not place.is_dir()), "the file")
        raise StoreWriteError(
            f"store {store}: {part.name}, a measurement this sweep wrote, is gone ({gone} deleted while the sweep "
            "ran?); the sweep stops here: run it again to measure what the store lacks"
        ) from None
    except (OSError, pa.ArrowException) as error:
        raise StoreWriteError(f"store {store}: cannot read back {part} to merge it: {error}") from None


def sweeps(store: str | Path) -> list[str]:
    """The sweeps of a store: its subdirectories with a sweep's name that hold store files, by name."""
    root = Path(store)
    try:
        with os.scandir(root) as entries:
            names = [e.name for e in entries if check_sweep_name(e.name) is None and _is_dir(e)]
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as error:
        raise UserError(f"{root}: cannot list the store's sweeps: {_os_reason(error)}") from None
    found = sorted(name for name in names if _sweep_files(root / name))
    if not found and _sweep_files(root):
        raise UserError(
            f"{root}: holds store files itself, so it looks like one sweep's directory; "
            f"pass its parent as the store, with --sweep {root.name}"
        )
    return found


def _sweep_files(directory: Path) -> list[Path]:
    """The store files directly in one sweep's directory (no subdirectory; dot- and underscore-names are not)."""
    try:
        with os.scandir(directory) as entries:
            return sorted(
                Path(e.path)
                for e in entries
                if e.name.endswith(".parquet") and not e.name.startswith((".", "_")) and not _is_dir(e)
            )
    except FileNotFoundError:
        return []
    except OSError as error:
        raise UserError(f"{directory}: cannot list the sweep's files: {_os_reason(error)}") from None


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """Whether an entry is a directory or a link to one (a link that leads nowhere is not)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _files(store: Path, sweep: str | None) -> list[Path]:
    if sweep is not None:
        return _sweep_files(sweep_dir(store, sweep))
    return [path for name in sweeps(store) for path in _sweep_files(store / name)]


def read_table(store: str | Path, sweep: str | None = None, *, schema: pa.Schema = SCHEMA) -> pa.Table:
    """All rows of a store (or only those of one sweep's files) as an Arrow table with the store schema
    (or :data:`DICTIONARY_SCHEMA`: the same columns, some text as dictionaries).

    A file that is not a sweeper store file this version can read is a
    :class:`~sweeper.errors.UserError` naming the file.
    """
    for _ in range(10):
        try:
            return _read_files(_files(Path(store), sweep), schema)
        except FileNotFoundError:
            continue  # a running sweep compacted files between listing and reading them: list again
    raise UserError(f"{store}: its files kept changing while being read (a sweep running into it?); try again")


def _read_files(paths: list[Path], schema: pa.Schema) -> pa.Table:
    tables = [_read_file(path, schema) for path in paths]
    return _unique_rows(pa.concat_tables(tables)) if tables else schema.empty_table()


def _identities(table: pa.Table) -> list[tuple[Any, ...]]:
    return list(zip(*(table.column(name).to_pylist() for name in ROW_IDENTITY), strict=True))


def _unique_rows(table: pa.Table) -> pa.Table:
    """Each row once: a merge stopped between writing the merged file and removing its parts (``kill -9``) leaves
    copies, which must never count as more trials. Of two copies the one with ``teardown_s`` (the merged one) stays.
    Arrow counts the identities first (the measurement keys alone where they are all distinct): a store without
    copies (the usual one) is not walked row by row."""
    if pc.count_distinct(table.column(ROW_IDENTITY[0])).as_py() == table.num_rows:
        return table
    if table.group_by(list(ROW_IDENTITY)).aggregate([]).num_rows == table.num_rows:
        return table
    teardown = table.column("teardown_s").to_pylist()
    first: dict[tuple[Any, ...], int] = {}
    keep: list[int] = []
    for index, identity in enumerate(_identities(table)):
        slot = first.get(identity)
        if slot is None:
            first[identity] = len(keep)
            keep.append(index)
        elif teardown[keep[slot]] is None and teardown[index] is not None:
            keep[slot] = index
    return table if len(keep) == table.num_rows else table.take(keep)


def finish_merges(store: Path, sweep: str) -> list[Path]:
    """Remove the part files of merges that were stopped after the merged file was written; the files removed.

    A launch writes ``STEM-NNNN.parquet`` per measurement and merges them into ``STEM.parquet``; a part whose
    rows are all in its merged file is a copy. Call it while holding the sweep's lock.
    """
    directory = sweep_dir(store, sweep)
    removed = []
    for part in _sweep_files(directory):
        stem, _, serial = part.stem.rpartition("-")
        merged = directory / f"{stem}.parquet"
        if not (len(serial) == 4 and serial.isdigit() and merged.is_file()):
            continue
        if set(_identities(_read_file(part))) <= set(_identities(_read_file(merged))):
            part.unlink()
            removed.append(part)
    return removed


def merge_leftovers(store: Path, sweep: str) -> list[Path]:
    """Merge the part files of launches a killed run never merged (no ``STEM.parquet`` beside them), one merged
    file per launch; the parts merged. Reading a store of many one-row files costs a file each (20,000 of them:
    1.7 GB and 93 s for ``predict``). Call it while holding the sweep's lock, after :func:`finish_merges`."""
    directory = sweep_dir(store, sweep)
    unmerged: dict[str, list[Path]] = {}
    for part in _sweep_files(directory):
        stem, _, serial = part.stem.rpartition("-")
        if len(serial) == 4 and serial.isdigit() and not (directory / f"{stem}.parquet").exists():
            unmerged.setdefault(stem, []).append(part)
    merged = []
    for stem, parts in unmerged.items():
        compact(store, sweep, sorted(parts), stem)
        merged += parts
    return merged


def _read_file(path: Path, schema: pa.Schema = SCHEMA) -> pa.Table:
    """One store file with the store's columns and ``schema``'s types (raises FileNotFoundError only when it is
    gone)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        if path.is_symlink():
            raise UserError(f"{path}: a symbolic link to a missing file; move it out of the store directory") from None
        raise
    except OSError as error:
        raise UserError(f"{path}: cannot be read: {_os_reason(error)}") from None
    if not stat.S_ISREG(mode):
        raise UserError(f"{path}: not a regular file; move it out of the store directory")
    try:
        dictionaries = [field.name for field in schema if pa.types.is_dictionary(field.type)]
        table = pq.read_table(path, read_dictionary=dictionaries or None)
    except FileNotFoundError:
        raise
    except (pa.ArrowException, OSError, ValueError) as error:
        raise UserError(f"{path}: not a readable Parquet file of a sweeper store ({error})") from None
    return _conform(path, table, schema)


def _conform(path: Path, table: pa.Table, schema: pa.Schema) -> pa.Table:
    """A file's table as the store schema: older files gain the later columns; anything else is refused."""
    names = table.column_names
    doubled = sorted({name for name in names if names.count(name) > 1})
    if doubled:
        raise UserError(f"{path}: not a sweeper store file (columns {doubled[:5]} appear twice)")
    _check_version(path, table)
    for name in ADDED_AFTER_VERSION_1:
        if name not in names and "measurement_key" in names:
            table = table.append_column(name, pa.nulls(table.num_rows, SCHEMA.field(name).type))
    missing = set(COLUMNS) - set(table.column_names)
    if missing:
        raise UserError(
            f"{path}: not a sweeper store file (missing columns {sorted(missing)[:5]}); "
            "move it out of the store directory"
        )
    wrong = [
        f"{field.name} is {table.schema.field(field.name).type}, not {field.type}"
        for field in SCHEMA
        if not _fits(table.schema.field(field.name).type, field.type)
    ]
    if wrong:
        raise UserError(f"{path}: not a sweeper store file (column {'; '.join(wrong[:3])})")
    try:
        return table.select(list(COLUMNS)).cast(schema)
    except pa.ArrowException as error:
        raise UserError(f"{path}: values that do not fit the store's column types ({error})") from None


def _check_version(path: Path, table: pa.Table) -> None:
    """A file written by a newer sweeper (a higher ``schema_version``) is refused, not misread."""
    if "schema_version" not in table.column_names or not pa.types.is_integer(table.schema.field("schema_version").type):
        return  # a missing or mistyped column is named by the checks that follow
    newest = pc.max(table.column("schema_version")).as_py()
    if newest is not None and newest > SCHEMA_VERSION:
        raise UserError(
            f"{path}: written by a newer sweeper (schema {newest}, this one reads up to {SCHEMA_VERSION}); "
            "read it with that sweeper or a newer one"
        )


def _kind(arrow_type: pa.DataType) -> str:
    """What a column holds, whatever its width, unit or encoding: integer, number, text, timestamp, ..."""
    if pa.types.is_dictionary(arrow_type):
        return _kind(arrow_type.value_type)
    for kind, test in (
        ("integer", pa.types.is_integer),
        ("number", pa.types.is_floating),
        ("text", lambda t: pa.types.is_string(t) or pa.types.is_large_string(t)),
        ("timestamp", pa.types.is_timestamp),
        ("boolean", pa.types.is_boolean),
    ):
        if test(arrow_type):
            return kind
    return str(arrow_type)


def _fits(actual: pa.DataType, expected: pa.DataType) -> bool:
    """Whether a column reads as the store's type without a change of meaning (a wider int, another unit)."""
    if pa.types.is_null(actual):
        return True  # a column with no value at all
    kind, wanted = _kind(actual), _kind(expected)
    return kind == wanted or (kind, wanted) == ("integer", "number")


def load_results(store: str | Path, sweep: str | None = None, *, dry_runs: bool | None = None) -> pd.DataFrame:
    """The rows of a store as a typed pandas DataFrame (nullable dtypes), oldest first.

    Dry-run rows (``dry_run``: shrunk to one machine, times not meaningful; a dry run writes to a
    sweep of its own, ``NAME-dry-run``) are left out where real rows are read with them
    (``dry_runs=None``), so the rows of all sweeps are real measurements; ``dry_runs=True`` keeps
    them, ``False`` leaves them out always.

    Examples
    --------
    In a notebook, after ``make sweep``::

        df = load_results("results/")
        df[df.status == "ok"].groupby(["engine", "cores_per_executor", "epochs"]).fit_wall_s.median()
    """
    from sweeper.store.validity import cut_text, mark_impossible

    frame = as_frame(cut_text(read_table(store, sweep, schema=DICTIONARY_SCHEMA)))
    mark_impossible(frame)  # impossible values named, never analysed
    dry = frame["dry_run"].fillna(False).astype(bool)
    if (dry_runs is False or (dry_runs is None and not dry.all())) and dry.any():
        frame = frame[~dry]
    return _oldest_first(frame)


OLDEST_FIRST = ["started_at", "launch_index", "epochs", "trial"]


def _oldest_first(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` sorted by :data:`OLDEST_FIRST` (stable), numbered from 0; not copied again where it is in order
    already (a store's files usually are)."""
    order = frame[OLDEST_FIRST].reset_index(drop=True).sort_values(OLDEST_FIRST, kind="stable").index.to_numpy()
    if not np.array_equal(order, np.arange(order.size)):
        frame = frame.iloc[order]
    frame.index = pd.RangeIndex(order.size)
    return frame


def as_frame(table: pa.Table) -> pd.DataFrame:
    """A store table as pandas, with nullable dtypes (an int column with a missing value stays an int).

    Text becomes ``string`` by wrapping Python strings (checked to be strings, nulls made ``NA``, in C): twice as
    fast as ``astype("string")``, four times as fast as a ``string`` made from Arrow directly, one object per row.
    A dictionary column's strings are made once per distinct value and shared by its rows (:func:`_strings`)."""
    text = [field.name for field in table.schema if _kind(field.type) == "text"]
    frame = table.drop_columns(text).to_pandas(types_mapper=_nullable)
    for name in text:
        frame.insert(table.schema.get_field_index(name), name, _strings(table.column(name)))
    return frame


def _strings(column: pa.ChunkedArray) -> pd.arrays.StringArray:
    """A text column as a ``string`` array; a dictionary column's distinct values are made and checked once, then
    taken for its rows (a null index: ``NA``)."""
    if not pa.types.is_dictionary(column.type):
        return pd.arrays.StringArray(column.to_numpy(zero_copy_only=False))
    column = column.unify_dictionaries()
    dictionary = column.chunk(0).dictionary if column.num_chunks else pa.array([], pa.string())
    values = pd.arrays.StringArray(dictionary.to_numpy(zero_copy_only=False))
    indices = [chunk.indices.fill_null(-1).to_numpy() for chunk in column.chunks]
    return values.take(np.concatenate(indices) if indices else np.empty(0, dtype=np.intp), allow_fill=True)


def _nullable(arrow_type: pa.DataType) -> Any:
    """The nullable pandas dtype of an Arrow type (None: Arrow's own conversion; text, see :func:`as_frame`)."""
    mapping = {
        pa.int32(): pd.Int32Dtype(),
        pa.int64(): pd.Int64Dtype(),
        pa.float64(): pd.Float64Dtype(),
        pa.bool_(): pd.BooleanDtype(),
    }
    return mapping.get(arrow_type)


class RecordedRow(NamedTuple):
    """A measurement key's row as a resumed run reads it."""

    status: str
    time_s: float | None  # fit_wall_s
    disturbed: bool  # taken under load (:mod:`sweeper.run.interference`)


def recorded_rows(store: Path, sweep: str, table: pa.Table | None = None) -> dict[str, RecordedRow]:
    """What this sweep already recorded, by measurement key: the status, ``fit_wall_s`` and ``disturbed``.

    A resumed run skips the ``ok`` ones (and counts their times, for adaptive trials and halving; a disturbed one
    counts as taken, without its time). Where a key has several rows (a failed try, then an ok one; a disturbed one,
    then its quiet re-measurement), the first quiet ``ok`` row wins, then a disturbed ``ok`` one.
    """
    table = read_table(store, sweep) if table is None else table  # ``table``: the sweep's, read already
    recorded: dict[str, RecordedRow] = {}
    names = ("measurement_key", "status", "fit_wall_s", "disturbed")
    for key, status, time_s, disturbed in zip(*(table.column(name).to_pylist() for name in names), strict=True):
        held = recorded.get(key)
        if held is None or held.status != OK or (held.disturbed and status == OK and not disturbed):
            recorded[key] = RecordedRow(status, time_s, bool(disturbed))
    return recorded


def race_decisions(table: pa.Table) -> dict[str, tuple[str, int]]:
    """A race's recorded decisions (its ``pruned`` rows with a ``race_round``): by measurement key, the stop reason
    and the decision."""
    columns = (table.column(name).to_pylist() for name in ("measurement_key", "status", "stop_reason", "race_round"))
    return {
        key: (reason, decision)
        for key, status, reason, decision in zip(*columns, strict=True)
        if status == PRUNED and reason is not None and decision is not None
    }


def race_rounds(table: pa.Table) -> dict[str, int]:
    """The round of a race each ``ok`` trial was taken in (its row's ``race_round``), by measurement key."""
    columns = (table.column(name).to_pylist() for name in ("measurement_key", "status", "race_round"))
    rounds: dict[str, int] = {}
    for key, status, round_ in zip(*columns, strict=True):
        if status == OK and round_ is not None:
            rounds.setdefault(key, round_)
    return rounds


def grid_hashes(table: pa.Table) -> set[str]:
    """The hashes of the grids whose runs wrote these rows (a sweep's :func:`read_table`)."""
    return {value for value in table.column("grid_hash").to_pylist() if value}


def remove_sweep(store: Path, sweep: str) -> int:
    """``--fresh``: delete this sweep's store files, and only those; returns how many.

    Only the files directly in the sweep's own directory go (never a subdirectory's, another
    sweep's, or what a symbolic link points to); a sweep directory that is itself a symbolic
    link is refused rather than followed out of the store.
    """
    directory = sweep_dir(store, sweep)
    if directory.is_symlink():
        raise UserError(
            f"{directory}: the sweep's directory is a symbolic link; --fresh deletes files only inside the "
            "store, so delete the sweep's files by hand or run without --fresh"
        )
    files = _sweep_files(directory)
    for path in files:
        try:
            path.unlink()  # a symbolic link goes, not its target
        except FileNotFoundError:
            continue
        except OSError as error:
            raise UserError(f"--fresh: cannot delete {path}: {_os_reason(error)}") from None
    return len(files)


def load_sweep(store: str | Path, sweep: str | None = None) -> pd.DataFrame:
    """The rows of one sweep of a store; a store of several sweeps needs ``sweep``.

    Only that sweep's files are read: a broken file of another sweep does not stop its report.
    Raises :class:`~sweeper.errors.UserError` for a missing or empty store, for several sweeps
    and no name (listing them), for a name the store does not hold (listing those it does), and
    for a file of the sweep that cannot be read (naming it).
    """
    if not Path(store).is_dir():
        raise UserError(f"{store}: no such store directory")
    names = sweeps(store)
    if sweep is None and len(names) > 1:
        raise UserError(f"{store} holds {len(names)} sweeps: {', '.join(names)}; pass one with --sweep NAME")
    if sweep is not None and sweep not in names:
        sweep_dir(Path(store), sweep)  # a name that is no sweep's directory name is refused as such
        raise UserError(f"{store}: no sweep {sweep!r}; the store holds: {', '.join(names) or 'no sweep'}")
    df = load_results(store, sweep or (names[0] if names else None))
    if df.empty:
        raise UserError(f"{store}: the store holds no measurements; run a sweep into it first (sweeper run GRID)")
    return df

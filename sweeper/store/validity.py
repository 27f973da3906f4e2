"""Values a store may hold but no measurement can produce: named when read, and kept out of every statistic.

A store is a directory of Parquet files anyone can write. An ``ok`` row whose time is negative, infinite,
beyond any real run (``fit_wall_s = 1e300``) or under any timed batch (``fit_wall_s = 0``, ``5e-324``: a ratio
to it is infinite), whose accuracy is outside [0, 1] (another scorer's score: beyond +-1e15), whose counters
are absurd (``launch_index`` 2^31-1 or negative, ``n_train`` negative), whose launch had no executor or node,
or whose fraction of the training set is outside (0, 1] would be analysed as a real measurement, divide by
zero, or make an analysis allocate in proportion to it. Such a row becomes ``status = "invalid"`` with an
``error`` naming the value and the range it is outside (only in the frame that was read; the files are not
changed), so the answer lists it as not measured. A resource figure out of range (an infinite peak memory) is
dropped to null with a ``resource_note``: the row's time still counts. Text is cut to a bound (200 characters;
an error 2,000), so that no value makes a report, table or plot label grow with it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

INVALID = "invalid"
MAX_SECONDS = 1e7  # ~116 days: longer than any batch, start or teardown
MAX_GIB = 2.0**21  # 2 PiB: above any size a grid allows (1 PiB)
MAX_COUNT = 1_000_000  # trials, launch indexes, executors, cores
MAX_EPOCHS = 10_000_000
MAX_ROWS = 10**12  # rows or features of a dataset: 8 TB per feature as float64, beyond what a fit loads
# A batch of fits timed by time.perf_counter (nanoseconds) takes far more than a microsecond (a task sent to
# an executor and back): a shorter time was never measured, and times are divided by it (ratios, speedups).
MIN_FIT_SECONDS = 1e-6
# A held-out score by a scorer other than accuracy (r2, neg_mean_squared_error, ...): any finite number this big.
MAX_SCORE = 1e15
SCORES = ("accuracy", "accuracy_best")  # in [0, 1] where the scorer is accuracy (null: stores before scorers)

ROW_LIMITS: dict[str, tuple[float, float]] = {  # out of range: the row is invalid
    "fit_wall_s": (MIN_FIT_SECONDS, MAX_SECONDS),
    "fit_task_sum_s": (0.0, MAX_SECONDS * MAX_COUNT),
    "fit_task_max_s": (0.0, MAX_SECONDS),
    "cluster_start_s": (0.0, MAX_SECONDS),
    "warmup_s": (0.0, MAX_SECONDS),
    "teardown_s": (0.0, MAX_SECONDS),
    "staging_s": (0.0, MAX_SECONDS),
    "accuracy": (0.0, 1.0),
    "accuracy_best": (0.0, 1.0),
    "launch_index": (0, MAX_COUNT),
    "trial": (0, MAX_COUNT),
    "epochs": (0, MAX_EPOCHS),
    "executors": (1, MAX_COUNT),  # a configuration's time is shared out per executor and core
    "cores_per_executor": (1, MAX_COUNT),
    "granted_executors": (0, MAX_COUNT),
    "granted_cores_per_executor": (0, MAX_COUNT),
    "nodes": (1, MAX_COUNT),  # cluster time is node-seconds
    "n_fits": (0, MAX_COUNT),
    "threads_per_fit": (1, MAX_COUNT),
    "n_train": (0, MAX_ROWS),
    "n_test": (0, MAX_ROWS),
    "n_features": (0, MAX_ROWS),
    "fraction": (0.0, 1.0),  # of the training set: (0, 1], as the grid allows (OPEN_BELOW)
    "executor_memory_gib": (0.0, MAX_GIB),
    "granted_executor_memory_gib": (0.0, MAX_GIB),
}
OPEN_BELOW = frozenset({"fraction"})  # columns whose low limit is itself out of range
FIGURE_LIMITS: dict[str, tuple[float, float]] = {  # out of range: the figure is dropped
    "cpu_s_fits": (0.0, MAX_SECONDS * MAX_COUNT),
    "cpu_s_workers": (0.0, MAX_SECONDS * MAX_COUNT),
    "slot_utilisation": (0.0, 1e3),
    "worker_peak_rss_gib_max": (0.0, MAX_GIB),
    "worker_peak_rss_gib_median": (0.0, MAX_GIB),
    "jvm_peak_heap_gib": (0.0, MAX_GIB),
    "python_peak_rss_gib_max": (0.0, MAX_GIB),
    "interference_cpu_share": (0.0, MAX_COUNT),  # other processes' CPU over the launch's cores on the node
    "steal_share": (0.0, 1.0),
    "cpu_pressure_share": (0.0, 1.0),
}


KEYS = ("measurement_key", "run_id", "grid_hash")  # never cut: rows are told apart by them
LONG_TEXT = {"error": 2000, "fit_environment": 2000, "model_params": 2000, "cluster_hosts": 20000}
MAX_TEXT_CHARS = 200  # any other text: names, versions, notes (they end up in labels and table cells)


def cut_text(table: pa.Table) -> pa.Table:
    """``table`` with each text longer than its column's bound cut to it, ending in an ellipsis (lengths measured by
    Arrow, no Python walk of the values: most columns repeat a few short names and are left as they are; a
    dictionary column's distinct values are cut, not its rows)."""
    for index, field in enumerate(table.schema):
        if field.name in KEYS:
            continue
        limit = LONG_TEXT.get(field.name, MAX_TEXT_CHARS)
        column = table.column(index)
        if pa.types.is_string(field.type):
            cut = _cut(column, limit)
        elif pa.types.is_dictionary(field.type) and pa.types.is_string(field.type.value_type):
            dictionaries = [_cut(chunk.dictionary, limit) for chunk in column.chunks]
            if all(new is chunk.dictionary for new, chunk in zip(dictionaries, column.chunks, strict=True)):
                continue
            chunks = [
                pa.DictionaryArray.from_arrays(chunk.indices, new)
                for new, chunk in zip(dictionaries, column.chunks, strict=True)
            ]
            cut = pa.chunked_array(chunks, field.type)
        else:
            continue
        if cut is not column:
            table = table.set_column(index, field, cut)
    return table


def _cut(text: Any, limit: int) -> Any:
    """Arrow text (an array or a chunked one) with values over ``limit`` characters cut, the same object where none
    is."""
    lengths = pc.utf8_length(text)
    longest = pc.max(lengths).as_py()
    if longest is None or longest <= limit:
        return text
    cut = pc.binary_join_element_wise(pc.utf8_slice_codeunits(text, 0, limit - 1), "\u2026", "")
    return pc.if_else(pc.greater(lengths, limit), cut, text)


def _outside(values: pd.Series, low: float, high: float, open_below: bool = False) -> pd.Series:
    """True where a value is present and not a finite number in [low, high] ((low, high] if ``open_below``)."""
    numeric = values if pd.api.types.is_numeric_dtype(values) else pd.to_numeric(values, errors="coerce")
    numbers = numeric.to_numpy(dtype="float64", na_value=np.nan)  # NaN: missing, or not a number
    with np.errstate(invalid="ignore"):
        above = numbers > low if open_below else numbers >= low
        inside = np.isfinite(numbers) & above & (numbers <= high)
    return pd.Series(values.notna().to_numpy() & ~inside, index=values.index)


def limits_text(column: str) -> str:
    """The range a row's value must be in, as the error of an invalid row names it.

    >>> limits_text("fit_wall_s"), limits_text("fraction"), limits_text("executors")
    ('[1e-06, 1e+07]', '(0, 1]', '[1, 1e+06]')
    """
    low, high = ROW_LIMITS[column]
    return f"{'(' if column in OPEN_BELOW else '['}{low:g}, {high:g}]"


def _invalid(frame: pd.DataFrame, bad: pd.Series, column: str, limits: str) -> None:
    """Rows ``bad`` of ``frame`` made invalid, their error naming ``column``'s value and ``limits``."""
    if bad.any():
        shown = frame.loc[bad, column].astype(str).str.slice(0, 40)
        frame.loc[bad, "error"] = (
            f"invalid value read from the store: {column}=" + shown + f" (impossible: outside {limits})"
        )
        frame.loc[bad, "status"] = INVALID


def checked(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` with its impossible values named (:func:`mark_impossible`)."""
    frame = frame.copy()
    mark_impossible(frame)
    return frame


def mark_impossible(frame: pd.DataFrame) -> None:
    """Impossible values of ``frame`` (a frame just read: changed in place) named: rows made ``invalid``, figures
    dropped (see the module; its text is cut by :func:`cut_text` while still a table)."""
    if frame.empty:
        return
    scorer = frame["scoring"] if "scoring" in frame else pd.Series(pd.NA, index=frame.index, dtype="string")
    by_accuracy = (scorer.isna() | scorer.eq("accuracy")).astype(bool)
    for column, (low, high) in ROW_LIMITS.items():
        if column not in frame:
            continue
        bad = _outside(frame[column], low, high, column in OPEN_BELOW)
        if column in SCORES:
            bad &= by_accuracy
            _invalid(
                frame,
                _outside(frame[column], -MAX_SCORE, MAX_SCORE) & ~by_accuracy,
                column,
                f"[{-MAX_SCORE:g}, {MAX_SCORE:g}]",
            )
        _invalid(frame, bad, column, limits_text(column))
    for column, (low, high) in FIGURE_LIMITS.items():
        if column not in frame:
            continue
        bad = _outside(frame[column], low, high)
        if bad.any():
            frame.loc[bad, "resource_note"] = f"{column} out of range in the store: dropped"
            frame.loc[bad, column] = pd.NA

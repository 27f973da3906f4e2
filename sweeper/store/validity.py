"""Values a store may hold but no measurement can produce: named when read, and kept out of every statistic.

A store is a directory of Parquet files anyone can write. An ``ok`` row whose time is negative, infinite or
beyond any real run (``fit_wall_s = 1e300``), whose accuracy is outside [0, 1], or whose counters are absurd
(``launch_index`` 2^31-1 or negative) would be analysed as a real measurement, or make an analysis allocate
in proportion to it. Such a row becomes ``status = "invalid"`` with an ``error`` naming the value (only in
the frame that was read; the files are not changed), so the answer lists it as not measured. A resource
figure out of range (an infinite peak memory) is dropped to null with a ``resource_note``: the row's
time still counts. Text is cut to a bound (200 characters; an error 2,000), so that no value makes a
report, table or plot label grow with it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

INVALID = "invalid"
MAX_SECONDS = 1e7  # ~116 days: longer than any batch, start or teardown
MAX_GIB = 2.0**21  # 2 PiB: above any size a grid allows (1 PiB)
MAX_COUNT = 1_000_000  # trials, launch indexes, executors, cores
MAX_EPOCHS = 10_000_000

ROW_LIMITS: dict[str, tuple[float, float]] = {  # out of range: the row is invalid
    "fit_wall_s": (0.0, MAX_SECONDS),
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
    "executors": (0, MAX_COUNT),
    "cores_per_executor": (0, MAX_COUNT),
    "granted_executors": (0, MAX_COUNT),
    "granted_cores_per_executor": (0, MAX_COUNT),
    "nodes": (0, MAX_COUNT),
    "n_fits": (0, MAX_COUNT),
    "executor_memory_gib": (0.0, MAX_GIB),
    "granted_executor_memory_gib": (0.0, MAX_GIB),
}
FIGURE_LIMITS: dict[str, tuple[float, float]] = {  # out of range: the figure is dropped
    "cpu_s_fits": (0.0, MAX_SECONDS * MAX_COUNT),
    "cpu_s_workers": (0.0, MAX_SECONDS * MAX_COUNT),
    "slot_utilisation": (0.0, 1e3),
    "worker_peak_rss_gib_max": (0.0, MAX_GIB),
    "worker_peak_rss_gib_median": (0.0, MAX_GIB),
    "jvm_peak_heap_gib": (0.0, MAX_GIB),
    "python_peak_rss_gib_max": (0.0, MAX_GIB),
}


KEYS = ("measurement_key", "run_id", "grid_hash")  # never cut: rows are told apart by them
LONG_TEXT = {"error": 2000, "fit_environment": 2000, "model_params": 2000, "cluster_hosts": 20000}
MAX_TEXT_CHARS = 200  # any other text: names, versions, notes (they end up in labels and table cells)


def _cut(values: pd.Series, limit: int) -> pd.Series:
    """Strings longer than ``limit`` cut to it, ending in an ellipsis."""
    text = values.astype("string")
    long = text.str.len().gt(limit).fillna(False).astype(bool)
    if not long.any():
        return values
    cut = text.copy()
    cut[long] = text[long].str.slice(0, limit - 1) + "\u2026"
    return cut


def _outside(values: pd.Series, low: float, high: float) -> pd.Series:
    """True where a value is present and not a finite number in [low, high]."""
    numbers = pd.to_numeric(values, errors="coerce").astype("Float64")
    present = values.notna()
    finite = pd.Series(np.isfinite(numbers.to_numpy(dtype="float64", na_value=np.nan)), index=values.index)
    inside = finite & numbers.ge(low).fillna(False) & numbers.le(high).fillna(False)
    return (present & ~inside).astype(bool)


def checked(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with impossible values named: rows made ``invalid``, figures dropped (see the module)."""
    if frame.empty:
        return frame
    frame = frame.copy()
    for column in frame.columns:
        if column not in KEYS and (pd.api.types.is_string_dtype(frame[column]) or frame[column].dtype == object):
            frame[column] = _cut(frame[column], LONG_TEXT.get(column, MAX_TEXT_CHARS))
    for column, (low, high) in ROW_LIMITS.items():
        if column not in frame:
            continue
        bad = _outside(frame[column], low, high)
        if bad.any():
            shown = frame.loc[bad, column].astype(str).str.slice(0, 40)
            frame.loc[bad, "error"] = f"invalid value read from the store: {column}=" + shown
            frame.loc[bad, "status"] = INVALID
    for column, (low, high) in FIGURE_LIMITS.items():
        if column not in frame:
            continue
        bad = _outside(frame[column], low, high)
        if bad.any():
            frame.loc[bad, "resource_note"] = f"{column} out of range in the store: dropped"
            frame.loc[bad, column] = pd.NA
    return frame

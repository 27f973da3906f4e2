"""The report's "What was measured": sweep, dates, hosts, cluster, versions, trials, baseline, statuses."""

from __future__ import annotations

import pandas as pd

from sweeper.config.work import EPOCHS, axis_point, axis_text
from sweeper.names import BASELINE_ENGINE
from sweeper.results import statistics
from sweeper.results.predict.forecast import work_axis_name
from sweeper.results.report.blocks import Block, Bullets, Heading
from sweeper.results.report.formatting import distinct

NAMED_SHAPES = 24  # configurations "What was measured" names one by one


def measured_blocks(df: pd.DataFrame, machine: str) -> list[Block]:
    """ "What was measured" (``machine`` describes where the report was made)."""
    return [Heading("What was measured"), Bullets(tuple(provenance(df, machine)))]


def provenance(df: pd.DataFrame, machine: str) -> list[str]:
    """The "What was measured" bullets: sweep, dates, hosts, cluster, versions, trials, baseline, statuses."""
    started = pd.to_datetime(df["started_at"]).dropna()
    dates = f"{started.min():%Y-%m-%d %H:%M:%S} to {started.max():%Y-%m-%d %H:%M:%S} UTC" if len(started) else "unknown"
    cluster = df[df["engine"] != BASELINE_ENGINE]
    trials = statistics.summary(df)
    shapes = trials[trials["engine"] != BASELINE_ENGINE].drop_duplicates("config")
    versions = [
        f"{column.removesuffix('_version')} {'/'.join(distinct(df, column)) or '?'}"
        for column in df.columns
        if column.endswith("_version") and column != "schema_version" and df[column].notna().any()
    ]  # a version column newer than every row's schema (ray_version before 13) is left out, not shown as '?'
    status = df["status"].fillna("unknown").value_counts()
    dry = df["dry_run"].fillna(False).astype(bool)
    baseline_ok = int((statistics.ok_mask(df) & (df["engine"] == BASELINE_ENGINE)).sum())
    lines = [
        f"Sweep {', '.join(distinct(df, 'sweep'))}; grid hash {', '.join(distinct(df, 'grid_hash')) or '?'}; "
        f"runs {', '.join(distinct(df, 'run_id')) or '?'}",
        f"Dates: {dates}",
        f"Hosts: {', '.join(distinct(df, 'host')) or '?'}",
        f"Cluster (from the rows): manager {', '.join(distinct(cluster, 'manager')) or '-'}, "
        f"{_int_max(cluster, 'nodes')} node(s), up to {_int_max(cluster, 'total_cores')} cores per launch; "
        f"{len(shapes)} configuration(s): {_shapes_text(shapes)}",
        f"Engines: {', '.join(distinct(df, 'engine'))}",
        f"Versions: {', '.join(versions)}",
        _work_line(df, _span(trials["n"])),
        f"Baseline: single thread, no cluster (engine {BASELINE_ENGINE}): "
        + (f"{baseline_ok} ok measurement(s)" if baseline_ok else "none in this sweep"),
        "Dry run: "
        + (
            "yes (shrunk to the machine it ran on)"
            if dry.all()
            else "no"
            if not dry.any()
            else f"mixed, {int(dry.sum())} of {len(dry)} rows"
        ),
        f"Measurements: {len(df)} rows: "
        + ", ".join(f"{count} {name}" for name, count in status.items())
        + " (failed and timed-out ones are listed at the end, never in a statistic)",
    ]
    if machine:
        lines.append(f"Report made on: {machine}")
    return lines


def _work_line(df: pd.DataFrame, trials: str) -> str:
    """The work axis's values measured (an MLP's: epochs) and the ok trials at each."""
    values = sorted(df["epochs"].dropna().unique())
    axis = work_axis_name(df)
    per = f"{trials} ok trial(s) per engine, configuration and"
    if axis == EPOCHS:
        return f"Epochs: {', '.join(str(e) for e in values)}; {per} epochs"
    return f"Work axis: {axis_text(values, axis)}; {per} {axis_point(axis)}"


def _shapes_text(shapes: pd.DataFrame) -> str:
    """The configurations measured, each named; beyond :data:`NAMED_SHAPES`, the range of each of their axes."""
    if shapes.empty:
        return "-"
    if len(shapes) <= NAMED_SHAPES:
        return "; ".join(shapes["config"])
    axes = (("executors", "executors"), ("cores_per_executor", "cores each"), ("executor_memory_gib", "GiB each"))
    spans = [f"{_value_span(shapes[column].dropna().astype(float))} {name}" for column, name in axes]
    return ", ".join(spans) + " (each in the tables)"


def _value_span(values: pd.Series) -> str:
    """The lowest and highest value, or the one value.

    >>> _value_span(pd.Series([4.0, 1.5, 8.0])), _value_span(pd.Series([2.0])), _value_span(pd.Series([], dtype=float))
    ('1.5 to 8', '2', '?')
    """
    if values.empty:
        return "?"
    low, high = float(values.min()), float(values.max())
    return f"{low:g}" if low == high else f"{low:g} to {high:g}"


def _span(counts: pd.Series) -> str:
    low, high = int(counts.min()), int(counts.max())
    return str(low) if low == high else f"{low} to {high}"


def _int_max(df: pd.DataFrame, column: str) -> str:
    value = df[column].max() if len(df) else pd.NA
    return "?" if pd.isna(value) else str(int(value))

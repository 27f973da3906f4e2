"""Spark vs Dask: the same configuration and value of the work axis on both engines (the report's section and
``sweeper compare``)."""

from __future__ import annotations

import pandas as pd

from sweeper.results import statistics
from sweeper.results.predict.forecast import work_axis_name
from sweeper.results.report.blocks import Block, Heading, Paragraph, Rows
from sweeper.results.report.formatting import axis_header, p_text, ratio_text, time_cell, value_text


def engine_rows(df: pd.DataFrame) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """Header and formatted rows of the Spark vs Dask table (report and terminal alike).

    When ``df`` holds several workloads (or sweeps), a first column tells them apart; the work axis goes by its
    name (:func:`~sweeper.results.predict.forecast.work_axis_name`).
    """
    table = statistics.engines(df)
    records = table.to_dict("records")
    varying = [c for c in statistics.workload_keys(table) if table[c].nunique(dropna=False) > 1]
    header: tuple[str, ...] = (
        "Config",
        axis_header(work_axis_name(df)),
        "Spark time (s)",
        "Dask time (s)",
        "Spark/Dask [95 % CI]",
        "Mann-Whitney p",
        "Welch p",
        "Verdict",
    )
    lines: list[tuple[str, ...]] = [
        (
            str(row["config"]),
            str(row["epochs"]),
            time_cell(row, "spark_"),
            time_cell(row, "dask_"),
            ratio_text(row["ratio"], row["ratio_low"], row["ratio_high"]),
            p_text(row["mwu_p"]),
            p_text(row["welch_p"]),
            str(row["verdict"]),
        )
        for row in records
    ]
    if varying:
        header = ("Workload", *header)
        workloads = (", ".join(f"{c}={value_text(row[c])}" for c in varying) for row in records)
        lines = [(workload, *line) for workload, line in zip(workloads, lines, strict=True)]
    return header, lines


def engine_blocks(rows: pd.DataFrame) -> list[Block]:
    """ "Spark vs Dask" of one workload, or why there is none (not both engines measured)."""
    blocks: list[Block] = [Heading("Spark vs Dask", level=3)]
    present = set(rows["engine"].dropna())
    if not {"spark", "dask"} <= present:
        return [*blocks, Paragraph(f"Not both engines measured (engines: {', '.join(sorted(present))}).")]
    header, lines = engine_rows(rows)
    title = f"Same configuration and {work_axis_name(rows)}, Spark vs Dask"
    return [*blocks, Rows(title, header, tuple(lines))]

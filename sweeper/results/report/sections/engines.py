"""Engine against engine: the same configuration and value of the work axis on two engines, for every pair of
the joblib engines measured (the report's section and ``sweeper compare``); Spark vs Dask is the two-engine
case.

Pairwise at matched configurations, not each engine's best against the overall best: a sweep launches every
shape on every engine, so a pair at one shape differs by the engine alone, which is what a user weighing
engines asks; an engine's best shape against another's mixes the engine with the shape, and that ranking is
``sweeper recommend``'s answer, which already ranks every engine's configurations. One-model engines (Spark
ML) train another workload than the joblib engines' batches of fits, so they are not paired.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import pandas as pd

from sweeper.engines import descriptor, display_name, figure_order
from sweeper.names import DEFAULT_ENGINES
from sweeper.results import statistics
from sweeper.results.predict.forecast import work_axis_name
from sweeper.results.report.blocks import Block, Heading, Paragraph, Rows
from sweeper.results.report.formatting import axis_header, p_text, ratio_text, time_cell, value_text

Pair = tuple[str, str]
DEFAULT_PAIR: Pair = (DEFAULT_ENGINES[0], DEFAULT_ENGINES[1])


def _compared_engines(df: pd.DataFrame) -> list[str]:
    """The joblib engines ``df`` measured, in the descriptors' order (one-model engines, the baseline and names
    no descriptor has aside)."""
    return [e for e in figure_order(df["engine"].dropna().unique()) if (d := descriptor(e)) is not None and d.joblib]


def engine_pairs(df: pd.DataFrame) -> list[Pair]:
    """Every pair of the joblib engines ``df`` measured, in the descriptors' order; the grid's default pair
    (Spark, Dask) when fewer than two are, so that its table still shows, empty."""
    pairs = list(combinations(_compared_engines(df), 2))
    return pairs or [DEFAULT_PAIR]


def engine_rows(df: pd.DataFrame, pair: Pair = DEFAULT_PAIR) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """Header and formatted rows of the ``pair``'s table, e.g. Spark vs Dask (report and terminal alike).

    When ``df`` holds several workloads (or sweeps), a first column tells them apart; the work axis goes by its
    name (:func:`~sweeper.results.predict.forecast.work_axis_name`).
    """
    left, right = pair
    table = statistics.engines(df, left, right)
    records = table.to_dict("records")
    varying = [c for c in statistics.workload_keys(table) if table[c].nunique(dropna=False) > 1]
    shown = display_name(left), display_name(right)
    header: tuple[str, ...] = (
        "Config",
        axis_header(work_axis_name(df)),
        f"{shown[0]} time (s)",
        f"{shown[1]} time (s)",
        f"{shown[0]}/{shown[1]} [95 % CI]",
        "Mann-Whitney p",
        "Welch p",
        "Verdict",
    )
    lines: list[tuple[str, ...]] = [
        (
            str(row["config"]),
            str(row["epochs"]),
            time_cell(row, f"{left}_"),
            time_cell(row, f"{right}_"),
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


def pair_title(engines: Sequence[str]) -> str:
    """``"Spark vs Dask"`` for the engines (spark, dask)."""
    return " vs ".join(display_name(engine) for engine in engines)


def engine_blocks(rows: pd.DataFrame) -> list[Block]:
    """Engine against engine of one workload: a table per pair of joblib engines (one for Spark and Dask), or
    why there is none (fewer than two engines measured)."""
    measured = _compared_engines(rows)
    if len(measured) < 2:
        present = sorted(set(rows["engine"].dropna()))
        heading = Heading(pair_title(DEFAULT_PAIR), level=3)
        return [heading, Paragraph(f"Not both engines measured (engines: {', '.join(present)}).")]
    blocks: list[Block] = [Heading(pair_title(measured), level=3)]
    for pair in engine_pairs(rows):
        header, lines = engine_rows(rows, pair)
        title = f"Same configuration and {work_axis_name(rows)}, {pair_title(pair)}"
        blocks.append(Rows(title, header, tuple(lines)))
    return blocks

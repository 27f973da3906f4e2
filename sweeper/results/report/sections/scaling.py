"""Speedup over the single thread and COST, and time vs cost at a price per node hour."""

from __future__ import annotations

import pandas as pd

from sweeper.names import BASELINE_ENGINE
from sweeper.results import statistics
from sweeper.results.predict.forecast import work_axis_name
from sweeper.results.report import plots, selection
from sweeper.results.report.blocks import Block, Heading, Paragraph, Picture, Rows
from sweeper.results.report.formatting import axis_header, number_text, seconds_text, value_text


def speedup_blocks(rows: pd.DataFrame, prefix: str) -> list[Block]:
    """COST and the speedup of every configuration over the single-thread baseline, and their figure."""
    blocks: list[Block] = [Heading("Speedup over the single thread, and COST", level=3)]
    speedups = statistics.speedup(rows) if _has_baseline(rows) else None
    if speedups is None or speedups["baseline_median_s"].isna().all():
        return [*blocks, Paragraph("No single-thread baseline in this workload: no speedup, no COST.")]
    costs = statistics.cost(rows)
    cost_lines = [
        (
            str(row["engine"]),
            str(row["epochs"]),
            seconds_text(row["baseline_median_s"]),
            str(row["cost"]) + (" cores" if pd.notna(row["cost_cores"]) else ""),
            str(row["cost_config"] or "–"),
            f"{number_text(row['best_speedup'], 2)}x ({row['best_config']})",
        )
        for row in costs.to_dict("records")
    ]
    speed_lines = [
        (
            str(row["engine"]),
            str(row["config"]),
            value_text(row["total_cores"]),
            str(row["epochs"]),
            seconds_text(row["median_s"]),
            f"{number_text(row['speedup'], 2)}x",
            number_text(row["efficiency"], 3),
        )
        for row in speedups.sort_values(["engine", "epochs", "total_cores"]).to_dict("records")
    ]
    work_axis = work_axis_name(rows)
    return [
        *blocks,
        Rows(
            "COST: the fewest total cores that beat one thread",
            ("Engine", axis_header(work_axis), "Baseline time (s)", "COST", "COST config", "Best speedup"),
            tuple(cost_lines),
        ),
        Rows(
            "Speedup over the single thread",
            ("Engine", "Config", "Total cores", axis_header(work_axis), "Time (s)", "Speedup", "Speedup per core"),
            tuple(speed_lines),
        ),
        _speedup_figure(speedups, costs, prefix, work_axis),
    ]


def _speedup_figure(speedups: pd.DataFrame, costs: pd.DataFrame, prefix: str, work_axis: str) -> Block:
    """Speedup against total cores, or where every configuration has the same cores, a sentence that says so."""
    cores = speedups.loc[speedups["speedup"].notna(), "total_cores"]
    if not len(cores):
        return Paragraph("No speedup measured: no figure against total cores.")
    if not plots.varies(cores):
        return Paragraph(
            f"Every configuration has {value_text(cores.iloc[0])} cores in all: no figure against total cores "
            "(scaling needs two core counts or more); the speedups are in the table above."
        )
    return Picture(
        f"{prefix}speedup_cost.png",
        "Speedup over the single thread against total cores, COST marked",
        plots.png(plots.speedup_cost(speedups, costs, work_axis)),
    )


def _has_baseline(rows: pd.DataFrame) -> bool:
    """Whether a cluster configuration has a baseline time to compare with: an ok baseline row at its value of the
    work axis."""
    timed = statistics.ok_mask(rows) & rows["fit_wall_s"].notna()
    baseline = rows["engine"].eq(BASELINE_ENGINE).fillna(False).astype(bool)
    cluster_epochs = rows.loc[~baseline, "epochs"].dropna().unique()
    return bool((timed & baseline & rows["epochs"].isin(cluster_epochs)).any())


def price_blocks(rows: pd.DataFrame, prefix: str, cost_per_node_hour: float) -> list[Block]:
    """Time vs cost per measurement at ``cost_per_node_hour``, the Pareto frontier marked."""
    prices = statistics.price(rows, cost_per_node_hour)
    shown = selection.fastest(prices, scope=("epochs",)) | prices["pareto"].astype(bool).to_numpy()
    total, labelled = selection.configurations(prices), selection.configurations(prices[shown])
    note = selection.left_out_note(total, labelled, "and the frontier in colour, the frontier labelled", "grey dots")
    lines = [
        (
            str(row["engine"]),
            str(row["config"]),
            value_text(row["nodes"]),
            str(row["epochs"]),
            seconds_text(row["median_s"]),
            number_text(row["median_cost"], 4),
            "yes" if row["pareto"] else "",
        )
        for row in prices.sort_values(["epochs", "median_cost"]).to_dict("records")
    ]
    work_axis = work_axis_name(rows)
    header = (
        "Engine",
        "Config",
        "Nodes",
        axis_header(work_axis),
        "Time (s)",
        "Cost per measurement",
        "Pareto frontier",
    )
    return [
        Heading(f"Time vs cost at {cost_per_node_hour:g} per node hour", level=3),
        Rows("Cost = fit time / 3600 x nodes x cost per node hour", header, tuple(lines)),
        Picture(
            f"{prefix}time_vs_cost.png",
            selection.with_note("Time against cost, Pareto frontier marked", note),
            plots.png(plots.time_vs_price(prices, shown, note, work_axis)),
        ),
    ]

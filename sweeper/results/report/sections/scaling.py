"""Speedup over the single thread and COST, and time vs cost at a price per node hour."""

from __future__ import annotations

import pandas as pd

from sweeper.results import statistics
from sweeper.results.report import plots
from sweeper.results.report.blocks import Block, Heading, Paragraph, Picture, Rows
from sweeper.results.report.formatting import number_text, seconds_text, value_text


def speedup_blocks(rows: pd.DataFrame, prefix: str) -> list[Block]:
    """COST and the speedup of every configuration over the single-thread baseline, and their figure."""
    blocks: list[Block] = [Heading("Speedup over the single thread, and COST", level=3)]
    speedups = statistics.speedup(rows)
    if speedups["baseline_median_s"].isna().all():
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
        for _, row in costs.iterrows()
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
        for _, row in speedups.sort_values(["engine", "epochs", "total_cores"]).iterrows()
    ]
    return [
        *blocks,
        Rows(
            "COST: the fewest total cores that beat one thread",
            ("Engine", "# Epochs", "Baseline time (s)", "COST", "COST config", "Best speedup"),
            tuple(cost_lines),
        ),
        Rows(
            "Speedup over the single thread",
            ("Engine", "Config", "Total cores", "# Epochs", "Time (s)", "Speedup", "Speedup per core"),
            tuple(speed_lines),
        ),
        Picture(
            f"{prefix}speedup_cost.png",
            "Speedup over the single thread against total cores, COST marked",
            plots.speedup_cost(speedups, costs),
        ),
    ]


def price_blocks(rows: pd.DataFrame, prefix: str, cost_per_node_hour: float) -> list[Block]:
    """Time vs cost per measurement at ``cost_per_node_hour``, the Pareto frontier marked."""
    prices = statistics.price(rows, cost_per_node_hour)
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
        for _, row in prices.sort_values(["epochs", "median_cost"]).iterrows()
    ]
    header = ("Engine", "Config", "Nodes", "# Epochs", "Time (s)", "Cost per measurement", "Pareto frontier")
    return [
        Heading(f"Time vs cost at {cost_per_node_hour:g} per node hour", level=3),
        Rows("Cost = fit time / 3600 x nodes x cost per node hour", header, tuple(lines)),
        Picture(f"{prefix}time_vs_cost.png", "Time against cost, Pareto frontier marked", plots.time_vs_price(prices)),
    ]

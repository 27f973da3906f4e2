"""Per workload: its heading's label, time and accuracy per configuration (tables and figures), configurations
compared."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from sweeper.names import BASELINE_ENGINE, CONFIG
from sweeper.results import statistics
from sweeper.results.report import plots
from sweeper.results.report.blocks import Block, Heading, Picture, Rows
from sweeper.results.report.formatting import accuracy_cell, p_text, seconds_text, time_cell, value_text

ENGINE_ORDER = ("spark", "dask")


def workload_label(rows: pd.DataFrame) -> str:
    """A workload as its results heading names it: dataset, training rows, batch, mode, model."""
    first = rows.iloc[0]
    dry = " (dry run)" if pd.notna(first["dry_run"]) and bool(first["dry_run"]) else ""
    return (
        f"{first['dataset']}, {value_text(first['n_train'])} training rows, {value_text(first['n_fits'])} fits "
        f"per batch ({first['mode']}), model {first['model_params']}{dry}"
    )


def time_blocks(rows: pd.DataFrame, prefix: str) -> list[Block]:
    """Time and accuracy per configuration: the tables, then the figures (``prefix`` names the workload's files)."""
    table = statistics.summary(rows)
    blocks: list[Block] = [Heading("Time and accuracy per configuration", level=3)]
    blocks += _config_tables(table)
    figures = (
        ("fit_time_box.png", "Box plots of fit time per configuration and engine", plots.box_fit_time(rows)),
        ("time_accuracy_vs_epochs.png", "Median time and accuracy against epochs", plots.versus_epochs(table)),
        ("accuracy_vs_time.png", "Accuracy against time, Pareto front marked", plots.accuracy_vs_time(table)),
    )
    return [*blocks, *(Picture(f"{prefix}{name}", alt, png) for name, alt, png in figures)]


def engine_order(engines: Sequence[str]) -> list[str]:
    """Spark, Dask, then any other engine by name; the baseline left out.

    >>> engine_order(["dask", "local", "ray", "spark"])
    ['spark', 'dask', 'ray']
    """
    known = [e for e in ENGINE_ORDER if e in engines]
    return known + sorted(e for e in engines if e not in ENGINE_ORDER and e != BASELINE_ENGINE)


def _config_tables(table: pd.DataFrame) -> list[Block]:
    """One table per configuration (the report's Tables 1-6), engines side by side, and the baseline."""
    cluster = table[table["engine"] != BASELINE_ENGINE]
    engines = engine_order(cluster["engine"].unique().tolist())
    blocks: list[Block] = [
        _config_table(group, engines) for _, group in cluster.groupby(list(CONFIG), dropna=False, sort=True)
    ]
    baseline = table[table["engine"] == BASELINE_ENGINE].sort_values("epochs")
    if len(baseline):
        lines = [(str(row["epochs"]), time_cell(row), accuracy_cell(row)) for _, row in baseline.iterrows()]
        blocks.append(Rows("Single-thread baseline (no cluster)", ("# Epochs", "Time (s)", "Accuracy"), tuple(lines)))
    return blocks


def _config_table(group: pd.DataFrame, engines: Sequence[str]) -> Rows:
    """One configuration's table: a line per epochs, time and accuracy per engine."""
    config, total_cores = group["config"].iloc[0], group["total_cores"].iloc[0]
    header = ["# Epochs"] + [f"{e.capitalize()} {what}" for e in engines for what in ("time (s)", "accuracy")]
    lines = []
    for epochs, at in group.groupby("epochs", sort=True):
        cells = [str(epochs)]
        for engine in engines:
            hit = at[at["engine"] == engine]
            cells += ["–", "–"] if hit.empty else [time_cell(hit.iloc[0]), accuracy_cell(hit.iloc[0])]
        lines.append(tuple(cells))
    return Rows(f"Config: {config} ({value_text(total_cores)} cores in all)", tuple(header), tuple(lines))


def comparison_blocks(rows: pd.DataFrame) -> list[Block]:
    """Configurations of one engine compared: the fastest, the second and the slowest, Kruskal-Wallis and ANOVA."""
    table = statistics.configs(rows)
    if table.empty:
        return []
    lines = [
        (
            str(row["engine"]),
            str(row["epochs"]),
            f"{row['fastest']}: {seconds_text(row['fastest_median_s'])} s" if row["fastest"] else "–",
            f"{row['second']}: {row['second_over_fastest']:.2f}x slower" if row["second"] else "–",
            f"{row['slowest']}: {row['slowest_over_fastest']:.2f}x slower" if row["slowest"] else "–",
            p_text(row["kruskal_p"]),
            p_text(row["anova_p"]),
            str(row["verdict"]),
        )
        for _, row in table.iterrows()
    ]
    header = (
        "Engine",
        "# Epochs",
        "Fastest (median)",
        "Second fastest",
        "Slowest",
        "Kruskal-Wallis p",
        "ANOVA p",
        "Verdict",
    )
    return [Heading("Configurations compared", level=3), Rows("Per engine and epochs", header, tuple(lines))]

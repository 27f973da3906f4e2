"""The report's content: one sweep's rows as a list of blocks (headings, text, tables of formatted cells, figures).

The sections, in order: what was measured, the method, then per workload the tables per configuration
(and the baseline) with their figures, Spark vs Dask, configurations compared, speedup and COST, time vs
price; last the failed measurements. The figures come from :mod:`.plots` as PNG bytes. Nothing here is
Markdown or HTML: :mod:`.render_md` and :mod:`.render_html` write the blocks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from sweeper.planning.plan import BASELINE_ENGINE
from sweeper.results import statistics
from sweeper.results.report import plots

ENGINE_ORDER = ("spark", "dask")


# -- blocks ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class Paragraph:
    text: str


@dataclass(frozen=True)
class Bullets:
    items: tuple[str, ...]


@dataclass(frozen=True)
class Rows:
    """A table: caption, header and rows of already formatted cells."""

    caption: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Picture:
    name: str
    alt: str
    png: bytes


Block = Heading | Paragraph | Bullets | Rows | Picture


# -- cells ----------------------------------------------------------------------------------


def seconds_text(value: Any) -> str:
    """Seconds for a table: three significant figures or so, a dash for missing.

    >>> seconds_text(7), seconds_text(12), seconds_text(1234.5), seconds_text(float("nan"))
    ('7.00', '12.0', '1,234', '–')
    """
    if value is None or pd.isna(value):
        return "–"
    x = float(value)
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}"


def p_text(value: Any) -> str:
    """A p-value for a table.

    >>> p_text(0.0079365), p_text(0.00001), p_text(float("nan"))
    ('0.008', '<0.001', '–')
    """
    if value is None or pd.isna(value):
        return "–"
    return "<0.001" if float(value) < 0.001 else f"{float(value):.3f}"


def ratio_text(ratio: Any, low: Any, high: Any) -> str:
    """A ratio with its interval.

    >>> ratio_text(12 / 7, 1.25, 2.4)
    '1.71 [1.25, 2.40]'
    """
    if pd.isna(ratio):
        return "–"
    return f"{float(ratio):.2f} [{float(low):.2f}, {float(high):.2f}]"


def _number(value: Any, digits: int = 4) -> str:
    return "–" if value is None or pd.isna(value) else f"{float(value):.{digits}f}"


def _text(value: Any) -> str:
    return "?" if value is None or pd.isna(value) else str(value)


def _time_cell(row: pd.Series, prefix: str = "") -> str:
    """Median time, IQR, trials and failures of a ``statistics`` row; ``prefix`` picks an engine's columns."""
    median, iqr = row[f"{prefix}median_s"], row[f"{prefix}iqr_s"]
    n, failed = int(row[f"{prefix}n"]), int(row[f"{prefix}failed"])
    text = f"{seconds_text(median)} (IQR {seconds_text(iqr)}, n={n})" if n else "no ok trial"
    return f"{text}, {failed} failed" if failed else text


def _accuracy_cell(row: pd.Series) -> str:
    return f"{_number(row['accuracy'])} (IQR {_number(row['accuracy_iqr'])})"


def _engine_order(engines: Sequence[str]) -> list[str]:
    known = [e for e in ENGINE_ORDER if e in engines]
    return known + sorted(e for e in engines if e not in ENGINE_ORDER and e != BASELINE_ENGINE)


def _distinct(df: pd.DataFrame, column: str) -> list[str]:
    return sorted(str(value) for value in df[column].dropna().unique())


# -- the report -----------------------------------------------------------------------------


def build_report(df: pd.DataFrame, machine: str = "", cost_per_node_hour: float | None = None) -> list[Block]:
    """All blocks of the report of one sweep's rows (``machine`` describes where it was made)."""
    sweep = ", ".join(_distinct(df, "sweep"))
    blocks: list[Block] = [Heading(f"sweeper report: {sweep}", level=1)]
    blocks += [Heading("What was measured"), Bullets(tuple(_provenance(df, machine)))]
    blocks += [Heading("Method"), Bullets(_METHOD)]
    groups = list(df.groupby(statistics.workload_keys(df), dropna=False, sort=True))
    for index, (_, rows) in enumerate(groups, start=1):
        prefix = f"workload{index}_" if len(groups) > 1 else ""
        blocks += [Heading(f"Results: {_workload_label(rows)}")]
        blocks += _workload_blocks(rows.reset_index(drop=True), prefix, cost_per_node_hour)
    blocks += _failure_blocks(df)
    return blocks


_METHOD = (
    "Time is fit_wall_s, the wall time of one whole parallel batch of fits; accuracy is the mean test "
    "accuracy of the batch's fits. Only ok measurements enter a statistic.",
    "Tables give the median over trials and the interquartile range (IQR) as spread.",
    f"Spark vs Dask: ratio of median times (above 1: Dask faster) with a 95 % percentile-bootstrap interval "
    f"({statistics.N_BOOTSTRAP:,} resamples, seed {statistics.SEED}); the verdict is Mann-Whitney U, two-sided, "
    f"at alpha {statistics.ALPHA}; Welch's t p-value shown too. Fewer than {statistics.MIN_TRIALS} ok trials on "
    f"either side: {statistics.TOO_FEW}.",
    "Configurations of one engine: Kruskal-Wallis (one-way ANOVA shown too); the fastest by median, and how "
    "many times slower the second fastest and the slowest are.",
    "Speedup = the single-thread baseline's median time / the median time. COST (McSherry, Isard and Murray, "
    "Scalability! But at what COST?, HotOS 2015) = the fewest total cores whose median time beats the "
    "single-thread baseline's median; never when no configuration does.",
)


def _provenance(df: pd.DataFrame, machine: str) -> list[str]:
    """The "What was measured" bullets: sweep, dates, hosts, cluster, versions, trials, baseline, statuses."""
    started = pd.to_datetime(df["started_at"]).dropna()
    dates = f"{started.min():%Y-%m-%d %H:%M:%S} to {started.max():%Y-%m-%d %H:%M:%S} UTC" if len(started) else "unknown"
    cluster = df[df["engine"] != BASELINE_ENGINE]
    shapes = statistics.summary(cluster).drop_duplicates("config") if len(cluster) else pd.DataFrame()
    versions = [
        f"{column.removesuffix('_version')} {'/'.join(_distinct(df, column)) or '?'}"
        for column in df.columns
        if column.endswith("_version") and column != "schema_version"
    ]
    trials = statistics.summary(df)
    status = df["status"].fillna("unknown").value_counts()
    dry = df["dry_run"].fillna(False).astype(bool)
    baseline_ok = int((statistics.ok_mask(df) & (df["engine"] == BASELINE_ENGINE)).sum())
    lines = [
        f"Sweep {', '.join(_distinct(df, 'sweep'))}; grid hash {', '.join(_distinct(df, 'grid_hash')) or '?'}; "
        f"runs {', '.join(_distinct(df, 'run_id')) or '?'}",
        f"Dates: {dates}",
        f"Hosts: {', '.join(_distinct(df, 'host')) or '?'}",
        f"Cluster (from the rows): manager {', '.join(_distinct(cluster, 'manager')) or '-'}, "
        f"{_int_max(cluster, 'nodes')} node(s), up to {_int_max(cluster, 'total_cores')} cores per launch; "
        f"{len(shapes)} configuration(s): {'; '.join(shapes['config']) if len(shapes) else '-'}",
        f"Engines: {', '.join(_distinct(df, 'engine'))}",
        f"Versions: {', '.join(versions)}",
        f"Epochs: {', '.join(str(e) for e in sorted(df['epochs'].dropna().unique()))}; "
        f"{_span(trials['n'])} ok trial(s) per engine, configuration and epochs",
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


def _span(counts: pd.Series) -> str:
    low, high = int(counts.min()), int(counts.max())
    return str(low) if low == high else f"{low} to {high}"


def _int_max(df: pd.DataFrame, column: str) -> str:
    value = df[column].max() if len(df) else pd.NA
    return "?" if pd.isna(value) else str(int(value))


def _workload_label(rows: pd.DataFrame) -> str:
    first = rows.iloc[0]
    dry = " (dry run)" if pd.notna(first["dry_run"]) and bool(first["dry_run"]) else ""
    return (
        f"{first['dataset']}, {_text(first['n_train'])} training rows, {_text(first['n_fits'])} fits per batch "
        f"({first['mode']}), model {first['model_params']}{dry}"
    )


def _workload_blocks(rows: pd.DataFrame, prefix: str, cost_per_node_hour: float | None) -> list[Block]:
    """One workload's sections; ``prefix`` keeps its figures' file names apart from other workloads'."""
    table = statistics.summary(rows)
    blocks: list[Block] = [Heading("Time and accuracy per configuration", level=3)]
    blocks += _config_tables(table)
    figures = (
        ("fit_time_box.png", "Box plots of fit time per configuration and engine", plots.box_fit_time(rows)),
        ("time_accuracy_vs_epochs.png", "Median time and accuracy against epochs", plots.versus_epochs(table)),
        ("accuracy_vs_time.png", "Accuracy against time, Pareto front marked", plots.accuracy_vs_time(table)),
    )
    blocks += [Picture(f"{prefix}{name}", alt, png) for name, alt, png in figures]
    blocks += _engine_blocks(rows)
    blocks += _config_comparison_blocks(rows)
    blocks += _speedup_blocks(rows, prefix)
    if cost_per_node_hour is not None:
        blocks += _price_blocks(rows, prefix, cost_per_node_hour)
    return blocks


def _config_tables(table: pd.DataFrame) -> list[Block]:
    """One table per configuration (the report's Tables 1-6), engines side by side, and the baseline."""
    cluster = table[table["engine"] != BASELINE_ENGINE]
    engines = _engine_order(cluster["engine"].unique().tolist())
    blocks: list[Block] = [
        _config_table(group, engines) for _, group in cluster.groupby(list(statistics.CONFIG), dropna=False, sort=True)
    ]
    baseline = table[table["engine"] == BASELINE_ENGINE].sort_values("epochs")
    if len(baseline):
        lines = [(str(row["epochs"]), _time_cell(row), _accuracy_cell(row)) for _, row in baseline.iterrows()]
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
            cells += ["–", "–"] if hit.empty else [_time_cell(hit.iloc[0]), _accuracy_cell(hit.iloc[0])]
        lines.append(tuple(cells))
    return Rows(f"Config: {config} ({_text(total_cores)} cores in all)", tuple(header), tuple(lines))


def engine_rows(df: pd.DataFrame) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """Header and formatted rows of the Spark vs Dask table (report and terminal alike).

    When ``df`` holds several workloads (or sweeps), a first column tells them apart.
    """
    table = statistics.engines(df)
    varying = [c for c in statistics.workload_keys(table) if table[c].nunique(dropna=False) > 1]
    header: tuple[str, ...] = (
        "Config",
        "# Epochs",
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
            _time_cell(row, "spark_"),
            _time_cell(row, "dask_"),
            ratio_text(row["ratio"], row["ratio_low"], row["ratio_high"]),
            p_text(row["mwu_p"]),
            p_text(row["welch_p"]),
            str(row["verdict"]),
        )
        for _, row in table.iterrows()
    ]
    if varying:
        header = ("Workload", *header)
        workloads = (", ".join(f"{c}={_text(row[c])}" for c in varying) for _, row in table.iterrows())
        lines = [(workload, *line) for workload, line in zip(workloads, lines, strict=True)]
    return header, lines


def _engine_blocks(rows: pd.DataFrame) -> list[Block]:
    blocks: list[Block] = [Heading("Spark vs Dask", level=3)]
    present = set(rows["engine"].dropna())
    if not {"spark", "dask"} <= present:
        return [*blocks, Paragraph(f"Not both engines measured (engines: {', '.join(sorted(present))}).")]
    header, lines = engine_rows(rows)
    return [*blocks, Rows("Same configuration and epochs, Spark vs Dask", header, tuple(lines))]


def _config_comparison_blocks(rows: pd.DataFrame) -> list[Block]:
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


def _speedup_blocks(rows: pd.DataFrame, prefix: str) -> list[Block]:
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
            f"{_number(row['best_speedup'], 2)}x ({row['best_config']})",
        )
        for _, row in costs.iterrows()
    ]
    speed_lines = [
        (
            str(row["engine"]),
            str(row["config"]),
            _text(row["total_cores"]),
            str(row["epochs"]),
            seconds_text(row["median_s"]),
            f"{_number(row['speedup'], 2)}x",
            _number(row["efficiency"], 3),
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


def _price_blocks(rows: pd.DataFrame, prefix: str, cost_per_node_hour: float) -> list[Block]:
    prices = statistics.price(rows, cost_per_node_hour)
    lines = [
        (
            str(row["engine"]),
            str(row["config"]),
            _text(row["nodes"]),
            str(row["epochs"]),
            seconds_text(row["median_s"]),
            _number(row["median_cost"], 4),
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


def _failure_blocks(df: pd.DataFrame) -> list[Block]:
    bad = statistics.failures(df)
    blocks: list[Block] = [Heading("Failed measurements")]
    if bad.empty:
        return [*blocks, Paragraph("None: every measurement finished ok.")]
    lines = [
        (
            f"{row['started_at']:%Y-%m-%d %H:%M:%S}" if pd.notna(row["started_at"]) else "?",
            str(row["engine"]),
            str(row["config"]),
            str(row["epochs"]),
            str(row["trial"]),
            str(row["status"]),
            _text(row["error_type"]),
            _text(row["error"])[:500],
        )
        for _, row in bad.iterrows()
    ]
    header = ("Started (UTC)", "Engine", "Config", "# Epochs", "Trial", "Status", "Error type", "Error")
    return [
        *blocks,
        Paragraph(f"{len(bad)} measurement(s) did not finish ok; they are left out of every statistic above."),
        Rows("Failed and timed-out measurements", header, tuple(lines)),
    ]

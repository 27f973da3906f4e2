"""The report's content: one sweep's rows as a list of blocks (headings, text, tables of formatted cells, figures).

The sections, in order: the answer (:mod:`sweeper.results.recommend`), what was measured, the method, then per
workload the tables per configuration (and the baseline) with their figures, Spark vs Dask, configurations
compared, speedup and COST, time vs price; last the failed measurements. The figures come from :mod:`.plots`
as PNG bytes. Nothing here is Markdown or HTML: :mod:`.render_md` and :mod:`.render_html` write the blocks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from sweeper.names import BASELINE_ENGINE, CONFIG
from sweeper.results import recommend, recommend_view, statistics
from sweeper.names import PRUNED
from sweeper.results.report import plots
from sweeper.search import accounting
from sweeper.search.halving import TIE_REL, kendall_tau
from sweeper.shapes import shape_text

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
    banner = dry_run_banner(df)
    if banner:
        blocks.append(Paragraph(banner))
    blocks += answer_blocks(df, cost_per_node_hour)
    blocks += [Heading("What was measured"), Bullets(tuple(_provenance(df, machine)))]
    blocks += [Heading("Method"), Bullets(_METHOD)]
    groups = list(df.groupby(statistics.workload_keys(df), dropna=False, sort=True))
    for index, (_, rows) in enumerate(groups, start=1):
        prefix = f"workload{index}_" if len(groups) > 1 else ""
        blocks += [Heading(f"Results: {_workload_label(rows)}")]
        blocks += _workload_blocks(rows.reset_index(drop=True), prefix, cost_per_node_hour)
    blocks += _search_blocks(df)
    blocks += _failure_blocks(df)
    return blocks


def dry_run_banner(df: pd.DataFrame) -> str | None:
    """The warning a dry run's tables carry: the real sweep's structure, times that mean nothing."""
    dry = df["dry_run"].fillna(False).astype(bool) if "dry_run" in df else pd.Series(dtype=bool)
    if not dry.any():
        return None
    share = "" if dry.all() else f" ({int(dry.sum())} of {len(dry)} rows)"
    return (
        f"DRY RUN{share}: measured on launches shrunk to the machine that ran them, with capped epochs and "
        "training rows. Configurations, epochs and engines are the grid's, as the real sweep will have them; "
        "times, speedups and verdicts are not meaningful."
    )


# -- the answer -------------------------------------------------------------------------------


def answer_blocks(df: pd.DataFrame, cost_per_node_hour: float | None = None) -> list[Block]:
    """ "The answer": a few sentences, one table, time per configuration and (when measured) memory figures."""
    found = recommend.recommend(df, cost_per_node_hour=cost_per_node_hour)
    blocks: list[Block] = [Heading("The answer"), *(Paragraph(text) for text in _answer_paragraphs(found))]
    if not found.answers:
        return blocks
    blocks.append(_answer_table(found))
    blocks.append(
        Picture(
            "answer_time.png",
            "Median fit time with its 95 % interval per configuration and engine",
            plots.time_by_configuration(_arm_points(found)),
        )
    )
    memory = pd.DataFrame(
        [
            {"engine": m.engine, "config": _short(m.cores_per_executor, m.executors, m.executor_memory_gib),
             "granted_gib": m.granted_gib, "peak_gib": m.peak_gib, "suggested_gib": m.suggested_gib}
            for m in found.memory
        ],
        columns=["engine", "config", "granted_gib", "peak_gib", "suggested_gib"],
    )  # fmt: skip
    if memory["peak_gib"].notna().any():
        blocks.append(
            Picture("answer_memory.png", "Peak memory against granted memory", plots.memory_vs_granted(memory))
        )
    return blocks


def _answer_paragraphs(found: recommend.Recommendation) -> list[str]:
    """The answer's sentences: overall, Spark vs Dask, memory to right-size, slots left idle."""
    overall = recommend.overall(found.answers)
    texts = [f"{overall[:1].upper()}{overall[1:]}."]
    if found.spark_vs_dask:
        texts.append(
            "Spark vs Dask, each engine's best configuration: "
            + "; ".join(
                f"{e.epochs} epochs: {e.verdict} (spark/dask {ratio_text(e.ratio, e.ratio_low, e.ratio_high)})"
                for e in found.spark_vs_dask
            )
            + "."
        )
    measured = [m for m in found.memory if m.limit != "not measured"]
    if not measured:
        texts.append("Memory was not measured in this sweep: no right-sizing.")
    else:
        resize = [m for m in measured if m.suggested_gib != m.granted_gib or m.suggested_overhead_gib > m.overhead_gib]
        texts.append(
            "Memory: " + "; ".join(recommend_view.memory_sentence(m) for m in resize) + "."
            if resize
            else "Memory: every configuration used what it was granted."
        )
    if found.idle:
        texts.append(
            "Slots left idle: "
            + "; ".join(
                f"{i.engine} {shape_text(i.executors, i.cores_per_executor)} ({i.slot_utilisation:.0%} used: "
                f"{', '.join(i.reasons)})"
                for i in found.idle
            )
            + "."
        )
    return texts


def _answer_table(found: recommend.Recommendation) -> Rows:
    """One line per workload and epochs value: recommendation, runner-up, ratio, verdict, accuracy."""
    several = len({repr(sorted(a.workload.items())) for a in found.answers}) > 1
    header: tuple[str, ...] = (
        "# Epochs",
        "Recommended",
        "Median time (s) [95 % CI]",
        "Runner-up",
        "Runner-up / recommended [95 % CI]",
        "Verdict",
        "Accuracy",
    )
    lines = []
    for answer in found.answers:
        winner = answer.winner
        verdict = answer.verdict
        if answer.trials_needed:
            verdict += f" (about {answer.trials_needed} trials would settle it)"
        line: tuple[str, ...] = (
            str(answer.epochs),
            winner.label,
            f"{seconds_text(winner.median_s)} [{seconds_text(winner.median_low_s)}, "
            f"{seconds_text(winner.median_high_s)}]",
            answer.runner_up.label if answer.runner_up else "–",
            ratio_text(answer.ratio, answer.ratio_low, answer.ratio_high),
            verdict,
            _accuracy_text(answer.accuracy),
        )
        lines.append((_workload_fields(answer.workload), *line) if several else line)
    if several:
        header = ("Workload", *header)
    return Rows("The recommendation per epochs value", header, tuple(lines))


def _accuracy_text(check: recommend.AccuracyCheck) -> str:
    """The accuracy check in a table cell: the status, and the difference to the most accurate when tested."""
    if check.best is None or pd.isna(check.difference_low):
        return recommend_view.accuracy_text(check) if check.status == "cannot differ" else check.status
    return (
        f"{check.status}: {check.difference:+.4f} vs {check.best.label} (one-sided 95 % bound "
        f"{check.difference_low:+.4f}, margin {check.margin:g})"
    )


def _workload_fields(workload: dict[str, Any]) -> str:
    return ", ".join(f"{key}={_text(value)}" for key, value in workload.items() if key != "sweep")


def _short(cores: int, executors: int, memory_gib: float) -> str:
    return plots.short_config(
        {"engine": "", "cores_per_executor": cores, "executors": executors, "executor_memory_gib": memory_gib}
    )


def _arm_points(found: recommend.Recommendation) -> pd.DataFrame:
    """Every arm of every answer as a point of the time figure (panel = epochs, and workload when several)."""
    several = len({repr(sorted(a.workload.items())) for a in found.answers}) > 1
    rows = [
        {
            "panel": f"{answer.epochs} epochs" + (f" ({index})" if several else ""),
            "engine": arm.engine,
            "config": _short(arm.cores_per_executor, arm.executors, arm.executor_memory_gib),
            "median_s": arm.median_s,
            "low_s": arm.median_low_s,
            "high_s": arm.median_high_s,
            "winner": arm == answer.winner,
        }
        for index, answer in enumerate(found.answers, start=1)
        for arm in answer.arms
    ]
    return pd.DataFrame(rows)


_METHOD = (
    "The answer: per workload and epochs value, the engine and configuration with the lowest median time, its "
    "95 % bootstrap interval, and the runner-up's median over it with its interval; the verdict tests the "
    "recommendation against every other configuration (Mann-Whitney U, Holm-corrected), and where it is "
    "inconclusive estimates the trials that would settle it (sweeper recommend prints the same).",
    "Time is fit_wall_s, the wall time of one whole parallel batch of fits; accuracy is the mean test "
    "accuracy of the batch's fits. Only ok measurements enter a statistic.",
    "Tables give the median over trials and the interquartile range (IQR) as spread.",
    f"Spark vs Dask: ratio of median times (above 1: Dask faster) with a 95 % percentile-bootstrap interval "
    f"({statistics.N_BOOTSTRAP:,} resamples, seed {statistics.SEED}); the verdict is Mann-Whitney U, two-sided, "
    f"at alpha {statistics.ALPHA}; Welch's t p-value shown too. Fewer than {statistics.MIN_TRIALS} ok trials on "
    f"either side: {statistics.TOO_FEW_TRIALS}.",
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
        _config_table(group, engines) for _, group in cluster.groupby(list(CONFIG), dropna=False, sort=True)
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


def _rung_lines(df: pd.DataFrame, axis: str) -> list[tuple[str, ...]]:
    """Per rung: its value of the axis, configurations measured, pruned, rank agreement with the rung before."""
    lines: list[tuple[str, ...]] = []
    columns = [c for c in accounting.configuration_columns(axis) if c in df]
    previous: pd.Series | None = None
    for rung, rows in df[df["rung"].notna()].groupby("rung", sort=True):
        measured = rows[statistics.ok_mask(rows)]
        medians = measured.groupby(columns, dropna=False)["fit_wall_s"].median()
        agreement = "-"
        if previous is not None:
            both = medians.index.intersection(previous.index)
            tau = kendall_tau(previous[both].to_numpy(), medians[both].to_numpy(), TIE_REL) if len(both) > 1 else None
            agreement = "-" if tau is None or pd.isna(tau) else f"{tau:.2f} ({len(both)} configurations)"
        pruned = int(rows["status"].eq(PRUNED).sum())
        lines.append((str(int(rung)), _distinct_text(rows, axis), str(len(medians)), str(pruned), agreement))
        previous = medians
    return lines


def _search_blocks(df: pd.DataFrame) -> list[Block]:
    """Adaptive trials and successive halving: why points stopped, each rung, the cluster time saved."""
    blocks: list[Block] = []
    reasons = df["stop_reason"].dropna()
    if len(reasons):
        counts = ", ".join(f"{count} {reason}" for reason, count in reasons.value_counts().items())
        blocks += [
            Heading("Adaptive trials"),
            Paragraph(f"Points measured until the 95 % CI of their median was tight enough: {counts}."),
        ]
    if df["rung"].isna().all():
        return blocks
    axis = rung_axis_of(df)
    spent, full = accounting.cluster_seconds(df), accounting.full_grid_estimate(df, axis)
    share = f" ({spent.total_s / full.total_s:.0%} of it)" if full.total_s > 0 else ""
    lines = _rung_lines(df, axis)
    pruned_rows = statistics.pruned(df)
    return [
        *blocks,
        Heading("Successive halving"),
        Paragraph(
            f"Each rung measured the configurations still in the race at the next value of {axis}; only the "
            "fastest went on, and where the order of the configurations changed from one rung to the next "
            "(Kendall's tau below 0.5: the cheap rung did not predict the next) pruned ones were brought back. "
            f"Cluster time of the rows: {spent.total_s:,.0f} node-seconds, {spent.measured_share:.0%} of it in "
            f"measured batches; the full grid would have taken about {full.total_s:,.0f}{share}."
        ),
        Rows(
            "Rungs (rank agreement: Kendall's tau of the medians at this rung and the previous one)",
            ("Rung", axis.capitalize(), "Configurations measured", "Pruned", "Rank agreement"),
            tuple(lines),
        ),
        Rows(
            "Pruned: not measured (never in a statistic)",
            ("Engine", "Config", "# Epochs", "Fraction", "Rung", "Why"),
            tuple(
                (
                    str(r["engine"]),
                    str(r["config"]),
                    str(r["epochs"]),
                    str(r["fraction"]),
                    str(r["rung"]),
                    _text(r["error"]),
                )
                for _, r in pruned_rows.iterrows()
            ),
        ),
    ]


def rung_axis_of(df: pd.DataFrame) -> str:
    """The axis a halving sweep's rungs ran on: the one whose value changes with the rung."""
    rungs = df[df["rung"].notna()]
    return (
        "fraction"
        if rungs.groupby("rung")["fraction"].nunique().max() == 1 and rungs["fraction"].nunique() > 1
        else "epochs"
    )


def _distinct_text(rows: pd.DataFrame, column: str) -> str:
    return ", ".join(str(v) for v in sorted(rows[column].dropna().unique()))


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

"""``sweeper report`` and ``sweeper compare``: one sweep's results as HTML, Markdown and PNGs, or a terminal table.

:func:`build_report` turns the rows into a list of blocks (headings, text, tables, figures);
two small renderers write them as Markdown (PNG files beside it) and as one self-contained HTML
file (figures embedded as ``data:`` URIs, no scripts, no external resources).
"""

from __future__ import annotations

import base64
import html
import io
import os
import platform
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console
from rich.table import Table

from sweeper.results import statistics
from sweeper.results.report import plots
from sweeper.errors import UserError
from sweeper.plan import BASELINE_ENGINE
from sweeper.run_view import plain
from sweeper.results.store import load_results, sweep_dir, sweeps

REPORT_HTML = "report.html"
REPORT_MD = "report.md"
ENGINE_ORDER = ("spark", "dask")
VERDICT_STYLE = {"dask faster": "cyan", "spark faster": "yellow", statistics.TOO_FEW: "dim"}


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


# -- loading --------------------------------------------------------------------------------


def load_sweep(store: str | Path, sweep: str | None = None) -> pd.DataFrame:
    """The rows of one sweep of a store; a store of several sweeps needs ``sweep``.

    Only that sweep's files are read: a broken file of another sweep does not stop its report.
    Raises :class:`~sweeper.errors.UserError` for a missing or empty store, for several sweeps
    and no name (listing them), for a name the store does not hold (listing those it does), and
    for a file of the sweep that cannot be read (naming it).
    """
    if not Path(store).is_dir():
        raise UserError(f"{store}: no such store directory")
    names = sweeps(store)
    if sweep is None and len(names) > 1:
        raise UserError(f"{store} holds {len(names)} sweeps: {', '.join(names)}; pass one with --sweep NAME")
    if sweep is not None and sweep not in names:
        sweep_dir(Path(store), sweep)  # a name that is no sweep's directory name is refused as such
        raise UserError(f"{store}: no sweep {sweep!r}; the store holds: {', '.join(names) or 'no sweep'}")
    df = load_results(store, sweep or (names[0] if names else None))
    if df.empty:
        raise UserError(f"{store}: the store holds no measurements; run a sweep into it first (sweeper run GRID)")
    return df


# -- formatting -----------------------------------------------------------------------------


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


def _time_cell(median: Any, iqr: Any, n: int, failed: int) -> str:
    text = f"{seconds_text(median)} (IQR {seconds_text(iqr)}, n={n})" if n else "no ok trial"
    return f"{text}, {failed} failed" if failed else text


def _engine_order(engines: Sequence[str]) -> list[str]:
    known = [e for e in ENGINE_ORDER if e in engines]
    return known + sorted(e for e in engines if e not in ENGINE_ORDER and e != BASELINE_ENGINE)


def _distinct(df: pd.DataFrame, column: str) -> list[str]:
    return sorted(str(value) for value in df[column].dropna().unique())


# -- the report's content ---------------------------------------------------------------------


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


def _text(value: Any) -> str:
    return "?" if value is None or pd.isna(value) else str(value)


def _workload_blocks(rows: pd.DataFrame, prefix: str, cost_per_node_hour: float | None) -> list[Block]:
    table = statistics.summary(rows)
    blocks: list[Block] = [Heading("Time and accuracy per configuration", level=3)]
    blocks += _config_tables(table)
    blocks.append(
        Picture(
            f"{prefix}fit_time_box.png",
            "Box plots of fit time per configuration and engine",
            plots.box_fit_time(rows),
        )
    )
    blocks.append(
        Picture(
            f"{prefix}time_accuracy_vs_epochs.png",
            "Median time and accuracy against epochs",
            plots.versus_epochs(table),
        )
    )
    blocks.append(
        Picture(
            f"{prefix}accuracy_vs_time.png",
            "Accuracy against time, Pareto front marked",
            plots.accuracy_vs_time(table),
        )
    )
    blocks += _engine_blocks(rows)
    blocks += _config_comparison_blocks(rows)
    blocks += _speedup_blocks(rows, prefix)
    if cost_per_node_hour is not None:
        blocks += _price_blocks(rows, prefix, cost_per_node_hour)
    return blocks


def _config_tables(table: pd.DataFrame) -> list[Block]:
    """One table per configuration (the report's Tables 1-6), engines side by side, and the baseline."""
    blocks: list[Block] = []
    cluster = table[table["engine"] != BASELINE_ENGINE]
    engines = _engine_order(cluster["engine"].unique().tolist())
    for _, group in cluster.groupby(list(statistics.CONFIG), dropna=False, sort=True):
        config, total_cores = group["config"].iloc[0], group["total_cores"].iloc[0]
        header = ["# Epochs"] + [f"{e.capitalize()} {what}" for e in engines for what in ("time (s)", "accuracy")]
        lines = []
        for epochs, at in group.groupby("epochs", sort=True):
            cells = [str(epochs)]
            for engine in engines:
                hit = at[at["engine"] == engine]
                if hit.empty:
                    cells += ["–", "–"]
                    continue
                row = hit.iloc[0]
                cells += [
                    _time_cell(row["median_s"], row["iqr_s"], int(row["n"]), int(row["failed"])),
                    f"{_number(row['accuracy'])} (IQR {_number(row['accuracy_iqr'])})",
                ]
            lines.append(tuple(cells))
        caption = f"Config: {config} ({_text(total_cores)} cores in all)"
        blocks.append(Rows(caption, tuple(header), tuple(lines)))
    baseline = table[table["engine"] == BASELINE_ENGINE].sort_values("epochs")
    if len(baseline):
        lines = [
            (
                str(row["epochs"]),
                _time_cell(row["median_s"], row["iqr_s"], int(row["n"]), int(row["failed"])),
                f"{_number(row['accuracy'])} (IQR {_number(row['accuracy_iqr'])})",
            )
            for _, row in baseline.iterrows()
        ]
        blocks.append(Rows("Single-thread baseline (no cluster)", ("# Epochs", "Time (s)", "Accuracy"), tuple(lines)))
    return blocks


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
            _time_cell(row["spark_median_s"], row["spark_iqr_s"], int(row["spark_n"]), int(row["spark_failed"])),
            _time_cell(row["dask_median_s"], row["dask_iqr_s"], int(row["dask_n"]), int(row["dask_failed"])),
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
        Picture(
            f"{prefix}time_vs_cost.png", "Time against cost, Pareto frontier marked", plots.time_vs_price(prices)
        ),
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


# -- renderers ------------------------------------------------------------------------------


def to_markdown(blocks: Sequence[Block]) -> str:
    """The report as Markdown; figures are linked as PNG files beside it.

    Every text is written through :func:`markdown_text`, so what the store holds (error
    messages, names) shows as written and never as Markdown or HTML.
    """
    out: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            text = markdown_text(block.text).replace("#", "\\#")  # a closing '#' would end the heading
            out.append(f"{'#' * block.level} {text}")
        elif isinstance(block, Paragraph):
            out.append(markdown_text(block.text))
        elif isinstance(block, Bullets):
            out.append("\n".join(f"- {markdown_text(item)}" for item in block.items))
        elif isinstance(block, Rows):
            lines = [
                f"**{markdown_text(block.caption)}**",
                "",
                _md_row(block.header),
                _md_row(["---"] * len(block.header)),
                *(_md_row(row) for row in block.rows),
            ]
            out.append("\n".join(lines))
        else:
            out.append(f"![{markdown_text(block.alt)}]({block.name})")
    return "\n\n".join(out) + "\n"


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|&~$])")
_LINE_BREAKS = re.compile(r"[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]+")


def markdown_text(text: str) -> str:
    r"""Plain text as inline Markdown that shows it as written, on one line.

    Backslash-escapes what would start markup (emphasis, code, links, HTML, entities, table
    cells, maths) and turns line breaks into spaces, as :func:`to_html` escapes for HTML.

    >>> print(markdown_text("a|b `c` <script> *d*\nnext"))
    a\|b \`c\` \<script\> \*d\* next
    """
    return _MARKDOWN_SPECIAL.sub(r"\\\1", _LINE_BREAKS.sub(" ", text))


def _md_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(markdown_text(cell) for cell in cells) + " |"


_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { border-bottom: 2px solid #444; } h2 { border-bottom: 1px solid #bbb; margin-top: 2em; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
caption { font-weight: bold; text-align: left; padding: 0.3em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; } tr:nth-child(even) td { background: #fafafa; }
figure { margin: 1em 0; } img { max-width: 100%; height: auto; } figcaption { color: #555; font-size: 0.9em; }
"""


def to_html(blocks: Sequence[Block]) -> str:
    """The report as one self-contained HTML page: figures inline as data: URIs, no scripts or links."""
    title = next((b.text for b in blocks if isinstance(b, Heading)), "sweeper report")
    body: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            body.append(f"<h{block.level}>{html.escape(block.text)}</h{block.level}>")
        elif isinstance(block, Paragraph):
            body.append(f"<p>{html.escape(block.text)}</p>")
        elif isinstance(block, Bullets):
            body.append("<ul>" + "".join(f"<li>{html.escape(item)}</li>" for item in block.items) + "</ul>")
        elif isinstance(block, Rows):
            head = "".join(f"<th>{html.escape(cell)}</th>" for cell in block.header)
            rows = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in block.rows)
            body.append(
                f"<table><caption>{html.escape(block.caption)}</caption><thead><tr>{head}</tr></thead>"
                f"<tbody>{rows}</tbody></table>"
            )
        else:
            data = base64.b64encode(block.png).decode("ascii")
            alt = html.escape(block.alt)
            body.append(
                f'<figure><img src="data:image/png;base64,{data}" alt="{alt}"><figcaption>{alt}</figcaption></figure>'
            )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


def this_machine() -> str:
    """Where the report is made: host, CPUs, OS, Python, time."""
    now = datetime.now(UTC)
    return (
        f"{platform.node()}, {os.cpu_count()} CPUs, {platform.platform()}, Python {platform.python_version()}, "
        f"{now:%Y-%m-%d %H:%M} UTC"
    )


def write_report(
    store: str | Path, out_dir: str | Path, sweep: str | None = None, cost_per_node_hour: float | None = None
) -> list[Path]:
    """Write ``report.html`` (self-contained), ``report.md`` and its PNGs for one sweep of a store.

    Returns the paths written: the HTML, the Markdown, then the PNGs.

    Examples
    --------
    After ``make sweep GRID=grids/2node.yaml``::

        write_report("results/", "report/", sweep="2node")
        # [PosixPath('report/report.html'), PosixPath('report/report.md'), PosixPath('report/fit_time_box.png'), ...]
    """
    df = load_sweep(store, sweep)
    out = _report_directory(Path(out_dir))
    blocks = build_report(df, machine=this_machine(), cost_per_node_hour=cost_per_node_hour)
    files = {block.name: block.png for block in blocks if isinstance(block, Picture)}
    files[REPORT_MD] = to_markdown(blocks).encode("utf-8")
    files[REPORT_HTML] = to_html(blocks).encode("utf-8")
    for name, content in files.items():
        try:
            (out / name).write_bytes(content)
        except OSError as error:
            raise UserError(f"{out / name}: cannot write the report: {error.strerror or error}") from None
    return [out / REPORT_HTML, out / REPORT_MD, *(out / name for name in files if name.endswith(".png"))]


def _report_directory(out: Path) -> Path:
    """The report's directory, created if missing; a file in its way or a place that refuses it is a UserError."""
    if out.exists() and not out.is_dir():
        raise UserError(f"{out}: exists and is not a directory; --out takes a directory (created if missing)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        where = f" ({error.filename})" if error.filename else ""
        raise UserError(f"{out}: cannot create the report directory: {error.strerror or error}{where}") from None
    return out


# -- terminal -------------------------------------------------------------------------------


def compare_table(df: pd.DataFrame) -> Table:
    """The Spark vs Dask table for ``sweeper compare`` (rich), failures counted in the caption.

    Every cell goes through :func:`~sweeper.run_view.plain`: no store string is read as console markup.
    """
    header, lines = engine_rows(df)
    failed = int((~statistics.ok_mask(df)).sum())
    caption = f"{failed} failed or timed-out measurement(s) left out; `sweeper report` lists them" if failed else None
    table = Table(title="Spark vs Dask: median fit time over ok trials", caption=caption)
    for name in header:
        table.add_column(plain(name))
    for line in lines:
        table.add_row(*(plain(cell) for cell in line[:-1]), plain(line[-1], VERDICT_STYLE.get(line[-1], "bold")))
    return table


def compare_text(df: pd.DataFrame, width: int = 160) -> str:
    """:func:`compare_table` as plain text (no colour), as ``sweeper compare`` prints it."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None, force_terminal=False, markup=False, emoji=False)
    console.print(compare_table(df))
    return buffer.getvalue()


__all__ = [
    "build_report",
    "compare_table",
    "compare_text",
    "load_sweep",
    "to_html",
    "to_markdown",
    "write_report",
]

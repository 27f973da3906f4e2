"""Per workload: its heading's label, time and accuracy per configuration (tables and figures), configurations
compared."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from sweeper.config.work import ACCURACY, axis_point, axis_text, score_name
from sweeper.names import BASELINE_ENGINE, CONFIG
from sweeper.results import statistics
from sweeper.results.predict.forecast import work_axis_name
from sweeper.results.report import plots, selection, shape_plots
from sweeper.results.report.blocks import Block, Heading, Paragraph, Picture, Rows
from sweeper.results.report.formatting import (
    accuracy_cell,
    axis_header,
    p_text,
    score_header,
    seconds_text,
    time_cell,
    value_text,
)

TABLE_CONFIGURATIONS = 12  # shapes with a table each; beyond, one table holds every configuration


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
    work_axis = work_axis_name(rows)
    score = score_header(score_name(rows["scoring"]) if "scoring" in rows else ACCURACY)
    blocks: list[Block] = [Heading(f"Time and {score.lower()} per configuration", level=3)]
    blocks += _config_tables(table, work_axis, score)
    return [*blocks, *_time_figures(rows, table, prefix, work_axis, score)]


def _time_figures(rows: pd.DataFrame, table: pd.DataFrame, prefix: str, work_axis: str, score: str) -> list[Block]:
    """The box plots (each engine's fastest at each value of the work axis), time and score (named ``score``)
    against the work axis (named ``work_axis``) and each other.

    A figure whose axis would not vary (one value of the work axis; one score) is left out with a sentence that
    says so.
    """
    total = selection.configurations(table)
    per_epochs = selection.fastest(table, scope=("epochs",))
    overall = selection.fastest(table)
    drawn_per_epochs = selection.configurations(table[per_epochs])
    box_note = selection.left_out_note(total, drawn_per_epochs, f"at each {axis_point(work_axis)} drawn")
    drawn = selection.configurations(table[overall])
    note, dots = selection.left_out_note(total, drawn), selection.left_out_note(total, drawn, "in colour", "grey dots")
    keys = ["engine", *CONFIG, "epochs"]
    boxed = pd.MultiIndex.from_frame(rows[keys]).isin(pd.MultiIndex.from_frame(table.loc[per_epochs, keys]))
    alt = "Box plots of fit time per configuration and engine"
    blocks: list[Block] = [
        Picture(f"{prefix}fit_time_box.png", selection.with_note(alt, box_note),
                plots.png(shape_plots.box_fit_time(rows[boxed], box_note, work_axis)))
    ]  # fmt: skip
    measured = table[table["n"] > 0]
    if plots.varies(measured["epochs"]):
        alt = selection.with_note(f"Median time and {score.lower()} against {work_axis}", note)
        figure = plots.versus_epochs(table[overall], note, work_axis, score)
        blocks.append(Picture(f"{prefix}time_accuracy_vs_epochs.png", alt, plots.png(figure)))
    else:
        values = sorted(measured["epochs"].dropna().unique())
        at = axis_text([value_text(v) for v in values], work_axis)
        blocks.append(Paragraph(f"Every measurement at {at}: no figure against {work_axis}." if values
                                else f"No ok measurement: no figure against {work_axis}."))  # fmt: skip
    if plots.varies(measured["accuracy"]):
        alt = selection.with_note(f"{score} against time, Pareto front marked", dots)
        figure = plots.accuracy_vs_time(table, overall, dots, work_axis, score)
        blocks.append(Picture(f"{prefix}accuracy_vs_time.png", alt, plots.png(figure)))
    else:
        said = _values_text(measured["accuracy"].round(4)) or "not measured"
        blocks.append(
            Paragraph(f"{score} is the same in every measurement ({said}): no figure of {score.lower()} vs time.")
        )
    return blocks


def _values_text(values: pd.Series) -> str:
    """The distinct values of a series, comma-separated (none: "")."""
    return ", ".join(value_text(v) for v in sorted(values.dropna().unique()))


def _config_tables(table: pd.DataFrame, work_axis: str, score: str) -> list[Block]:
    """One table per configuration (the report's Tables 1-6), engines side by side, and the baseline; the work
    axis's column is headed by its name (``work_axis``), the score's by ``score`` (``Accuracy``, ``Score (r2)``).

    Beyond :data:`TABLE_CONFIGURATIONS` shapes, one table holds them all (:func:`_every_configuration`).
    """
    cluster = table[table["engine"] != BASELINE_ENGINE]
    engines = selection.engine_order(cluster["engine"].unique().tolist())
    shapes = cluster.groupby(list(CONFIG), dropna=False, sort=True)
    if shapes.ngroups > TABLE_CONFIGURATIONS:
        blocks: list[Block] = [_every_configuration(cluster, engines, shapes.ngroups, work_axis, score)]
    else:
        blocks = [_config_table(group, engines, axis_header(work_axis), score) for _, group in shapes]
    baseline = table[table["engine"] == BASELINE_ENGINE].sort_values("epochs")
    if len(baseline):
        lines = [(str(row["epochs"]), time_cell(row), accuracy_cell(row)) for row in baseline.to_dict("records")]
        header = (axis_header(work_axis), "Time (s)", score)
        blocks.append(Rows("Single-thread baseline (no cluster)", header, tuple(lines)))
    return blocks


def _config_table(group: pd.DataFrame, engines: Sequence[str], axis_column: str, score: str) -> Rows:
    """One configuration's table: a line per value of the work axis, time and score per engine."""
    config, total_cores = group["config"].iloc[0], group["total_cores"].iloc[0]
    header = [axis_column] + [f"{e.capitalize()} {what}" for e in engines for what in ("time (s)", score.lower())]
    lines = []
    for epochs, at in group.groupby("epochs", sort=True):
        cells = [str(epochs)]
        for engine in engines:
            hit = at[at["engine"] == engine]
            cells += ["–", "–"] if hit.empty else [time_cell(hit.iloc[0]), accuracy_cell(hit.iloc[0])]
        lines.append(tuple(cells))
    return Rows(f"Config: {config} ({value_text(total_cores)} cores in all)", tuple(header), tuple(lines))


def _every_configuration(
    cluster: pd.DataFrame, engines: Sequence[str], shapes: int, work_axis: str, score: str
) -> Rows:
    """Every configuration in one table: a line per shape and value of the work axis, time and accuracy per engine.

    The lines of one value go fastest first (by the faster engine's median).
    """
    keys = [*CONFIG, "epochs"]
    first = cluster.drop_duplicates([*keys, "engine"])  # as the table per configuration: an engine's first line
    fastest = first.groupby(keys, dropna=False, sort=False)["median_s"].transform("min")
    first = first.assign(_fastest=fastest).sort_values(["epochs", "_fastest"], kind="stable", na_position="last")
    lines: dict[tuple[object, ...], tuple[tuple[str, ...], dict[str, tuple[str, str]]]] = {}
    for row in first.to_dict("records"):
        start = (str(row["config"]), value_text(row["total_cores"]), str(row["epochs"]))
        _, cells = lines.setdefault(tuple(row[k] for k in keys), (start, {}))
        cells[str(row["engine"])] = (time_cell(row), accuracy_cell(row))
    header = ["Config", "Cores in all", axis_header(work_axis)] + [
        f"{e.capitalize()} {what}" for e in engines for what in ("time (s)", score.lower())
    ]
    body = tuple((*start, *(c for e in engines for c in cells.get(e, ("–", "–")))) for start, cells in lines.values())
    title = f"Every configuration ({shapes:,} shapes): a line per {axis_point(work_axis)}, fastest first"
    return Rows(title, tuple(header), body)


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
        axis_header(work_axis_name(rows)),
        "Fastest (median)",
        "Second fastest",
        "Slowest",
        "Kruskal-Wallis p",
        "ANOVA p",
        "Verdict",
    )
    title = f"Per engine and {work_axis_name(rows)}"
    return [Heading("Configurations compared", level=3), Rows(title, header, tuple(lines))]

"""The report's figures, drawn with matplotlib's object API (no pyplot state, Agg canvas).

Each function takes tables of :mod:`sweeper.results.statistics` (or the rows, for the box plots) of one
workload and returns PNG bytes. A figure drawn per configuration draws what the section gives it (each
engine's fastest few, :mod:`.selection`) and its ``note`` says what it left out; a scatter of every
configuration draws the others as small grey dots, labelled by none. Artists are drawn per engine or per
marker, never per point, so a figure of thousands of points takes as long as one of ten.
"""

from __future__ import annotations

import io
import math
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from sweeper.names import BASELINE_ENGINE, CONFIG
from sweeper.results.report.selection import with_note
from sweeper.results.statistics import NEVER, ok_mask, pareto_front
from sweeper.shapes import BASELINE_TEXT, shape_text
from sweeper.text import visible

ENGINE_COLORS = {"spark": "#e8710a", "dask": "#1f77b4", BASELINE_ENGINE: "#555555"}
OTHER_COLORS = ("#2ca02c", "#9467bd", "#8c564b", "#e377c2")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "p", "d", "h", "1", "2", "3", "4", "+", "x")
LEGEND_IN_PANEL = 8  # legend entries a panel holds; more go below it
MARKED_LINE = 24  # points of an engine's speedup line drawn as markers; more are small dots
DPI = 100


def engine_color(engine: str) -> str:
    """The engine's colour, the same in every figure."""
    return ENGINE_COLORS.get(engine, OTHER_COLORS[zlib.crc32(engine.encode()) % len(OTHER_COLORS)])


def shown(text: object) -> str:
    r"""Text from the store (an engine name) as a figure label, as written: a '$' starts no maths, control
    characters show as ``\xNN`` (:func:`~sweeper.text.visible`).

    >>> shown("spark$x$\x1b[31m")
    'spark\\$x\\$\\x1b[31m'
    """
    return visible(str(text)).replace("$", r"\$")


def short_config(row: Any) -> str:
    """A configuration's label in a plot (:func:`sweeper.shapes.shape_text`).

    >>> short_config({"engine": "dask", "cores_per_executor": 5, "executors": 7, "executor_memory_gib": 13.0})
    '7 executors x 5 cores x 13 GiB'
    >>> short_config({"engine": "local", "cores_per_executor": 1, "executors": 1, "executor_memory_gib": 0.0})
    '1 thread (baseline)'
    """
    cores, executors, memory = (row[c] for c in CONFIG)
    return shape_text(executors, cores, memory, baseline=row["engine"] == BASELINE_ENGINE)


def png(figure: Figure) -> bytes:
    """The figure as PNG bytes."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight", metadata={"Software": None})
    return buffer.getvalue()


def _panels(count: int, width_in: float = 5.0, height_in: float = 3.6) -> tuple[Figure, list[Axes]]:
    columns = min(count, 2)
    rows = math.ceil(count / columns)
    figure = Figure(figsize=(width_in * columns, height_in * rows), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False).ravel().tolist()
    for extra in axes[count:]:
        extra.set_visible(False)
    return figure, axes[:count]


def _shapes(table: pd.DataFrame) -> dict[tuple[Any, ...], tuple[str, str]]:
    """A marker and a short label per configuration, in the order of the configurations."""
    labels = {_key(row): short_config(row) for row in table.drop_duplicates(["engine", *CONFIG]).to_dict("records")}
    keys = sorted(labels, key=lambda key: tuple(float(v) if pd.notna(v) else -1.0 for v in key))
    return {key: (MARKERS[i % len(MARKERS)], labels[key]) for i, key in enumerate(keys)}


def _key(row: Any) -> tuple[Any, ...]:
    """A configuration's key (its shape), as :func:`_shapes` maps it to a marker."""
    return tuple(row[c] for c in CONFIG)


def _engine_legend(axis: Axes, engines: Any) -> None:
    for engine in sorted(str(e) for e in engines):
        axis.scatter([], [], color=engine_color(engine), label=shown(engine))


def _series(table: pd.DataFrame) -> Iterator[tuple[str, str, pd.DataFrame]]:
    """(engine, short config, rows sorted by epochs) per engine and configuration, baseline last."""
    keys = ["engine", *CONFIG]
    for key, group in table.groupby(keys, dropna=False, sort=True):
        engine = str(key[0])
        if engine != BASELINE_ENGINE:
            yield engine, short_config(group.iloc[0]), group.sort_values("epochs")
    for _, group in table[table["engine"] == BASELINE_ENGINE].groupby(keys, dropna=False):
        yield BASELINE_ENGINE, BASELINE_TEXT, group.sort_values("epochs")


def box_fit_time(rows: pd.DataFrame, note: str = "") -> bytes:
    """Box plots of fit time (ok trials) per configuration and engine, one panel per epoch count.

    ``note`` (what was left out) goes in the title.
    """
    ok = rows[ok_mask(rows)]
    epochs = sorted(ok["epochs"].dropna().unique())
    boxes = ok.drop_duplicates(["epochs", "engine", *CONFIG]).groupby("epochs").size()
    width_in = max(6.0, 0.45 * int(boxes.max())) if len(boxes) else 6.0
    figure, axes = _panels(max(len(epochs), 1), width_in=width_in)
    for axis, epoch in zip(axes, epochs, strict=False):
        data, labels, colors = [], [], []
        for key, group in ok[ok["epochs"] == epoch].groupby(["engine", *CONFIG], dropna=False, sort=True):
            data.append(group["fit_wall_s"].to_numpy(dtype=float, na_value=np.nan))
            labels.append(f"{shown(key[0])}\n{short_config(group.iloc[0])}")
            colors.append(engine_color(str(key[0])))
        drawn = axis.boxplot(data, patch_artist=True, widths=0.6, medianprops={"color": "black"})
        for patch, color in zip(drawn["boxes"], colors, strict=True):
            patch.set_facecolor(color)
            patch.set_alpha(0.55)
        _x_labels(axis, range(1, len(labels) + 1), labels, width_in)
        axis.set_title(f"{epoch} epochs")
        axis.set_ylabel("fit time (s)")
        axis.grid(axis="y", alpha=0.3)
    figure.suptitle(with_note("Fit time per configuration and engine (ok trials)", note, "\n"))
    return png(figure)


def _x_labels(axis: Axes, ticks: Any, labels: list[str], panel_in: float, fontsize: float = 7) -> None:
    """Tick labels under a panel ``panel_in`` inches wide, slanted and on one line when they would overlap."""
    longest_in = max((len(line) for label in labels for line in label.split("\n")), default=0) * fontsize * 0.6 / 72
    if len(labels) > 1 and longest_in > 0.8 * panel_in / len(labels):
        one_line = [label.replace("\n", " ") for label in labels]
        axis.set_xticks(ticks, one_line, fontsize=fontsize, rotation=35, ha="right", rotation_mode="anchor")
    else:
        axis.set_xticks(ticks, labels, fontsize=fontsize)


def versus_epochs(table: pd.DataFrame, note: str = "") -> bytes:
    """Median time and accuracy against epochs, a line per engine and configuration (from ``summary``)."""
    figure, (time_axis, accuracy_axis) = _panels(2)
    markers = _shapes(table)
    measured = table[table["n"] > 0]
    for engine, label, group in _series(measured):
        marker = markers[_key(group.iloc[0])][0]
        style: dict[str, Any] = {
            "color": engine_color(engine),
            "marker": marker,
            "linestyle": "--" if engine == BASELINE_ENGINE else "-",
            "label": f"{shown(engine)} {label}",
        }
        epochs = group["epochs"].to_numpy(dtype=float)
        median = group["median_s"].to_numpy(dtype=float)
        spread = np.vstack([median - group["q1_s"].to_numpy(dtype=float), group["q3_s"].to_numpy(dtype=float) - median])
        time_axis.errorbar(epochs, median, yerr=spread, capsize=3, **style)
        accuracy_axis.plot(epochs, group["accuracy"].to_numpy(dtype=float), **style)
    for axis, ylabel in ((time_axis, "median fit time (s), IQR bars"), (accuracy_axis, "median accuracy")):
        axis.set_xlabel("epochs")
        axis.set_ylabel(ylabel)
        axis.grid(alpha=0.3)
        if _spans_decade(measured["epochs"]):
            axis.set_xscale("log")
    time_axis.set_title("Time vs epochs")
    accuracy_axis.set_title("Accuracy vs epochs")
    _legend(time_axis)
    if note:
        figure.suptitle(note[:1].upper() + note[1:], fontsize=9)
    return png(figure)


def _legend(axis: Axes) -> None:
    """A small legend in the panel, or below it in two columns when it has more than :data:`LEGEND_IN_PANEL`."""
    if len(axis.get_legend_handles_labels()[1]) <= LEGEND_IN_PANEL:
        axis.legend(fontsize=7)
    else:
        axis.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0.0, -0.15), ncols=2)


def _spans_decade(epochs: pd.Series) -> bool:
    values = epochs.dropna().astype(float)
    return bool(len(values) and values.min() > 0 and values.max() / values.min() >= 10)


def accuracy_vs_time(table: pd.DataFrame, shown_rows: np.ndarray | None = None, note: str = "") -> bytes:
    """The speed/accuracy trade-off: median accuracy against median time, the Pareto front marked.

    ``shown_rows`` (a mask of ``table``'s rows, default all): the points drawn in colour with a marker per
    configuration and their epochs; the others are grey dots. The front is of every point.
    """
    keep = np.ones(len(table), dtype=bool) if shown_rows is None else np.asarray(shown_rows, dtype=bool)
    usable = ((table["n"] > 0) & table["accuracy"].notna()).to_numpy(dtype=bool)
    measured, picked = table[usable].reset_index(drop=True), keep[usable]
    figure = Figure(figsize=(8, 5), layout="constrained")
    axis = figure.subplots()
    time_s = measured["median_s"].to_numpy(dtype=float)
    accuracy = measured["accuracy"].to_numpy(dtype=float)
    _others(axis, time_s[~picked], accuracy[~picked])
    colored = measured[picked]
    markers = _shapes(colored)
    _points(axis, colored, "median_s", "accuracy", markers, s=45, zorder=3)
    _annotate(axis, colored["median_s"], colored["accuracy"], [str(e) for e in colored["epochs"]])
    front = pareto_front(time_s, -accuracy)
    order = np.argsort(time_s[front])
    axis.step(
        time_s[front][order],
        accuracy[front][order],
        where="post",
        color="black",
        alpha=0.6,
        zorder=2,
        label="Pareto front (faster or more accurate than all others)",
    )
    axis.scatter(time_s[front], accuracy[front], s=160, facecolors="none", edgecolors="black", zorder=4)
    _engine_legend(axis, colored["engine"].unique())
    for marker, label in markers.values():
        axis.scatter([], [], color="gray", marker=marker, label=label)
    title = with_note("Speed vs accuracy (labels: epochs)", note, "\n")
    _label_panel(axis, title, "median fit time (s)", "median accuracy")
    return png(figure)


def _others(axis: Axes, x: np.ndarray, y: np.ndarray) -> None:
    """The points a figure leaves unlabelled: small grey dots, one artist, counted in the legend."""
    if len(x):
        axis.scatter(x, y, s=6, color="#bbbbbb", zorder=1, label=f"{len(x):,} other points (unlabelled)")


def _points(
    axis: Axes, table: pd.DataFrame, x: str, y: str, markers: dict[tuple[Any, ...], tuple[str, str]], **style: Any
) -> None:
    """``table``'s points in their engine's colour and their configuration's marker: one artist per pair."""
    marker_of = [markers[_key(row)][0] for row in table[list(CONFIG)].to_dict("records")]
    frame = pd.DataFrame({"engine": table["engine"].astype(str).to_numpy(), "marker": marker_of})
    for (engine, marker), rows in frame.groupby(["engine", "marker"], sort=True).groups.items():
        at = np.asarray(rows)
        values_x = table[x].to_numpy(dtype=float)[at]
        values_y = table[y].to_numpy(dtype=float)[at]
        axis.scatter(values_x, values_y, color=engine_color(str(engine)), marker=marker, **style)


def _annotate(axis: Axes, x: pd.Series, y: pd.Series, labels: list[str]) -> None:
    """A small label beside each point (the caller keeps them few)."""
    for x_value, y_value, label in zip(x.to_numpy(dtype=float), y.to_numpy(dtype=float), labels, strict=True):
        axis.annotate(label, (x_value, y_value), fontsize=6, xytext=(4, 3), textcoords="offset points")


def speedup_cost(speedups: pd.DataFrame, costs: pd.DataFrame) -> bytes:
    """Speedup over the single thread against total cores, one panel per epochs, COST marked.

    Each engine's configurations are dots; its line joins the best speedup at each core count (with markers
    up to :data:`MARKED_LINE` points, beyond which the dots shrink and the line thins).
    """
    measured = speedups[speedups["speedup"].notna()]
    epochs = sorted(measured["epochs"].dropna().unique())
    figure, axes = _panels(max(len(epochs), 1))
    for axis, epoch in zip(axes, epochs, strict=False):
        for engine, group in measured[measured["epochs"] == epoch].groupby("engine", sort=True):
            color = engine_color(str(engine))
            cost_row = costs[(costs["engine"] == engine) & (costs["epochs"] == epoch)]
            cost = str(cost_row["cost"].iloc[0]) if len(cost_row) else NEVER
            cores, speedup = group["total_cores"].astype(float), group["speedup"].astype(float)
            best = speedup.groupby(cores).max().sort_index()
            label = f"{shown(engine)} (COST {cost if cost == NEVER else cost + ' cores'})"
            few = len(group) <= MARKED_LINE
            line: dict[str, Any] = {"marker": "o"} if few else {"linewidth": 1.0}
            axis.plot(best.index.to_numpy(), best.to_numpy(), color=color, label=label, **line)
            dots: dict[str, Any] = {} if few else {"markersize": 2.5, "alpha": 0.5}
            axis.plot(cores.to_numpy(), speedup.to_numpy(), "o", color=color, linestyle="none", **dots)
            if len(cost_row) and not pd.isna(cost_row["cost_cores"].iloc[0]):
                axis.axvline(float(cost_row["cost_cores"].iloc[0]), color=color, linestyle=":", alpha=0.8)
        axis.axhline(1.0, color=engine_color(BASELINE_ENGINE), linestyle="--", label="single thread")
        _label_panel(axis, f"{epoch} epochs", "total cores", "speedup over one thread")
    figure.suptitle("Speedup over the single-thread baseline; dotted: COST")
    return png(figure)


def _label_panel(axis: Any, title: str, x_label: str, y_label: str) -> None:
    """A panel's title, axis labels, light grid and small legend, as every plot here has them."""
    axis.set_title(title)
    axis.set_xlabel(x_label)
    axis.set_ylabel(y_label)
    axis.grid(alpha=0.3)
    _legend(axis)


def time_vs_price(prices: pd.DataFrame, shown_rows: np.ndarray | None = None, note: str = "") -> bytes:
    """Median time against median cost per measurement, the Pareto frontier marked, per epochs.

    ``shown_rows`` (a mask of ``prices``'s rows, default all): the points drawn in colour, the others grey dots.
    The frontier is of every point. Every point is labelled when all are shown, else only the frontier's.
    """
    keep = np.ones(len(prices), dtype=bool) if shown_rows is None else np.asarray(shown_rows, dtype=bool)
    usable = (prices["n"] > 0).to_numpy(dtype=bool)
    measured, picked = prices[usable].reset_index(drop=True), keep[usable]
    epochs = sorted(measured["epochs"].dropna().unique())
    figure, axes = _panels(max(len(epochs), 1))
    for axis, epoch in zip(axes, epochs, strict=False):
        at = (measured["epochs"] == epoch).to_numpy(dtype=bool)
        group, others = measured[at & picked], measured[at & ~picked]
        _others(axis, others["median_cost"].to_numpy(dtype=float), others["median_s"].to_numpy(dtype=float))
        ringed = group["pareto"].astype(bool).to_numpy()
        for edge, rows in (("black", group[ringed]), ("none", group[~ringed])):
            colors = [engine_color(str(e)) for e in rows["engine"]]
            x, y = rows["median_cost"].to_numpy(dtype=float), rows["median_s"].to_numpy(dtype=float)
            axis.scatter(x, y, c=colors, edgecolors=edge, linewidths=1.5, s=50, zorder=3)
        named = group if picked.all() else group[ringed]
        _annotate(axis, named["median_cost"], named["median_s"], [short_config(r) for r in named.to_dict("records")])
        front = measured[at & measured["pareto"].astype(bool).to_numpy()].sort_values("median_cost")
        axis.step(
            front["median_cost"].astype(float),
            front["median_s"].astype(float),
            where="post",
            color="black",
            alpha=0.6,
            label="Pareto frontier (ringed)",
        )
        _engine_legend(axis, group["engine"].unique())
        _label_panel(axis, f"{epoch} epochs", "median cost per measurement", "median fit time (s)")
    figure.suptitle(with_note("Time vs cost", note, "\n"))
    return png(figure)


def time_by_configuration(arms: pd.DataFrame, note: str = "") -> bytes:
    """Median time with its 95 % CI per configuration, a colour per engine, one panel per ``panel`` value.

    ``arms`` columns: ``panel`` (title, e.g. the epochs), ``engine``, ``config`` (short label),
    ``median_s``, ``low_s``, ``high_s``, ``winner`` (ringed).
    """
    panels = list(dict.fromkeys(arms["panel"]))
    ticks = arms.drop_duplicates(["panel", "config"]).groupby("panel", sort=False).size()
    width_in = max(6.0, 0.45 * int(ticks.max())) if len(ticks) else 6.0
    figure, axes = _panels(max(len(panels), 1), width_in=width_in)
    for axis, panel in zip(axes, panels, strict=False):
        group = arms[arms["panel"] == panel]
        configs = list(dict.fromkeys(group["config"]))
        position = {config: index for index, config in enumerate(configs)}
        engines = sorted(str(e) for e in group["engine"].unique())
        for offset, engine in enumerate(engines):
            mine = group[group["engine"] == engine]
            x = np.array([position[c] for c in mine["config"]]) + (offset - (len(engines) - 1) / 2) * 0.15
            median = mine["median_s"].to_numpy(dtype=float)
            spread = np.vstack(
                [median - mine["low_s"].to_numpy(dtype=float), mine["high_s"].to_numpy(dtype=float) - median]
            )
            axis.errorbar(x, median, yerr=spread, fmt="o", capsize=4, color=engine_color(engine), label=shown(engine))
            won = mine["winner"].to_numpy(dtype=bool)
            axis.scatter(x[won], median[won], s=180, facecolors="none", edgecolors="black", zorder=4)
        _x_labels(axis, range(len(configs)), configs, width_in)
        axis.set_xlim(-0.5, len(configs) - 0.5)
        axis.set_title(shown(panel))
        axis.set_ylabel("median fit time (s), 95 % CI")
        axis.grid(axis="y", alpha=0.3)
        axis.legend(fontsize=7)
    figure.suptitle(with_note("Time per configuration and engine (ringed: the recommendation)", note, "\n"))
    return png(figure)


def memory_vs_granted(memory: pd.DataFrame, note: str = "") -> bytes:
    """Granted memory, measured peak and suggested limit per engine and configuration (horizontal bars).

    ``memory`` columns: ``engine``, ``config`` (short label), ``granted_gib``, ``peak_gib``, ``suggested_gib``.
    """
    measured = memory[memory["peak_gib"].notna()].reset_index(drop=True)
    figure = Figure(figsize=(8, 1.2 + 0.45 * max(len(measured), 1)), layout="constrained")
    axis = figure.subplots()
    y = np.arange(len(measured))
    colors = [engine_color(str(e)) for e in measured["engine"]]
    axis.barh(y, measured["granted_gib"].astype(float), color="#dddddd", edgecolor="#999999", label="granted")
    axis.barh(y, measured["peak_gib"].astype(float), height=0.4, color=colors, label="measured peak")
    axis.scatter(measured["suggested_gib"].astype(float), y, marker="|", s=300, color="black", label="suggested")
    axis.set_yticks(y, [f"{shown(e)} {c}" for e, c in zip(measured["engine"], measured["config"], strict=True)])
    axis.set_xlabel("memory per executor or worker (GiB)")
    axis.set_title(with_note("Peak memory vs granted memory (suggested: peak + 25 %)", note, "\n"))
    axis.grid(axis="x", alpha=0.3)
    axis.legend(fontsize=7)
    return png(figure)


def predicted_vs_measured(table: pd.DataFrame) -> bytes:
    """Each configuration and epochs value's median batch time against what the plan predicted (log-log, y = x).

    ``table`` columns: ``engine``, ``predicted_s``, ``measured_s``.
    """
    figure = Figure(figsize=(5.5, 4.5), layout="constrained")
    axis = figure.subplots()
    for engine, rows in table.groupby("engine", sort=True):
        axis.scatter(rows["predicted_s"], rows["measured_s"], color=engine_color(str(engine)), label=shown(engine))
    values = pd.concat([table["predicted_s"], table["measured_s"]]).astype(float)
    low, high = float(values.min()) / 1.2, float(values.max()) * 1.2
    axis.plot([low, high], [low, high], color="#999999", linewidth=1, label="measured = predicted")
    axis.set_xscale("log")
    axis.set_yscale("log")
    _label_panel(axis, "Predicted vs measured median batch time", "predicted (s)", "measured (s)")
    return png(figure)

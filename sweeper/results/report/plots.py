"""The report's figures, drawn with matplotlib's object API (no pyplot state, Agg canvas).

Each function takes tables of :mod:`sweeper.results.statistics` of one workload and returns the figure
(:func:`png` writes it); the figures with a line per configuration are in :mod:`.shape_plots`. A figure drawn
per configuration draws what the section gives it (each engine's fastest few, :mod:`.selection`) and its
``note`` says what it left out; a scatter of every configuration draws the others as small grey dots,
labelled by none. Artists are drawn per engine or per marker, never per point, so a figure of thousands of
points takes as long as one of ten.

Readable where the report shows them: no figure is wider than ``report.html``'s column
(:data:`PAGE_WIDTH_IN` at :data:`DPI`), so the page shows it at its size, and every text is
:data:`TEXT_PT` or more (:func:`readable`); a section draws no axis for a quantity that does not vary
(:func:`varies`), it says so instead.
"""

from __future__ import annotations

import functools
import io
import math
import zlib
from collections.abc import Callable, Iterator
from typing import Any, ParamSpec

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.transforms import ScaledTranslation

from sweeper.config.work import EPOCHS, axis_text
from sweeper.engines import DESCRIPTORS
from sweeper.names import BASELINE_ENGINE, CONFIG
from sweeper.results.report.formatting import ACCURACY_HEADER
from sweeper.results.report.selection import engine_order, shape_order, with_note
from sweeper.results.right_sizing import HEADROOM_TEXT
from sweeper.results.statistics import NEVER, pareto_front
from sweeper.shapes import BASELINE_TEXT, shape_text
from sweeper.text import visible

ENGINE_COLORS = {**{engine.name: engine.colour for engine in DESCRIPTORS}, BASELINE_ENGINE: "#555555"}
OTHER_COLORS = ("#2ca02c", "#9467bd", "#8c564b", "#e377c2")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "p", "d", "h", "1", "2", "3", "4", "+", "x")
LEGEND_IN_PANEL = 4  # legend entries a panel holds over its data; more go below it
BELOW_AXIS_IN = 0.55  # a legend below a panel starts this far under it: under its tick labels and axis label
LEGEND_ROW_IN = 0.25  # the height of a legend's line at TEXT_PT
LEGEND_SHORT = 24  # characters of the longest legend entry that still let two columns fit under a panel
MARKED_LINE = 24  # points of an engine's speedup line drawn as markers; more are small dots
DPI = 100
PAGE_WIDTH_IN = 11.5  # report.html's column (1,200 px less its padding) at DPI: a figure no wider shows at its size
TEXT_PT = 10  # ticks, axis labels, legends: 14 px at DPI, as the page's tables
SMALL_PT = 9  # the smallest text: labels beside points
TITLE_PT = 12
_STYLE: Any = {  # matplotlib's rcParams names
    "font.size": TEXT_PT,
    "axes.titlesize": TITLE_PT,
    "axes.labelsize": TEXT_PT,
    "legend.fontsize": TEXT_PT,
    "legend.title_fontsize": TEXT_PT,
    "figure.titlesize": TITLE_PT,
}

Drawn = ParamSpec("Drawn")


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


def readable(draw: Callable[Drawn, Figure]) -> Callable[Drawn, Figure]:
    """A figure function whose text is drawn at the report's sizes: :data:`TEXT_PT`, titles :data:`TITLE_PT`."""

    @functools.wraps(draw)
    def drawn(*args: Drawn.args, **kwargs: Drawn.kwargs) -> Figure:
        with matplotlib.rc_context(_STYLE):
            figure = draw(*args, **kwargs)
        for axis in figure.axes:  # tick labels are made when drawn, after the context: sized here
            axis.tick_params(labelsize=TEXT_PT)
        return figure

    return drawn


def varies(values: pd.Series) -> bool:
    """Whether a figure's axis for ``values`` would show anything: two distinct values or more.

    >>> varies(pd.Series([2, 2.0, None])), varies(pd.Series([1, 2]))
    (False, True)
    """
    return values.dropna().astype(float).nunique() > 1


def _panels(count: int, height_in: float = 3.8) -> tuple[Figure, list[Axes]]:
    """``count`` panels, two a row, as wide as the page holds (one panel: half of it and a bit)."""
    columns = min(count, 2)
    rows = math.ceil(count / columns)
    width_in = PAGE_WIDTH_IN if columns > 1 else 0.6 * PAGE_WIDTH_IN
    figure = Figure(figsize=(width_in, height_in * rows), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False).ravel().tolist()
    for extra in axes[count:]:
        extra.set_visible(False)
    return figure, axes[:count]


def _shapes(table: pd.DataFrame) -> dict[tuple[Any, ...], tuple[str, str]]:
    """A marker and a short label per configuration, in the one order of :func:`~.selection.shape_order`."""
    firsts = table.drop_duplicates(["engine", *CONFIG])
    labels = {short_config(row): _key(row) for row in firsts.to_dict("records")}
    ordered = shape_order(firsts.assign(_label=[short_config(r) for r in firsts.to_dict("records")]), "_label")
    return {labels[label]: (MARKERS[i % len(MARKERS)], label) for i, label in enumerate(ordered)}


def _key(row: Any) -> tuple[Any, ...]:
    """A configuration's key (its shape), as :func:`_shapes` maps it to a marker."""
    return tuple(row[c] for c in CONFIG)


def engines_drawn(engines: Any) -> list[str]:
    """The engines of a figure in the order every figure lists them: Spark, Dask, others, then the baseline."""
    names = {str(e) for e in engines}
    return engine_order(names) + ([BASELINE_ENGINE] if BASELINE_ENGINE in names else [])


def _engine_legend(axis: Axes, engines: Any) -> None:
    for engine in engines_drawn(engines):
        axis.scatter([], [], color=engine_color(engine), label=shown(engine))


def _series(table: pd.DataFrame) -> Iterator[tuple[str, str, pd.DataFrame]]:
    """(engine, short config, rows sorted by epochs) per configuration in the one order, engines in theirs, the
    baseline last."""
    keys = ["engine", *CONFIG]
    groups = {(str(key[0]), short_config(group.iloc[0])): group for key, group in table.groupby(keys, dropna=False)}
    shapes = [label for label in _shapes(table).values() if label[1] != BASELINE_TEXT]
    for engine in engines_drawn(table["engine"].unique()):
        if engine == BASELINE_ENGINE:
            continue
        for _, label in shapes:
            if (engine, label) in groups:
                yield engine, label, groups[(engine, label)].sort_values("epochs")
    for (engine, label), group in groups.items():
        if engine == BASELINE_ENGINE:
            yield engine, label, group.sort_values("epochs")


@readable
def versus_epochs(table: pd.DataFrame, note: str = "", work_axis: str = EPOCHS, score: str = ACCURACY_HEADER) -> Figure:
    """Median time and score (named ``score``: ``Accuracy``, ``Score (r2)``) against the work axis (named
    ``work_axis``), a line per engine and configuration (from ``summary``).

    Drawn only where the work axis's values vary (:func:`varies`): the section says so otherwise.
    """
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
    for axis, ylabel in ((time_axis, "median fit time (s), IQR bars"), (accuracy_axis, f"median {score.lower()}")):
        axis.set_xlabel(work_axis)
        axis.set_ylabel(ylabel)
        axis.grid(alpha=0.3)
        if _spans_decade(measured["epochs"]):
            axis.set_xscale("log")
    time_axis.set_title(f"Time vs {work_axis}")
    accuracy_axis.set_title(f"{score} vs {work_axis}")
    _legend(time_axis)
    if note:
        figure.suptitle(note[:1].upper() + note[1:], fontsize=TEXT_PT)
    return figure


def _legend(axis: Axes) -> None:
    """A legend in the panel, or below it when it has more than :data:`LEGEND_IN_PANEL` entries (in two columns
    when they are short), the figure made taller by the room it takes."""
    labels = axis.get_legend_handles_labels()[1]
    if len(labels) <= LEGEND_IN_PANEL:
        axis.legend()
        return
    columns = 2 if max(len(label) for label in labels) <= LEGEND_SHORT else 1
    figure = axis.get_figure()
    assert isinstance(figure, Figure)
    below = axis.transAxes + ScaledTranslation(0, -BELOW_AXIS_IN, figure.dpi_scale_trans)
    axis.legend(loc="upper left", bbox_to_anchor=(0.0, 0.0), bbox_transform=below, ncols=columns)
    figure.set_figheight(figure.get_figheight() + BELOW_AXIS_IN + LEGEND_ROW_IN * math.ceil(len(labels) / columns))


def _spans_decade(epochs: pd.Series) -> bool:
    values = epochs.dropna().astype(float)
    return bool(len(values) and values.min() > 0 and values.max() / values.min() >= 10)


@readable
def accuracy_vs_time(
    table: pd.DataFrame,
    shown_rows: np.ndarray | None = None,
    note: str = "",
    work_axis: str = EPOCHS,
    score: str = ACCURACY_HEADER,
) -> Figure:
    """The speed/score trade-off: the median score (named ``score``) against median time, the Pareto front marked.

    Drawn only where the accuracy varies (:func:`varies`): the section says so otherwise.

    ``shown_rows`` (a mask of ``table``'s rows, default all): the points drawn in colour with a marker per
    configuration and their value of the work axis (``work_axis``); the others are grey dots. The front is of
    every point.
    """
    keep = np.ones(len(table), dtype=bool) if shown_rows is None else np.asarray(shown_rows, dtype=bool)
    usable = ((table["n"] > 0) & table["accuracy"].notna()).to_numpy(dtype=bool)
    measured, picked = table[usable].reset_index(drop=True), keep[usable]
    figure = Figure(figsize=(0.7 * PAGE_WIDTH_IN, 5.5), layout="constrained")
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
        label=f"Pareto front (faster or higher {score.lower()} than all others)",
    )
    axis.scatter(time_s[front], accuracy[front], s=160, facecolors="none", edgecolors="black", zorder=4)
    _engine_legend(axis, colored["engine"].unique())
    for marker, label in markers.values():
        axis.scatter([], [], color="gray", marker=marker, label=label)
    title = with_note(f"Speed vs {score.lower()} (labels: {work_axis})", note, "\n")
    _label_panel(axis, title, "median fit time (s)", f"median {score.lower()}")
    return figure


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
        axis.annotate(label, (x_value, y_value), fontsize=SMALL_PT, xytext=(4, 3), textcoords="offset points")


@readable
def speedup_cost(speedups: pd.DataFrame, costs: pd.DataFrame, work_axis: str = EPOCHS) -> Figure:
    """Speedup over the single thread against total cores, one panel per value of the work axis, COST marked.

    Drawn only where the total cores vary (:func:`varies`): the section says so otherwise.

    Each engine's configurations are dots; its line joins the best speedup at each core count (with markers
    up to :data:`MARKED_LINE` points, beyond which the dots shrink and the line thins).
    """
    measured = speedups[speedups["speedup"].notna()]
    epochs = sorted(measured["epochs"].dropna().unique())
    figure, axes = _panels(max(len(epochs), 1))
    for axis, epoch in zip(axes, epochs, strict=False):
        at = measured[measured["epochs"] == epoch]
        for engine in engines_drawn(at["engine"].unique()):
            group = at[at["engine"] == engine]
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
        _label_panel(axis, axis_text([epoch], work_axis), "total cores", "speedup over one thread")
    figure.suptitle("Speedup over the single-thread baseline; dotted: COST")
    return figure


def _label_panel(axis: Any, title: str, x_label: str, y_label: str) -> None:
    """A panel's title, axis labels, light grid and small legend, as every plot here has them."""
    axis.set_title(title)
    axis.set_xlabel(x_label)
    axis.set_ylabel(y_label)
    axis.grid(alpha=0.3)
    _legend(axis)


@readable
def time_vs_price(
    prices: pd.DataFrame, shown_rows: np.ndarray | None = None, note: str = "", work_axis: str = EPOCHS
) -> Figure:
    """Median time against median cost per measurement, the Pareto frontier marked, per value of the work axis.

    ``shown_rows`` (a mask of ``prices``'s rows, default all): the points drawn in colour, the others grey dots.
    The frontier is of every point; only its points are labelled (the table names every one).
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
        named = group[ringed]
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
        _label_panel(axis, axis_text([epoch], work_axis), "median cost per measurement", "median fit time (s)")
    figure.suptitle(with_note("Time vs cost", note, "\n"))
    return figure


@readable
def memory_vs_granted(memory: pd.DataFrame, note: str = "") -> Figure:
    """Granted memory, measured peak and suggested limit per engine and configuration (horizontal bars).

    ``memory`` columns: ``engine``, the configuration's columns and ``config`` (its short label),
    ``granted_gib``, ``peak_gib``, ``suggested_gib``. Top to bottom in the one order of configurations, each
    configuration's engines in theirs.
    """
    measured = memory[memory["peak_gib"].notna()]
    place = {label: index for index, label in enumerate(shape_order(measured, "config"))}
    rank = {engine: index for index, engine in enumerate(engines_drawn(measured["engine"].unique()))}
    measured = measured.assign(_shape=measured["config"].map(place), _engine=measured["engine"].astype(str).map(rank))
    measured = measured.sort_values(["_shape", "_engine"], kind="stable").reset_index(drop=True)
    figure = Figure(figsize=(0.7 * PAGE_WIDTH_IN, 1.4 + 0.45 * max(len(measured), 1)), layout="constrained")
    axis = figure.subplots()
    y = np.arange(len(measured))
    colors = [engine_color(str(e)) for e in measured["engine"]]
    axis.barh(y, measured["granted_gib"].astype(float), color="#dddddd", edgecolor="#999999", label="granted")
    axis.barh(y, measured["peak_gib"].astype(float), height=0.4, color=colors, label="measured peak")
    axis.scatter(measured["suggested_gib"].astype(float), y, marker="|", s=300, color="black", label="suggested")
    axis.set_yticks(y, [f"{shown(e)} {c}" for e, c in zip(measured["engine"], measured["config"], strict=True)])
    axis.set_ylim(len(measured) - 0.5, -0.5)  # the first configuration on top
    axis.set_xlabel("memory per executor or worker (GiB)")
    axis.set_title(with_note(f"Peak memory vs granted memory (suggested: peak + {HEADROOM_TEXT})", note, "\n"))
    axis.grid(axis="x", alpha=0.3)
    axis.legend()
    return figure


@readable
def predicted_vs_measured(table: pd.DataFrame) -> Figure:
    """Each configuration and epochs value's median batch time against what the plan predicted (log-log, y = x).

    ``table`` columns: ``engine``, ``predicted_s``, ``measured_s``.
    """
    figure = Figure(figsize=(0.55 * PAGE_WIDTH_IN, 5.0), layout="constrained")
    axis = figure.subplots()
    for engine in engines_drawn(table["engine"].unique()):
        rows = table[table["engine"] == engine]
        axis.scatter(rows["predicted_s"], rows["measured_s"], color=engine_color(str(engine)), label=shown(engine))
    values = pd.concat([table["predicted_s"], table["measured_s"]]).astype(float)
    low, high = float(values.min()) / 1.2, float(values.max()) * 1.2
    axis.plot([low, high], [low, high], color="#999999", linewidth=1, label="measured = predicted")
    axis.set_xscale("log")
    axis.set_yscale("log")
    _label_panel(axis, "Predicted vs measured median batch time", "predicted (s)", "measured (s)")
    return figure
